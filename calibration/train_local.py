"""Train the embedded local judge and write its weights as JSON (never pickle), with a model card.

    python -m calibration.train_local --out FILE [--data PATH ...] [--scan-chars N] [--no-cells]

Version 3 weights (`jev-local-8`). Two heads on the same decision-time features:

- `keep_result`, a mixture: shallow gradient-boosted trees (scikit-learn's histogram GBT, depth 3,
  exported as arrays and scored with numpy, checked against scikit-learn's own scores) fitted once per
  label proxy — labels-v3-strict (a rare identifier this result alone introduced, written later: what
  `jev calibrate` certifies by default, the proxy whose needs read as genuine most often) and
  labels-v2-reuse (copied lines, re-runs, edits of files read) — their probabilities summed with weights
  inverse to each proxy's base rate (`SHARES`: each part's share of that sum), then a logistic map of the
  sum's log onto P(needed under either proxy), fitted on out-of-fold sums. labels-v1 (an identifier this
  result last provided, used later, or a re-run) has no part: a part of it made the strict proxy's gap
  across agents smaller (`jev-local-6`), and what it counts reads as genuine least often.
- `keep_call`, as before: the mean of a standardised logistic regression (isotonic map on instance-grouped
  out-of-fold scores) and boosted trees, on labels-v1's "call needed" or either of the older proxies'
  "result needed" (`TRAINING_LABEL`).

The trees' capacity, the parts' shares and the size exponent budget mode ranks with (P / saves ** a) are
chosen by instance-grouped 5-fold cross-validation on the yardstick itself (`calibration.yardstick`:
half of the candidate result characters let go at points with 30 000 of them; the mean of the gap
closed under the two proxies, out of fold); sessions are never split, DeepSeek runs of one instance stay
together. The chosen exponent ships as `size_exponent`. The words more than 2 % of the training instances
show ship as `rarity` (the strict proxy's tokens and the features' word hashes), computed from the
training data before any row is built. Features whose scale is one agent's habit — absolute result
sizes and lines, message positions, history lengths — are left out: their rank versions carry the same
order and transfer across agents. What the features read — the depth of each result end, and whether
the agent's own words and line numbers — is `READ_DEPTH` and `NOT_READ`, chosen the same way among depths
and optional feature sets within the judge's latency budget (`benchmarks/judge_reading.py`).
Deterministic: same data, same weights, on any thread count (the linear fit runs BLAS on one thread;
the trees' histograms are summed feature by feature).

Unless `--no-cells`, the card also gives the cross-model cells: the same recipe (selection included)
trained on each dev set and scored on the other, under each proxy, with 95 % intervals over instances
(the common tables stay both dev sets': they define the strict proxy; no test label enters training).
`--out` is required: the shipped weights are only replaced when that is the path named. `--scan-chars`
sets how many characters of each result end the features read (`READ_DEPTH` by default).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.model_selection import GroupKFold
from threadpoolctl import threadpool_limits

from jev import formats
from jev.judges.features import AGENT_FEATURES, FEATURE_NAMES, LINE_NUMBER_FEATURES
from jev.judges.local import DEPTH, link, logistic, mixed, score, score_trees
from jev.reading.analysis import analyze

from .dataset import TrainingRows, build_rows, group_of, raw_trajectories
from .labels import ALT_LABEL_VERSION, LABEL_VERSION, STRICT_LABEL_VERSION
from .rarity import Rarity, rarity_table
from .yardstick import BOOT, tally, with_intervals

_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEFAULT_DATA = (_DATA / "mini-swe-agent-swebench-dev.tar.xz", _DATA / "mini-swe-agent-deepseek-dev.tar.xz")
CORPORA = {"mini-swe-agent-swebench-dev": "mini-swe-agent 1 (Gemini 3 Pro) on SWE-bench Verified",
           "mini-swe-agent-deepseek-dev": "mini-swe-agent 2.x (DeepSeek chat/reasoner/lite) on SWE-bench Lite"}
TRAINING_LABEL = f"{LABEL_VERSION} call, or {LABEL_VERSION} or {ALT_LABEL_VERSION} result"  # the call head's
PARTS = (ALT_LABEL_VERSION, STRICT_LABEL_VERSION)  # the result head's mixture: a part per proxy
RESULT_LABEL = " or ".join(PARTS)  # what the result head's probability is of
C = 0.1
FOLDS = 5
BLEND = 0.5  # the weight of the linear head in the call head's mean
# the candidates grouped cross-validation chooses among (trees stay few: the judge scores every tree of
# every head for every pair, and must stay within 2x the floor at 400 pairs)
CAPACITIES = ({"max_iter": 80, "learning_rate": 0.15, "min_samples_leaf": 300},
              {"max_iter": 80, "learning_rate": 0.15, "min_samples_leaf": 1000})
# each part's share of the mixture's weights (in `PARTS` order): the strict part's growing
SHARES = ((0.6, 0.4), (0.5, 0.5), (0.4, 0.6))
SIZE_EXPONENTS = (1.0, 1.5, 2.0)
BUDGET, MIN_CHARS = 0.5, 30_000  # the yardstick's point: half the candidate characters where there are 30 000
# one agent's scale, not a transferable signal: their rank_* versions stay (see the module's docstring)
LEFT_OUT = frozenset({"result_chars", "result_lines", "position", "age_messages", "history_pairs", "history_edits"})
FEATURES_ALL = tuple(name for name in FEATURE_NAMES if name not in LEFT_OUT)
# what the shipped judge reads, chosen by `benchmarks/judge_reading.py` (its table: judge_reading.md): the
# depth and the optional features (the agent's own words, line numbers) with the best cross-validated
# criterion within the latency budget
READ_DEPTH = 800
NOT_READ = AGENT_FEATURES | LINE_NUMBER_FEATURES
FEATURES = tuple(name for name in FEATURES_ALL if name not in NOT_READ)
COLUMNS = np.asarray([FEATURE_NAMES.index(name) for name in FEATURES])


@contextlib.contextmanager
def reading(features: tuple[str, ...]) -> Iterator[None]:
    """The recipe run on these features instead of `FEATURES` (what `benchmarks/judge_reading.py` compares)."""
    global FEATURES, COLUMNS
    before = FEATURES, COLUMNS
    FEATURES, COLUMNS = tuple(features), np.asarray([FEATURE_NAMES.index(name) for name in features])
    try:
        yield
    finally:
        FEATURES, COLUMNS = before
TREES = dict(max_iter=80, max_depth=3, max_leaf_nodes=None, min_samples_leaf=200, l2_regularization=1.0,
             learning_rate=0.18, early_stopping=False, random_state=0)
CHECKED_ROWS = 4_000  # rows `fit_trees` scores both ways to check its export
_ALWAYS_LEFT = float(np.finfo(float).max)  # a split every finite value passes to the left


def columns(X: np.ndarray) -> np.ndarray:
    """The model's feature columns of a full `feature_matrix` (or `TrainingRows.X`)."""
    return X[:, COLUMNS]


def fit_linear(X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """The standardised linear head, fitted on the rows. BLAS runs on one thread here: its sums follow
    the thread count in the last digits, and the call head's isotonic map pools those scores, so the
    weights would otherwise depend on the machine."""
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale[scale == 0] = 1.0
    with threadpool_limits(1, user_api="blas"):
        model = LogisticRegression(C=C, max_iter=5000).fit((X - mean) / scale, y)
    return {"mean": mean.tolist(), "scale": scale.tolist(), "coef": model.coef_[0].tolist(),
            "intercept": float(model.intercept_[0])}


def raw_score(head: dict[str, Any], X: np.ndarray) -> np.ndarray:
    """The uncalibrated probability of a fitted linear head."""
    return logistic(X, np.asarray(head["mean"]), np.asarray(head["scale"]), np.asarray(head["coef"]), head["intercept"])


def _complete(nodes: np.ndarray) -> tuple[list[int], list[float], list[float]]:
    """One scikit-learn tree (its node records) as complete arrays of depth `DEPTH` in heap order."""
    splits, leaves = 2 ** DEPTH - 1, 2 ** DEPTH
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
    return f, t, v


def fit_trees(X: np.ndarray, y: np.ndarray, capacity: dict[str, Any] | None = None) -> dict[str, Any]:
    """Boosted trees as arrays: each tree complete to `DEPTH` in heap order (a shallower leaf becomes a
    subtree whose splits all go left). scikit-learn keeps its trees in `_predictors` — no public export
    exists — so the arrays are checked against its own scores (on `CHECKED_ROWS` of the rows, evenly spread)
    and training stops if they ever differ.
    `capacity` overrides `TREES` (trees, learning rate, smallest leaf)."""
    model = HistGradientBoostingClassifier(**{**TREES, **(capacity or {})}).fit(X, y)
    feature, threshold, value = [], [], []
    for (predictor,) in model._predictors:
        f, t, v = _complete(predictor.nodes)
        feature.append(f)
        threshold.append(t)
        value.append(v)
    trees = {"baseline": float(np.ravel(model._baseline_prediction)[0]), "feature": feature,
             "threshold": threshold, "value": value}
    check = X[:: max(1, len(X) // CHECKED_ROWS)]  # a layout change shows on any rows: a few thousand suffice
    if not np.allclose(score_trees(trees, check), model.predict_proba(check)[:, 1], rtol=0, atol=1e-9):
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


def _out_of_fold(X: np.ndarray, y: np.ndarray, folds: list) -> np.ndarray:
    """The linear head's raw scores, each row's from a fit without its fold (what its isotonic map learns)."""
    oof = np.zeros(len(y))
    for train, test in folds:
        oof[test] = raw_score(fit_linear(X[train], y[train]), X[test])
    return oof


def _assemble(X: np.ndarray, y: np.ndarray, oof: np.ndarray) -> dict[str, Any]:
    """One blended head fitted on these rows: the linear head with its isotonic map learnt from `oof` (its
    out-of-fold raw scores on them), the trees, their blend."""
    linear = fit_linear(X, y)
    linear["isotonic"] = _isotonic(oof, y)
    return {"linear": linear, "trees": fit_trees(X, y), "blend": BLEND}


def fit_spec(X: np.ndarray, y: np.ndarray, groups: np.ndarray) -> dict[str, Any]:
    """One blended head as shipped, on the model's columns (instance-grouped folds for the isotonic map)."""
    folds = list(GroupKFold(FOLDS).split(X, y, groups))
    return _assemble(X, y, _out_of_fold(X, y, folds))


def fit_head(X: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[dict[str, Any], dict[str, Any], np.ndarray]:
    """One blended head (`fit_spec`), its instance-grouped cross-validated metrics and out-of-fold
    probabilities (`head_out_of_fold`)."""
    oof, blended = head_out_of_fold(X, y, groups)
    metrics = {"auroc": round(float(roc_auc_score(y, blended)), 4),
               "brier": round(float(brier_score_loss(y, blended)), 4), "ece": round(ece(blended, y), 4),
               "base_rate": round(float(y.mean()), 4), "reliability": reliability(blended, y)}
    return _assemble(X, y, oof), metrics, blended


def head_out_of_fold(X: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A blended head scored out of fold, with no head fitted on all the rows: the linear head's
    cross-fitted map (what `_assemble` takes) and the blend's out-of-fold probabilities (the trees
    refitted per fold)."""
    folds = list(GroupKFold(FOLDS).split(X, y, groups))  # the folds `choose` splits alike
    oof = _out_of_fold(X, y, folds)
    blended = np.zeros(len(y))
    for train, test in folds:
        blended[test] = score(_assemble(X[train], y[train], oof[train]), X[test])
    return oof, blended


def call_label(rows: TrainingRows) -> np.ndarray:
    """What the call head learns (`TRAINING_LABEL`): labels-v1 says the call is needed, or either older
    proxy says the result is."""
    result = rows.needed_result if rows.needed_result_alt is None else rows.needed_result | rows.needed_result_alt
    return rows.needed_call | result


def part_labels(rows: TrainingRows) -> dict[str, np.ndarray]:
    """What each part of the result head learns: its proxy's "needed" (`PARTS`)."""
    assert rows.needed_result_alt is not None and rows.needed_strict is not None, "rows built without every proxy"
    return {ALT_LABEL_VERSION: rows.needed_result_alt, STRICT_LABEL_VERSION: rows.needed_strict}


def result_label(rows: TrainingRows) -> np.ndarray:
    """What the result head's probability is of: either proxy calls the result needed."""
    return np.logical_or.reduce(list(part_labels(rows).values()))


def part_weights(base_rates: list[float], shares: tuple[float, ...]) -> list[float]:
    """The parts' weights: each its share over its proxy's base rate, scaled to sum to 1 (a rare proxy's
    signal counts as much as a common one's at equal shares)."""
    raw = [share / base for share, base in zip(shares, base_rates, strict=True)]
    return [w / sum(raw) for w in raw]


def fit_link(mixture: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """The logistic map of log(mixture) onto P(y): slope and intercept."""
    model = LogisticRegression(C=1e4, max_iter=1000).fit(np.log(np.maximum(mixture, 1e-12))[:, None], y)
    return {"slope": float(model.coef_[0][0]), "intercept": float(model.intercept_[0])}


@dataclass(frozen=True)
class Choice:
    """What grouped cross-validation chose: the trees' capacity, the parts' shares, the size exponent;
    with every candidate's out-of-fold gaps (`table`) and the chosen one's out-of-fold probabilities."""

    capacity: dict[str, Any]
    shares: tuple[float, ...]  # in `PARTS` order
    size_exponent: float
    link: dict[str, float]  # the logistic map of the log sum, fitted on the chosen candidate's out-of-fold sums
    table: list[dict[str, Any]]
    oof: np.ndarray  # P(needed) per row, out of fold, of the chosen candidate
    oof_call: np.ndarray  # the call head's, out of fold


def choose(rows: TrainingRows, oof_call: np.ndarray, progress: Callable[[str], None] | None = None) -> Choice:
    """Capacity, shares and size exponent by instance-grouped 5-fold cross-validation on the yardstick:
    each candidate's result head is fitted without a fold and ranks that fold's decision points in budget
    mode beside the call head's out-of-fold probabilities (`oof_call`, from the same folds); the mean of
    its gap closed under the two proxies, pooled out of fold, decides (the first best in grid order, the
    plainer candidates first)."""
    X, groups = columns(rows.X), groups_of(rows)
    folds = list(GroupKFold(FOLDS).split(X, rows.needed_result, groups))
    labels = part_labels(rows)
    parts = np.zeros((len(CAPACITIES), len(PARTS), len(X)))
    bases = np.zeros((len(folds), len(PARTS)))
    for f, (train_ix, test_ix) in enumerate(folds):
        if progress:
            progress(f"fold {f + 1}/{len(folds)}")
        for p, label in enumerate(PARTS):
            bases[f, p] = labels[label][train_ix].mean()
            for c, capacity in enumerate(CAPACITIES):
                parts[c, p, test_ix] = score_trees(fit_trees(X[train_ix], labels[label][train_ix], capacity),
                                                   X[test_ix])
    table, best, chosen = [], -np.inf, None
    union = result_label(rows)
    for c, capacity in enumerate(CAPACITIES):
        for share in SHARES:
            mixture = np.zeros(len(X))
            for f, (_train_ix, test_ix) in enumerate(folds):
                weights = part_weights(bases[f].tolist(), share)
                mixture[test_ix] = mixed([parts[c, p, test_ix] for p in range(len(PARTS))], weights)
            fitted = fit_link(mixture, union)
            p_result = link(mixture, fitted["slope"], fitted["intercept"])
            for exponent in SIZE_EXPONENTS:
                if progress:
                    progress(f"capacity {c + 1}, shares {share}, size exponent {exponent:g}")
                gaps = {proxy: t.gap() for proxy, t in tally(rows, p_result, oof_call, labels, BUDGET, MIN_CHARS,
                                                               size_exponent=exponent).items()}
                criterion = float(np.mean(list(gaps.values())))
                table.append({"capacity": c, "shares": dict(zip(PARTS, share, strict=True)), "size_exponent": exponent,
                              **{proxy: round(g, 4) for proxy, g in gaps.items()}, "mean": round(criterion, 4)})
                if criterion > best:
                    best, chosen = criterion, (capacity, share, exponent, fitted, p_result)
    if chosen is None:
        raise ValueError("no candidate has a gap to close: too few decision points with needed results")
    capacity, share, exponent, fitted, p_result = chosen
    return Choice(capacity, share, exponent, fitted, table, p_result, oof_call)


def fit_mixture(rows: TrainingRows, choice: Choice) -> dict[str, Any]:
    """The result head as shipped: a part per proxy on every row at the chosen capacity, weighted by the
    base rates of these rows and the chosen shares (a part of no share left out); the link the chosen candidate's (fitted on its
    out-of-fold sums)."""
    X, labels = columns(rows.X), part_labels(rows)
    weights = part_weights([float(labels[p].mean()) for p in PARTS], choice.shares)
    parts = [{"label": p, "weight": w, "trees": fit_trees(X, labels[p], choice.capacity)}
             for p, w in zip(PARTS, weights, strict=True) if w > 0]  # a part of no share is not shipped
    return {"mixture": {"parts": parts, "link": choice.link}}


def groups_of(rows: TrainingRows) -> np.ndarray:
    """The group of every row: its instance (`calibration.dataset.group_of`)."""
    return np.asarray([group_of(s) for s in rows.sessions])


def scores_of(model: dict[str, Any], X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(result needed), P(call needed) of a model document's heads for full feature rows `X` (`TrainingRows.X`),
    scored as the local judge scores them."""
    cols = np.asarray([FEATURE_NAMES.index(name) for name in model["features"]])
    return (score(model["heads"]["keep_result"], X[:, cols], model["version"]),
            score(model["heads"]["keep_call"], X[:, cols], model["version"]))


def train(rows: TrainingRows, corpora: list[str] | None = None, scan_chars: int = READ_DEPTH,
          rarity: dict[str, Any] | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The model document: feature names, the depth they read (`rows` must be built reading it, with
    `rarity`'s tables), both heads, the size exponent and the model card's numbers."""
    model: dict[str, Any] = {"format": "jev-local-judge", "version": 3, "label": RESULT_LABEL,
                             "features": list(FEATURES), "scan_chars": scan_chars, "heads": {}, "card": {}}
    groups = groups_of(rows)
    call_y = call_label(rows).astype(float)
    model["heads"]["keep_call"], call_metrics, oof_call = fit_head(columns(rows.X), call_y, groups)
    call_metrics["label"] = TRAINING_LABEL
    choice = choose(rows, oof_call, progress)
    model["heads"]["keep_result"] = fit_mixture(rows, choice)
    model["size_exponent"] = choice.size_exponent
    union = result_label(rows)
    model["card"]["keep_result"] = {
        "label": RESULT_LABEL,
        **{f"auroc {p}": round(float(roc_auc_score(y, choice.oof)), 4) for p, y in part_labels(rows).items()},
        "auroc": round(float(roc_auc_score(union, choice.oof)), 4),
        "brier": round(float(brier_score_loss(union, choice.oof)), 4), "ece": round(ece(choice.oof, union), 4),
        "base_rate": round(float(union.mean()), 4), "reliability": reliability(choice.oof, union),
        "chosen": {"capacity": choice.capacity, "shares": dict(zip(PARTS, choice.shares, strict=True)),
                   "size_exponent": choice.size_exponent},
        "selection": choice.table}
    model["card"]["keep_call"] = call_metrics
    model["card"]["data"] = {"rows": len(rows.X), "sessions": len(set(rows.sessions.tolist())),
                             "instances": len(set(groups.tolist())), "decision_every_pairs": 8,
                             "protected_newest_pairs": 3, "corpus": corpora or []}
    if rarity is not None:
        model["rarity"] = rarity
    return model


def cross_model_cells(by_corpus: dict[str, TrainingRows], rarity: dict[str, Any], scan_chars: int, boot: int = BOOT,
                      progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """The recipe, selection included, trained on each of two corpora and scored on the other: per proxy,
    L of the judge, recency and the oracle and the gap closed, each with a 95 % interval over the test
    corpus's instances. The common tables are the dev sets' (`rarity`, both corpora: they define the
    strict proxy, and one corpus alone can be too few instances for a 2 % cut — DeepSeek's 22); no label
    of the test corpus enters training."""
    cells = []
    (a, rows_a), (b, rows_b) = by_corpus.items()
    for (train_name, train_rows), (test_name, test_rows) in (((a, rows_a), (b, rows_b)), ((b, rows_b), (a, rows_a))):
        model = train(train_rows, [train_name], scan_chars, rarity, progress)
        p_result, p_call = scores_of(model, test_rows.X)
        labels = {**part_labels(test_rows), LABEL_VERSION: test_rows.needed_result}
        for proxy, t in tally(test_rows, p_result, p_call, labels, BUDGET, MIN_CHARS,
                              size_exponent=model["size_exponent"]).items():
            cell = with_intervals(t, boot)
            cells.append({"train": train_name, "test": test_name, "proxy": proxy,
                          "size_exponent": model["size_exponent"],
                          **{k: [round(v, 4) for v in cell[k]] for k in ("judge", "recency", "oracle", "gap closed")}})
    return cells


def rarity_of(sources: list[str | Path], progress: Callable[[], None] | None = None) -> dict[str, Any]:
    """The `rarity` tables (`calibration.rarity.rarity_table`) of the sessions in `sources`, by instance."""
    def read() -> Iterator[Any]:
        for source in sources:
            for session, data in raw_trajectories(source):
                if progress:
                    progress()
                yield group_of(session), analyze(formats.load(orjson.loads(data), "mini-swe-agent"))

    return rarity_table(read())


def corpus_name(path: str | Path) -> str:
    """A data source's name without its archive suffixes, described when it is a known dev set."""
    name = Path(path).name
    for suffix in (".tar.xz", ".tar", ".json"):
        name = name.removesuffix(suffix)
    return CORPORA.get(name, name)


def checked_scan_chars(parser: argparse.ArgumentParser, value: int, flag: str = "--scan-chars") -> int:
    """A reading depth as given (`--scan-chars N`, this script's and the benchmarks' flag, or the `flag` that
    gave it), or the parser exits naming the flag and the rule."""
    if value < 1:
        parser.error(f"{flag} must be an integer >= 1 (got {value})")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calibration.train_local", description=__doc__.split("\n")[0])
    parser.add_argument("--data", action="append", help="trajectories: .tar.xz or a directory; repeat for "
                        "several (default: both dev sets in ../shared/data)")
    parser.add_argument("--out", required=True, help="where to write the model (the shipped weights are "
                        "jev/judges/local_model.json: name that path to replace them)")
    parser.add_argument("--scan-chars", type=int, default=READ_DEPTH, metavar="N",
                        help=f"characters of each result end the features read (default {READ_DEPTH}; recorded in "
                             "the file, and the judge reads that depth)")
    parser.add_argument("--no-cells", dest="cells", action="store_false",
                        help="leave the cross-model cells out of the card (they train the recipe twice more)")
    args = parser.parse_args(argv)
    checked_scan_chars(parser, args.scan_chars)
    sources = args.data or [str(p) for p in DEFAULT_DATA]
    missing = [s for s in sources if not Path(s).exists()]
    if missing:
        parser.error(f"--data: {', '.join(missing)} not found")
    from rich.progress import Progress
    with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("common words", total=None)
        rarity = rarity_of(sources, lambda: progress.advance(task))  # from the training sessions, before any row
        progress.update(task, description="decision points")
        by_corpus = {corpus_name(s): build_rows(s, progress=lambda _s: progress.advance(task),
                                                scan_chars=args.scan_chars, rarity=Rarity.of(rarity))
                     for s in sources}

        def say(text: str) -> None:
            progress.update(task, description=text)

        model = train(TrainingRows.concat(list(by_corpus.values())), list(by_corpus), args.scan_chars, rarity, say)
        if args.cells and len(sources) == 2:
            model["card"]["cells"] = cross_model_cells(by_corpus, rarity, args.scan_chars, progress=say)
    Path(args.out).write_bytes(orjson.dumps(model, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    for name in ("keep_result", "keep_call"):
        m = model["card"][name]
        print(f"{name}: AUROC {m['auroc']} (grouped out of fold), Brier {m['brier']}, ECE {m['ece']}, "
              f"base rate {m['base_rate']}", file=sys.stderr)
    chosen = model["card"]["keep_result"]["chosen"]
    print(f"chosen by grouped cross-validation: {chosen}", file=sys.stderr)
    for cell in model["card"].get("cells", ()):
        print(f"train {cell['train']} -> test {cell['test']}, {cell['proxy']}: gap closed {cell['gap closed']}",
              file=sys.stderr)
    print(f"wrote {args.out} from {model['card']['data']['rows']} rows in {model['card']['data']['sessions']} sessions",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
