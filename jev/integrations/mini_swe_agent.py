"""mini-swe-agent 2.x: `JevQueryHook`, run before each model call from an agent's `query()` — the method
mini-swe-agent documents as the place to "add hooks" — and `JevAgent`, a `DefaultAgent` that runs it
(`JevQueryMixin` adds it to any other agent class: `class Agent(JevQueryMixin, InteractiveAgent)`).

The hook reads `agent.messages` in every mode the library reads mini-swe-agent in (text actions, tool
calls, Responses items). The trigger counts the history's tokens — SPEC §4's estimate of what the model
sees, as mini-swe-agent's models have no counter — or its messages. Below the trigger, or in OFF, it does
nothing. Above it SHADOW records; ENFORCE replaces `agent.messages` with the compacted list (written back
as mini-swe-agent's own dicts) only on DECIDED and only while the list still holds the very messages
judged. With `target_tokens=N` the plan runs in budget mode toward N tokens. The trajectory mini-swe-agent
saves is then the history the model saw; the full one is in the archive, which `restore(call_id)`
reads for the host (the agent has only its shell: a marker tells it to ask the host for call X).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from minisweagent.agents.default import DefaultAgent

from .. import formats
from ..aio import run_sync
from ..compactor import Compactor
from ..cost import tokens_of
from ..decision import Mode
from ..scope import Scope
from ..transcript import Message
from .core import Adapter, HostCompaction, check_trigger

FORMAT = "mini-swe-agent"


class JevQueryHook(Adapter):
    """Judged compaction of a mini-swe-agent agent's messages, called before each model call."""

    def __init__(self, compactor: Compactor, *, trigger: tuple[str, int] = ("tokens", 20_000),
                 scope: Scope | Callable[[Any], Scope | None] | None = None, target_tokens: int | None = None,
                 keep_decisions: int = 1, horizon: int | Callable[[Any], int | None] | None = None) -> None:
        self.trigger = check_trigger(trigger, ("tokens", "messages"))
        self.host = HostCompaction(compactor, scope=scope, target_tokens=target_tokens,
                                   keep_decisions=keep_decisions, trigger=self.trigger[1], horizon=horizon)
        self.compactor = compactor

    def __call__(self, agent: Any) -> None:
        """Plan over `agent.messages` when the trigger is reached, and adopt what ENFORCE may adopt."""
        if self.compactor.options.mode is Mode.OFF:
            return
        self.host.tick()  # once a step, before its model call
        judged = list(agent.messages)
        if self.trigger[0] == "messages" and not self.host.due(len(judged)):
            return  # counted without reading the messages
        read = self.host.read(lambda: formats.load(judged, FORMAT))
        if read is None:
            return
        messages: list[Message] = read
        count = self._count(judged, messages)
        if not self.host.due(count):
            return
        scope = self.host.scope_for(agent)
        compactor = self.host.sized(messages, lambda: count if self.trigger[0] == "tokens" else tokens_of(messages),
                                    tokens_of)  # the hook counts with the library's estimate
        if compactor is None:  # never, with the library's own estimate: an ERROR decision kept
            return
        decision = self.host.keep(compactor.plan_sync(messages, scope=scope, horizon=self.host.horizon_for(agent),
                                                      idle_seconds=self.host.idle))
        adopted = self.host.commit(decision, scope, lambda: _same(agent.messages, judged))
        if adopted is not None:
            agent.messages[:] = formats.dump(list(adopted), FORMAT)
            messages = list(adopted)
        self.host.planned(self._count(agent.messages, messages))

    def restore(self, call_id: str) -> str:
        """The archived call and result `call_id` (newest snapshot holding it), as the agent may be shown it;
        the tool is never run again."""
        return run_sync(self.host.restore(call_id))

    def _count(self, raw: Sequence[Any], messages: Sequence[Message]) -> int:
        return len(raw) if self.trigger[0] == "messages" else tokens_of(messages)


def _same(now: Sequence[Any], judged: Sequence[Any]) -> bool:
    """The agent's list still holds the very message dicts judged, in order (the hook runs inside the
    agent's own step, so nothing else writes them meanwhile)."""
    return len(now) == len(judged) and all(a is b for a, b in zip(now, judged, strict=True))


class JevQueryMixin:
    """Runs `self.jev` (a `JevQueryHook`, or None) before each model call; put it before the agent class:
    `class Agent(JevQueryMixin, InteractiveAgent)`."""

    jev: JevQueryHook | None = None

    def query(self) -> dict:
        if self.jev is not None:
            self.jev(self)
        return super().query()  # type: ignore[misc]


class JevAgent(JevQueryMixin, DefaultAgent):
    """mini-swe-agent's `DefaultAgent` with judged compaction before each model call:
    `JevAgent(model, env, jev=JevQueryHook(compactor, ...), **agent_config)`."""

    def __init__(self, model: Any, env: Any, *, jev: JevQueryHook | None = None, **kwargs: Any) -> None:
        super().__init__(model, env, **kwargs)
        self.jev = jev
