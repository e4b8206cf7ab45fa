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

from ..model.scope import Scope
from ..running.compactor import Compactor
from .processor import HistoryProcessor

FORMAT = "mini-swe-agent"


class JevQueryHook(HistoryProcessor):
    """Judged compaction of a mini-swe-agent agent's messages, called before each model call (the horizon is
    bounded by the agent's step limit: `calls_left`)."""

    def __init__(self, compactor: Compactor, *, trigger: tuple[str, int] = ("tokens", 20_000),
                 scope: Scope | Callable[[Any], Scope | None] | None = None, target_tokens: int | None = None,
                 keep_decisions: int = 1, horizon: int | Callable[[Any], int | None] | None = None) -> None:
        super().__init__(compactor, FORMAT, trigger=trigger, units=("tokens", "messages"), scope=scope,
                         target_tokens=target_tokens, keep_decisions=keep_decisions, horizon=horizon,
                         calls_left=calls_left)  # tokens: jev's estimate, mini-swe-agent's models have no counter

    def __call__(self, agent: Any) -> None:
        """Plan over `agent.messages` when the trigger is reached, and adopt what ENFORCE may adopt."""
        judged = list(agent.messages)
        out = self.process_sync(judged, agent, unchanged=lambda _judged: _same(agent.messages, judged))
        if out is not judged:
            agent.messages[:] = out

    def restore(self, call_id: str) -> str:  # type: ignore[override]
        """The archived call and result `call_id` (newest snapshot holding it), as the agent may be shown it;
        the tool is never run again."""
        return self.compactor.runner.run(self.host.restore(call_id))


def _same(now: Sequence[Any], judged: Sequence[Any]) -> bool:
    """The agent's list still holds the very message dicts judged, in order (the hook runs inside the
    agent's own step, so nothing else writes them meanwhile)."""
    return len(now) == len(judged) and all(a is b for a, b in zip(now, judged, strict=True))


def calls_left(agent: Any) -> int | None:
    """The model calls a mini-swe-agent agent may still make, the coming one included, under its step limit
    (`config.step_limit`; 0 is none): its `query()` refuses once `n_calls` reaches it. None without a limit."""
    limit = getattr(getattr(agent, "config", None), "step_limit", 0)
    made = getattr(agent, "n_calls", None)
    if not isinstance(limit, int) or limit <= 0 or not isinstance(made, int):
        return None
    return max(1, limit - made)


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
