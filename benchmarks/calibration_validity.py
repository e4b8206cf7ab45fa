"""Validity of the threshold guarantee over many resplits, for synthetic judges of known quality: the share
of resplits whose certified threshold has true risk > alpha must stay <= delta; against it, the naive rule
"largest threshold whose empirical risk <= alpha" measured on the same splits.

    python benchmarks/calibration_validity.py [--trials 200]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from calibration import select_thresholds  # noqa: E402
from test_calibration import realised_risk, synthetic  # noqa: E402

JUDGES = ("oracle-5", "beta", "overconfident", "random")


def naive(rows, alpha: float) -> float:
    """The largest threshold with empirical risk <= alpha: no finite-sample correction."""
    best = -1.0
    for d in np.unique(np.quantile(rows.keep_result, np.linspace(0, 0.98, 200))):
        if realised_risk(rows, d) <= alpha:
            best = d
        else:
            break
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=150)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--delta", type=float, default=0.1)
    args = parser.parse_args()
    print(f"alpha={args.alpha} delta={args.delta}, {args.trials} resplits of {args.sessions} sessions each; true risk "
          "measured on 400 fresh sessions per resplit")
    print(f"{'judge':>14} {'certified':>10} {'LTT violations':>15} {'naive violations':>17} {'mean results let go':>20}")
    for judge in JUDGES:
        rng = np.random.default_rng(2026)
        certified = violations = naive_violations = 0
        let_go = []
        for trial in range(args.trials):
            rows = synthetic(args.sessions, judge, rng)
            fresh = synthetic(400, judge, rng)
            result = select_thresholds(rows, args.alpha, args.delta, seed=trial)
            if result.overall.certified:
                certified += 1
                violations += realised_risk(fresh, result.overall.discard_threshold) > args.alpha
                let_go.append(result.overall.chars_discarded)
            else:
                let_go.append(0.0)
            naive_violations += realised_risk(fresh, naive(rows, args.alpha)) > args.alpha
        print(f"{judge:>14} {certified / args.trials:>9.0%} {violations / args.trials:>14.1%} "
              f"{naive_violations / args.trials:>16.1%} {np.mean(let_go):>19.1%}")
    print(f"LTT violations must stay <= delta = {args.delta:.0%}.")


if __name__ == "__main__":
    main()
