"""What the host adapters share: the trigger, the commit rule, the decisions kept, the archive
references and the restore tool's reads. Each adapter keeps only its host's wire (where the history lives,
how it is replaced, how the host counts tokens) and calls this.

Memory stays bounded in a long-running agent: an adapter keeps its last `keep_decisions` decisions (1 by
default; each holds a whole compacted history), not every plan it made. The archive references — a
scope and a short string per adopted compaction — are kept, because restoring a call dropped long ago
needs the snapshot taken then.

Deep, rare compactions (prompt caching re-bills everything after a change): the trigger is a level the
history must pass again before the next plan. After a plan the next one waits until the history's count
passes the next multiple of the trigger above what the history holds now — the compacted history when
the plan was adopted (with a token target, below the trigger: it fires again only after growing back
past it), the same history when it was not (an unprofitable or inconclusive plan is not retried on every
call). The horizon the cost gate weighs comes from the host where it knows it (`horizon=`), else from the
history (`jev.deciding.cost.horizon_from_history`), bounded by the host's own limit on its calls where it has one.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from .. import formats
from ..applying.archived_pair import restore_latest
from ..deciding.cost import cold_trigger, horizon_from_history, next_trigger, plans_cold
from ..deciding.decision import Decision, Mode, Reason, Status
from ..deciding.token_target import check_target_tokens, counted
from ..errors import ConfigError, JevError
from ..model.scope import Scope
from ..model.transcript import Message
from ..running.compactor import Compactor
from ..support.validate import require_integer

_log = logging.getLogger("jev")


N = TypeVar("N", int, Awaitable[int])


def counted_as(counter: Callable[[Any], N], form: str) -> Callable[[Sequence[Message]], N]:
    """A host's token counter, which reads its own form of a history, as one of jev messages: each list is
    written in `form` first (what a token target's plan counts what it leaves with: `HistoryProcessor`)."""
    return lambda messages: counter(formats.dump(list(messages), form))


def check_trigger(trigger: Any, kinds: tuple[str, ...]) -> tuple[str, int]:
    """`(kind, n)` with kind one of `kinds` and n an integer >= 1, or `ConfigError` saying so."""
    kind, value = trigger if isinstance(trigger, tuple) and len(trigger) == 2 else (None, None)
    if kind not in kinds or isinstance(value, bool) or not isinstance(value, int) or value < 1:
        shapes = " or ".join(f"({k!r}, n)" for k in kinds)
        raise ConfigError(f"trigger must be {shapes} with n >= 1 (got {trigger!r})")
    return kind, value


def check_count(name: str, value: Any) -> int:
    """An integer >= 1 (a trigger count, how many decisions to keep), or `ConfigError` naming `name`."""
    return require_integer(name, value, 1)


class HostCompaction:
    """The state an adapter keeps between a host's model calls: its compactor and scope, the last
    decisions (bounded), and the references of the snapshots its adopted compactions archived."""

    def __init__(self, compactor: Compactor, *, scope: Any = None, target_tokens: int | None = None,
                 keep_decisions: int = 1, trigger: int = 1, horizon: Any = None,
                 calls_left: Callable[[Any], int | None] | None = None) -> None:
        self.compactor = compactor
        self.scope = scope
        self.target_tokens = check_target_tokens(target_tokens)
        self.recent: deque[Decision] = deque(maxlen=check_count("keep_decisions", keep_decisions))
        self.references: list[tuple[Scope, str]] = []
        self.trigger = check_count("trigger", trigger)
        self.next_at = self.trigger  # the count the history must reach for the next plan
        self.idle: float | None = None  # seconds between the host's last two model calls (`tick`); None before
        self._last: float | None = None
        if horizon is not None and not callable(horizon):
            require_integer("horizon", horizon, 1)
        self.horizon = horizon
        self.calls_left = calls_left  # the host's own limit on its later model calls, where it has one

    def tick(self) -> float | None:
        """Once per host model call, before it: the seconds since the previous one (`idle`, what the cost gate
        and `due` read; None the first time). The host's clock: past the pricing's cache lifetime the cache is
        cold, and a compaction re-bills nothing."""
        now = time.monotonic()
        self.idle = None if self._last is None else now - self._last
        self._last = now
        return self.idle

    def due(self, count: int) -> bool:
        """Whether a history whose count (in the trigger's unit) is `count` should be planned now: at the
        trigger, or — when the cache has gone cold since the last model call — from a fifth of it on
        (`jev.deciding.cost.cold_trigger`)."""
        if count >= self.next_at:
            return True
        return plans_cold(self.idle, self.compactor.config.profile) and count >= cold_trigger(self.trigger)

    def planned(self, count_now: int | None) -> None:
        """After a plan: the next waits for the next multiple of the trigger above `count_now`, what the
        history holds now (compacted when adopted); None (the host's counter failed) leaves it where it is."""
        if count_now is not None:
            self.next_at = next_trigger(count_now, self.trigger)

    def count(self, counter: Callable[[Any], Any], history: Any, name: str = "token_counter") -> int | None:
        """What the host's token counter says of `history`, checked (a whole number >= 0), or None when it
        raised or said something else: then an ERROR decision naming it is kept and logged, and the host's
        step goes on with its history as it is."""
        try:
            return counted(counter, history, name)
        except ConfigError as exc:
            self.failed(exc, "could not count the host's history (its token counter failed), so it was left as it is")
            return None

    def failed(self, exc: JevError, what: str) -> None:
        """Keep (and log) the ERROR decision of a host's input the library could not use."""
        _log.warning("jev %s: %s", what, exc)
        self.keep(Decision(Status.ERROR, Reason.CALL_OR_RESPONSE_ERROR, detail=f"{what}: {exc}",
                           error_kind=type(exc).__name__))

    def horizon_for(self, host: Any, messages: Sequence[Message] = ()) -> int | None:
        """The later model calls the host expects: the number given, or what the given callable makes of
        the host's object. Else, where the host limits its calls (`calls_left`, such as mini-swe-agent's step
        limit), the estimate from `messages` bounded by that limit; else None: the compactor estimates it."""
        if self.horizon is not None:
            return self.horizon(host) if callable(self.horizon) else self.horizon
        left = self.calls_left(host) if self.calls_left is not None else None
        return None if left is None else horizon_from_history(messages, left)

    @property
    def mode(self) -> Mode:
        """The compactor's mode (OFF, SHADOW, ENFORCE)."""
        return self.compactor.options.mode

    @property
    def last_decision(self) -> Decision | None:
        """The newest decision kept (None before the first plan)."""
        return self.recent[-1] if self.recent else None

    @property
    def recent_decisions(self) -> tuple[Decision, ...]:
        """The last `keep_decisions` decisions, newest last."""
        return tuple(self.recent)

    def deprecated_decisions(self, owner: str) -> list[Decision]:
        """The old `decisions` attribute: now the last `keep_decisions` only, with a warning."""
        warnings.warn(f"{owner}.decisions is deprecated and holds only the last keep_decisions decisions "
                      "(an unbounded list grew without end in a long-running agent); use last_decision or "
                      "recent_decisions", DeprecationWarning, stacklevel=3)
        return list(self.recent)

    def scope_for(self, host: Any) -> Scope | None:
        """The scope of this plan: the one given, or what the given callable makes of the host's object."""
        return self.scope(host) if callable(self.scope) else self.scope

    def read(self, load: Callable[[], list[Message]]) -> list[Message] | None:
        """The host's history as jev messages (`load()`), or None when the library cannot read it: then an
        ERROR decision naming why is kept and logged, and the host goes on with its history as it is — a
        history jev cannot compact is never the agent's failure."""
        try:
            return load()
        except JevError as exc:
            self.failed(exc, "could not read the host's history, so it was left as it is")
            return None

    def keep(self, decision: Decision) -> Decision:
        """Keep `decision` as the newest (the oldest kept one goes when there are `keep_decisions`)."""
        self.recent.append(decision)
        return decision

    async def acommit(self, decision: Decision, scope: Scope | None, unchanged: Callable[[], Awaitable[bool]]
                      ) -> tuple[Message, ...] | None:
        """The commit guard every adapter uses (through `HistoryProcessor`): an ENFORCE plan that DECIDED is
        adopted only while the host's history is still the one judged — `unchanged()`, the host's own look at
        its store, asked only then. The compacted messages (the snapshot's reference kept for restores), or
        None: leave the history as it is."""
        return self._adopted(decision, scope) if self._adopts(decision) and await unchanged() else None

    def _adopts(self, decision: Decision) -> bool:
        return self.mode is Mode.ENFORCE and decision.status is Status.DECIDED and decision.plan is not None

    def _adopted(self, decision: Decision, scope: Scope | None) -> tuple[Message, ...]:
        assert decision.plan is not None
        if scope is not None and decision.plan.archive_reference:
            self.references.append((scope, decision.plan.archive_reference))
        return decision.plan.messages

    def archive(self) -> Any:
        """The compactor's archive, which a restore tool reads; `ConfigError` when there is none."""
        if self.compactor.archive is None:
            raise ConfigError("restore_tool needs a compactor with an archive")
        return self.compactor.archive

    async def restore(self, call_id: str) -> str:
        """What the restore tool answers: `call_id`'s pair from the newest snapshot holding it."""
        return await restore_latest(self.compactor.archive, self.references, call_id)


class Adapter:
    """What every host adapter shows of its `host` (a `HostCompaction`): the decisions it kept and the
    references its restore tool reads."""

    host: HostCompaction

    @property
    def last_decision(self) -> Decision | None:
        """The newest plan's decision (None before the first)."""
        return self.host.last_decision

    @property
    def recent_decisions(self) -> tuple[Decision, ...]:
        """The last `keep_decisions` decisions, newest last."""
        return self.host.recent_decisions

    @property
    def decisions(self) -> list[Decision]:
        """Deprecated: `recent_decisions` (it no longer grows with every plan)."""
        return self.host.deprecated_decisions(type(self).__name__)

    @property
    def references(self) -> list[tuple[Scope, str]]:
        """(scope, archive reference) of each adopted compaction, oldest first: what the restore tool reads."""
        return self.host.references
