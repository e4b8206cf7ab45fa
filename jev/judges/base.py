"""The judge protocol: one request (state + questions, and for in-process judges the transcript) in,
one probability or refusal per question out. Answers are checked here, never trusted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import JudgeProtocolError
from ..reading.analysis import Transcript
from ..support.validate import is_probability
from .questions import Question


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
    """Anything with `async ask(request) -> Answers`: the one method a plan calls. Three attributes are
    optional, and read once per use by `traits` (their defaults when absent or not of their type):

    - `receives_state: bool` (True) — False for a judge that reads the transcript in process and never sends
      the state anywhere: the state is then not built, and `max_state_tokens` / `max_request_tokens` (limits
      on what a remote judge receives) do not bind it;
    - `model: str` (its class name) — the name records and calibrated thresholds carry;
    - `size_exponent: float` in [0, 4] (None: the policy's default) — the exponent its probabilities were
      tuned to be ranked with (`CompactionConfig.size_exponent` None takes it)."""

    async def ask(self, request: JudgeRequest) -> Answers: ...


@dataclass(frozen=True, slots=True)
class JudgeTraits:
    """What a judge says of itself beyond `ask` (`Judge`'s optional attributes, defaults filled in)."""

    name: str
    receives_state: bool
    size_exponent: float | None  # None: it names none


def traits(judge: object) -> JudgeTraits:
    """`judge`'s optional attributes (`Judge`), each with its default when absent or not of its type: a judge
    that does not say receives the state (as remote ones do), is named by its class, and names no size
    exponent."""
    model = getattr(judge, "model", None)
    exponent = getattr(judge, "size_exponent", None)
    usable = isinstance(exponent, (int, float)) and not isinstance(exponent, bool) and 0 <= exponent <= 4
    return JudgeTraits(model if isinstance(model, str) and model.strip() else type(judge).__name__,
                       getattr(judge, "receives_state", True) is not False,
                       float(exponent) if usable else None)  # type: ignore[arg-type]


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
