"""LangChain v1: `JevCompactionMiddleware` for `create_agent(..., middleware=[...])`.

SHADOW runs in `wrap_model_call` (the model gets the request unchanged; a record is written). ENFORCE
runs in `before_model` and persists through the graph state — `RemoveMessage(REMOVE_ALL_MESSAGES)` plus
the compacted list — only on DECIDED and only if the state's messages are still what was judged.
OFF does nothing. Under the drop-block thinking policy, ENFORCE also asks a preserved-thinking model to drop
thinking whose prefix changed rather than refuse the request (`_drop_block`). The trigger is the host's: a
message count or a token count. With `target_tokens=N` the plan runs in budget mode, sized to bring the
history under N tokens as `token_counter` (LangChain's approximate counter by default) counts them. The
middleware keeps its last `keep_decisions` decisions (`last_decision`, `recent_decisions`), never every plan
it made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from .. import formats
from ..archived_pair import DESCRIPTION, NAME
from ..compactor import Compactor
from ..decision import Decision, Mode
from ..history import fingerprint
from ..providers import DROP_BLOCK_BETA, ThinkingPolicy, rules_for, with_drop_block
from ..scope import Scope
from ..transcript import Message
from .core import Adapter, HostCompaction, check_trigger, counted_as


class JevCompactionMiddleware(Adapter, AgentMiddleware):
    """Judged compaction inside a LangChain agent loop."""

    def __init__(self, compactor: Compactor, *, trigger: tuple[str, int] = ("messages", 50),
                 scope: Scope | Callable[[Any], Scope | None] | None = None, target_tokens: int | None = None,
                 token_counter: Callable[[list[Any]], int] = count_tokens_approximately,
                 keep_decisions: int = 1, horizon: int | Callable[[Any], int | None] | None = None) -> None:
        super().__init__()
        self.trigger = check_trigger(trigger, ("messages", "tokens"))
        self.host = HostCompaction(compactor, scope=scope, target_tokens=target_tokens,
                                   keep_decisions=keep_decisions, trigger=self.trigger[1], horizon=horizon)
        self.compactor = compactor
        self.token_counter = token_counter

    def _count(self, messages: list[Any]) -> int | None:
        """The history in the trigger's unit; None when the host's token counter failed (an ERROR kept)."""
        kind, _ = self.trigger
        return len(messages) if kind == "messages" else self.host.count(self.token_counter, messages)

    def _fires(self, messages: list[Any]) -> bool:
        """Whether to plan before this model call (the one place each mode's hook asks, once a call: the clock
        ticks here)."""
        self.host.tick()
        count = self._count(messages)
        return count is not None and self.host.due(count)

    def _sized(self, live: list[Any], judged: list[Any]) -> Compactor | None:
        """The compactor for this plan: in budget mode toward `target_tokens` when one is set (None: the host's
        counter failed; no plan)."""
        return self.host.sized(judged, lambda: self.token_counter(live), counted_as(self.token_counter, "langchain"))

    # --- SHADOW: a per-call look, state untouched ---------------------------------------------------

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        request = self._drop_block(request)
        if self.compactor.options.mode is Mode.SHADOW and self._fires(request.messages):
            judged = self.host.read(lambda: formats.load(request.messages, "langchain"))
            compactor = self._sized(request.messages, judged) if judged is not None else None
            if compactor is not None and judged is not None:
                self.host.keep(compactor.plan_sync(
                    judged, scope=self.host.scope_for(request.runtime), horizon=self.host.horizon_for(request.runtime),
                    idle_seconds=self.host.idle))
            self.host.planned(self._count(request.messages))
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        request = self._drop_block(request)
        if self.compactor.options.mode is Mode.SHADOW and self._fires(request.messages):
            judged = self.host.read(lambda: formats.load(request.messages, "langchain"))
            compactor = self._sized(request.messages, judged) if judged is not None else None
            if compactor is not None and judged is not None:
                self.host.keep(await compactor.plan(
                    judged, scope=self.host.scope_for(request.runtime), horizon=self.host.horizon_for(request.runtime),
                    idle_seconds=self.host.idle))
            self.host.planned(self._count(request.messages))
        return await handler(request)

    def _drop_block(self, request: Any) -> Any:
        """The model request as the drop-block thinking policy needs it in ENFORCE: for a preserved-thinking
        model (the config's, else the chat model's own `model` name) that thinks, `thinking.block_binding` set to
        drop blocks whose prefix changed and the beta header sent, so an edited history is never refused. Any
        other request is passed as it is."""
        config = self.compactor.config
        if self.compactor.options.mode is not Mode.ENFORCE or config.thinking_policy is not ThinkingPolicy.DROP_BLOCK:
            return request
        model = config.model or getattr(request.model, "model", None) or getattr(request.model, "model_name", None)
        if not rules_for(model if isinstance(model, str) else None).preserved_thinking:
            return request
        settings = dict(request.model_settings or {})
        thinking = settings.get("thinking", getattr(request.model, "thinking", None))
        bound = with_drop_block({"thinking": thinking})
        if bound["thinking"] is thinking:  # no thinking asked for: nothing is bound
            return request
        headers = dict(settings.get("extra_headers") or {})
        betas = [b for b in str(headers.get("anthropic-beta", "")).split(",") if b.strip()]
        headers["anthropic-beta"] = ",".join(betas if DROP_BLOCK_BETA in betas else [*betas, DROP_BLOCK_BETA])
        return request.override(model_settings={**settings, "thinking": bound["thinking"], "extra_headers": headers})

    # --- ENFORCE: persisted through the graph state -------------------------------------------------

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        job = self._enforcing(state, runtime)
        if job is None:
            return None
        compactor, live, judged, scope = job
        return self._commit(compactor.plan_sync(judged, scope=scope, horizon=self.host.horizon_for(runtime),
                                                idle_seconds=self.host.idle),
                            live, fingerprint(judged), scope)

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        job = self._enforcing(state, runtime)
        if job is None:
            return None
        compactor, live, judged, scope = job
        return self._commit(await compactor.plan(judged, scope=scope, horizon=self.host.horizon_for(runtime),
                                                 idle_seconds=self.host.idle),
                            live, fingerprint(judged), scope)

    def _enforcing(self, state: Any, runtime: Any) -> tuple[Compactor, list[Any], list[Message], Scope | None] | None:
        """What an ENFORCE plan of the live messages needs — the compactor sized for them, the messages, their
        jev form, the scope — or None: not ENFORCE, below the trigger, or unreadable (an ERROR decision
        kept, the trigger moved on)."""
        live = state["messages"]
        if self.compactor.options.mode is not Mode.ENFORCE or not self._fires(live):
            return None
        judged = self.host.read(lambda: formats.load(live, "langchain"))
        compactor = self._sized(live, judged) if judged is not None else None
        if compactor is None or judged is None:
            self.host.planned(self._count(live))
            return None
        return compactor, live, judged, self.host.scope_for(runtime)

    def _commit(self, decision: Decision, live: list[Any], before: bytes, scope: Scope | None) -> dict[str, Any] | None:
        adopted = self.host.commit(self.host.keep(decision), scope,
                                   lambda: fingerprint(formats.load(live, "langchain")) == before)
        if adopted is None:
            self.host.planned(self._count(live))  # not adopted, or the live history moved on: keep it
            return None
        compacted = formats.dump(list(adopted), "langchain")
        self.host.planned(self._count(compacted))
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *compacted]}

    # --- restoring instead of re-running ---------------------------------------------------------------

    def restore_tool(self) -> Any:
        """A LangChain tool that brings back an archived call and result by call id (never re-runs it)."""
        from langchain_core.tools import StructuredTool

        self.host.archive()  # a restore tool needs one
        return StructuredTool.from_function(coroutine=self.host.restore, name=NAME, description=DESCRIPTION)
