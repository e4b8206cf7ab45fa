"""The two yes/no questions per candidate pair and their batching under the request budget (SPEC §5)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import StateBudgetError
from ..model.canonical import canonical_json
from ..reading.analysis import Pair
from ..reading.state import estimate_tenths, whole_tokens
from ..support.quick import quick_init

ENVELOPE_TOKENS = 20


def call_question(key: str) -> str:
    return (f"Knowing that tool call {key} occurred, with its input, is still needed to continue this task "
            "correctly.")


def result_question(key: str) -> str:
    return (f"The full result of tool call {key} is still needed verbatim for the next work; removing it from "
            "active context risks losing necessary evidence.")


_TEXT = {"call": call_question, "result": result_question}


@quick_init
@dataclass(frozen=True, slots=True)
class Question:
    """One yes/no question: `id` is `call_tK` or `result_tK`."""

    id: str
    instructions: str

    def wire(self) -> dict[str, str]:
        """The System One `noul` question object."""
        return {"type": "noul", "instructions": self.instructions}


@quick_init
@dataclass(frozen=True, slots=True)
class Batch:
    """Questions sent together with the full state in one judge request."""

    questions: tuple[Question, ...]
    tokens: int

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(q.id for q in self.questions)


def questions_for(pair: Pair) -> tuple[Question, Question]:
    """The pair's two questions (values of its key alone: made once per key and reused by later plans)."""
    return _questions(pair.key)


@functools.lru_cache(maxsize=16384)
def _questions(key: str) -> tuple[Question, Question]:
    return Question(f"call_{key}", call_question(key)), Question(f"result_{key}", result_question(key))


def _entry_tenths(question: Question) -> int:
    """Estimated tenths of tokens of `"id":{...}` inside the questions map.

    Entries are joined by `,` and wrapped in `{}` (0.9 tokens each); entry borders fall on quote
    characters, so the estimate of the whole map is exactly the sum of its parts. A question's entry
    differs from its kind's only in the key's digits, so it is computed once per (kind, digit count).
    """
    kind, _, key = question.id.partition("_")
    if key[:1] == "t" and key[1:].isdigit() and question.instructions == _TEXT[kind](key):
        return _template_tenths(kind, len(key) - 1)
    return estimate_tenths(canonical_json({question.id: question.wire()}).decode()[1:-1])


@functools.lru_cache(maxsize=64)
def _template_tenths(kind: str, digits: int) -> int:
    key = "t" + "1" * digits
    q = Question(f"{kind}_{key}", _TEXT[kind](key))
    return estimate_tenths(canonical_json({q.id: q.wire()}).decode()[1:-1])


_BRACES, _COMMA = 18, 9


def pair_tenths(pair: Pair) -> int:
    """Estimated tenths of tokens a pair's two questions add inside the questions map (its two entries and
    the comma between them; a comma before them is the caller's)."""
    key = pair.key
    if key[:1] == "t" and key[1:].isdigit():  # the usual key: both entries from the templates' sizes
        return _template_tenths("call", len(key) - 1) + _template_tenths("result", len(key) - 1) + _COMMA
    return sum(_entry_tenths(q) for q in questions_for(pair)) + _COMMA


def questions_tokens_of(count: int, tenths: int) -> int:
    """Estimated tokens of a questions map of `count` pairs whose `pair_tenths` sum to `tenths`."""
    return whole_tokens(_BRACES + tenths + _COMMA * max(0, count - 1))


def batches(pairs: Sequence[Pair], state_tokens: int, max_questions: int, max_request_tokens: int | None
            ) -> list[Batch]:
    """Pairs in key order, two questions each, packed so that every request fits both limits
    (`max_request_tokens` None: a judge in process, sent nothing — `max_questions` alone, no tokens counted)."""
    out: list[Batch] = []
    current: list[Question] = []
    tenths = _BRACES
    # a request fits while state + ceil(tenths / 10) + envelope <= max_request_tokens, i.e. tenths <= room
    room = math.inf if max_request_tokens is None else 10 * (max_request_tokens - state_tokens - ENVELOPE_TOKENS)
    sized = room != math.inf
    for pair in pairs:
        own = pair_tenths(pair) if sized else 0
        add = own + _COMMA if current else own
        if current and (len(current) + 2 > max_questions or tenths + add > room):
            out.append(Batch(tuple(current), whole_tokens(tenths) if sized else 0))
            current, tenths, add = [], _BRACES, own
        if len(current) + 2 > max_questions or tenths + add > room:
            raise StateBudgetError(f"no room for compaction questions: pair {pair.key} does not fit "
                                   f"max_request_tokens {max_request_tokens} beside a state of ~{state_tokens} tokens")
        current.extend(questions_for(pair))
        tenths += add
    if current:
        out.append(Batch(tuple(current), whole_tokens(tenths) if sized else 0))
    return out


def questions_map(questions: Sequence[Question]) -> dict[str, dict[str, str]]:
    """The wire `questions` object: id -> `noul` question."""
    return {q.id: q.wire() for q in questions}
