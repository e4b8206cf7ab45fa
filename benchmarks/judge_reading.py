"""What the local judge reads, chosen by grouped cross-validation within the latency budget (issue 64).

Candidates: each reading depth (characters of each result end) × each set of optional features — the
agent's own words (`AGENT_FEATURES`: what it wrote in its text and reasoning of a result's words, which of
them its newest words name, and the "unsaid" counts with the agent's words counted as said, as the labels
count them) and line numbers (`LINE_NUMBER_FEATURES`: the numbers `grep -n` or `cat -n` showed that later
calls address). Each candidate is scored by the training recipe's own criterion (`calibration.train_local`:
the call head and every result-head candidate fitted out of fold on instance-grouped 5-fold splits of both
dev sets, the mean gap closed under its proxies at the yardstick's budget) and timed as the shipped
judge would run reading it (the shipped heads, the candidate's reading: cold and warm, against the floor,
at 400 pairs, as `benchmarks/judge_latency.py` times them: the median of `LATENCY_RUNS` processes, timed
round by round, since one process's ratio moves by a tenth of the floor or more from the next's). The
choice is the best criterion among the candidates within the budget (cold <= 2.2x and warm <= 1.0x the
floor) — and among those within `TOLERANCE` of it, the cheapest to read cold: a difference that small is
noise, the time is not. Dev sets only; nothing is tested on held-out sessions here.

    python benchmarks/judge_reading.py [--depths 120,300,600] [--features none,agent,agent+lines] [--latency-runs 5]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from bench import write_table

from calibration import train_local as recipe
from calibration.dataset import TrainingRows, build_rows
from calibration.rarity import Rarity
from jev.judges.features import AGENT_FEATURES, LINE_NUMBER_FEATURES
from jev.judges.local import load_model

OPTIONAL = {"agent": AGENT_FEATURES, "lines": LINE_NUMBER_FEATURES}
COLD_BAR, WARM_BAR, PAIRS = 2.2, 1.0, 400
LATENCY_RUNS = 5  # processes timing each candidate: 800 characters read 2.01x to 2.37x the floor over five
TOLERANCE = 0.005  # criteria closer than this are not told apart: the cheaper reading is taken
OUT = Path(__file__).with_name("judge_reading.md")


def features_of(optional: tuple[str, ...]) -> tuple[str, ...]:
    """The recipe's features with these optional sets (the rest of them left out), in `FEATURE_NAMES` order."""
    left_out = set().union(*(OPTIONAL[o] for o in OPTIONAL if o not in optional))
    return tuple(n for n in recipe.FEATURES_ALL if n not in left_out)


def criterion(rows: TrainingRows, features: tuple[str, ...]) -> dict:
    """The recipe's cross-validated choice on these features: the best candidate's gaps and their mean."""
    with recipe.reading(features):
        _oof, oof_call = recipe.head_out_of_fold(recipe.columns(rows.X), recipe.call_label(rows).astype(float),
                                                 recipe.groups_of(rows))
        return max(recipe.choose(rows, oof_call).table, key=lambda r: r["mean"])


def latency(depth: int, features: tuple[str, ...]) -> tuple[float, float]:
    """Cold and warm time over the floor at `PAIRS` pairs, as `benchmarks/judge_latency.py` measures them (in
    a process of its own, the machine otherwise idle), of the shipped heads reading this way: the shipped
    weights in a file naming this depth and these features (the heads' trees only read the columns they
    were trained on, cut or padded to the candidate's columns: the scores mean nothing, the cost is a trained
    judge's; the reading is the candidate's). The result head
    gets a part per proxy the recipe trains (`PARTS`), so that its trees cost what a trained head's do."""
    shipped = load_model()
    parts = shipped["heads"]["keep_result"].get("mixture", {}).get("parts")
    if parts:
        while len(parts) < len(recipe.PARTS):
            parts.append(copy.deepcopy(parts[-1]))
    heads, n = copy.deepcopy(shipped["heads"]), len(features)
    for head in heads.values():  # the heads fitted to the candidate's columns: cut or padded (mean 0, scale 1,
        if "linear" in head:  # weight 0), each split on a column that exists
            for key, value in (("mean", 0.0), ("scale", 1.0), ("coef", 0.0)):
                head["linear"][key] = (head["linear"][key] + [value] * n)[:n]
        for trees in [head.get("trees")] + [part["trees"] for part in head.get("mixture", {}).get("parts", [])]:
            if trees:
                trees["feature"] = [[f % n for f in tree] for tree in trees["feature"]]
    named = list(features)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "reading.json"
        path.write_bytes(orjson.dumps(dict(shipped, scan_chars=depth, features=named, heads=heads)))
        timed = subprocess.run([sys.executable, str(Path(__file__).with_name("judge_latency.py")), "--model",
                                str(path), "--pairs", str(PAIRS)], capture_output=True, text=True, check=True)
    row = next(line for line in timed.stdout.splitlines() if line.startswith(f"| {PAIRS} |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    return float(cells[5].rstrip("x")), float(cells[6].rstrip("x"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depths", default="120,300,600", help="reading depths to try (comma-separated)")
    parser.add_argument("--features", default="none,agent,agent+lines",
                        help="optional feature sets to try: none, or names joined by + among "
                             f"{', '.join(OPTIONAL)} (comma-separated)")
    parser.add_argument("--latency-runs", type=int, default=LATENCY_RUNS,
                        help="processes timing each candidate, the median taken (default: %(default)s; one run's "
                             "ratio moves by a tenth of the floor or more from one process to the next)")
    parser.add_argument("--out-md", default=str(OUT), help="where to write the table (default: %(default)s)")
    args = parser.parse_args()
    if args.latency_runs < 1:
        parser.error(f"--latency-runs must be an integer >= 1 (got {args.latency_runs})")
    try:
        depths = [recipe.checked_scan_chars(parser, int(d), "--depths") for d in args.depths.split(",")]
    except ValueError:
        parser.error(f"--depths {args.depths!r}: must be comma-separated integers")
    sets = [() if f == "none" else tuple(f.split("+")) for f in args.features.split(",")]
    for s in sets:
        if not set(s) <= set(OPTIONAL):
            parser.error(f"--features {args.features!r}: each set is none or names among {', '.join(OPTIONAL)}")
    started = time.monotonic()
    candidates = [(depth, optional) for depth in depths for optional in sets]
    # timed first, each in a process of its own, while nothing else runs
    runs: dict[tuple[int, tuple[str, ...]], list[tuple[float, float]]] = {c: [] for c in candidates}
    for _ in range(args.latency_runs):  # round by round, so a machine whose speed drifts slows every candidate alike
        for c in candidates:
            runs[c].append(latency(c[0], features_of(c[1])))
    timed = {c: (statistics.median(r[0] for r in found), statistics.median(r[1] for r in found))
             for c, found in runs.items()}
    sources = [str(p) for p in recipe.DEFAULT_DATA]
    rarity = Rarity.of(recipe.rarity_of(sources))
    lines, found = [], []
    header = (f"| depth | optional features | {' | '.join(recipe.PARTS)} | mean (the criterion) | "
              "cold / floor | warm / floor | within budget |")
    for depth in depths:
        print(f"[{time.strftime('%H:%M:%S')}] depth {depth}: building rows", file=sys.stderr, flush=True)
        rows = TrainingRows.concat([build_rows(s, workers=2, scan_chars=depth, rarity=rarity) for s in sources])
        for optional in sets:
            best = criterion(rows, features_of(optional))
            cold, warm = timed[depth, optional]
            ok = cold <= COLD_BAR and warm <= WARM_BAR
            found.append((ok, best["mean"], cold, depth, optional))
            lines.append(f"| {depth} | {' + '.join(optional) or 'none'} | "
                         + "".join(f"{best[p]:.4f} | " for p in recipe.PARTS)
                         + f"{best['mean']:.4f} | {cold:.2f}x | {warm:.2f}x | {'yes' if ok else 'no'} |")
            print(lines[-1], file=sys.stderr, flush=True)
    within = [f for f in found if f[0]]
    choice = None
    if within:  # the cheapest of those as good as the best within the budget (a difference under TOLERANCE is noise)
        top = max(f[1] for f in within)
        choice = min((f for f in within if f[1] >= top - TOLERANCE), key=lambda f: f[2])
    said = (f"Chosen: depth {choice[3]}, optional features {' + '.join(choice[4]) or 'none'} (the cheapest cold "
            f"reading among those within the budget whose criterion is within {TOLERANCE} of the best there)."
            if choice else "No candidate is within the budget.")
    write_table(Path(args.out_md), "What the local judge reads", "python benchmarks/judge_reading.py "
                f"--depths {args.depths} --features {args.features}"
                + (f" --latency-runs {args.latency_runs}" if args.latency_runs != LATENCY_RUNS else ""),
                "Gap closed out of fold (instance-grouped 5-fold cross-validation on both dev sets, the recipe's "
                "own criterion: its best candidate's gaps under each proxy and their mean); latency of the shipped "
                f"heads reading this way at {PAIRS} pairs, timed by judge_latency.py in a process of its own, the "
                f"median of {args.latency_runs} such processes taken round by round "
                f"(budget: cold <= {COLD_BAR}x, warm <= "
                f"{WARM_BAR}x the floor). {said}", [header, "|---" * (6 + len(recipe.PARTS)) + "|", *lines],
                time.monotonic() - started)
    print(said)


if __name__ == "__main__":
    main()
