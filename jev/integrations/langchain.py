"""LangChain v1: `JevCompactionMiddleware` for `create_agent(..., middleware=[...])`.

SHADOW runs in `wrap_model_call` (the model gets the request unchanged; a record is written). ENFORCE
runs in `before_model` and persists through the graph state — `RemoveMessage(REMOVE_ALL_MESSAGES)` plus
the compacted list — only on DECIDED and only if the state's messages are still what was judged.
OFF does nothing. The trigger is the host's: a message count or a token count. With `target_tokens=N`
the plan runs in budget mode, sized to bring the history under N tokens as `token_counter` (LangChain's
approximate counter by default) counts them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from archive import Scope, restore_latest
from archive.tool import DESCRIPTION, NAME

from .. import formats
from ..compactor import Compactor
from ..decision import Decision, Mode, Status
from ..errors import ConfigError
from ..history import fingerprint
from ..token_target import check_target_tokens


class JevCompactionMiddleware(AgentMiddleware):
    """Judged compaction inside a LangChain agent loop."""

    def __init__(self, compactor: Compactor, *, trigger: tuple[str, int] = ("messages", 50),
                 scope: Scope | Callable[[Any], Scope | None] | None = None, target_tokens: int | None = None,
                 token_counter: Callable[[list[Any]], int] = count_tokens_approximately) -> None:
        super().__init__()
        kind, value = trigger
        if kind not in ("messages", "tokens") or isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"trigger must be ('messages', n) or ('tokens', n) with n >= 1 (got {trigger!r})")
        self.compactor = compactor
        self.trigger = (kind, value)
        self.scope = scope
        self.target_tokens = check_target_tokens(target_tokens)
        self.token_counter = token_counter
        self.decisions: list[Decision] = []  # what happened, newest last (for hosts and tests)
        self.references: list[tuple[Scope, str]] = []

    def _fires(self, messages: list[Any]) -> bool:
        kind, value = self.trigger
        return len(messages) >= value if kind == "messages" else self.token_counter(messages) >= value

    def _sized(self, live: list[Any], judged: list[Any]) -> Compactor:
        """The compactor for this plan: in budget mode toward `target_tokens` when one is set."""
        if self.target_tokens is None:
            return self.compactor
        return self.compactor.for_tokens(judged, self.token_counter(live), self.target_tokens)

    def _scope(self, runtime: Any) -> Scope | None:
        return self.scope(runtime) if callable(self.scope) else self.scope

    # --- SHADOW: a per-call look, state untouched ---------------------------------------------------

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        if self.compactor.options.mode is Mode.SHADOW and self._fires(request.messages):
            judged = formats.load(request.messages, "langchain")
            self.decisions.append(self._sized(request.messages, judged).plan_sync(
                judged, scope=self._scope(request.runtime)))
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        if self.compactor.options.mode is Mode.SHADOW and self._fires(request.messages):
            judged = formats.load(request.messages, "langchain")
            self.decisions.append(await self._sized(request.messages, judged).plan(
                judged, scope=self._scope(request.runtime)))
        return await handler(request)

    # --- ENFORCE: persisted through the graph state -------------------------------------------------

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if not self._enforcing(state):
            return None
        live, scope = state["messages"], self._scope(runtime)
        judged = formats.load(live, "langchain")
        before = fingerprint(judged)
        return self._commit(self._sized(live, judged).plan_sync(judged, scope=scope), live, before, scope)

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if not self._enforcing(state):
            return None
        live, scope = state["messages"], self._scope(runtime)
        judged = formats.load(live, "langchain")
        before = fingerprint(judged)
        return self._commit(await self._sized(live, judged).plan(judged, scope=scope), live, before, scope)

    def _enforcing(self, state: Any) -> bool:
        return self.compactor.options.mode is Mode.ENFORCE and self._fires(state["messages"])

    def _commit(self, decision: Decision, live: list[Any], before: bytes, scope: Scope | None) -> dict[str, Any] | None:
        self.decisions.append(decision)
        if decision.status is not Status.DECIDED or decision.plan is None:
            return None
        if fingerprint(formats.load(live, "langchain")) != before:  # the live history moved on: keep it
            return None
        if scope is not None and decision.plan.archive_reference:
            self.references.append((scope, decision.plan.archive_reference))
        compacted = formats.dump(list(decision.plan.messages), "langchain")
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *compacted]}

    # --- restoring instead of re-running ---------------------------------------------------------------

    def restore_tool(self) -> Any:
        """A LangChain tool that brings back an archived call and result by call id (never re-runs it)."""
        from langchain_core.tools import StructuredTool

        archive = self.compactor.archive
        if archive is None:
            raise ConfigError("restore_tool needs a compactor with an archive")

        async def restore(call_id: str) -> str:
            return await restore_latest(archive, self.references, call_id)

        return StructuredTool.from_function(coroutine=restore, name=NAME, description=DESCRIPTION)
