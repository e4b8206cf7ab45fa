"""Train the embedded local judge and write its weights as JSON (never pickle), with a model card.

    python -m calibration.train_local --out FILE [--data PATH ...]

Two heads, `keep_result` and `keep_call`: standardised logistic regression on decision-time features,
then isotonic calibration fitted on instance-grouped out-of-fold scores. Trained on both dev sets (two
agent models) by default, on the union of two label proxies built differently (`TRAINING_LABEL`), so
the judge learns what either calls needed rather than one proxy's quirks. Reported metrics are
instance-grouped cross-validated (AUROC, Brier, ECE of the calibrated probability), plus a held-out
split (75/25 by instance). Deterministic: same data, same weights. `--out` is required: the shipped
weights are only replaced when that is the path named.
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

from .dataset import Rows, build_rows, group_of
from .labels import ALT_LABEL_VERSION, LABEL_VERSION

_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEFAULT_DATA = (_DATA / "mini-swe-agent-swebench-dev.tar.xz", _DATA / "mini-swe-agent-deepseek-dev.tar.xz")
CORPORA = {"mini-swe-agent-swebench-dev": "mini-swe-agent 1 (Gemini 3 Pro) on SWE-bench Verified",
           "mini-swe-agent-deepseek-dev": "mini-swe-agent 2.x (DeepSeek chat/reasoner/lite) on SWE-bench Lite"}
TRAINING_LABEL = f"{LABEL_VERSION} or {ALT_LABEL_VERSION}"
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


def training_labels(rows: Rows) -> dict[str, np.ndarray]:
    """What each head learns (`TRAINING_LABEL`): the result is needed when either proxy says so; the call
    when labels-v1 says the call is needed or the result is."""
    result = rows.needed_result if rows.needed_result_alt is None else rows.needed_result | rows.needed_result_alt
    return {"keep_result": result, "keep_call": rows.needed_call | result}


def fit_heads(rows: Rows) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Both heads (weights, cross-validated metrics), grouped by instance, as the shipped ones are fitted."""
    groups = np.asarray([group_of(s) for s in rows.sessions])
    return {name: fit_head(rows.X, y.astype(float), groups) for name, y in training_labels(rows).items()}


def train(rows: Rows, corpora: list[str] | None = None) -> dict[str, Any]:
    """The model document: feature names, both heads, and the model card's numbers."""
    model: dict[str, Any] = {"format": "jev-local-judge", "version": 1, "label": TRAINING_LABEL,
                             "features": list(FEATURE_NAMES), "heads": {}, "card": {}}
    groups = np.asarray([group_of(s) for s in rows.sessions])
    for (name, (head, metrics)), y in zip(fit_heads(rows).items(), training_labels(rows).values(), strict=True):
        metrics["held_out_auroc"] = round(held_out_auroc(rows.X, y, groups), 4)
        model["heads"][name] = head
        model["card"][name] = metrics
    model["card"]["data"] = {"rows": int(len(rows.X)), "sessions": len(set(rows.sessions.tolist())),
                             "instances": len(set(groups.tolist())), "decision_every_pairs": 8,
                             "protected_newest_pairs": 3, "corpus": corpora or []}
    return model


def corpus_name(path: str | Path) -> str:
    """A data source's name without its archive suffixes, described when it is a known dev set."""
    name = Path(path).name
    for suffix in (".tar.xz", ".tar", ".json"):
        name = name.removesuffix(suffix)
    return CORPORA.get(name, name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calibration.train_local", description=__doc__.split("\n")[0])
    parser.add_argument("--data", action="append", help="trajectories: .tar.xz or a directory; repeat for "
                        "several (default: both dev sets in ../shared/data)")
    parser.add_argument("--out", required=True, help="where to write the model (the shipped weights are "
                        "jev/judges/local_model.json: name that path to replace them)")
    args = parser.parse_args(argv)
    sources = args.data or [str(p) for p in DEFAULT_DATA]
    missing = [s for s in sources if not Path(s).exists()]
    if missing:
        parser.error(f"--data: {', '.join(missing)} not found")
    from rich.progress import Progress
    with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("decision points", total=None)
        rows = Rows.concat([build_rows(s, progress=lambda _s: progress.advance(task)) for s in sources])
    model = train(rows, [corpus_name(s) for s in sources])
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
