"""Train the embedded local judge and write its weights as JSON (never pickle), with a model card.

    python -m calibration.train_local --out FILE [--data PATH ...] [--scan-chars N]

Two heads, `keep_result` and `keep_call`, each the mean of two models on the same decision-time features:
standardised logistic regression with an isotonic calibration map fitted on instance-grouped out-of-fold
scores — for `keep_result` the sum, in logit space, of a fit on the rows (what the thresholds compare
across histories) and a fit that ranks the candidates of one decision point against each other (every
needed/not-needed pair of one point: what budget mode compares) — and shallow gradient-boosted trees
(scikit-learn's histogram GBT, 80 trees of depth 3, exported as arrays and scored with numpy by the judge,
checked against scikit-learn's own scores). Features whose scale is one agent's habit — absolute result
sizes and lines, message positions, history lengths — are left out: their rank versions carry the same
order and transfer across agents. Trained on both dev sets
(two agent models) by default, on the union of two label proxies built differently (`TRAINING_LABEL`), so
the judge learns what either calls needed rather than one proxy's quirks. Reported metrics are
instance-grouped cross-validated (AUROC, Brier, ECE of the calibrated probability), plus a held-out
split (75/25 by instance). Deterministic: same data, same weights. `--out` is required: the shipped
weights are only replaced when that is the path named. `--scan-chars` sets how many characters of each
result end the features read (120 by default, what the shipped weights read); the file records it and
the judge reads that depth when it loads the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.model_selection import GroupKFold, GroupShuffleSplit

from jev.judges.features import FEATURE_NAMES, SCAN_CHARS
from jev.judges.local import DEPTH, logistic, score, score_trees

from .dataset import Rows, build_rows, group_of
from .labels import ALT_LABEL_VERSION, LABEL_VERSION

_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEFAULT_DATA = (_DATA / "mini-swe-agent-swebench-dev.tar.xz", _DATA / "mini-swe-agent-deepseek-dev.tar.xz")
CORPORA = {"mini-swe-agent-swebench-dev": "mini-swe-agent 1 (Gemini 3 Pro) on SWE-bench Verified",
           "mini-swe-agent-deepseek-dev": "mini-swe-agent 2.x (DeepSeek chat/reasoner/lite) on SWE-bench Lite"}
TRAINING_LABEL = f"{LABEL_VERSION} or {ALT_LABEL_VERSION}"
C = 0.1
FOLDS = 5
BLEND = 0.5  # the weight of the linear head in each head's mean
RANKED_HEADS = ("keep_result",)  # heads whose linear part is fitted to rank the candidates of one decision point
# one agent's scale, not a transferable signal: their rank_* versions stay (see the module's docstring)
LEFT_OUT = frozenset({"result_chars", "result_lines", "position", "age_messages", "history_pairs", "history_edits"})
FEATURES = tuple(name for name in FEATURE_NAMES if name not in LEFT_OUT)
COLUMNS = np.asarray([FEATURE_NAMES.index(name) for name in FEATURES])
TREES = dict(max_iter=80, max_depth=3, max_leaf_nodes=None, min_samples_leaf=200, l2_regularization=1.0,
             learning_rate=0.18, early_stopping=False, random_state=0)
_ALWAYS_LEFT = float(np.finfo(float).max)  # a split every finite value passes to the left


def columns(X: np.ndarray) -> np.ndarray:
    """The model's feature columns of a full `feature_matrix` (or `Rows.X`)."""
    return X[:, COLUMNS]


def fit_linear(X: np.ndarray, y: np.ndarray, points: np.ndarray | None = None) -> dict[str, Any]:
    """The standardised linear head, fitted on the rows themselves. With `points` (a decision-point id per
    row) a second fit ranks: on the difference of every (needed, not needed) pair of rows of one decision
    point, no intercept — what budget mode ranks is candidates of one point, what the thresholds rank is
    rows of every history, so the two coefficient vectors are summed in logit space (neither objective
    alone serves both uses); the isotonic map then gives the probability."""
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale[scale == 0] = 1.0
    Z = (X - mean) / scale
    model = LogisticRegression(C=C, max_iter=5000).fit(Z, y)
    coef = model.coef_[0]
    first, second = within_point_pairs(y, points) if points is not None else (np.zeros(0, dtype=int),) * 2
    if len(first):
        # P(the needed row scores higher) for each pair; every other pair enters mirrored with label 0 — the
        # same loss as every pair both ways at twice C, without the copy
        D = Z[first] - Z[second]
        if len(D) == 1:  # one pair: both ways, so there are two labels to tell apart
            D = np.concatenate([D, D])
        D[1::2] *= -1
        label = np.ones(len(D))
        label[1::2] = 0
        coef = coef + LogisticRegression(C=2 * C, max_iter=5000, fit_intercept=False).fit(D, label).coef_[0]
    return {"mean": mean.tolist(), "scale": scale.tolist(), "coef": coef.tolist(),
            "intercept": float(model.intercept_[0])}


def within_point_pairs(y: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (needed, not needed) of every such pair within one decision point, in a fixed order."""
    order = np.argsort(points, kind="stable")
    cuts = np.flatnonzero(np.diff(points[order])) + 1
    first, second = [], []
    for rows in np.split(order, cuts):
        needed, unneeded = rows[y[rows] == 1], rows[y[rows] == 0]
        if len(needed) and len(unneeded):
            first.append(np.repeat(needed, len(unneeded)))
            second.append(np.tile(unneeded, len(needed)))
    if not first:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    return np.concatenate(first), np.concatenate(second)


def decision_points(rows: Rows) -> np.ndarray:
    """An id per row naming its decision point (session and point): the rows budget mode ranks together."""
    return np.unique(np.char.add(np.char.add(rows.sessions.astype(str), "@"), rows.points.astype(str)),
                     return_inverse=True)[1]


def raw_score(head: dict[str, Any], X: np.ndarray) -> np.ndarray:
    """The uncalibrated probability of a fitted linear head."""
    return logistic(X, np.asarray(head["mean"]), np.asarray(head["scale"]), np.asarray(head["coef"]), head["intercept"])


def calibrated(head: dict[str, Any], X: np.ndarray) -> np.ndarray:
    """A head's probability on the model's columns, as the judge scores it (`jev.judges.local.score`)."""
    return score(head, X)


def fit_trees(X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """Boosted trees as arrays: each tree complete to `DEPTH` in heap order (a shallower leaf becomes a
    subtree whose splits all go left). scikit-learn keeps its trees in `_predictors` — no public export
    exists — so the arrays are checked against its own scores and training stops if they ever differ."""
    model = HistGradientBoostingClassifier(**TREES).fit(X, y)
    splits, leaves = 2 ** DEPTH - 1, 2 ** DEPTH
    feature, threshold, value = [], [], []
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        f, t, v = [0] * splits, [_ALWAYS_LEFT] * splits, [0.0] * leaves

        def place(node: int, at: int, depth: int, leaf: float | None = None) -> None:
            if leaf is None and nodes[node]["is_leaf"]:
                leaf = float(nodes[node]["value"])
            if depth == DEPTH:
                v[at - splits] = float(nodes[node]["value"]) if leaf is None else leaf
                return
            if leaf is None:
                f[at], t[at] = int(nodes[node]["feature_idx"]), float(nodes[node]["num_threshold"])
                place(int(nodes[node]["left"]), 2 * at + 1, depth + 1)
                place(int(nodes[node]["right"]), 2 * at + 2, depth + 1)
            else:  # below a leaf: every split goes left, every leaf holds its value
                place(node, 2 * at + 1, depth + 1, leaf)
                place(node, 2 * at + 2, depth + 1, leaf)

        place(0, 0, 0)
        feature.append(f), threshold.append(t), value.append(v)
    trees = {"baseline": float(np.ravel(model._baseline_prediction)[0]), "feature": feature,
             "threshold": threshold, "value": value}
    mine = score_trees(trees, X)
    if not np.allclose(mine, model.predict_proba(X)[:, 1], rtol=0, atol=1e-9):
        raise RuntimeError("the exported trees do not reproduce scikit-learn's scores (has its tree layout changed?)")
    return trees


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


def _at(points: np.ndarray | None, index: np.ndarray) -> np.ndarray | None:
    """The decision-point ids of the rows at `index` (None: the head is not ranked)."""
    return None if points is None else points[index]


def _out_of_fold(X: np.ndarray, y: np.ndarray, folds: list, points: np.ndarray | None = None) -> np.ndarray:
    """The linear head's raw scores, each row's from a fit without its fold (what its isotonic map learns)."""
    oof = np.zeros(len(y))
    for train, test in folds:
        oof[test] = raw_score(fit_linear(X[train], y[train], _at(points, train)), X[test])
    return oof


def _assemble(X: np.ndarray, y: np.ndarray, oof: np.ndarray, points: np.ndarray | None = None) -> dict[str, Any]:
    """One head fitted on these rows: the linear head (ranking within `points` when given) with its
    isotonic map learnt from `oof` (its out-of-fold raw scores on them), the trees, their blend."""
    linear = fit_linear(X, y, points)
    linear["isotonic"] = _isotonic(oof, y)
    return {"linear": linear, "trees": fit_trees(X, y), "blend": BLEND}


def fit_spec(X: np.ndarray, y: np.ndarray, groups: np.ndarray, points: np.ndarray | None = None) -> dict[str, Any]:
    """One head as shipped, on the model's columns (instance-grouped folds for the isotonic map); its
    linear part ranks within `points` when given (`RANKED_HEADS`)."""
    folds = list(GroupKFold(FOLDS).split(X, y, groups))
    return _assemble(X, y, _out_of_fold(X, y, folds, points), points)


def fit_head(X: np.ndarray, y: np.ndarray, groups: np.ndarray, points: np.ndarray | None = None
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """One head (`fit_spec`) and its instance-grouped cross-validated metrics: the blend scored out of
    sample, the linear head's map cross-fitted and the trees refitted per fold."""
    folds = list(GroupKFold(FOLDS).split(X, y, groups))
    oof = _out_of_fold(X, y, folds, points)
    blended = np.zeros(len(y))
    for train, test in folds:
        blended[test] = score(_assemble(X[train], y[train], oof[train], _at(points, train)), X[test])
    metrics = {"auroc": round(float(roc_auc_score(y, blended)), 4),
               "brier": round(float(brier_score_loss(y, blended)), 4), "ece": round(ece(blended, y), 4),
               "base_rate": round(float(y.mean()), 4), "reliability": reliability(blended, y)}
    return _assemble(X, y, oof, points), metrics


def held_out_auroc(X: np.ndarray, y: np.ndarray, groups: np.ndarray, seed: int = 0,
                   points: np.ndarray | None = None) -> float:
    """AUROC on 25% of instances never seen in training, of the head fitted as shipped on the rest."""
    train, test = next(GroupShuffleSplit(1, test_size=0.25, random_state=seed).split(X, y, groups))
    spec = fit_spec(X[train], y[train], groups[train], _at(points, train))
    return float(roc_auc_score(y[test], score(spec, X[test])))


def training_labels(rows: Rows) -> dict[str, np.ndarray]:
    """What each head learns (`TRAINING_LABEL`): the result is needed when either proxy says so; the call
    when labels-v1 says the call is needed or the result is."""
    result = rows.needed_result if rows.needed_result_alt is None else rows.needed_result | rows.needed_result_alt
    return {"keep_result": result, "keep_call": rows.needed_call | result}


def _ranking(rows: Rows, head: str) -> np.ndarray | None:
    """The rows' decision-point ids for a head in `RANKED_HEADS`, else None."""
    return decision_points(rows) if head in RANKED_HEADS else None


def fit_heads(rows: Rows) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Both heads (weights, cross-validated metrics), grouped by instance, as the shipped ones are fitted."""
    groups = np.asarray([group_of(s) for s in rows.sessions])
    return {name: fit_head(columns(rows.X), y.astype(float), groups, _ranking(rows, name))
            for name, y in training_labels(rows).items()}


def fit_specs(rows: Rows) -> dict[str, dict[str, Any]]:
    """Both heads as shipped, without the metrics' cross-validation (what the benchmarks retrain)."""
    groups = np.asarray([group_of(s) for s in rows.sessions])
    return {name: fit_spec(columns(rows.X), y.astype(float), groups, _ranking(rows, name))
            for name, y in training_labels(rows).items()}


def train(rows: Rows, corpora: list[str] | None = None, scan_chars: int = SCAN_CHARS) -> dict[str, Any]:
    """The model document: feature names, the depth they read (`rows` must be built reading it), both
    heads, and the model card's numbers."""
    model: dict[str, Any] = {"format": "jev-local-judge", "version": 2, "label": TRAINING_LABEL,
                             "features": list(FEATURES), "scan_chars": scan_chars, "heads": {}, "card": {}}
    groups = np.asarray([group_of(s) for s in rows.sessions])
    for (name, (head, metrics)), y in zip(fit_heads(rows).items(), training_labels(rows).values(), strict=True):
        metrics["held_out_auroc"] = round(held_out_auroc(columns(rows.X), y, groups, points=_ranking(rows, name)), 4)
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


def checked_scan_chars(parser: argparse.ArgumentParser, value: int) -> int:
    """`--scan-chars N` as given, or the parser exits naming the flag and the rule (this script's and the
    benchmarks' flag)."""
    if value < 1:
        parser.error(f"--scan-chars must be an integer >= 1 (got {value})")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calibration.train_local", description=__doc__.split("\n")[0])
    parser.add_argument("--data", action="append", help="trajectories: .tar.xz or a directory; repeat for "
                        "several (default: both dev sets in ../shared/data)")
    parser.add_argument("--out", required=True, help="where to write the model (the shipped weights are "
                        "jev/judges/local_model.json: name that path to replace them)")
    parser.add_argument("--scan-chars", type=int, default=SCAN_CHARS, metavar="N",
                        help=f"characters of each result end the features read (default {SCAN_CHARS}; recorded in "
                             "the file, and the judge reads that depth)")
    args = parser.parse_args(argv)
    checked_scan_chars(parser, args.scan_chars)
    sources = args.data or [str(p) for p in DEFAULT_DATA]
    missing = [s for s in sources if not Path(s).exists()]
    if missing:
        parser.error(f"--data: {', '.join(missing)} not found")
    from rich.progress import Progress
    with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("decision points", total=None)
        rows = Rows.concat([build_rows(s, progress=lambda _s: progress.advance(task), scan_chars=args.scan_chars)
                            for s in sources])
    model = train(rows, [corpus_name(s) for s in sources], args.scan_chars)
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
