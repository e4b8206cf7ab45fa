"""The embedded local judge: an honest heuristic over what is known at the decision point.

It reads the in-process transcript (never the network) and scores each candidate pair from four signals:
its age in pairs, whether a later call repeated the same tool with the same input (superseded), whether
distinctive strings of its result appear later, and whether parts of its input (paths, identifiers) are
mentioned later. It is deterministic and needs no key. It is *not* a trained model: the trained judge
replaces it in a later version, with a model card. Calibrate thresholds before enforcing with it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..errors import JudgeError
from ..transcript import Pair, TextBlock, ToolUseBlock, Transcript, canonical_json
from .base import Answers, JudgeRequest

MODEL = "jev-local-heuristic-1"
_WORDS = re.compile(r"[A-Za-z0-9_./-]+")
_PARTS = re.compile(r"[A-Za-z][A-Za-z0-9]{3,}")
_RESULT_SCAN_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class PairFeatures:
    """Signals for one pair, all computed from messages up to the decision point (the transcript's end)."""

    age_pairs: int
    superseded: bool
    result_refs: int
    input_referenced: bool


def _distinctive(word: str) -> bool:
    return len(word) >= 6 and (any(c in word for c in "_./-") or any(c.isdigit() for c in word) or len(word) >= 12)


def features(transcript: Transcript) -> dict[str, PairFeatures]:
    """Features per pair key, in one pass over the transcript."""
    last_seen: dict[str, int] = {}  # lower-cased word or word part -> last message index mentioning it
    last_call: dict[tuple[str, bytes], int] = {}
    for i, message in enumerate(transcript.messages):
        for block in message.content:
            if isinstance(block, TextBlock):
                text = block.text
            elif isinstance(block, ToolUseBlock):
                text = canonical_json(block.input).decode()
                last_call[(block.name, canonical_json(block.input))] = i
            else:
                continue
            for word in _WORDS.findall(text.lower()):
                last_seen[word] = i
                for part in _PARTS.findall(word):
                    last_seen[part] = i
    out: dict[str, PairFeatures] = {}
    n = len(transcript.pairs)
    for index, pair in enumerate(transcript.pairs):
        out[pair.key] = _pair_features(pair, n - index - 1, last_seen, last_call)
    return out


def _pair_features(pair: Pair, age: int, last_seen: dict[str, int],
                   last_call: dict[tuple[str, bytes], int]) -> PairFeatures:
    after = pair.result_message
    words = {w for w in _WORDS.findall(pair.result.text[:_RESULT_SCAN_CHARS].lower()) if _distinctive(w)}
    result_refs = sum(1 for w in words if last_seen.get(w, -1) > after)
    input_words = [w for text in _string_values(pair.call.input) for w in _WORDS.findall(text.lower())]
    parts = {p for w in input_words for p in _PARTS.findall(w)} | {w for w in input_words if _distinctive(w)}
    input_referenced = any(last_seen.get(p, -1) > after for p in parts)
    superseded = last_call.get((pair.tool, canonical_json(pair.call.input)), -1) > pair.call_message
    return PairFeatures(age, superseded, result_refs, input_referenced)


def _string_values(value: Any) -> list[str]:
    """The string leaves of a JSON value: what an input mentions, without its keys."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _string_values(v)]
    if isinstance(value, list):
        return [s for v in value for s in _string_values(v)]
    return []


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def score(f: PairFeatures) -> tuple[float, float]:
    """(P(call still needed), P(result still needed)) from the features."""
    referenced = min(f.result_refs, 3) / 3
    z_result = 1.0 - 0.8 * min(f.age_pairs, 10) + 3.0 * referenced + 2.5 * f.input_referenced - 5.0 * f.superseded
    z_call = 2.0 - 0.3 * min(f.age_pairs, 10) + 2.0 * referenced + 2.0 * f.input_referenced - 4.0 * f.superseded
    return round(_sigmoid(z_call), 4), round(_sigmoid(z_result), 4)


class LocalJudge:
    """The offline default judge. Needs the in-process transcript; sends nothing anywhere."""

    model = MODEL

    def __init__(self) -> None:
        self._last: tuple[Transcript, dict[str, PairFeatures]] | None = None  # batches of one plan share it

    async def ask(self, request: JudgeRequest) -> Answers:
        if request.transcript is None:
            raise JudgeError("LocalJudge needs the in-process transcript in the request")
        if self._last is None or self._last[0] is not request.transcript:
            self._last = (request.transcript, features(request.transcript))
        feats = self._last[1]
        out: dict[str, float] = {}
        for q in request.questions:
            kind, _, key = q.id.partition("_")
            if key not in feats or kind not in ("call", "result"):
                raise JudgeError(f"LocalJudge cannot answer question {q.id!r}")
            keep_call, keep_result = score(feats[key])
            out[q.id] = keep_call if kind == "call" else keep_result
        return Answers(out, MODEL, 0, 0)
