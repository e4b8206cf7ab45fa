"""The judge protocol: one request (state + questions, and for in-process judges the transcript) in,
one probability or refusal per question out. Answers are checked here, never trusted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..analysis import Transcript
from ..errors import JudgeProtocolError
from ..questions import Question
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


def check_probability(value: Any, where: str) -> float:
    """`value` as a float if it is a probability (a finite number in [0, 1], not a bool), else the
    `JudgeProtocolError` "<where> contains an invalid probability"."""
    if not is_probability(value):
        raise JudgeProtocolError(f"{where} contains an invalid probability")
    return float(value)


def check_usage(usage: Mapping[str, Any], who: str) -> tuple[int, int]:
    """Input and output token counts of a reply's usage (absent = 0): integers, never negative."""
    tokens = []
    for name in ("input_tokens", "output_tokens"):
        n = usage.get(name, 0)
        if isinstance(n, bool) or not isinstance(n, int):
            raise JudgeProtocolError(f"{who} usage {name} must be an integer (got {n!r})")
        if n < 0:
            raise JudgeProtocolError(f"{who} usage must not be negative")
        tokens.append(n)
    return tokens[0], tokens[1]


def validate_answers(answers: Any, ids: Sequence[str]) -> dict[str, float | None]:
    """Probabilities by question id (None = refusal), or `JudgeProtocolError` for any invalid answer set."""
    if not isinstance(answers, Answers):
        raise JudgeProtocolError("empty compaction reply")
    got = answers.probabilities
    if not isinstance(got, Mapping) or not got:
        raise JudgeProtocolError("empty compaction reply")
    expected = set(ids)
    if got.keys() != expected:  # a keys view compares as a set: no copy of the answers' keys
        missing = sorted(expected - set(got))
        extra = sorted(set(got) - expected)
        raise JudgeProtocolError(f"answer keys do not match request keys (missing {missing[:3]}, extra {extra[:3]})")
    out: dict[str, float | None] = {}
    for qid in ids:
        value = got[qid]
        if type(value) is float and 0.0 <= value <= 1.0:  # the usual answer (NaN fails the comparison)
            out[qid] = value
        elif value is REFUSAL:
            out[qid] = None
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise JudgeProtocolError(f"answer for question {qid!r} must be a probability or a refusal "
                                     f"(got {type(value).__name__})")
        else:
            out[qid] = check_probability(value, f"answer for question {qid!r}")
    check_usage({"input_tokens": answers.input_tokens, "output_tokens": answers.output_tokens}, "judge")
    return out
