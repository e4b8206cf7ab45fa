"""AgentScope 2.x: `JevContextMiddleware`, a `MiddlewareBase` on `on_compress_context` (the hook AgentScope
runs before every reasoning step), and `ArchiveOffloader`, an `Offloader` backed by a jev archive.
The trigger counts tool results (AgentScope keeps a whole reply in one `Msg`), messages, or tokens as
the agent's model counts them — set below AgentScope's own compression threshold (the model's context
size × its `trigger_ratio`), jev compacts first; AgentScope's own compression still runs at its threshold
once jev can no longer bring the context under its target.

Below the trigger, or in OFF, the middleware passes through to AgentScope's own compression. Above it:
SHADOW records and passes through; ENFORCE replaces `agent.state.context` with the compacted messages only
on DECIDED and only if the context is still exactly what was judged — and never falls back to the lossy
summary, whatever the outcome. With `target_tokens=N` the plan runs in budget mode, sized to bring the
context under N tokens as the agent's own model counts them (`agent.model.count_tokens`). The middleware
keeps its last `keep_decisions` decisions (`last_decision`, `recent_decisions`), never every plan it made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agentscope.message import Msg
from agentscope.middleware import MiddlewareBase

from .. import formats
from ..compactor import Compactor
from ..decision import Mode
from ..errors import ConfigError
from ..scope import Scope
from ..transcript import Message, ToolResultBlock
from .core import Adapter, HostCompaction, check_trigger, counted_as

FORMAT = "agentscope"


def _dicts(msgs: list[Msg]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in msgs]


class JevContextMiddleware(Adapter, MiddlewareBase):
    """Judged compaction of an AgentScope agent's context."""

    def __init__(self, compactor: Compactor, *, trigger: tuple[str, int] = ("tool_results", 20),
                 scope: Scope | Callable[[Any], Scope | None] | None = None,
                 target_tokens: int | None = None, keep_decisions: int = 1,
                 horizon: int | Callable[[Any], int | None] | None = None) -> None:
        self.trigger = check_trigger(trigger, ("tool_results", "messages", "tokens"))
        self.host = HostCompaction(compactor, scope=scope, target_tokens=target_tokens,
                                   keep_decisions=keep_decisions, trigger=self.trigger[1], horizon=horizon)
        self.compactor = compactor

    def restore_tool(self) -> Any:
        """An AgentScope `FunctionTool` that brings back an archived call and result by call id."""
        from agentscope.message import TextBlock
        from agentscope.tool import FunctionTool, ToolChunk

        self.host.archive()  # a restore tool needs one

        async def restore_archived_result(call_id: str) -> ToolChunk:
            """Bring back the full, original result of an earlier tool call that was archived when the
            context was compacted. Reads the archive only; never runs the tool again.

            Args:
                call_id (str): the id of the tool call whose archived result to bring back
            """
            return ToolChunk(content=[TextBlock(text=await self.host.restore(call_id))])

        return FunctionTool(restore_archived_result, is_read_only=True)

    async def _count(self, agent: Any, context: list[Msg]) -> int | None:
        """The context in the trigger's unit: tokens as the agent's own model counts them (as AgentScope
        counts its context for its own compression; None when that failed: an ERROR kept), messages, or
        tool results."""
        kind = self.trigger[0]
        if kind == "tokens":
            return await self._tokens(agent, context)
        return len(context) if kind == "messages" else sum(
            1 for m in context for b in m.content if getattr(b, "type", "") == "tool_result")

    async def _tokens(self, agent: Any, context: list[Msg]) -> int | None:
        """The agent's model's token count of `context`, checked; None when it failed (an ERROR kept)."""
        try:
            counted = await agent.model.count_tokens(context, None)
        except Exception as exc:
            self.host.failed(ConfigError(f"the model's count_tokens failed ({type(exc).__name__}: {exc})"),
                             "could not count the context (the model's count_tokens failed), so it was left as it is")
            return None
        return self.host.count(lambda _context: counted, context, "the model's count_tokens")

    async def on_compress_context(self, agent: Any, input_kwargs: dict, next_handler: Callable[..., Any]) -> None:
        mode = self.compactor.options.mode
        context = agent.state.context
        self.host.tick()
        count = await self._count(agent, context) if mode is not Mode.OFF else None
        if count is None or not self.host.due(count):
            await next_handler()
            return
        judged = _dicts(context)
        scope = self.host.scope_for(agent)
        messages = self.host.read(lambda: formats.load(judged, FORMAT))
        if messages is None:  # left as it is: AgentScope's own compression goes on
            self.host.planned(await self._count(agent, context))
            await next_handler()
            return
        compactor: Compactor | None = self.compactor
        if self.host.target_tokens is not None:  # counted by the agent's model, as AgentScope counts its context
            tokens = await self._tokens(agent, context)
            compactor = None if tokens is None else self.host.sized(messages, lambda: tokens, counted_as(
                lambda dicts: agent.model.count_tokens([Msg.model_validate(d) for d in dicts], None), FORMAT))
        if compactor is None:  # the count failed: an ERROR decision kept, AgentScope's own compression goes on
            await next_handler()
            return
        decision = self.host.keep(await compactor.plan(messages, scope=scope,
                                                       context={"session_id": agent.state.session_id},
                                                       horizon=self.host.horizon_for(agent),
                                                       idle_seconds=self.host.idle))
        adopted = self.host.commit(decision, scope, lambda: _dicts(agent.state.context) == judged)
        if adopted is not None:
            agent.state.context[:] = [Msg.model_validate(d) for d in formats.dump(list(adopted), FORMAT)]
        self.host.planned(await self._count(agent, agent.state.context))
        if mode is Mode.SHADOW:
            await next_handler()


class ArchiveOffloader:
    """An AgentScope `Offloader` whose context and tool-result offloads are archive snapshots (verified,
    scoped, never re-run); data blocks go to `data_offloader` when given, else stay inline."""

    def __init__(self, archive: Any, scope_for: Callable[[str], Scope], data_offloader: Any = None) -> None:
        self.archive = archive
        self.scope_for = scope_for
        self.data_offloader = data_offloader

    async def offload_context(self, session_id: str, msgs: list[Msg]) -> str:
        messages = formats.load(_dicts(msgs), FORMAT)
        return await asyncio.to_thread(self.archive.save, self.scope_for(session_id), messages)

    async def offload_tool_result(self, session_id: str, tool_result: Any) -> str:
        block = formats.load([{"role": "assistant", "id": "offloaded", "content": [tool_result.model_dump(mode="json")],
                               "created_at": ""}], FORMAT)[0].content[0]
        if not isinstance(block, ToolResultBlock):
            raise ConfigError("offload_tool_result needs a ToolResultBlock")
        message = Message(f"tool-result-{block.id}", "tool", (block,))
        return await asyncio.to_thread(self.archive.save, self.scope_for(session_id), [message])

    async def offload_data_block(self, block: Any) -> Any:
        if self.data_offloader is not None:
            return await self.data_offloader.offload_data_block(block)
        return block
