"""The embedded local judge: a small trained model over decision-time features, offline, no key.

Two heads — P(call still needed), P(result still needed) — each a standardised logistic regression with
an isotonic calibration map, trained by `python -m calibration.train_local` on real agent trajectories
and shipped as JSON in the package (`local_model.json`, never pickle). Features come from
`jev.judges.features` and see only the transcript up to the decision point. Deterministic.
"""

from __future__ import annotations

import functools
import weakref
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..errors import ConfigError, JudgeError
from .base import Answers, JudgeRequest
from .features import FEATURE_NAMES, feature_matrix

MODEL = "jev-local-1"
_HEADS = ("keep_call", "keep_result")


@functools.lru_cache(maxsize=4)
def load_model(path: str | None = None) -> dict[str, Any]:
    """The model document (JSON), checked against the features this code computes; `ConfigError` names
    the field and the rule when it is not a model this version can run."""
    try:
        text = (Path(path).read_bytes() if path
                else resources.files(__package__).joinpath("local_model.json").read_bytes())
    except OSError as exc:
        raise ConfigError(f"local judge model: cannot read {path} ({exc.strerror or exc})") from None
    try:
        model = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"local judge model: not JSON ({exc})") from None
    if not isinstance(model, dict) or model.get("format") != "jev-local-judge" or model.get("version") != 1:
        raise ConfigError("local judge model: unknown format or version")
    if tuple(model.get("features", ())) != FEATURE_NAMES:
        raise ConfigError("local judge model: its features do not match this version's (retrain it)")
    heads = model.get("heads")
    for head in _HEADS:
        _check_head(heads.get(head) if isinstance(heads, dict) else None, f"heads.{head}")
    return model


def _numbers(value: Any, size: int | None = None) -> bool:
    return (isinstance(value, list) and (size is None or len(value) == size)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value))


def _check_head(spec: Any, where: str) -> None:
    n = len(FEATURE_NAMES)
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
    x, y = (iso.get("x"), iso.get("y")) if isinstance(iso, dict) else (None, None)
    if not (_numbers(x) and _numbers(y, len(x)) and x and all(a <= b for a, b in zip(x, x[1:]))):
        raise ConfigError(f"local judge model: {where}.isotonic must hold x (ascending) and y, lists of as "
                          "many numbers")


class _Head:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.mean = np.asarray(spec["mean"], dtype=float)
        self.scale = np.asarray(spec["scale"], dtype=float)
        self.coef = np.asarray(spec["coef"], dtype=float)
        self.intercept = float(spec["intercept"])
        self.iso_x = np.asarray(spec["isotonic"]["x"], dtype=float)
        self.iso_y = np.asarray(spec["isotonic"]["y"], dtype=float)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        z = ((X - self.mean) / self.scale) @ self.coef + self.intercept
        return np.interp(1.0 / (1.0 + np.exp(-z)), self.iso_x, self.iso_y)


class LocalJudge:
    """The offline default judge. Needs the in-process transcript; sends nothing anywhere.

    `model_path` loads other weights (e.g. retrained on your own shadow logs). Stateless: every plan reads
    the history it is given, in one vectorised pass. It receives no state, so the state budget does not
    bind it."""

    receives_state = False

    def __init__(self, model_path: str | None = None) -> None:
        spec = load_model(model_path)
        self.model = MODEL if model_path is None else f"{MODEL}:{Path(model_path).name}"
        self.card = spec.get("card", {})
        self._heads = {name: _Head(spec["heads"][name]) for name in _HEADS}
        # the last transcript scored, held weakly: a plan's batches share one scoring, and nothing of a
        # history outlives its plan here
        self._last: tuple[weakref.ref[Any], dict[str, tuple[float, float]]] | None = None

    def scores(self, transcript: Any) -> dict[str, tuple[float, float]]:
        """(keep_call, keep_result) for every pair of the transcript, at its end."""
        if self._last is not None and self._last[0]() is transcript:
            return self._last[1]
        keys, X = feature_matrix(transcript)
        out: dict[str, tuple[float, float]] = {}
        if keys:
            call = [round(p, 4) for p in self._heads["keep_call"](X).tolist()]
            result = [round(p, 4) for p in self._heads["keep_result"](X).tolist()]
            out = dict(zip(keys, zip(call, result, strict=True), strict=True))
        self._last = (weakref.ref(transcript), out)
        return out

    async def ask(self, request: JudgeRequest) -> Answers:
        if request.transcript is None:
            raise JudgeError("LocalJudge needs the in-process transcript in the request")
        scores = self.scores(request.transcript)
        out: dict[str, float] = {}
        for q in request.questions:
            kind, _, key = q.id.partition("_")
            if key not in scores or kind not in ("call", "result"):
                raise JudgeError(f"LocalJudge cannot answer question {q.id!r}")
            out[q.id] = scores[key][0] if kind == "call" else scores[key][1]
        return Answers(out, self.model, 0, 0)
