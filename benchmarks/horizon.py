"""Which horizon rule holds: the cost gate's estimate of the later model calls, checked by replay on the dev sets.

The gate adopts a plan when what it frees over the horizon repays the re-write it causes (`jev.deciding.cost`). A live
host rarely knows how many calls are left, so the library estimates them from the history. This replays jev at
its defaults (the local judge, the threshold table, the gate; planning at a cold cache too) on every dev set, at
each trigger and pricing profile, once per candidate rule, beside no compaction and the true number of later
calls (a diagnostic no live host has). It reports the history's billed input (× no compaction) and the share
of later-needed results let go (labels-v1). A rule holds when it bills at most 1.000× in every cell.

Each rule is a function of the calls made so far (`n`, the history's assistant messages):

- `third`: n // 3, at least 1 (the rule shipped before issue 63);
- `third, at most C`: the same, capped at C calls;
- `sqrt`: the square root of n, rounded down;
- `quarter`: n // 4.

At the points where a trigger fires, the calls still to come are a median of 0.33× to 0.69× those made on
dev, but their spread grows with n: the cap bounds how far a long session's estimate can run past its end.

    python benchmarks/horizon.py [--sets swebench,deepseek,claude-code] [--triggers 20000,50000]
                                 [--profiles anthropic-5m,openai] [--rules third,third-cap-10,...]
                                 [--sessions N] [--out benchmarks/horizon.md]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archive import MemoryStore, StoreArchive
from benchmarks.bench import write_table
from benchmarks.cost import LABEL, SETS, billed, sessions
from calibration.labels import needed_later
from jev import CompactionConfig, Compactor, ExecutionOptions, Mode
from jev.billing import JevCompaction, NoCompaction, calls_after
from jev.billing.usage import fitted_prefix
from jev.judges import LocalJudge
from jev.reading.analysis import (
    Transcript,
    analyze,
)


def made(transcript: Transcript, point: int) -> int:
    """The model calls made up to decision point `point`."""
    return sum(1 for m in transcript.messages[:point + 1] if m.role == "assistant")


def rule(name: str) -> Callable[[Transcript, int], int]:
    """The horizon rule called `name` (module docstring)."""
    if name == "third":
        return lambda t, p: max(1, made(t, p) // 3)
    if name == "quarter":
        return lambda t, p: max(1, made(t, p) // 4)
    if name == "sqrt":
        return lambda t, p: max(1, math.isqrt(made(t, p)))
    if name.startswith("third-cap-"):
        cap = int(name.removeprefix("third-cap-"))
        return lambda t, p: max(1, min(cap, made(t, p) // 3))
    raise SystemExit(f"--rules: unknown rule {name!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="swebench,deepseek,claude-code")
    parser.add_argument("--triggers", default="20000,50000")
    parser.add_argument("--profiles", default="anthropic-5m,openai")
    parser.add_argument("--rules", default="third,third-cap-10,third-cap-20,sqrt,quarter")
    parser.add_argument("--sessions", type=int, help="the first N sessions of each set (default: all)")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args()
    judge = LocalJudge()
    rules = args.rules.split(",")
    started = time.time()
    lines = ["| set | trigger | pricing | " + " | ".join(rules) + " | true horizon |",
             "|---|---|---|" + "---|" * (len(rules) + 1)]
    print("\n".join(lines), flush=True)
    for name in args.sets.split(","):
        loaded, usage = sessions(name, args.sessions)
        known = [(m, c) for m, c in zip(loaded, usage, strict=True) if c is not None]
        fit = fitted_prefix(known)
        prefix = fit.tokens if fit is not None else 0
        labels = [needed_later(analyze(messages)) for messages in loaded]
        needed = max(1, sum(x.total_v1 for x in labels))
        for trigger in map(int, args.triggers.split(",")):
            for profile in args.profiles.split(","):
                def make() -> list[Any]:
                    def compactor() -> Compactor:
                        return Compactor(judge, CompactionConfig(eligible_tools=SETS[name][1], pricing=profile),
                                         ExecutionOptions(Mode.ENFORCE, 60.0, "horizon-benchmark"),
                                         StoreArchive(MemoryStore()))
                    return [NoCompaction(),
                            *(JevCompaction(compactor(), trigger, name=r, horizon=rule(r)) for r in rules),
                            JevCompaction(compactor(), trigger, name="true horizon", horizon=calls_after)]
                totals, lost = billed(loaded, labels, make, profile, prefix)
                base = totals["no compaction"]
                cells = [f"{(totals[p].billed - totals[p].prefix) / (base.billed - base.prefix):.4f} "
                         f"({lost[p][0] / needed:.1%})" for p in [*rules, "true horizon"]]
                line = (f"| {LABEL[name]} ({len(loaded)}) | {trigger // 1000} k | {profile} | "
                        + " | ".join(cells) + " |")
                lines.append(line)
                print(line, flush=True)
    seconds = time.time() - started
    print(f"\n{seconds:.0f} s", file=sys.stderr)
    if args.out:
        write_table(args.out, "Horizon rules by replay", f"python benchmarks/horizon.py --rules {args.rules}",
                    "Each cell: the history's billed input × no compaction (needed results let go, labels-v1). A rule "
                    "holds where every cell is at most 1.000.", lines, seconds)


if __name__ == "__main__":
    main()
