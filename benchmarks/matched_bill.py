"""jev's defaults against batched clearing at the same bill: the later-needed results each loses.

jev at its defaults (the local judge, the threshold table, the cost gate, planning at a cold cache) bills some
share of no compaction. Batched clearing (clear the oldest results down to a target at each trigger event,
never the last 3) bills more the shallower it clears. This replays batched clearing at a sweep of targets
(`--targets`, shares of the trigger), finds the two whose bills bracket jev's, and interpolates linearly the
share of later-needed results batched clearing would lose at jev's very bill, under labels-v1 and
labels-v2-reuse, on its frontier (a sweep point that a cheaper one beats is passed over: the reading kindest
to batched clearing). It reports jev's loss over that (below 1: jev loses fewer at the same bill), with a 95 %
interval from resampling whole sessions (the session is the unit: 400 resamples, each re-interpolated).
Billed input is the history's alone, at each set's fitted prefix (as `benchmarks/cost.py`).

    python benchmarks/matched_bill.py [--sets claude-code,swebench,deepseek] [--triggers 20000,50000]
                                      [--profiles anthropic-5m,openai] [--targets 0.5,0.6,0.7,0.8,0.9]
                                      [--out benchmarks/matched_bill.md]
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archive import MemoryStore, StoreArchive
from benchmarks.bench import write_table
from benchmarks.cost import LABEL, SETS, sessions
from calibration.labels import needed_later
from jev import CompactionConfig, Compactor, ExecutionOptions, Mode
from jev.billing import ClearBatched, JevCompaction, NoCompaction, replay
from jev.billing.usage import fitted_prefix
from jev.judges import LocalJudge
from jev.reading.analysis import analyze

RESAMPLES = 400


def per_session(loaded: list[Any], labels: list[Any], make: Any, profile: str, prefix: int) -> dict[str, list[tuple]]:
    """For each policy, one row per session: (billed, no-compaction billed, needed lost v1, v2, needed v1, v2)."""
    rows: dict[str, list[tuple]] = {}
    for messages, label in zip(loaded, labels, strict=True):
        bills = replay(messages, make(), profile, prefix=prefix)
        base = bills["no compaction"]
        for name, bill in bills.items():
            v1 = sum(label.v1(key, point) for key, point in bill.let_go)
            v2 = sum(label.v2(key, point) for key, point in bill.let_go)
            rows.setdefault(name, []).append((bill.billed - bill.prefix, base.billed - base.prefix, v1, v2,
                                              label.total_v1, label.total_v2))
    return rows


def pooled(rows: list[tuple], index: list[int]) -> tuple[float, float, float]:
    """(billed ×, lost v1, lost v2) over the sessions `index` picks."""
    billed = sum(rows[i][0] for i in index)
    base = sum(rows[i][1] for i in index)
    need1 = max(1, sum(rows[i][4] for i in index))
    need2 = max(1, sum(rows[i][5] for i in index))
    return billed / base, sum(rows[i][2] for i in index) / need1, sum(rows[i][3] for i in index) / need2


def at_bill(curve: list[tuple[float, float, float]], bill: float) -> tuple[float, float] | None:
    """Batched clearing's (lost v1, lost v2) at `bill`, read off its frontier under each label: the sweep
    points (no compaction is the point (1, 0, 0)) that no cheaper point beats on that label, interpolated
    linearly between the two around `bill` (the reading kindest to batched clearing). None when no sweep
    point bills as little."""
    out = []
    for k in (1, 2):
        frontier: list[tuple[float, float]] = []
        for point in sorted([(1.0, 0.0, 0.0), *curve]):
            if not frontier or point[k] < frontier[-1][1]:
                frontier.append((point[0], point[k]))
        for (b0, a0), (b1, a1) in itertools.pairwise(frontier):
            if b0 <= bill <= b1:
                out.append(a0 + (0.0 if b1 == b0 else (bill - b0) / (b1 - b0)) * (a1 - a0))
                break
        else:
            if not frontier or bill < frontier[0][0]:
                return None
            out.append(frontier[-1][1])  # at or past the frontier's dearest point: its loss
    return out[0], out[1]


def ratios(rows: dict[str, list[tuple]], sweep: list[str], jev: str, index: list[int]) -> tuple[float, ...] | None:
    """jev's bill and losses, batched clearing's at that bill, and the two ratios, over `index`."""
    bill, j1, j2 = pooled(rows[jev], index)
    matched = at_bill([pooled(rows[name], index) for name in sweep], bill)
    if matched is None:
        return None
    b1, b2 = matched
    return bill, j1, j2, b1, b2, j1 / b1 if b1 else float("nan"), j2 / b2 if b2 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="claude-code,swebench,deepseek")
    parser.add_argument("--triggers", default="20000,50000")
    parser.add_argument("--profiles", default="anthropic-5m,openai")
    parser.add_argument("--targets", default="0.5,0.6,0.7,0.8,0.9")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    judge = LocalJudge()
    started = time.time()
    rng = random.Random(0)
    lines = ["| set | trigger | pricing | jev billed × | jev lost (v1 / v2) | batched clearing at that bill (v1 / v2) | "
             "jev ÷ batched, v1 [95 %] | jev ÷ batched, v2 [95 %] |", "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for name in args.sets.split(","):
        loaded, usage = sessions(name, None)
        known = [(m, c) for m, c in zip(loaded, usage, strict=True) if c is not None]
        fit = fitted_prefix(known)
        prefix = fit.tokens if fit is not None else 0
        labels = [needed_later(analyze(messages)) for messages in loaded]
        for trigger in map(int, args.triggers.split(",")):
            targets = [int(trigger * float(t)) for t in args.targets.split(",")]
            for profile in args.profiles.split(","):
                def make() -> list[Any]:
                    compactor = Compactor(judge, CompactionConfig(eligible_tools=SETS[name][1], pricing=profile),
                                          ExecutionOptions(Mode.ENFORCE, 60.0, "matched-bill"),
                                          StoreArchive(MemoryStore()))
                    return [NoCompaction(), JevCompaction(compactor, trigger, name="jev"),
                            *(ClearBatched(trigger, t, clear_at_least=trigger // 20) for t in targets)]
                rows = per_session(loaded, labels, make, profile, prefix)
                sweep = [n for n in rows if n.startswith("clear batched")]
                every = list(range(len(loaded)))
                point = ratios(rows, sweep, "jev", every)
                if point is None:
                    line = (f"| {LABEL[name]} ({len(loaded)}) | {trigger // 1000} k | {profile} | — | — | "
                            "no sweep point bills as little | — | — |")
                else:
                    draws = [r for r in (ratios(rows, sweep, "jev", [rng.choice(every) for _ in every])
                                         for _ in range(RESAMPLES)) if r is not None]
                    def interval(k: int) -> str:
                        values = sorted(d[k] for d in draws if d[k] == d[k])
                        if not values:
                            return "—"
                        return f"[{values[int(0.025 * len(values))]:.2f}, {values[int(0.975 * len(values)) - 1]:.2f}]"
                    bill, j1, j2, b1, b2, r1, r2 = point
                    line = (f"| {LABEL[name]} ({len(loaded)}) | {trigger // 1000} k | {profile} | {bill:.3f} | "
                            f"{j1:.1%} / {j2:.1%} | {b1:.1%} / {b2:.1%} | **{r1:.2f}** {interval(5)} | "
                            f"**{r2:.2f}** {interval(6)} |")
                lines.append(line)
                print(line, flush=True)
    seconds = time.time() - started
    print(f"\n{seconds:.0f} s", file=sys.stderr)
    if args.out:
        write_table(args.out, "jev's defaults against batched clearing at the same bill",
                    "python benchmarks/matched_bill.py",
                    f"Batched clearing swept over targets of {args.targets} × the trigger, interpolated to jev's bill; "
                    "a ratio below 1 means jev lets go of fewer later-needed results at the same bill.", lines, seconds)


if __name__ == "__main__":
    main()
