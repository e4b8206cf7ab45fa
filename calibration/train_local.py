"""Train the embedded local judge and write its weights as JSON (never pickle), with a model card.

    python -m calibration.train_local [--data PATH] [--out jev/judges/local_model.json]

Two heads, `keep_result` and `keep_call`: standardised logistic regression on decision-time features,
then isotonic calibration fitted on session-grouped out-of-fold scores. Reported metrics are
session-grouped cross-validated (AUROC, Brier, ECE of the calibrated probability), plus a held-out
split (75/25 by session). Deterministic: same data, same weights.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.model_selection import GroupKFold, GroupShuffleSplit

from jev.judges.features import FEATURE_NAMES

from .dataset import Rows, build_rows
from .labels import LABEL_VERSION

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mini-swe-agent-swebench-dev.tar.xz"
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "jev" / "judges" / "local_model.json"
C = 0.1
FOLDS = 5


def _fit_lr(X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=C, max_iter=5000).fit((X - mean) / scale, y)
    return {"mean": mean.tolist(), "scale": scale.tolist(), "coef": model.coef_[0].tolist(),
            "intercept": float(model.intercept_[0])}


def raw_score(head: dict[str, Any], X: np.ndarray) -> np.ndarray:
    """The uncalibrated probability of a fitted head."""
    z = ((X - np.asarray(head["mean"])) / np.asarray(head["scale"])) @ np.asarray(head["coef"]) + head["intercept"]
    return 1.0 / (1.0 + np.exp(-z))


def calibrated(head: dict[str, Any], X: np.ndarray) -> np.ndarray:
    """The calibrated probability: isotonic map (stored as breakpoints) of the raw score."""
    return np.interp(raw_score(head, X), head["isotonic"]["x"], head["isotonic"]["y"])


def _isotonic(scores: np.ndarray, y: np.ndarray) -> dict[str, list[float]]:
    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(scores, y)
    return {"x": [float(v) for v in iso.X_thresholds_], "y": [float(v) for v in iso.y_thresholds_]}


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over equal-width bins."""
    edges = np.minimum((p * bins).astype(int), bins - 1)
    return float(sum(abs(p[edges == b].mean() - y[edges == b].mean()) * (edges == b).mean()
                     for b in range(bins) if (edges == b).any()))


def reliability(p: np.ndarray, y: np.ndarray, bins: int = 10) -> list[dict[str, float]]:
    edges = np.minimum((p * bins).astype(int), bins - 1)
    return [{"bin": b / bins, "predicted": round(float(p[edges == b].mean()), 4),
             "observed": round(float(y[edges == b].mean()), 4), "n": int((edges == b).sum())}
            for b in range(bins) if (edges == b).any()]


def fit_head(X: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
    """Weights of one head and its session-grouped cross-validated metrics."""
    oof = np.zeros(len(y))
    folds = list(GroupKFold(FOLDS).split(X, y, groups))
    for train, test in folds:
        oof[test] = raw_score(_fit_lr(X[train], y[train]), X[test])
    cal = np.zeros(len(y))  # cross-fitted calibration, so the reported Brier/ECE are out of sample too
    for train, test in folds:
        iso = _isotonic(oof[train], y[train])
        cal[test] = np.interp(oof[test], iso["x"], iso["y"])
    head = _fit_lr(X, y)
    head["isotonic"] = _isotonic(oof, y)
    metrics = {"auroc": round(float(roc_auc_score(y, oof)), 4), "brier": round(float(brier_score_loss(y, cal)), 4),
               "ece": round(ece(cal, y), 4), "base_rate": round(float(y.mean()), 4),
               "reliability": reliability(cal, y)}
    return head, metrics


def held_out_auroc(X: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int = 0) -> float:
    """AUROC on 25% of sessions never seen in training."""
    train, test = next(GroupShuffleSplit(1, test_size=0.25, random_state=seed).split(X, y, groups))
    head = _fit_lr(X[train], y[train])
    return float(roc_auc_score(y[test], raw_score(head, X[test])))


def train(rows: Rows) -> dict[str, Any]:
    """The model document: feature names, both heads, and the model card's numbers."""
    model: dict[str, Any] = {"format": "jev-local-judge", "version": 1, "label": LABEL_VERSION,
                             "features": list(FEATURE_NAMES), "heads": {}, "card": {}}
    n_sessions = len(set(rows.sessions.tolist()))
    for name, y in (("keep_result", rows.needed_result), ("keep_call", rows.needed_call)):
        head, metrics = fit_head(rows.X, y.astype(float), rows.sessions)
        metrics["held_out_auroc"] = round(held_out_auroc(rows.X, y, rows.sessions), 4)
        model["heads"][name] = head
        model["card"][name] = metrics
    model["card"]["data"] = {"rows": int(len(rows.X)), "sessions": n_sessions, "decision_every_pairs": 8,
                             "protected_newest_pairs": 3,
                             "corpus": "mini-swe-agent (Gemini 3 Pro) on SWE-bench Verified, dev split"}
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calibration.train_local", description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="trajectories: .tar.xz or a directory")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args(argv)
    from rich.progress import Progress
    with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("decision points", total=None)
        rows = build_rows(args.data, progress=lambda _s: progress.advance(task))
    model = train(rows)
    Path(args.out).write_bytes(orjson.dumps(model, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    for name in ("keep_result", "keep_call"):
        m = model["card"][name]
        print(f"{name}: AUROC {m['auroc']} (held-out {m['held_out_auroc']}), Brier {m['brier']}, ECE {m['ece']}, "
              f"base rate {m['base_rate']}", file=sys.stderr)
    print(f"wrote {args.out} from {model['card']['data']['rows']} rows in {model['card']['data']['sessions']} sessions",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
