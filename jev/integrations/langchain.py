"""LangChain v1: `JevCompactionMiddleware` for `create_agent(..., middleware=[...])`.

SHADOW runs in `wrap_model_call` (the model gets the request unchanged; a record is written). ENFORCE
runs in `before_model` and persists through the graph state — `RemoveMessage(REMOVE_ALL_MESSAGES)` plus
the compacted list — only on DECIDED and only if the state's messages are still what was judged.
OFF does nothing. Under the drop-block thinking policy, ENFORCE also asks a preserved-thinking model to drop
thinking whose prefix changed rather than refuse the request (`_drop_block`). The trigger is the host's: a
message count or a token count. With `target_tokens=N` the plan runs in budget mode, sized to bring the
history under N tokens as `token_counter` (LangChain's approximate counter by default) counts them. The
middleware keeps its last `keep_decisions` decisions (`last_decision`, `recent_decisions`), never every plan
it made. An agent built once serves many threads: each LangGraph thread (`configurable.thread_id`) is a
conversation of its own — its own trigger, decisions, snapshot references and compactor session — and the
restore tool reads only the calling thread's snapshots (`conversation=` names conversations otherwise).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from .. import formats
from ..applying.archived_pair import DESCRIPTION, NAME
from ..deciding.decision import Mode
from ..model.scope import Scope
from ..model.transcript import Message
from ..providers import DROP_BLOCK_BETA, ThinkingPolicy, rules_for, with_drop_block
from ..reading.history import fingerprint
from ..running.compactor import Compactor
from .processor import HistoryProcessor

FORMAT = "langchain"


class JevCompactionMiddleware(HistoryProcessor, AgentMiddleware):
    """Judged compaction inside a LangChain agent loop."""

    def __init__(self, compactor: Compactor, *, trigger: tuple[str, int] = ("messages", 50),
                 scope: Scope | Callable[[Any], Scope | None] | None = None, target_tokens: int | None = None,
                 token_counter: Callable[[list[Any]], int] = count_tokens_approximately,
                 keep_decisions: int = 1, horizon: int | Callable[[Any], int | None] | None = None,
                 conversation: Callable[[Any], Hashable | None] | None = None, conversations: int = 256) -> None:
        AgentMiddleware.__init__(self)
        HistoryProcessor.__init__(self, compactor, FORMAT, trigger=trigger, units=("messages", "tokens"), scope=scope,
                                  target_tokens=target_tokens, token_counter=token_counter,
                                  keep_decisions=keep_decisions, horizon=horizon,
                                  conversation=conversation or thread_id, conversations=conversations)

    # --- SHADOW: a per-call look, state untouched ---------------------------------------------------

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        request = self._drop_block(request)
        if self.mode is Mode.SHADOW:
            self.process_sync(request.messages, request.runtime)
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        request = self._drop_block(request)
        if self.mode is Mode.SHADOW:
            await self.process(request.messages, request.runtime)
        return await handler(request)

    def _drop_block(self, request: Any) -> Any:
        """The model request as the drop-block thinking policy needs it in ENFORCE: for a preserved-thinking
        model (the config's, else the chat model's own `model` name) that thinks, `thinking.block_binding` set to
        drop blocks whose prefix changed and the beta header sent, so an edited history is never refused. Any
        other request is passed as it is."""
        config = self.compactor.config
        if self.compactor.options.mode is not Mode.ENFORCE or config.thinking is not ThinkingPolicy.DROP_BLOCK:
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
        if self.mode is not Mode.ENFORCE:
            return None
        live = state["messages"]
        return _replacing(live, self.process_sync(live, runtime, unchanged=_unchanged(live)))

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if self.mode is not Mode.ENFORCE:
            return None
        live = state["messages"]
        return _replacing(live, await self.process(live, runtime, unchanged=_unchanged(live)))

    # --- restoring instead of re-running ---------------------------------------------------------------

    def restore_tool(self) -> Any:
        """A LangChain tool that brings back an archived call and result by call id (never re-runs it)."""
        from langchain_core.tools import StructuredTool

        self.host.archive()  # a restore tool needs one

        async def restore(call_id: str) -> str:  # the calling thread's snapshots only (`HistoryProcessor.restore`)
            return await self.restore(call_id)

        return StructuredTool.from_function(coroutine=restore, name=NAME, description=DESCRIPTION)


def thread_id(_host: Any = None) -> Hashable | None:
    """The LangGraph thread the running graph step belongs to (`configurable.thread_id`), or None outside a
    graph or without a checkpointer's thread: the conversation a middleware call or its restore tool serves."""
    from langgraph.config import get_config

    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a runnable context
        return None
    thread = configurable.get("thread_id")
    return thread if isinstance(thread, Hashable) else None


def _unchanged(live: list[Any]) -> Callable[[Sequence[Message]], bool]:
    """The state's messages still read as the history judged (a message edited in place meanwhile is seen)."""
    return lambda judged: fingerprint(formats.load(live, FORMAT)) == fingerprint(judged)


def _replacing(live: list[Any], out: list[Any]) -> dict[str, Any] | None:
    """The state update that replaces the messages with an adopted plan's (`out`), or None: keep them."""
    return None if out is live else {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *out]}
