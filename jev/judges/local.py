"""The embedded local judge: a small trained model over decision-time features, offline, no key.

Two heads — P(call still needed), P(result still needed) — trained by `python -m calibration.train_local`
on real agent trajectories and shipped as JSON in the package (`local_model.json`, never pickle), scored
with numpy. The call head is the mean of a standardised logistic regression (isotonic calibration map)
and shallow boosted trees; the result head (version 3) a mixture of boosted trees, one per label proxy,
each weighted by the inverse of its proxy's base rate, then a logistic map onto the probability that
either proxy calls the result needed. Features come from `jev.judges.features` and see only the
transcript up to the decision point; the words too common to count as a result's own ship with the
weights (`rarity`). Deterministic.
"""

from __future__ import annotations

import functools
import itertools
import weakref
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..errors import ConfigError, JudgeError
from .base import Answers, JudgeRequest
from .features import AGENT_FEATURES, FEATURE_NAMES, LINE_NUMBER_FEATURES, SCAN_CHARS, FeatureReader

MODEL = "jev-local-8"  # a new name with new weights: thresholds calibrated for the old ones are refused
_HEADS = ("keep_call", "keep_result")


DEPTH = 3  # trees are stored complete to this depth: 7 split nodes (heap order) and 8 leaves each (the
# scorer reads a leaf from the 7 splits' outcomes, packed into one byte)
_SPLITS, _LEAVES = 2 ** DEPTH - 1, 2 ** DEPTH


@functools.lru_cache(maxsize=4)
def load_model(path: str | None = None) -> dict[str, Any]:
    """The model document (JSON), checked against the features this code computes; `ConfigError` names
    the field and the rule when it is not a model this code can run. Every version names the
    features it is scored on (names this version computes) and may name `scan_chars`, the characters of each
    result end they read (120 when absent). Version 1 (`jev-local-1`): a linear head. Version 2 (`jev-local-2`
    to `jev-local-4`): each head a blend of a linear head and boosted trees. Version 3: each head a blend or
    a mixture (`mixture`: weighted boosted trees and a logistic map), with the size exponent the weights
    were tuned at (`size_exponent`) and the common words (`rarity.common_words`, sorted `portable`
    hashes)."""
    try:
        text = (Path(path).read_bytes() if path
                else resources.files(__package__).joinpath("local_model.json").read_bytes())
    except OSError as exc:
        raise ConfigError(f"local judge model: cannot read {path} ({exc.strerror or exc})") from None
    try:
        model = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"local judge model: not JSON ({exc})") from None
    if not isinstance(model, dict) or model.get("format") != "jev-local-judge" or model.get("version") not in (1, 2, 3):
        raise ConfigError("local judge model: unknown format or version")
    features = model.get("features", ())
    # every version names its features and is scored on those columns: a version-1 file lists fewer
    # features than this code computes, all of them among its own
    if (not isinstance(features, list) or not features or not all(isinstance(f, str) for f in features)
            or not set(features) <= set(FEATURE_NAMES) or len(set(features)) != len(features)):
        raise ConfigError("local judge model: features must name distinct features this version computes "
                          "(retrain it)")
    scan = model.setdefault("scan_chars", SCAN_CHARS)  # a file without it was trained at the default depth
    if isinstance(scan, bool) or not isinstance(scan, int) or scan < 1:
        raise ConfigError("local judge model: scan_chars must be an integer >= 1 (the characters of each result "
                          "end the features read)")
    heads = model.get("heads")
    for head in _HEADS:
        spec = heads.get(head) if isinstance(heads, dict) else None
        if model["version"] == 1:
            _check_linear(spec, f"heads.{head}", len(features))
        elif model["version"] == 3 and isinstance(spec, dict) and "mixture" in spec:
            _check_mixture(spec["mixture"], f"heads.{head}.mixture", len(features))
        else:
            _check_blend(spec, f"heads.{head}", len(features))
    if model["version"] == 3:
        exponent: Any = model.get("size_exponent")  # JSON: checked here
        if not _numbers([exponent]) or not 0 <= exponent <= 4:
            raise ConfigError("local judge model: size_exponent must be a number in [0, 4] (the exponent the "
                              "weights were tuned at)")
        words = (model.get("rarity") or {}).get("common_words", [])
        if not (isinstance(words, list) and all(isinstance(w, int) and not isinstance(w, bool) and 0 <= w < 2 ** 40
                                                for w in words) and words == sorted(set(words))):
            raise ConfigError("local judge model: rarity.common_words must be distinct integers in [0, 2**40), "
                              "ascending")
    return model


def _numbers(value: Any, size: int | None = None) -> bool:
    return (isinstance(value, list) and (size is None or len(value) == size)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value))


def _check_linear(spec: Any, where: str, n: int) -> None:
    if not isinstance(spec, dict):
        raise ConfigError(f"local judge model: {where} must be an object")
    for key in ("mean", "scale", "coef"):
        if not _numbers(spec.get(key), n):
            raise ConfigError(f"local judge model: {where}.{key} must be a list of {n} numbers")
    if 0 in spec["scale"]:
        raise ConfigError(f"local judge model: {where}.scale must not contain 0")
    if not _numbers([spec.get("intercept")]):
        raise ConfigError(f"local judge model: {where}.intercept must be a number")
    iso = spec.get("isotonic")
    x: Any
    y: Any
    x, y = (iso.get("x"), iso.get("y")) if isinstance(iso, dict) else (None, None)
    if not (_numbers(x) and _numbers(y, len(x)) and x and all(a <= b for a, b in itertools.pairwise(x))):
        raise ConfigError(f"local judge model: {where}.isotonic must hold x (ascending) and y, lists of as "
                          "many numbers")


def _check_blend(spec: Any, where: str, n: int) -> None:
    if not isinstance(spec, dict):
        raise ConfigError(f"local judge model: {where} must be an object")
    _check_linear(spec.get("linear"), f"{where}.linear", n)
    blend: Any = spec.get("blend")
    if not _numbers([blend]) or not 0.0 <= blend <= 1.0:
        raise ConfigError(f"local judge model: {where}.blend must be a number in [0, 1]")
    _check_trees(spec.get("trees"), where, n)


def _check_trees(trees: Any, where: str, n: int) -> None:
    if not isinstance(trees, dict) or not _numbers([trees.get("baseline")]):
        raise ConfigError(f"local judge model: {where}.trees must be an object with a numeric baseline")
    rows: dict[str, Any] = {key: trees.get(key) for key in ("feature", "threshold", "value")}
    if not all(isinstance(v, list) and v for v in rows.values()) or len({len(v) for v in rows.values()}) != 1:
        raise ConfigError(f"local judge model: {where}.trees must hold feature, threshold and value, one row "
                          "per tree")
    for k, (feature, threshold, value) in enumerate(zip(*rows.values(), strict=True)):
        if not (_numbers(feature, _SPLITS) and all(isinstance(f, int) and 0 <= f < n for f in feature)):
            raise ConfigError(f"local judge model: {where}.trees.feature[{k}] must be {_SPLITS} feature "
                              f"indices below {n}")
        if not _numbers(threshold, _SPLITS) or not _numbers(value, _LEAVES):
            raise ConfigError(f"local judge model: {where}.trees.threshold[{k}] and value[{k}] must be "
                              f"{_SPLITS} and {_LEAVES} numbers")


def _check_mixture(spec: Any, where: str, n: int) -> None:
    parts = spec.get("parts") if isinstance(spec, dict) else None
    if not isinstance(parts, list) or not parts:
        raise ConfigError(f"local judge model: {where}.parts must be a non-empty list")
    for k, part in enumerate(parts):
        if not isinstance(part, dict) or not _numbers([part.get("weight")]) or not part["weight"] > 0:
            raise ConfigError(f"local judge model: {where}.parts[{k}].weight must be a number > 0")
        _check_trees(part.get("trees"), f"{where}.parts[{k}]", n)
    link = spec.get("link")
    if not isinstance(link, dict) or not _numbers([link.get("slope"), link.get("intercept")]):
        raise ConfigError(f"local judge model: {where}.link must hold a numeric slope and intercept")


def logistic(X: np.ndarray, mean: Any, scale: Any, coef: Any, intercept: float) -> np.ndarray:
    """A standardised logistic regression's probability, before calibration (the judge's linear head and
    the training script's out-of-fold scores both compute it here)."""
    return 1.0 / (1.0 + np.exp(-(((X - mean) / scale) @ coef + intercept)))


class _Linear:
    """A standardised logistic regression, then its isotonic calibration map."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.mean = np.asarray(spec["mean"], dtype=float)
        self.scale = np.asarray(spec["scale"], dtype=float)
        self.coef = np.asarray(spec["coef"], dtype=float)
        self.intercept = float(spec["intercept"])
        self.iso_x = np.asarray(spec["isotonic"]["x"], dtype=float)
        self.iso_y = np.asarray(spec["isotonic"]["y"], dtype=float)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return np.interp(logistic(X, self.mean, self.scale, self.coef, self.intercept), self.iso_x, self.iso_y)


def _leaf_of_code() -> np.ndarray:
    """The leaf a depth-3 tree reaches for each 7-bit code of its splits (bit k: split k goes right):
    from split k a row goes to 2k+1, or 2k+2 when its bit is set; leaves follow the 7 splits."""
    out = np.empty(2 ** _SPLITS, dtype=np.intp)
    for code in range(out.size):
        node = 0
        for _ in range(DEPTH):
            node = 2 * node + 1 + (code >> node & 1)
        out[code] = node - _SPLITS
    return out


_LEAF_OF_CODE = _leaf_of_code()
_BITS = (1 << np.arange(_SPLITS)).astype(np.uint8)  # split k's bit in a tree's code


class _Trees:
    """One set of boosted trees, each complete to depth 3 (a shallower leaf is stored as a subtree whose
    splits all go left): a row goes right where its feature is above the threshold; the probability is the
    logistic of the baseline plus the leaves reached. Scored by a `_Forest` (its own, or one shared by
    every tree set of a model)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.baseline = float(spec["baseline"])
        self.feature = np.asarray(spec["feature"], dtype=np.intp)  # trees x splits
        self.threshold = np.asarray(spec["threshold"], dtype=float)
        self.value = np.asarray(spec["value"], dtype=float)  # trees x leaves
        self._own: _Forest | None = None

    def __call__(self, X: np.ndarray, scored: dict[_Trees, np.ndarray] | None = None) -> np.ndarray:
        """P from these trees: looked up in `scored` (a shared forest's output), else scored alone."""
        if scored is not None:
            return scored[self]
        if self._own is None:
            self._own = _Forest([self])
        return self._own(X)[self]


class _Forest:
    """Tree sets scored together, for all rows and all trees at once. Each distinct (feature, threshold)
    split is compared once for all rows (all splits in one comparison, each its feature's column against its
    threshold); a tree's 7 outcomes are packed into one code per tree and row (bit k: split k goes right),
    and the code looks its leaf up in a table: no walk, one gather. Each set's probability sums its own
    trees' leaves."""

    def __init__(self, sets: list[_Trees]) -> None:
        feature = np.concatenate([t.feature for t in sets])
        threshold = np.concatenate([t.threshold for t in sets])
        n = len(feature)
        unique, index = np.unique(np.rec.fromarrays([feature.ravel(), threshold.ravel()]), return_inverse=True)
        self.split_feature = np.asarray(unique["f0"], dtype=np.intp)
        self.split_threshold = np.asarray(unique["f1"], dtype=np.float64)[:, None]
        self.index = index.reshape(n, _SPLITS)  # trees x splits: each split's distinct comparison
        self.table = np.concatenate([t.value for t in sets])[:, _LEAF_OF_CODE].ravel()  # trees x codes: leaf values
        # where each tree's codes start (int32: adding the uint8 codes to it costs ~2/3 of intp's)
        self.first_code = (np.arange(n, dtype=np.int32) * 2 ** _SPLITS)[:, None]
        ends = np.cumsum([len(t.feature) for t in sets]).tolist()
        self.sets = [(t, start, end) for t, start, end in zip(sets, [0, *ends[:-1]], ends, strict=True)]

    def __call__(self, X: np.ndarray) -> dict[_Trees, np.ndarray]:
        outcomes = np.greater(X.T[self.split_feature], self.split_threshold)  # splits x rows, in one comparison
        right = outcomes.view(np.uint8)[self.index]  # trees x 7 x rows
        code = np.einsum("tkr,k->tr", right, _BITS)  # bit k: split k goes right
        leaves = np.take(self.table, code + self.first_code)  # trees x rows
        return {t: 1.0 / (1.0 + np.exp(-(t.baseline + leaves[start:end].sum(axis=0))))
                for t, start, end in self.sets}


def score(spec: dict[str, Any], X: np.ndarray, version: int = 2) -> np.ndarray:
    """P(needed) from one head's spec on the model's feature columns `X` (what the judge computes; the
    training script and the benchmarks score with it too)."""
    return head_of(spec, version)(X)


def score_trees(spec: dict[str, Any], X: np.ndarray) -> np.ndarray:
    """The probability of a head's boosted trees alone (`spec` is its `trees` object)."""
    return _Trees(spec)(X)


class _Blend:
    """A linear head alone (version 1), or its blend with boosted trees (versions 2 and 3)."""

    def __init__(self, spec: dict[str, Any], version: int) -> None:
        self.linear = _Linear(spec if version == 1 else spec["linear"])
        self.trees = None if version == 1 else _Trees(spec["trees"])
        self.blend = 1.0 if version == 1 else float(spec["blend"])

    def tree_sets(self) -> list[_Trees]:
        return [] if self.trees is None else [self.trees]

    def __call__(self, X: np.ndarray, scored: dict[_Trees, np.ndarray] | None = None) -> np.ndarray:
        """P(needed); `scored`: its trees' probabilities, when a shared forest scored them."""
        p = self.linear(X)
        return p if self.trees is None else self.blend * p + (1.0 - self.blend) * self.trees(X, scored)


class _Mixture:
    """Boosted trees per label proxy, their probabilities summed with weights (each the inverse of its
    proxy's base rate, scaled to sum to 1: a rare proxy's signal counts as much as a common one's), then
    a logistic map of the sum's log onto P(needed under either proxy)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.parts = [(float(part["weight"]), _Trees(part["trees"])) for part in spec["parts"]]
        self.slope, self.intercept = float(spec["link"]["slope"]), float(spec["link"]["intercept"])

    def tree_sets(self) -> list[_Trees]:
        return [trees for _w, trees in self.parts]

    def __call__(self, X: np.ndarray, scored: dict[_Trees, np.ndarray] | None = None) -> np.ndarray:
        """P(needed); `scored`: its trees' probabilities, when a shared forest scored them."""
        return link(mixed([trees(X, scored) for _w, trees in self.parts], [w for w, _t in self.parts]),
                    self.slope, self.intercept)


def mixed(probabilities: list[np.ndarray], weights: list[float]) -> np.ndarray:
    """The mixture's sum: each part's probability times its weight."""
    total = weights[0] * probabilities[0]
    for w, p in zip(weights[1:], probabilities[1:], strict=True):  # in order, as the shipped scores were summed
        total = total + w * p
    return total


def link(mixture: np.ndarray, slope: float, intercept: float) -> np.ndarray:
    """The mixture's probability: logistic(slope * log(sum) + intercept)."""
    return 1.0 / (1.0 + np.exp(-(slope * np.log(np.maximum(mixture, 1e-12)) + intercept)))


def head_of(spec: dict[str, Any], version: int) -> _Blend | _Mixture:
    """One head as its spec says: a mixture, or a (linear or blended) head."""
    return _Mixture(spec["mixture"]) if version == 3 and "mixture" in spec else _Blend(spec, version)


class LocalJudge:
    """The offline default judge. Needs the in-process transcript; sends nothing anywhere.

    `model_path` loads other weights (e.g. retrained on your own shadow logs). Every plan reads the history
    it is given, in one vectorised pass; what it read of the last history is kept (replaced whole each
    time), so a history a compactor extended from that one (`jev.reading.analysis.extend`) has only its new
    messages read — the scores are a first reading's. It receives no state, so the state budget does not
    bind it."""

    receives_state = False

    def __init__(self, model_path: str | None = None) -> None:
        spec = load_model(model_path)
        self.model = MODEL if model_path is None else f"{MODEL}:{Path(model_path).name}"
        self.card = spec.get("card", {})
        self._heads = {name: head_of(spec["heads"][name], spec["version"]) for name in _HEADS}
        sets = [t for head in self._heads.values() for t in head.tree_sets()]
        self._forest = _Forest(sets) if sets else None  # every head's trees scored at once
        self._columns = np.asarray([FEATURE_NAMES.index(f) for f in spec["features"]], dtype=np.intp)
        self.scan_chars: int = spec["scan_chars"]  # what the weights were trained reading
        self._lines = "result_lines" in spec["features"]  # the one feature read over whole results
        self._common = np.asarray((spec.get("rarity") or {}).get("common_words", []), dtype=np.uint64)
        self.size_exponent: float = float(spec.get("size_exponent", 1.0))  # what its ranking was tuned at
        # the features, read again only where a history grew from the last one read
        named = set(spec["features"])  # what the model is scored on: reading nothing it does not use
        self._reader = FeatureReader(self.scan_chars, self._lines, self._common, not AGENT_FEATURES.isdisjoint(named),
                                     not LINE_NUMBER_FEATURES.isdisjoint(named))
        # the last transcript scored, held weakly: a plan's batches share one scoring, and nothing of a
        # history outlives its plan here
        self._last: tuple[weakref.ref[Any], dict[str, float]] | None = None
        self._last_scores: tuple[weakref.ref[Any], dict[str, tuple[float, float]]] | None = None

    def scores(self, transcript: Any) -> dict[str, tuple[float, float]]:
        """(keep_call, keep_result) for every pair of the transcript, at its end (from `answers`, made
        once per transcript)."""
        if self._last_scores is not None and self._last_scores[0]() is transcript:
            return self._last_scores[1]
        answers = self.answers(transcript)
        out = {pair.key: (answers[f"call_{pair.key}"], answers[f"result_{pair.key}"]) for pair in transcript.pairs}
        self._last_scores = (weakref.ref(transcript), out)
        return out

    def answers(self, transcript: Any) -> dict[str, float]:
        """Every pair's two probabilities by question id (`call_tK`, `result_tK`), at the transcript's end:
        one scoring per transcript, what `ask` answers from."""
        if self._last is not None and self._last[0]() is transcript:
            return self._last[1]
        keys, X = self._reader(transcript)
        X = X[:, self._columns]
        answers: dict[str, float] = {}
        if keys:
            scored = self._forest(X) if self._forest is not None else None
            answers = dict(zip([f"call_{k}" for k in keys],
                               np.round(self._heads["keep_call"](X, scored), 4).tolist(), strict=True))
            answers.update(zip([f"result_{k}" for k in keys],
                               np.round(self._heads["keep_result"](X, scored), 4).tolist(), strict=True))
        self._last = (weakref.ref(transcript), answers)
        return answers

    async def ask(self, request: JudgeRequest) -> Answers:
        if request.transcript is None:
            raise JudgeError("LocalJudge needs the in-process transcript in the request")
        answers = self.answers(request.transcript)
        try:
            out = {q.id: answers[q.id] for q in request.questions}
        except KeyError as exc:
            raise JudgeError(f"LocalJudge cannot answer question {exc.args[0]!r}") from None
        return Answers(out, self.model, 0, 0)
