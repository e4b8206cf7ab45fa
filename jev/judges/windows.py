"""The judge requests of one plan: the whole state with its batches when it fits, else windows of it.

SPEC §4–5 as amended: the state budget binds only a judge that receives the state. For such a judge the
whole state is fitted first (input caps 1000, 200, 60). When no stage fits, the candidates are judged in
windows — each window one request holding the task (the first message, system and user text; past half
the state budget, the first user message and the latest ones that fit), the calls of the pairs it asks
about with the messages between them, and up to `WINDOW_CONTEXT` neighbouring messages on each side — so
a long history is judged in parts instead of failing. The stages apply within
each window; only a pair that cannot fit even alone beside the task ends the plan (`StateBudgetError`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..deciding.policy import CompactionConfig
from ..errors import StateBudgetError
from ..model.canonical import canonical_json
from ..reading.analysis import Pair, Transcript
from ..reading.state import (
    INPUT_CAPS,
    STATE_CONTEXT,
    estimate_tenths_utf8,
    fit_state,
    history_entries,
    stage_name,
    whole_tokens,
)
from .questions import ENVELOPE_TOKENS, Batch, batches, pair_tenths, questions_tokens_of

WINDOW_CONTEXT = 4  # neighbouring messages on each side of a window's pairs, as far as the budget allows
WINDOW_NOTE = (" Only part of the history is shown: the task and the messages around the tool calls asked "
               "about; gaps in i are messages left out.")
NOT_SENT = "not-sent"  # the stage of a plan whose judge reads the transcript in process
_PACK_SHARE = 0.8  # pairs fill at most this share of the state budget; the rest is for their neighbours
_TASK_SHARE = 0.5  # the task (first message, system and user text) every window carries: at most this share
_COMMA = 9  # tenths of a token


@dataclass(frozen=True, slots=True)
class JudgeCall:
    """One judge request: the state it carries, its questions, and the estimated tokens it sends."""

    state: dict[str, Any]
    batch: Batch
    state_tokens: int
    stage: str

    @property
    def tokens(self) -> int:
        """Estimated tokens of the whole request: state, questions and envelope (0 when nothing is sent)."""
        return self.state_tokens + self.batch.tokens + ENVELOPE_TOKENS if self.stage != NOT_SENT else 0


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """All requests of a plan; `stage` is the deepest input cap used, `windows` 0 for the whole state."""

    calls: tuple[JudgeCall, ...]
    stage: str
    windows: int

    @property
    def tokens(self) -> int:
        return sum(c.tokens for c in self.calls)


def plan_requests(transcript: Transcript, judged: Sequence[Pair], config: CompactionConfig,
                  receives_state: bool = True) -> RequestPlan:
    """The requests that judge `judged`: in process, one state-free batch per `max_questions`; else the
    whole state when it fits, or windows of it."""
    if not receives_state:
        state: dict[str, Any] = {}
        return RequestPlan(tuple(JudgeCall(state, b, 0, NOT_SENT)
                                 for b in batches(judged, 0, config.max_questions, None)), NOT_SENT, 0)
    try:
        fitted = fit_state(transcript, config.max_state_tokens)
        whole = batches(judged, fitted.tokens, config.max_questions, config.max_request_tokens)
    except StateBudgetError:
        return _windowed(transcript, judged, config)
    return RequestPlan(tuple(JudgeCall(fitted.value, b, fitted.tokens, fitted.stage) for b in whole),
                       fitted.stage, 0)


class _Entries:
    """The history entries at one input cap, their sizes in tenths of a token, and which are the task's."""

    def __init__(self, transcript: Transcript, cap: int, task_tenths: int) -> None:
        self.cap = cap
        entries = history_entries(transcript, cap)
        self.values = [entry for _, entry in entries]
        self.position = {index: k for k, (index, _) in enumerate(entries)}
        self.tenths = [estimate_tenths_utf8(canonical_json(entry)) for entry in self.values]
        messages = transcript.messages
        task = [k for k, (index, _) in enumerate(entries) if index == 0 or messages[index].role in ("system", "user")]
        self.core = _task_within(task, [messages[entries[k][0]].role for k in task], self.tenths, task_tenths)
        skeleton = {"context": STATE_CONTEXT + WINDOW_NOTE, "history": []}
        self.base = estimate_tenths_utf8(canonical_json(skeleton))


def _task_within(task: list[int], roles: list[str], tenths: list[int], budget: int) -> set[int]:
    """The task entries every window carries: all of them (the first message, system and user text) while
    they take at most `budget` tenths; else the first message, the system messages and the first user
    message, then the latest user messages that still fit — a long session's user text would otherwise
    fill every window and leave room for fewer and fewer pairs (or none)."""
    if sum(tenths[k] for k in task) <= budget:
        return set(task)
    first_user = next((k for k, role in zip(task, roles, strict=True) if role == "user"), None)
    kept = {k for k, role in zip(task, roles, strict=True) if k == task[0] or role == "system" or k == first_user}
    room = budget - sum(tenths[k] for k in kept)
    for k in reversed(task):
        if k not in kept and tenths[k] <= room:
            kept.add(k)
            room -= tenths[k]
        elif k not in kept:
            break  # the latest ones, without gaps among them
    return kept


class _Window:
    """A window being packed: the entry positions it holds and their estimated size."""

    def __init__(self, entries: _Entries) -> None:
        self.entries = entries
        self.held: set[int] = set()
        self.tenths = entries.base
        self.lo = self.hi = -1
        for k in sorted(entries.core):
            self.add(k)

    def add(self, k: int) -> None:
        if k not in self.held:
            self.tenths += self.entries.tenths[k] + (_COMMA if self.held else 0)
            self.held.add(k)

    def _beyond(self, lo: int, hi: int) -> itertools.chain[int]:
        """Positions lo..hi outside the span already held whole (all of them before the first span): a
        growing window costs what it adds, not what it holds, so packing stays linear."""
        if self.lo < 0:
            return itertools.chain(range(lo, hi + 1))
        return itertools.chain(range(lo, min(hi + 1, self.lo)), range(max(lo, self.hi + 1), hi + 1))

    def cost_with(self, lo: int, hi: int) -> int:
        """Tenths of the window if it also held positions lo..hi."""
        extra = [k for k in self._beyond(lo, hi) if k not in self.held]
        return self.tenths + sum(self.entries.tenths[k] for k in extra) + _COMMA * (len(extra) - (not self.held))

    def span(self, lo: int, hi: int) -> None:
        for k in self._beyond(lo, hi):
            self.add(k)
        self.lo, self.hi = lo, hi

    def state(self) -> dict[str, Any]:
        return {"context": STATE_CONTEXT + WINDOW_NOTE,
                "history": [self.entries.values[k] for k in sorted(self.held)]}


def _fits(state_tenths: int, pairs: int, question_tenths: int, config: CompactionConfig, share: float = 1.0) -> bool:
    """Whether a window of this size with `pairs` pairs (their questions' tenths summed) fits one request."""
    state = whole_tokens(state_tenths)
    return (state <= config.max_state_tokens * share and 2 * pairs <= config.max_questions
            and state + questions_tokens_of(pairs, question_tenths) + ENVELOPE_TOKENS <= config.max_request_tokens)


def _pack(entries: _Entries, judged: Sequence[Pair], start: int, config: CompactionConfig) -> JudgeCall | None:
    """The window that starts at candidate `start` at this cap, or None if that pair does not fit alone."""
    window = _Window(entries)
    taken: list[Pair] = []
    asked = 0  # the taken pairs' question tenths, kept as a running sum
    for pair in judged[start:]:
        at = entries.position[pair.call_message]
        lo, hi = (at, at) if not taken else (min(window.lo, at), max(window.hi, at))
        cost, tenths = window.cost_with(lo, hi), pair_tenths(pair)
        if not _fits(cost, len(taken) + 1, asked + tenths, config, _PACK_SHARE if taken else 1.0):
            break
        taken.append(pair)
        asked += tenths
        window.span(lo, hi)
    if not taken:
        return None
    last = len(entries.values) - 1
    for step in range(1, WINDOW_CONTEXT + 1):  # neighbours, later ones first: they show what was used since
        for k in (window.hi + step, window.lo - step):
            if 0 <= k <= last and k not in window.held and _fits(window.cost_with(k, k), len(taken), asked, config):
                window.add(k)
    state = window.state()
    state_tokens = whole_tokens(window.tenths)
    (batch,) = batches(taken, state_tokens, config.max_questions, config.max_request_tokens)
    return JudgeCall(state, batch, state_tokens, stage_name(entries.cap))


def _windowed(transcript: Transcript, judged: Sequence[Pair], config: CompactionConfig) -> RequestPlan:
    tables: dict[int, _Entries] = {}
    calls: list[JudgeCall] = []
    deepest = 0
    start = 0
    while start < len(judged):
        for cap in INPUT_CAPS:
            if cap not in tables:
                tables[cap] = _Entries(transcript, cap, int(config.max_state_tokens * 10 * _TASK_SHARE))
            call = _pack(tables[cap], judged, start, config)
            if call is not None:
                break
        else:
            pair = judged[start]
            raise StateBudgetError(
                f"pair {pair.key} ({pair.tool}) does not fit in one judge request even alone beside the task "
                f"at inputs<={INPUT_CAPS[-1]} (max_state_tokens {config.max_state_tokens}, max_request_tokens "
                f"{config.max_request_tokens})")
        deepest = max(deepest, INPUT_CAPS.index(cap))
        calls.append(call)
        start += len(call.batch.questions) // 2
    return RequestPlan(tuple(calls), stage_name(INPUT_CAPS[deepest]), len(calls))
