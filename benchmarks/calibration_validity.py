"""Does the certified guarantee hold? Shown two ways.

1. Synthetic judges of known quality (`calibration.synthetic`): per trial, certify on `--sessions`
   sessions and measure R_result and R_call on 400 fresh ones; the share of trials where either exceeds
   alpha must stay <= delta. Beside it, the naive rule "largest threshold whose empirical risk <= alpha".
2. Real dev sessions by resplitting: every row scored by a local judge trained without its instance
   (5 instance folds, as in `quality.py`); per resplit the instances are halved at random, one half
   calibrates (`jev calibrate`'s defaults: betting bound, fixed grid, every session certifying), the
   compactor's rule is applied to the other half (result score <= discard threshold and raw score <
   keep threshold let go; the call dropped when its score is <= the discard threshold too), and the
   realised mean R_result and R_call are measured there. An instance is one unit (its runs are not
   independent). Plain and size-aware. Then the few-sessions goal: 66 instances drawn at random certify
   at alpha 0.05, delta 0.1; how often they let go of >= 10 % of candidate result characters. R_result
   counts the label `--label` names (`jev calibrate`'s default, the strict proxy, unless told).

    python benchmarks/calibration_validity.py [--trials 100] [--resplits 20] [--skip-real] [--label LABEL]
                                              [--bound wsr|wsr-avg|hb]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration import Rows, select_thresholds
from calibration.labels import CERTIFIED_LABEL
from calibration.risk import BOUNDS, DEFAULT_BOUND
from calibration.synthetic import JUDGES, realised_risks, synthetic
from calibration.thresholds import LABEL_COLUMNS, applied, parse_keep_thresholds, result_score
from calibration.train_local import READ_DEPTH


def naive(rows: Rows, alpha: float) -> float:
    """The largest threshold with empirical risks <= alpha: no finite-sample correction."""
    best = -1.0
    for d in np.unique(np.quantile(rows.keep_result, np.linspace(0, 0.98, 200))):
        if max(realised_risks(rows, d)) <= alpha:
            best = d
        else:
            break
    return best


def named(bound: str) -> str:
    """A table heading's mention of the bound: none for jev calibrate's default."""
    return "" if bound == DEFAULT_BOUND else f", bound {bound}"


def synthetic_table(trials: int, n_sessions: int, alpha: float, delta: float, bound: str = DEFAULT_BOUND) -> None:
    print(f"## Synthetic judges{named(bound)}\n\nalpha={alpha} delta={delta}, {trials} trials of {n_sessions} sessions each; "
          "true risks measured on 400 fresh sessions per trial (plain scores)\n")
    print("| judge | certified | violations (R_result or R_call > alpha) | naive violations | results let go |")
    print("|---|---|---|---|---|")
    for judge in JUDGES:
        rng = np.random.default_rng(2026)
        certified = violations = naive_violations = 0
        let_go = []
        for trial in range(trials):
            rows = synthetic(n_sessions, judge, rng)
            fresh = synthetic(400, judge, rng)
            s = select_thresholds(rows, alpha, delta, size_aware=False, seed=trial, bound=bound).overall
            if s.certified:
                certified += 1
                violations += max(realised_risks(fresh, s.discard_threshold)) > alpha
            let_go.append(s.chars_discarded if s.certified else 0.0)
            naive_violations += max(realised_risks(fresh, naive(rows, alpha))) > alpha
        print(f"| {judge} | {certified / trials:.0%} | {violations / trials:.1%} | {naive_violations / trials:.1%} "
              f"| {np.mean(let_go):.1%} |", flush=True)
    print(f"\nViolations must stay <= delta = {delta:.0%}.\n")


def real_rows(rows, p_result: np.ndarray, p_call: np.ndarray, label: str, by_run: bool = False) -> Rows:
    """Labelled rows as `jev label` writes them, one unit per instance (per run when `by_run`: optimistic,
    the runs of one instance are alike), R_result counting `label`'s "needed" (R_call labels-v1's)."""
    from quality import proxies

    from calibration.dataset import group_of

    units = rows.sessions if by_run else np.asarray([group_of(s) for s in rows.sessions])
    return Rows(units, np.full(len(units), "bash"), p_call, p_result, rows.result_chars, proxies(rows)[label],
                rows.needed_call | rows.needed_result, label_version=label)


def resplits(data: Rows, alpha: float, delta: float, size_aware: bool, n: int, calibrate_units: int | None,
             keeps: tuple[float, ...] = (0.8,), bound: str = DEFAULT_BOUND) -> list[tuple[bool, float, float, float]]:
    """(certified, realised R_result, realised R_call, share of characters let go) on the held-out units."""
    units = np.unique(data.sessions)
    out = []
    for seed in range(n):
        chosen = np.random.default_rng(seed).permutation(units)[: calibrate_units or len(units) // 2]
        mask = np.isin(data.sessions, chosen)
        s = select_thresholds(data.take(mask), alpha, delta, size_aware=size_aware, keep_threshold=keeps,
                              bound=bound).overall
        held = data.take(~mask)
        if not s.certified:
            out.append((False, 0.0, 0.0, 0.0))
            continue
        score = result_score(held, size_aware)
        r, c = realised_risks(held, s.discard_threshold, score, s.keep_threshold)
        let_go, _unsure = applied(s.discard_threshold, s.keep_threshold, held, score)
        chars = held.result_chars.astype(float)
        out.append((True, r, c, float(chars[let_go].sum() / max(chars.sum(), 1.0))))
    return out


def real_tables(n: int, alpha: float, delta: float, keeps: tuple[float, ...] = (0.8,),
                label: str = CERTIFIED_LABEL, bound: str = DEFAULT_BOUND) -> None:
    from quality import SETS, out_of_fold

    from calibration.dataset import build_rows

    print(f"## Real dev sessions, {n} resplits (half the instances calibrate, the other half measure), {label}"
          f"{named(bound)}\n")
    if len(keeps) > 1:
        print(f"Keep thresholds chosen among {', '.join(f'{k:g}' for k in keeps)}, each at delta over their number.\n")
    print("| set | ranking | alpha | certified | realised R_result, median [max] | resplits with R_result > "
          "alpha + 0.02 | realised R_call, max | results let go, median |")
    print("|---|---|---|---|---|---|---|---|")
    data = {}
    for name, path in SETS.items():
        rows = build_rows(path, workers=2, scan_chars=READ_DEPTH)
        found = out_of_fold(name, rows, path)
        scores = (found.p_result, found.p_call)
        data[name] = real_rows(rows, *scores, label)
        if len(np.unique(data[name].sessions)) < 100:  # too few instances to certify by halves: runs as units too
            data[f"{name}, runs as units"] = real_rows(rows, *scores, label, by_run=True)
    for name, d in data.items():
        for size_aware in (False, True):
            for a in (alpha, 0.05):
                got = resplits(d, a, delta, size_aware, n, None, keeps, bound)
                ok = [g for g in got if g[0]]
                rr = np.asarray([g[1] for g in ok])
                print(f"| {name} ({len(np.unique(d.sessions))} units) | "
                      f"{'size-aware' if size_aware else 'plain'} | {a} | {len(ok)}/{n} | "
                      + (f"{np.median(rr):.3f} [{rr.max():.3f}] | {int((rr > a + 0.02).sum())} | "
                         f"{max(g[2] for g in ok):.3f} | {np.median([g[3] for g in ok]):.1%} |" if ok else
                         "— | — | — | — |"), flush=True)
    print(f"\nValid when resplits with R_result > alpha + 0.02 are at most delta = {delta:.0%} of them.\n")
    print("## Few sessions: 66 instances calibrate at alpha 0.05, delta 0.1 (size-aware), "
          f"{n} random draws, measured on the rest\n")
    print("| set | certified | let go >= 10 % of result characters | results let go, median | realised R_result, "
          "median [max] |")
    print("|---|---|---|---|---|")
    for name, d in data.items():
        if "runs as units" in name:
            continue
        if len(np.unique(d.sessions)) <= 66:
            print(f"| {name} | only {len(np.unique(d.sessions))} instances: not measured | | | |")
            continue
        got = resplits(d, 0.05, delta, True, n, 66, keeps, bound)
        ok = [g for g in got if g[0]]
        rr = np.asarray([g[1] for g in ok]) if ok else np.zeros(1)
        print(f"| {name} ({len(np.unique(d.sessions))} instances) | {len(ok)}/{n} | {sum(g[3] >= 0.10 for g in ok)}/{n} | "
              f"{np.median([g[3] for g in got]):.1%} | {np.median(rr):.3f} [{rr.max():.3f}] |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100, help="synthetic trials per judge")
    parser.add_argument("--sessions", type=int, default=150, help="sessions per synthetic trial")
    parser.add_argument("--resplits", type=int, default=20, help="resplits of the real dev sessions")
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--skip-real", action="store_true", help="synthetic judges only (no ../shared/data needed)")
    parser.add_argument("--skip-synthetic", action="store_true", help="the real dev sessions only")
    parser.add_argument("--label", default=CERTIFIED_LABEL, choices=tuple(LABEL_COLUMNS),
                        help="the proxy R_result counts on the real sessions (default: %(default)s, jev calibrate's)")
    parser.add_argument("--bound", default=DEFAULT_BOUND, choices=BOUNDS,
                        help="the test certifying (as jev calibrate --bound; default: %(default)s, its default)")
    parser.add_argument("--keep-thresholds", default="0.8",
                        help="keep thresholds the real resplits choose among (as jev calibrate --keep-threshold)")
    args = parser.parse_args()
    try:
        keeps = parse_keep_thresholds(args.keep_thresholds, "--keep-thresholds")
    except ValueError as exc:
        parser.error(str(exc))
    started = time.monotonic()
    if not args.skip_synthetic:
        synthetic_table(args.trials, args.sessions, args.alpha, args.delta, args.bound)
    if not args.skip_real:
        real_tables(args.resplits, args.alpha, args.delta, keeps, args.label, args.bound)
    print(f"\ntotal {time.monotonic() - started:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
