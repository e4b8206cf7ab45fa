"""Quality on the dev trajectories: compaction every 8 pairs with the newest 3 protected, discards permanent.
For each method, the needed-pair drop rate (labels-v1: the result was needed after the decision point)
against the share of candidate result characters removed.

Methods: the local judge (scored out of fold: 5 session-grouped folds, each scored by a model trained on
the other four), across thresholds, plain and size-aware; keep-last-N (3, 5, 10, 20); drop-all;
superseded-only; random; the oracle. Writes a risk–coverage plot (PNG) and prints a table.

    python benchmarks/quality.py [--out quality.png]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np
from _common import DATA, ROOT
from sklearn.model_selection import GroupKFold

from calibration.dataset import build_rows
from calibration.train_local import _fit_lr, raw_score
from jev.judges.features import FEATURE_NAMES

SUPERSEDED = [FEATURE_NAMES.index(n) for n in ("superseded", "path_reread", "path_edited")]


def simulate(rows, discard) -> tuple[float, float]:
    """Walk every session's decision points in order; `discard(i)` says whether row i's pair goes now.
    Returns (mean per-session needed-pair drop rate, share of candidate result characters removed)."""
    by_session: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(rows.sessions):
        by_session[s].append(i)
    rates, removed, total = [], 0.0, 0.0
    for indices in by_session.values():
        gone: set[str] = set()
        first_seen: dict[str, int] = {}
        lost = 0
        for i in sorted(indices, key=lambda i: rows.points[i]):
            key = rows.keys[i]
            if key in gone:
                continue
            if key not in first_seen:
                first_seen[key] = i
                total += rows.result_chars[i]
            if discard(i):
                gone.add(key)
                removed += rows.result_chars[i]
                lost += bool(rows.needed_result[i])
        needed = sum(bool(rows.needed_result[i]) for i in first_seen.values())
        rates.append(lost / needed if needed else 0.0)
    return float(np.mean(rates)), removed / max(total, 1.0)


def out_of_fold(rows) -> np.ndarray:
    scores = np.zeros(len(rows.X))
    for train, test in GroupKFold(5).split(rows.X, rows.needed_result, rows.sessions):
        scores[test] = raw_score(_fit_lr(rows.X[train], rows.needed_result[train].astype(float)), rows.X[test])
    return scores


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "quality.png"))
    args = parser.parse_args()
    rows = build_rows(DATA)
    n = np.asarray([int(k[1:]) for k in rows.keys])
    newest = defaultdict(int)  # (session, point) -> pairs at that point
    for i in range(len(n)):
        newest[(rows.sessions[i], rows.points[i])] = max(newest[(rows.sessions[i], rows.points[i])], n[i] + 3)
    age = np.asarray([newest[(rows.sessions[i], rows.points[i])] - n[i] for i in range(len(n))])
    scores = out_of_fold(rows)
    size_scores = scores * (1000 / np.maximum(rows.result_chars, 1))
    rng = np.random.default_rng(0)
    coin = rng.random(len(n))

    curves: dict[str, list[tuple[float, float]]] = {}
    curves["local judge"] = [simulate(rows, lambda i, t=t: scores[i] <= t)
                             for t in np.quantile(scores, np.linspace(0.02, 0.98, 25))]
    curves["local judge, size-aware"] = [simulate(rows, lambda i, t=t: size_scores[i] <= t)
                                         for t in np.quantile(size_scores, np.linspace(0.02, 0.98, 25))]
    curves["keep-last-N"] = [simulate(rows, lambda i, k=k: age[i] > k) for k in (20, 10, 5, 3)]
    curves["random"] = [simulate(rows, lambda i, p=p: coin[i] < p) for p in np.linspace(0.05, 0.95, 10)]
    points = {
        "drop-all": simulate(rows, lambda i: True),
        "superseded-only": simulate(rows, lambda i: rows.X[i, SUPERSEDED].any()),
        "oracle": simulate(rows, lambda i: not rows.needed_result[i]),
    }
    print(f"{len(set(rows.sessions))} sessions, {len(rows.X)} (pair, decision point) rows; needed results "
          f"{rows.needed_result.mean():.1%}")
    print(f"{'method':>26} {'setting':>10} {'drop rate':>10} {'chars removed':>14}")
    for name, (risk, saved) in points.items():
        print(f"{name:>26} {'':>10} {risk:>10.3f} {saved:>13.1%}")
    for k, (risk, saved) in zip((20, 10, 5, 3), curves["keep-last-N"], strict=True):
        print(f"{'keep-last-N':>26} {'N=' + str(k):>10} {risk:>10.3f} {saved:>13.1%}")
    for name in ("local judge", "local judge, size-aware", "random"):
        for target in (0.25, 0.5, 0.75):  # the operating point closest to a share of characters removed
            risk, saved = min(curves[name], key=lambda c, t=target: abs(c[1] - t))
            print(f"{name:>26} {f'~{target:.0%}':>10} {risk:>10.3f} {saved:>13.1%}")
    at_equal = {}
    for name in ("local judge", "local judge, size-aware", "random"):
        xs, ys = zip(*sorted((c[1], c[0]) for c in curves[name]), strict=True)
        at_equal[name] = [float(np.interp(s, xs, ys)) for s in (c[1] for c in curves["keep-last-N"])]
    print("\nat the character savings of keep-last-N (N = 20, 10, 5, 3), needed-pair drop rate:")
    print(f"{'keep-last-N':>26} " + " ".join(f"{c[0]:.3f}" for c in curves["keep-last-N"]))
    for name, values in at_equal.items():
        print(f"{name:>26} " + " ".join(f"{v:.3f}" for v in values))
    _plot(curves, points, Path(args.out))
    print(f"\nplot: {args.out}")


def _plot(curves, points, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 5))
    for name, values in curves.items():
        values = sorted(values, key=lambda c: c[1])
        ax.plot([c[1] for c in values], [c[0] for c in values], marker="." if len(values) > 5 else "o", label=name)
    for (name, (risk, saved)), (color, marker) in zip(points.items(), (("black", "X"), ("purple", "s"), ("gold", "*")),
                                                       strict=True):
        ax.scatter([saved], [risk], s=90, label=name, zorder=3, color=color, marker=marker, edgecolors="black")
    ax.set(xlabel="share of candidate result characters removed", ylabel="needed-pair drop rate (per session)",
           title="Risk–coverage on the dev trajectories (every 8 pairs, newest 3 kept)", xlim=(0, 1), ylim=(0, 1))
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
