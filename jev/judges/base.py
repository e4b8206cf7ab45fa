"""The judge protocol: one request (state + questions, and for in-process judges the transcript) in,
one probability or refusal per question out. Answers are checked here, never trusted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import JudgeError
from ..questions import Question
from ..transcript import Transcript
from ..validate import is_probability


class Refusal:
    """An explicit per-question refusal: a valid answer meaning "do not know" (the pair is kept)."""

    _instance: Refusal | None = None

    def __new__(cls) -> Refusal:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "REFUSAL"


REFUSAL = Refusal()


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """What a judge is asked. Remote judges send `state` and `questions` only; tool outputs never leave
    the process. In-process judges may also read `transcript` (validated, with its pair table)."""

    state: Mapping[str, Any]
    questions: tuple[Question, ...]
    transcript: Transcript | None = None


@dataclass(frozen=True, slots=True)
class Answers:
    """A judge's reply as received: `probabilities` maps question ids to a value or `REFUSAL`."""

    probabilities: Mapping[str, Any]
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0


@runtime_checkable
class Judge(Protocol):
    """Anything with `async ask(request) -> Answers`. A judge that reads the transcript in process and never
    sends the state anywhere sets `receives_state = False`: the state is then not built, and
    `max_state_tokens` / `max_request_tokens` (limits on what a remote judge receives) do not bind it."""

    async def ask(self, request: JudgeRequest) -> Answers: ...


def receives_state(judge: Any) -> bool:
    """Whether the judge receives the state (a judge that does not say is taken to, as remote ones do)."""
    return getattr(judge, "receives_state", True) is not False


def judge_name(judge: Any) -> str:
    """The name records and calibrated thresholds carry for a judge: its `model`, else its class name."""
    model = getattr(judge, "model", None)
    return model if isinstance(model, str) and model.strip() else type(judge).__name__


def validate_answers(answers: Any, ids: Sequence[str]) -> dict[str, float | None]:
    """Probabilities by question id (None = refusal), or `JudgeError` for any invalid answer set."""
    if not isinstance(answers, Answers):
        raise JudgeError("empty compaction reply")
    got = answers.probabilities
    if not isinstance(got, Mapping) or not got:
        raise JudgeError("empty compaction reply")
    expected = set(ids)
    if set(got) != expected:
        missing = sorted(expected - set(got))
        extra = sorted(set(got) - expected)
        raise JudgeError(f"answer keys do not match request keys (missing {missing[:3]}, extra {extra[:3]})")
    out: dict[str, float | None] = {}
    for qid in ids:
        value = got[qid]
        if type(value) is float and 0.0 <= value <= 1.0:  # the usual answer (NaN fails the comparison)
            out[qid] = value
        elif value is REFUSAL:
            out[qid] = None
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise JudgeError(f"answer for question {qid!r} must be a probability or a refusal "
                             f"(got {type(value).__name__})")
        elif not is_probability(value):
            raise JudgeError(f"answer for question {qid!r} contains an invalid probability")
        else:
            out[qid] = float(value)
    for name in ("input_tokens", "output_tokens"):
        usage = getattr(answers, name)
        if isinstance(usage, bool) or not isinstance(usage, int) or usage < 0:
            raise JudgeError(f"judge usage {name} must be a non-negative integer")
    return out
