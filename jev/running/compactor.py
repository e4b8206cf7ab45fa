"""The compactor: validate, ask the judge, guard against change, decide, archive, then (maybe) adopt.

One budget covers the whole plan; the first failed batch cancels the rest; nothing partial is applied;
ENFORCE adopts only after the archive acknowledged the snapshot of the original history.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..applying.apply import Applier, LetGo, LetGoSizes
from ..deciding.cost import (
    HistoryTokens,
    cheapest_start,
    check_horizon,
    estimate,
    horizon_from_history,
    tokens_each,
    unprofitable,
)
from ..deciding.decision import Decision, ExecutionOptions, Mode, PairRows, Plan, Reason, Status
from ..deciding.policy import (
    DEFAULT_SIZE_EXPONENT,
    PINNED_SCORES,
    Action,
    CompactionConfig,
    Judged,
    PairReason,
    action_of,
    budget,
    deepened,
    no_candidates_detail,
    pins,
    verdicts,
)
from ..deciding.token_target import MAX_REDUCTION, called, excess_chars, share, tokens_left, whole_tokens
from ..errors import ArchiveError, ConfigError, JevError, JudgeError, StateBudgetError
from ..judges.base import Judge, JudgeRequest, JudgeTraits, traits, validate_answers
from ..judges.windows import JudgeCall, plan_requests
from ..model.scope import Archive, Scope
from ..model.transcript import Message
from ..providers import ThinkingPolicy, check, resolve, strip_thinking
from ..reading.analysis import Pair, Transcript
from ..reading.history import Remeasured, Taken, chars_after, sizes_each, take, unchanged
from ..reading.state import cut
from ..support.aio import Runner
from ..support.validate import require_integer
from .records import build_record, deliver, pair_records, recommendation, session_of

INPUT_HEAD = 80  # characters of a call's input a plan's pair view shows
REFITS = 3  # times a token target's plan asks for more when its first choice leaves the history over the target
_log = logging.getLogger("jev")


def judge_exponent(judged_by: JudgeTraits) -> float:
    """The size exponent a judge's probabilities were tuned to be ranked with, else `DEFAULT_SIZE_EXPONENT`
    (1.0: the SPEC §6 amendment)."""
    return DEFAULT_SIZE_EXPONENT if judged_by.size_exponent is None else judged_by.size_exponent


_HELD_BECAUSE = {PairReason.NEEDED_RESULT: "confidently needed (raw keep_result >= keep_threshold)",
                 PairReason.REFUSED: "refused by the judge", PairReason.SHORT_RESULT: "too short to cut"}


def shortfall(plan: Plan, transcript: Transcript, reachable: bool = True, deep: bool = False,
              left: tuple[int, int, bool] | None = None) -> str:
    """Why budget mode stopped short of its target: the characters it could not let go, by what holds them
    (`reachable` False: the host's token target was beyond every candidate result from the start; `deep`:
    a host's token target, which drops whole pairs too; `left`: the host's count of what the plan leaves, its
    target, and whether the count is the library's estimate rather than the host's counter's)."""
    held: dict[str, int] = {}
    rows = plan.rows
    for action, pinned, reason, chars in zip(rows.action, rows.pinned, rows.reason, rows.result_chars, strict=True):
        if action is Action.KEEP:
            why = pinned or _HELD_BECAUSE.get(reason)
            if why:
                held[why] = held.get(why, 0) + chars
    other = transcript.chars - sum(p.result_chars for p in transcript.pairs)
    parts = [f"{n:,} in results {why}" for why, n in sorted(held.items(), key=lambda item: -item[1])]
    return (("the token target is out of reach: " if not reachable else "")
            + (f"the plan leaves {'about ' if left[2] else ''}{left[0]:,} tokens as the host counts them"
               f"{' (estimated)' if left[2] else ''}, over the target of {left[1]:,}; "
               if left is not None and left[0] > left[1] else "")
            + f"stopped short of the target at {plan.result_share:.1%} of candidate result characters: "
            + ("a token target's plan lets go of results, then of whole pairs, never of a call in a message with "
               "thinking" if deep else "budget mode lets go of results only")
            + f"; {other:,} characters are text, thinking and call inputs"
            + (", " + ", ".join(parts) if parts else "") + " (model-visible characters)")


def calls_let_go(candidates: Sequence[Pair], actions: Sequence[Action], whole: int) -> str:
    """What a token target's plan let go beyond results: the pairs it dropped whole, their calls' inputs
    with them (`whole`: those whose calls the threshold table keeps, dropped because results fell short)."""
    dropped = [p for p, a in zip(candidates, actions, strict=True) if a is Action.DROP_PAIR]
    return (f"results alone fall short of the token target: {len(dropped)} pairs dropped whole, "
            f"{sum(p.call_chars for p in dropped):,} characters of calls with them ({whole} of them pairs whose "
            "calls the judge wants kept)")


def _edited_at(pair: Pair, action: Action) -> int:
    """The first message a let-go of `pair` changes: its result's for a truncation, its call's for a drop."""
    return pair.result_message if action is Action.TRUNCATE_RESULT else pair.call_message


def _spread(values: list[Any], pinned: list[int], default: Any) -> tuple[Any, ...]:
    """A column given per candidate (in pair order) as one per pair: `default` at each pinned pair's place
    (`pinned`, ascending); the candidates fill the places between, in order."""
    if not pinned:
        return tuple(values)
    out: list[Any] = []
    start = taken = 0
    for k in pinned:
        out += values[taken:taken + k - start]
        taken += k - start
        out.append(default)
        start = k + 1
    out += values[taken:]
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Judgments:
    """A plan's candidates as columns, in key order: the judge's scores, what a truncation and a drop would
    save (`LetGo`), the threshold table's reason and scaled result score (`jev.deciding.policy.verdicts`, from the
    scores, tool, result size and whether the call must stay), and — budget mode only, else empty — each
    candidate as budget mode sees it."""

    keys: list[str]
    keep_call: list[float | None]
    keep_result: list[float | None]
    truncates: list[int]
    drops: list[int]
    table: list[PairReason]
    scaled: list[float | None]
    budgeted: list[Judged]


def _judgments(candidates: Sequence[Pair], probabilities: dict[str, float | None], gone: LetGo,
               truncate_only: frozenset[str], config: CompactionConfig) -> _Judgments:
    """The candidates' `_Judgments` from the judge's answers (each looked up once, in key order)."""
    keys = [p.key for p in candidates]
    keep_call = [probabilities[f"call_{key}"] for key in keys]
    keep_result = [probabilities[f"result_{key}"] for key in keys]
    truncates = [gone.truncate[key] for key in keys]
    drops = [gone.drop[key] for key in keys]
    tools, sizes = [p.tool for p in candidates], [p.result_chars for p in candidates]
    calls_stay = [key in truncate_only for key in keys]
    table, scaled = verdicts(keep_call, keep_result, tools, sizes, truncates, calls_stay, config)
    budgeted = [] if config.target_reduction is None else [
        Judged(*row) for row in zip(keys, keep_call, keep_result, tools, sizes, truncates, drops, calls_stay,
                                    strict=True)]
    return _Judgments(keys, keep_call, keep_result, truncates, drops, table, scaled, budgeted)


@dataclass(frozen=True, slots=True)
class _Choice:
    """What a plan let go: each candidate's reason and action (key order), the history with them applied,
    the result characters let go and those plus the inputs of calls dropped whole; budget mode's target in
    characters (else None), the pairs a token target dropped whole though the table keeps their calls, and
    the host's count of what the plan leaves (a token target's plan only, else None)."""

    reasons: list[PairReason]
    actions: list[Action]
    compacted: list[Message]
    results_removed: int
    removed: int
    target: int | None
    whole: frozenset[str]
    left: int | None
    stripped: int = 0  # thinking blocks removed after the first change (`Compactor._stripped`)


def _rows(transcript: Transcript, why: dict[str, str], judgments: _Judgments, choice: _Choice) -> PairRows:
    """Every pair's row: a candidate's from its judgments and the choice, a pinned pair's from `PINNED_SCORES`
    and why it is pinned (`why`: every pair that is not a candidate)."""
    pairs = transcript.pairs
    keys = [p.key for p in pairs]
    at = sorted(map(transcript.position, why))  # the pinned pairs' places among all
    return PairRows(tuple(keys), tuple(p.call_id for p in pairs), tuple(p.tool for p in pairs),
                    tuple(cut(p.input_json, INPUT_HEAD) for p in pairs), tuple(p.result_chars for p in pairs),
                    _spread(judgments.keep_call, at, PINNED_SCORES.keep_call),
                    _spread(judgments.keep_result, at, PINNED_SCORES.keep_result), _spread(choice.actions, at, Action.KEEP),
                    _spread(choice.reasons, at, PINNED_SCORES.reason), tuple(why.get(key, "") for key in keys),
                    _spread(judgments.scaled, at, None), _spread(judgments.truncates, at, 0), _spread(judgments.drops, at, 0))


def _error(exc: BaseException) -> Decision:
    return Decision(Status.ERROR, Reason.CALL_OR_RESPONSE_ERROR, detail=str(exc) or type(exc).__name__,
                    error_kind=type(exc).__name__)


@dataclass(frozen=True, slots=True)
class CompactorSetup:
    """What every plan runs with — the judge, the config (its size exponent resolved to the judge's own),
    the options and the archive — checked once and frozen: one setup serves any number of sessions
    (`session()`), threads and tasks, since no per-history state lives here."""

    judge: Judge
    config: CompactionConfig = dataclasses.field(default_factory=CompactionConfig)
    options: ExecutionOptions = dataclasses.field(default_factory=ExecutionOptions)
    archive: Archive | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.config, CompactionConfig):
            raise ConfigError("config must be a jev.CompactionConfig")
        if not isinstance(self.options, ExecutionOptions):
            raise ConfigError("options must be a jev.ExecutionOptions")
        if self.options.mode is Mode.ENFORCE and self.archive is None:
            raise ConfigError("ENFORCE requires durable archive")
        if not callable(getattr(self.judge, "ask", None)):
            raise ConfigError("judge must have an async ask(request) method")
        judged_by = traits(self.judge)
        if self.config.size_exponent is None:  # the judge's own: what its probabilities were tuned to rank with
            object.__setattr__(self, "config", dataclasses.replace(self.config, size_exponent=judge_exponent(judged_by)))
        stamped = self.config.calibrated_for
        if stamped is not None and stamped != judged_by.name:
            raise ConfigError(f"calibrated_for: these thresholds were certified for judge {stamped!r}, not "
                              f"{judged_by.name!r}; shadow, label and calibrate again with this judge")

    def session(self) -> Compactor:
        """A compactor for one history (a conversation, an agent's run) on this setup; `close()` it, or use it
        in a `with` block, to end the loop its sync calls ran on."""
        return Compactor.from_setup(self)


class Compactor:
    """Judged, reversible compaction of one agent's history: a session on a `CompactorSetup` (the judge,
    config, options and archive, shared and frozen) that owns what it keeps between plans — the last history
    it judged (to read that history grown from where it ended), its measurements and what its last plan made.
    Give each history its own session (`setup.session()`); one session serves one history at a time."""

    def __init__(self, judge: Judge, config: CompactionConfig | None = None,
                 options: ExecutionOptions | None = None, archive: Archive | None = None) -> None:
        self._start(CompactorSetup(judge, config if config is not None else CompactionConfig(),
                                   options if options is not None else ExecutionOptions(), archive))

    @classmethod
    def from_setup(cls, setup: CompactorSetup) -> Compactor:
        """A new session on `setup` (`CompactorSetup.session`)."""
        if not isinstance(setup, CompactorSetup):
            raise ConfigError(f"setup must be a jev.CompactorSetup (got {type(setup).__name__})")
        session = cls.__new__(cls)
        session._start(setup)
        return session

    def _start(self, setup: CompactorSetup) -> None:
        """A session's state, empty: nothing read yet."""
        self._setup = setup
        # the last history this compactor took (one): a plan of the same history grown by a few messages reads
        # only those (`jev.reading.history.take`), and `for_tokens`' copy judges the very history it was sized on
        self._taken: Taken | None = None
        self._reachable = True  # False on a `for_tokens` copy whose token target no let-go of results can reach
        self._ride_along = False  # True on a `for_tokens` copy: see `_riding`
        self._excess: int | None = None  # on a `for_tokens` copy: the characters its target needs let go
        self._host: tuple[int, int] | None = None  # on a `for_tokens` copy: the host's count and its target
        self._count: Callable[[Sequence[Message]], int | Awaitable[int]] | None = None  # a `for_tokens` copy's host counter
        self._tokens: HistoryTokens | None = None  # the token counts of the history taken last
        self._applier = Applier()  # what the last plan made of the messages it changed
        self._let_go = LetGoSizes()  # what letting go of each pair of the last plan saves
        # the characters and tokens of what it made (the tokens also of the originals a token target's estimate
        # weighs them against: `_left`), measured once while the history is read on from the last
        self._made_chars, self._made_tokens = Remeasured(sizes_each), Remeasured(tokens_each)
        self._runner = Runner("jev-session")  # its sync twins' loop: started by the first, ended by `close()`

    @property
    def setup(self) -> CompactorSetup:
        """The frozen setup this session plans with."""
        return self._setup

    @property
    def runner(self) -> Runner:
        """The loop this session's sync twins run on (`jev.support.aio.Runner`), with the judge's connections
        they opened; a host's sync hook runs its own steps around a plan on it too."""
        return self._runner

    def close(self) -> None:
        """End the loop the sync twins ran on, and with it the judge connections they kept open (a session
        let go of, or still open at exit, is closed the same way); a later sync call starts a new one."""
        self._runner.close()

    def __enter__(self) -> Compactor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def judge(self) -> Judge:
        return self._setup.judge

    @property
    def config(self) -> CompactionConfig:
        return self._setup.config

    @property
    def options(self) -> ExecutionOptions:
        return self._setup.options

    @property
    def archive(self) -> Archive | None:
        return self._setup.archive

    # --- public API -----------------------------------------------------------------------------

    async def plan(self, messages: Sequence[Message], *, scope: Scope | None = None, context: Any = None,
                   horizon: int | None = None, idle_seconds: float | None = None) -> Decision:
        """Judge the history and return a `Decision`; emits one record (a CANCELLED one if the task is cancelled).
        `horizon`: the model calls the host expects after this one's (else `jev.deciding.cost.horizon_from_history`);
        `idle_seconds`: time since the host's last model call (past the pricing's cache lifetime the cache is
        cold, and a compaction re-bills nothing) — both feed the cost gate."""
        started = time.monotonic()
        rows = PairRows()
        if self.options.mode is Mode.OFF:
            decision = Decision(Status.SKIPPED, Reason.DISABLED)
        else:
            try:
                check_horizon(horizon, idle_seconds)
                async with asyncio.timeout(self.options.budget):
                    decision, rows = await self._plan(messages, scope, horizon, idle_seconds)
            except TimeoutError:
                decision = Decision(Status.ERROR, Reason.TIMEOUT,
                                    detail=f"plan exceeded its budget of {self.options.budget}s",
                                    error_kind="TimeoutError")
            except asyncio.CancelledError:
                self._emit(context, Decision(Status.CANCELLED, Reason.CANCELLED), started, PairRows(), scope, messages)
                raise
        self._emit(context, decision, started, rows, scope, messages)
        return decision

    async def compact(self, messages: Sequence[Message], *, scope: Scope | None = None, context: Any = None,
                      horizon: int | None = None, idle_seconds: float | None = None) -> list[Message] | None:
        """The history the host should use, or None = "run your standard compaction" (OFF and SHADOW)."""
        decision = await self.plan(messages, scope=scope, context=context, horizon=horizon, idle_seconds=idle_seconds)
        if self.options.mode is not Mode.ENFORCE:
            return None
        if decision.status is Status.DECIDED and decision.plan is not None:
            return list(decision.plan.messages)
        return list(messages)

    def plan_sync(self, messages: Sequence[Message], *, scope: Scope | None = None, context: Any = None,
                  horizon: int | None = None, idle_seconds: float | None = None) -> Decision:
        """`plan` for non-async hosts, on this session's loop (`runner`), from any thread."""
        return self._runner.run(self.plan(messages, scope=scope, context=context, horizon=horizon, idle_seconds=idle_seconds))

    def compact_sync(self, messages: Sequence[Message], *, scope: Scope | None = None, context: Any = None,
                     horizon: int | None = None, idle_seconds: float | None = None) -> list[Message] | None:
        """`compact` for non-async hosts, on this session's loop (`runner`), from any thread."""
        return self._runner.run(self.compact(messages, scope=scope, context=context, horizon=horizon,
                                     idle_seconds=idle_seconds))

    def for_tokens(self, messages: Sequence[Message], tokens: int, target_tokens: int | None,
                   count: Callable[[Sequence[Message]], int | Awaitable[int]] | None = None) -> Compactor:
        """This compactor, or a copy of it in budget mode whose `target_reduction` should bring `messages`
        — `tokens` long as the host counts them — under `target_tokens` (`jev.deciding.token_target`). Itself when
        there is no target, the history is already under it, or nothing could be let go. The copy keeps
        the analysis it sized the plan on: planning that same list, unchanged (the change guard proves
        it), judges it without analyzing it again. `count`, when the host can count a list of messages
        the way it counted `tokens` (returning the count, or an awaitable of it), counts the history a plan
        leaves (else it is estimated: `jev.deciding.token_target.tokens_left`); a plan still over the target asks for
        more."""
        tokens = whole_tokens(tokens, "tokens")
        require_integer("target_tokens", target_tokens, 0, optional=True)
        if target_tokens is None or tokens <= target_tokens:
            return self
        try:
            taken = self._take(messages)
        except JevError:  # not a history this compactor can judge: its plan says why
            return self
        excess = excess_chars(taken.transcript, tokens, target_tokens, self.config)
        if excess is None:
            return self
        reduction = share(*excess)
        other = copy.copy(self)
        other._setup = dataclasses.replace(self._setup, config=dataclasses.replace(self.config, target_reduction=reduction))
        other._taken = taken
        other._reachable = reduction < MAX_REDUCTION  # capped: even every candidate result would not do
        other._ride_along = True
        other._excess = excess[0]
        other._host = (tokens, target_tokens)
        other._count = count
        return other

    def _take(self, messages: Sequence[Message]) -> Taken:
        """The history as judged, read from where the last one this compactor took ended when it begins
        with those very messages, unchanged (`jev.reading.history.take`), and kept for the next."""
        previous = self._taken
        taken = self._taken = take(messages, self.config.max_transcript_chars, previous=previous)
        if taken is not previous and (previous is None or taken.transcript.extends is not previous.transcript.lineage):
            self._tokens = None  # not grown from the history it was measured on
            self._made_chars, self._made_tokens = Remeasured(sizes_each), Remeasured(tokens_each)
        return taken

    # --- the plan, step by step ---------------------------------------------------------------

    async def _plan(self, messages: Sequence[Message], scope: Scope | None, horizon: int | None,
                    idle_seconds: float | None) -> tuple[Decision, PairRows]:
        """The plan's decision and its pairs' rows, from which its record is made (kept when only the
        archive write fails: the judgments stand). Any failure is an ERROR decision."""
        rows = PairRows()
        try:
            decision, rows, history = await self._steps(messages, scope, horizon, idle_seconds)
            if decision.status is Status.DECIDED and decision.plan is not None and self.options.mode is Mode.ENFORCE:
                plan = dataclasses.replace(decision.plan, archive_reference=await self._archive(scope, history))
                decision = Decision(Status.DECIDED, Reason.ARCHIVED_PROPOSAL, plan, recommendation(plan, True),
                                    detail=decision.detail)
            return decision, rows
        except StateBudgetError as exc:
            return Decision(Status.ERROR, Reason.STATE_BUDGET_EXCEEDED, detail=str(exc),
                            error_kind=type(exc).__name__), rows
        except JevError as exc:
            return _error(exc), rows
        except Exception as exc:  # a bug — ours, or a host object's — never dressed up as a judge failure
            _log.error("plan failed with an unexpected %s", type(exc).__name__, exc_info=exc)
            return Decision(Status.ERROR, Reason.INTERNAL_ERROR, detail=f"unexpected {type(exc).__name__}: {exc}",
                            error_kind=type(exc).__name__), rows

    async def _steps(self, messages: Sequence[Message], scope: Scope | None, horizon: int | None,
                     idle_seconds: float | None) -> tuple[Decision, PairRows, tuple[Message, ...]]:
        """Everything but the archive write: the decision, the pairs' rows, and the history as judged
        (what ENFORCE archives)."""
        config = self.config
        if self.options.mode is Mode.ENFORCE and not isinstance(scope, Scope):
            raise ConfigError("ENFORCE needs a complete archive scope (user_id, agent_id, session_id)")
        taken = self._take(messages)
        transcript = taken.transcript
        pinned = pins(transcript, config)
        why, truncate_only = pinned.why, pinned.truncate_only  # every non-candidate; calls in thinking messages
        candidates = pinned.candidates(transcript)
        if not candidates:
            detail = no_candidates_detail(transcript, config)
            return Decision(Status.SKIPPED, Reason.NO_CANDIDATES, detail=detail), PairRows(), ()
        requests = plan_requests(transcript, candidates, config, traits(self.judge).receives_state)
        probabilities, tokens_in, tokens_out = await self._ask_all(requests.calls, transcript)

        if not unchanged(messages, taken):
            return Decision(Status.INCONCLUSIVE, Reason.TRANSCRIPT_CHANGED,
                            detail="the history changed while it was being judged"), PairRows(), ()

        gone = self._let_go(candidates, config)
        judgments = _judgments(candidates, probabilities, gone, truncate_only, config)
        gated = config.cost_gate and config.target_reduction is None  # budget mode is a host's need: never gated
        horizon = horizon or horizon_from_history(transcript.messages)
        cold = idle_seconds is not None and idle_seconds > config.profile.lifetime
        tokens = self._tokens = HistoryTokens(transcript, self._tokens, self._made_tokens)
        choice = await self._choose(transcript, candidates, judgments, gone, tokens, horizon, cold, gated)
        target, left, compacted = choice.target, choice.left, choice.compacted
        rows = _rows(transcript, why, judgments, choice)
        met: bool | None = None  # budget mode: the characters reached; a token target: the host's count under it
        if target is not None:
            met = left <= self._host[1] if left is not None and self._host is not None else choice.removed >= target
        before = transcript.chars
        after = chars_after(compacted, taken, self._made_chars)
        reduction = 1.0 - after / before if before else 0.0
        common: dict[str, Any] = dict(rows=rows, requests=len(requests.calls),
                      input_tokens=tokens_in, output_tokens=tokens_out, state_stage=requests.stage, reduction=reduction,
                      windows=requests.windows, request_tokens=requests.tokens,
                      result_share=choice.results_removed / max(1, sum(p.result_chars for p in candidates)),
                      target_met=met)
        cost = estimate(transcript.messages, compacted, horizon, config.profile, tokens, cold)
        if after >= before or reduction < config.minimum_reduction:
            plan = Plan(tuple(messages), **common, cost=cost)
            return (Decision(Status.INCONCLUSIVE, Reason.INSUFFICIENT_REDUCTION, plan, recommendation(plan, False)),
                    rows, transcript.messages)
        if gated and not cost.pays:
            plan = Plan(tuple(messages), **common, cost=cost)
            return (Decision(Status.INCONCLUSIVE, Reason.UNPROFITABLE, plan, recommendation(plan, False),
                             detail=unprofitable(cost)), rows, transcript.messages)
        verdict = check(transcript.messages, compacted, config.model, config.thinking,
                        thinking=bool(transcript.thinking))
        if not verdict.passes:  # never adopted, in any mode: SHADOW records what ENFORCE would do
            plan = Plan(tuple(messages), **common, cost=cost)
            return (Decision(Status.INCONCLUSIVE, Reason.PROVIDER_REFUSES, plan, recommendation(plan, False),
                             detail=f"{verdict.model or 'the default model'} would refuse it: {verdict.summary()}"),
                    rows, transcript.messages)
        plan = Plan(tuple(compacted), **common, cost=cost, thinking_stripped=choice.stripped)
        # ENFORCE adopts it only once `_plan` archived the history
        if plan.target_met is False or (not self._reachable and self._excess is None):
            detail = shortfall(plan, transcript, self._reachable, self._excess is not None,
                               None if left is None or self._host is None else (left, self._host[1], self._count is None))
        elif self._excess is not None and (choice.whole or not self._reachable):
            detail = calls_let_go(candidates, choice.actions, len(choice.whole))
        else:
            detail = ""
        return (Decision(Status.DECIDED, Reason.SHADOW_PROPOSAL, plan, recommendation(plan, True), detail=detail),
                rows, transcript.messages)

    async def _choose(self, transcript: Transcript, candidates: Sequence[Pair], judgments: _Judgments, gone: LetGo,
                      tokens: HistoryTokens, horizon: int, cold: bool, gated: bool) -> _Choice:
        """The let-gos and the history they leave: the threshold table's, or budget mode's (`_budget`), the
        table's riding along on a token target's; placed where re-billing costs least when `gated`. Chosen
        once, but again (at most `REFITS` times, asking for more) while a token target's plan leaves the
        host's count over its target (`_left`)."""
        config, keys = self.config, judgments.keys
        goal, refits, left, last = self._excess, 0, None, None
        while True:
            chosen, target, whole = self._budget(candidates, judgments.budgeted, goal)
            table = dict(zip(keys, judgments.table, strict=True)) if chosen is None or self._ride_along else None
            if chosen is None:  # the threshold table, pair by pair
                chosen = table
            elif table is not None:  # a host's token target: the table's let-gos after the first edit ride along
                chosen = self._riding(candidates, chosen, table)
            assert chosen is not None  # the table's, when budget mode chose nothing
            if gated:  # where the edits begin decides what the next call re-bills: start where it pays most
                chosen = self._placed(transcript, candidates, chosen, gone, tokens, horizon, cold, config)
            reasons = [chosen[key] for key in keys]
            actions = [action_of(reason) for reason in reasons]
            compacted = self._applier(transcript, dict(zip(keys, actions, strict=True)), config)
            compacted, stripped = self._stripped(transcript.messages, compacted) if transcript.thinking \
                else (compacted, 0)
            results_removed = sum(t if a is Action.TRUNCATE_RESULT else d for a, t, d
                                  in zip(actions, judgments.truncates, judgments.drops, strict=True) if a is not Action.KEEP)
            # a token target counts the inputs of the calls it dropped because results fell short
            removed = results_removed + sum(p.call_chars for p in candidates if p.key in whole)
            if self._host is None or self._excess is None:
                break
            host, goal_tokens = self._host
            assert target is not None  # a token target's plan is budget mode's
            left = await self._left(transcript, compacted, tokens)
            # under; or short in characters too (all it may let go is let go); or asking more let go of nothing
            if left <= goal_tokens or removed < target or refits == REFITS or reasons == last:
                break
            # what is still over, in characters at the rate the excess was sized with, beyond what was let go
            goal, refits, last = removed + math.ceil((left - goal_tokens) * self._excess / (host - goal_tokens)), \
                refits + 1, reasons
        return _Choice(reasons, actions, compacted, results_removed, removed, target, whole, left, stripped)

    def _stripped(self, sent: Sequence[Message], compacted: list[Message]) -> tuple[list[Message], int]:
        """`compacted` as the provider takes it: for a model that binds thinking to its prefix under the strip
        policy, without the thinking its first change invalidates (`jev.providers.strip_thinking`)."""
        config = self.config
        if config.thinking is not ThinkingPolicy.STRIP or compacted is sent:
            return compacted, 0
        if not resolve(sent, config.model)[1].preserved_thinking:
            return compacted, 0
        return strip_thinking(sent, compacted)

    @staticmethod
    def _riding(candidates: Sequence[Pair], chosen: dict[str, PairReason], table: dict[str, PairReason]
                ) -> dict[str, PairReason]:
        """A token target's budget plan, deepened: every pair the threshold table lets go whose edit sits at
        or after the plan's first edit is let go too. Everything from the first edit on is re-billed at
        the write price anyway, so these cost nothing more to write now, make the write smaller, and free
        their tokens on every later call; they are what the table, at its thresholds, lets go unasked.
        A pair before the first edit stays (letting it go would re-bill more). A `target_reduction` set
        directly (what calibration certifies, what the matched-budget yardstick compares) is exact: only
        `for_tokens` plans ride along."""
        lets = [_edited_at(p, action_of(chosen[p.key])) for p in candidates if action_of(chosen[p.key]) is not Action.KEEP]
        if not lets:
            return chosen
        first = min(lets)
        out = dict(chosen)
        for p in candidates:
            action = action_of(table[p.key])
            if chosen[p.key] is PairReason.WITHIN_BUDGET and action is not Action.KEEP and _edited_at(p, action) >= first:
                out[p.key] = table[p.key]
        return out

    @staticmethod
    def _placed(transcript: Transcript, candidates: Sequence[Pair], chosen: dict[str, PairReason],
                gone: LetGo, tokens: HistoryTokens, horizon: int, cold: bool, config: CompactionConfig
                ) -> dict[str, PairReason]:
        """The table's let-gos from the start that bills least (`jev.deciding.cost.cheapest_start`) on: one before it
        stays, reason CACHED_PREFIX (letting it go would re-bill more than it saves). When no start pays,
        the let-gos stay as the table wants them and the gate refuses the plan (UNPROFITABLE)."""
        lets = []
        for p in candidates:
            action = action_of(chosen[p.key])
            if action is not Action.KEEP:
                saves = gone.truncate[p.key] if action is Action.TRUNCATE_RESULT else gone.drop[p.key]
                lets.append((_edited_at(p, action), saves * tokens.per_char, p.key))
        if not lets:
            return chosen
        start, _net = cheapest_start(tokens.of_history(), [(at, n) for at, n, _k in lets],
                                     horizon, config.profile, cold)
        early = {key for at, _n, key in lets if at < start}
        if not early or start == len(transcript.messages):  # none, or no start pays: the gate says so
            return chosen
        out = dict(chosen)
        for key in early:
            out[key] = PairReason.CACHED_PREFIX
        return out

    async def _left(self, transcript: Transcript, compacted: Sequence[Message], tokens: HistoryTokens) -> int:
        """The host's count of `compacted` on a `for_tokens` copy: its own counter's when it gave one, else
        estimated (`jev.deciding.token_target.tokens_left`: the messages the plan changed and made measured, the
        rest as the host counted them)."""
        assert self._host is not None
        count = self._count
        if count is not None:
            # a sync counter runs beside the loop, so the plan's budget holds whatever it does
            value = called(count, compacted, "count") if inspect.iscoroutinefunction(count) else \
                await asyncio.to_thread(called, count, compacted, "count")
            if inspect.isawaitable(value):
                try:
                    value = await value
                except Exception as exc:
                    raise ConfigError(f"count failed ({type(exc).__name__}: {exc})") from exc
            return whole_tokens(value, "count's answer")
        return tokens_left(self._host[0], sum(tokens.of_history()), transcript.messages, compacted,
                           self._made_tokens)

    async def _ask_all(self, calls: Sequence[JudgeCall],
                       transcript: Transcript) -> tuple[dict[str, float | None], int, int]:
        """All requests, at most `max_concurrent_requests` in flight; the first failure stops the rest."""
        gate = asyncio.Semaphore(self.config.max_concurrent_requests)
        failed = False
        results: list[tuple[dict[str, float | None], int, int]] = []

        async def one(call: JudgeCall) -> None:
            nonlocal failed
            async with gate:
                if failed:  # a request failed while this one was queued: never send it
                    return
                try:
                    answers = await self.judge.ask(JudgeRequest(call.state, call.batch.questions, transcript))
                    checked = validate_answers(answers, call.batch.ids)
                except JevError:
                    failed = True
                    raise
                except Exception as exc:
                    failed = True
                    raise JudgeError(f"judge failed ({type(exc).__name__})") from exc
                results.append((checked, answers.input_tokens, answers.output_tokens))

        try:
            async with asyncio.TaskGroup() as group:
                for call in calls:
                    group.create_task(one(call))
        except BaseExceptionGroup as group_error:
            first = next((e for e in group_error.exceptions if not isinstance(e, asyncio.CancelledError)),
                         group_error.exceptions[0])
            raise first from None
        merged: dict[str, float | None] = {}
        for checked, _, _ in results:
            merged.update(checked)
        return merged, sum(r[1] for r in results), sum(r[2] for r in results)

    def _budget(self, candidates: Sequence[Pair], judged: list[Judged], goal: int | None
                ) -> tuple[dict[str, PairReason] | None, int | None, frozenset[str]]:
        """Budget mode's reason per judged pair (its action is `action_of` it), the characters it must
        remove, and the pairs whose calls the table keeps that it dropped whole; (None, None, {}) on the
        threshold table, which decides pair by pair. `judged`: each candidate's scores and what letting it
        go removes (made once per plan, whatever the rounds). A host's token target (`for_tokens`) that
        results alone do not reach is met by dropping whole pairs too, their calls' inputs counted
        (`jev.deciding.policy.deepened`), its target the whole excess — `goal` characters (the excess, or more where
        a first plan left the history over the target: `_left`)."""
        config = self.config
        if config.target_reduction is None:
            return None, None, frozenset()
        if goal is not None and goal != self._excess:
            config = dataclasses.replace(config, target_reduction=share(goal, sum(p.result_chars for p in candidates)))
        reasons, removed, target = budget(judged, config)
        if goal is None:
            return reasons, target, frozenset()
        target = max(target, goal)
        deep, _removed = deepened(judged, reasons, removed, target, [p.call_chars for p in candidates])
        return deep, target, frozenset(key for key in deep if deep[key] != reasons[key])

    async def _archive(self, scope: Scope | None, messages: Sequence[Message]) -> str:
        # A write already under way finishes even if the budget ends: documented, never adopted.
        try:
            archive = self.archive
            assert archive is not None  # ENFORCE has one (`CompactorSetup`); a missing scope the archive refuses
            reference = await asyncio.to_thread(archive.save, cast(Scope, scope), messages)
        except JevError:
            raise
        except Exception as exc:
            raise ArchiveError(f"archive did not acknowledge snapshot ({type(exc).__name__}: {exc})") from exc
        if not isinstance(reference, str) or not reference.strip():
            raise ArchiveError("archive did not acknowledge snapshot")
        return reference

    def _emit(self, context: Any, decision: Decision, started: float, rows: PairRows,
              scope: Any, messages: Any) -> None:
        """The plan's record, made only when an observer will receive it."""
        if self.options.observer is None:
            return
        elapsed_ms = round((time.monotonic() - started) * 1000)
        size = len(messages) if isinstance(messages, Sequence) else 0
        record = build_record(decision, version=self.options.version, mode=self.options.mode.value,
                              elapsed_ms=elapsed_ms, pairs=pair_records(rows), session_id=session_of(scope, context),
                              history_messages=size, judge=traits(self.judge).name)
        deliver(self.options.observer, context, record)
