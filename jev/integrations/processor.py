"""One hook for every host: `HistoryProcessor`, messages in the host's own form in, messages in that form out.

Every integration is a few lines over it (a host's hook calls `process` or `process_sync` before a model call
and puts back what it returns): the trigger, the token target, the horizon, the clock and the archive's
references are the same everywhere, and so are the rules of adopting. In OFF, below the trigger, in SHADOW,
when a plan is not DECIDED, or when the host's history moved on while it was judged (`unchanged`), the very
list given comes back (`out is messages`: nothing to write back); only an adopted ENFORCE plan comes back as a
new list, written in the host's form. A history the library cannot read, or a host counter that fails, keeps
an ERROR decision and leaves the history as it is: compaction never fails an agent's step.

One processor may serve many conversations (a LangChain agent built once and run on many threads): with
`conversation` naming the conversation a call belongs to, each gets its own trigger, clock, kept decisions and
snapshot references (a `HostCompaction`) and its own compactor session (`CompactorSetup.session`), so one
conversation's plan never moves another's trigger and a restore reads only its own conversation's snapshots.
The newest `conversations` are kept; the default conversation (None) is the processor's own `host`.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any

from .. import formats
from ..applying.archived_pair import restore_latest
from ..deciding.cost import tokens_of
from ..deciding.decision import Mode
from ..deciding.token_target import called
from ..errors import ConfigError
from ..model.scope import Scope
from ..model.transcript import Message, ToolResultBlock
from ..running.compactor import Compactor
from ..support.validate import require_integer
from .core import Adapter, HostCompaction, check_trigger, counted_as

TRIGGER_UNITS = ("messages", "tokens", "tool_results")
Counter = Callable[[list[Any]], "int | Awaitable[int]"]
Unchanged = Callable[[Sequence[Message]], "bool | Awaitable[bool]"]


class HistoryProcessor(Adapter):
    """Judged compaction of a host's history, list → list (module docstring). `form` is the jev form the host's
    messages are in (`jev.formats.FORMATS`); `trigger` `(unit, n)` with unit one of `units`: the history's
    messages, its tokens (the host's `token_counter` of its own messages, sync or async; else jev's estimate)
    or its tool results. `horizon` (a number, or a callable of the host's object) is the later model calls the
    host expects; else the history's estimate, bounded by `calls_left(host)` where the host limits its calls.
    `model` is the provider's model the history is sent to, when the host knows it and the history does not
    say (its rules decide what a plan may change: `jev.providers`); `CompactionConfig.model` still wins.
    `conversation` names the conversation a call belongs to (from the host's object; None: the default one,
    `host`); the newest `conversations` of them keep their state (module docstring)."""

    def __init__(self, compactor: Compactor, form: str, *, trigger: tuple[str, int] = ("messages", 50),
                 units: tuple[str, ...] = TRIGGER_UNITS, scope: Scope | Callable[[Any], Scope | None] | None = None,
                 target_tokens: int | None = None, token_counter: Counter | None = None, keep_decisions: int = 1,
                 horizon: int | Callable[[Any], int | None] | None = None,
                 calls_left: Callable[[Any], int | None] | None = None, model: str | None = None,
                 conversation: Callable[[Any], Hashable | None] | None = None, conversations: int = 256) -> None:
        if form not in formats.FORMATS or form == "auto":
            raise ConfigError(f"form must be one of {', '.join(f for f in formats.FORMATS if f != 'auto')} "
                              f"(got {form!r})")
        self.form = form
        self.trigger = check_trigger(trigger, units)
        self._new_host: Callable[[Compactor], HostCompaction] = lambda session: HostCompaction(
            session, scope=scope, target_tokens=target_tokens, keep_decisions=keep_decisions, trigger=self.trigger[1],
            horizon=horizon, calls_left=calls_left)
        self.host = self._new_host(compactor)
        self.compactor = compactor
        self.token_counter = token_counter
        self.model = model
        self.conversation = conversation
        self._others: OrderedDict[Hashable, HostCompaction] = OrderedDict()  # newest last
        self._kept = require_integer("conversations", conversations, 1)

    def conversation_of(self, key: Hashable | None) -> HostCompaction | None:
        """The state a conversation keeps (None: the default one's, `host`), or None when it has none (never
        seen, or no longer among the newest `conversations`)."""
        return self.host if key is None else self._others.get(key)

    def _key(self, host: Any) -> Hashable | None:
        """The conversation a call with the host's object `host` belongs to (None: the default one)."""
        return self.conversation(host) if self.conversation is not None else None

    def _state(self, host: Any) -> HostCompaction:
        """The state of the conversation `host` belongs to: made on its first call, the oldest let go when
        more than `conversations` are kept."""
        key = self._key(host)
        if key is None:
            return self.host
        state = self._others.get(key)
        if state is None:
            state = self._others[key] = self._new_host(Compactor.from_setup(self.compactor.setup))
            while len(self._others) > self._kept:
                self._others.popitem(last=False)
        else:
            self._others.move_to_end(key)
        return state

    @property
    def mode(self) -> Mode:
        return self.compactor.options.mode

    async def process(self, messages: Sequence[Any], host: Any = None, *,
                      unchanged: Unchanged | None = None,
                      context: dict[str, Any] | None = None, token_counter: Counter | None = None,
                      model: str | None = None) -> Any:
        """The history the host's next model call should get: `messages` itself, or in ENFORCE the compacted
        history of an adopted plan (a new list in the host's form). `host` is what `scope`, `horizon` and
        `calls_left` callables read; `unchanged(judged)` (sync or async; `judged` the history read, as jev
        messages) is the host's own look at its store, asked before adopting: is it still what was judged
        (default: yes, the call's own input, which nothing else can change); `token_counter`
        overrides the processor's for this call (a host whose counter belongs to the call's agent), `model` the
        processor's model for this call (a host that names it per request)."""
        if self.mode is Mode.OFF:
            return messages
        return await self._process(self._state(host), messages, host, unchanged, context, token_counter, model)

    def process_sync(self, messages: Sequence[Any], host: Any = None, *,
                     unchanged: Unchanged | None = None,
                     context: dict[str, Any] | None = None, token_counter: Counter | None = None,
                     model: str | None = None) -> Any:
        """`process` for a sync host, from any thread, on the loop its conversation's session owns
        (`Compactor.runner`): one conversation's calls take turns, several conversations run at once."""
        if self.mode is Mode.OFF:
            return messages
        state = self._state(host)
        return state.compactor.runner.run(self._process(state, messages, host, unchanged, context, token_counter,
                                                        model))

    async def _process(self, state: HostCompaction, messages: Sequence[Any], host: Any, unchanged: Unchanged | None,
                       context: dict[str, Any] | None, token_counter: Counter | None, model: str | None) -> Any:
        """`process` in the conversation `state` (its trigger, clock, decisions, references and session)."""
        state.tick()  # once a model call, before it: the clock the cost gate reads
        live = list(messages)
        counter = token_counter or self.token_counter
        if self.trigger[0] == "messages" and not state.due(len(live)):
            return messages  # counted without reading the messages
        judged = state.read(lambda: _named(formats.load(live, self.form), model or self.model))
        if judged is None:  # an ERROR decision kept: the trigger moves on, the history stays as it is
            state.planned(len(live) if self.trigger[0] == "messages" else state.next_at)
            return messages
        count = await self._count(state, live, judged, counter)
        if count is None or not state.due(count):
            return messages
        compactor = await self._sized(state, live, judged, counter, count if self.trigger[0] == "tokens" else None)
        if compactor is None:  # the host's counter failed: an ERROR decision kept
            state.planned(count)
            return messages
        scope = state.scope_for(host)
        decision = state.keep(await compactor.plan(judged, scope=scope, context=context,
                                                       horizon=state.horizon_for(host, judged),
                                                       idle_seconds=state.idle))
        adopted = await state.acommit(decision, scope, _asked(unchanged, judged))
        if adopted is None:  # not adopted, or the host's history moved on: keep it
            state.planned(count)
            return messages
        out = formats.dump(list(adopted), self.form)
        state.planned(await self._count(state, out, list(adopted), counter))
        return out

    async def restore(self, call_id: str, host: Any = None) -> str:
        """The archived call and result `call_id` (newest snapshot holding it) of the conversation `host`
        belongs to, as the agent may be shown it — never another conversation's; the tool is never run again."""
        state = self.conversation_of(self._key(host))
        if state is None:  # a conversation that archived nothing (or no longer kept): nothing of another's
            return await restore_latest(self.host.archive(), [], call_id)
        return await state.restore(call_id)

    async def _count(self, state: HostCompaction, raw: list[Any], messages: Sequence[Message], counter: Counter | None
                     ) -> int | None:
        """The history in the trigger's unit; None when the host's token counter failed (an ERROR kept)."""
        unit = self.trigger[0]
        if unit == "messages":
            return len(raw)
        if unit == "tool_results":
            return sum(1 for m in messages for b in m.content if type(b) is ToolResultBlock)
        return await self._tokens(state, raw, messages, counter)

    async def _tokens(self, state: HostCompaction, raw: list[Any], messages: Sequence[Message], counter: Counter | None
                      ) -> int | None:
        """The host's token count of its own messages (checked; None when it failed: an ERROR kept), else
        jev's estimate of the messages read."""
        if counter is None:
            return tokens_of(messages)
        try:
            value = called(counter, raw)
            if inspect.isawaitable(value):
                value = await value
        except ConfigError as exc:
            state.failed(exc, "could not count the host's history (its token counter failed), so it was left as it is")
            return None
        return state.count(lambda _history: value, raw)

    async def _sized(self, state: HostCompaction, raw: list[Any], messages: Sequence[Message], counter: Counter | None,
                     counted: int | None) -> Compactor | None:
        """The compactor for this plan: in budget mode toward `target_tokens` when one is set (None: the host's
        counter failed; no plan), from `counted` tokens when the trigger already counted them. What a plan
        leaves is counted as the host counts its own messages."""
        if state.target_tokens is None:
            return state.compactor
        tokens = counted if counted is not None else await self._tokens(state, raw, messages, counter)
        if tokens is None:
            return None
        count: Callable[[Sequence[Message]], Any] = tokens_of if counter is None else counted_as(counter, self.form)
        return state.compactor.for_tokens(messages, tokens, state.target_tokens, count)


def _named(messages: list[Message], model: str | None) -> list[Message]:
    """The history with the host's `model` on its newest assistant message (its `origin`, where the provider's
    rules read a history's model: `jev.providers.model_of`), unless that message names one itself."""
    if model is None:
        return messages
    for k in range(len(messages) - 1, -1, -1):
        message = messages[k]
        if message.role == "assistant":
            if not (message.origin is not None and message.origin.model):
                messages[k] = message.with_origin(model=model)
            break
    return messages


def _asked(unchanged: Unchanged | None, judged: Sequence[Message]) -> Callable[[], Awaitable[bool]]:
    """The host's `unchanged` look at `judged` as an async one (None: the call's own input, always unchanged)."""
    async def ask() -> bool:
        if unchanged is None:
            return True
        answer = unchanged(judged)
        return bool(await answer) if inspect.isawaitable(answer) else bool(answer)
    return ask
