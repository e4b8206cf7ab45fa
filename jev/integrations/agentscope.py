"""AgentScope 2.x: `JevContextMiddleware`, a `MiddlewareBase` on `on_compress_context` (the hook AgentScope
runs before every reasoning step), and `ArchiveOffloader`, an `Offloader` backed by a jev archive.
The trigger counts tool results (AgentScope keeps a whole reply in one `Msg`), messages, or tokens as
the agent's model counts them — set below AgentScope's own compression threshold (the model's context
size × its `trigger_ratio`), jev compacts first; AgentScope's own compression still runs at its threshold
once jev can no longer bring the context under its target.

Below the trigger, or in OFF, the middleware passes through to AgentScope's own compression. Above it:
SHADOW records and passes through; ENFORCE replaces `agent.state.context` with the compacted messages only
on DECIDED and only if the context is still exactly what was judged — and never falls back to the lossy
summary, whatever the plan's outcome, unless jev could not plan at all (an ERROR decision: the context
unreadable, the count or the judge failed), where AgentScope's own compression goes on. With
`target_tokens=N` the plan runs in budget mode, sized to bring the
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
from ..deciding.decision import Mode, Status
from ..errors import ConfigError
from ..model.scope import Scope
from ..model.transcript import Message, ToolResultBlock
from ..running.compactor import Compactor
from .processor import HistoryProcessor

FORMAT = "agentscope"


def _dicts(msgs: list[Msg]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in msgs]


class JevContextMiddleware(HistoryProcessor, MiddlewareBase):
    """Judged compaction of an AgentScope agent's context."""

    def __init__(self, compactor: Compactor, *, trigger: tuple[str, int] = ("tool_results", 20),
                 scope: Scope | Callable[[Any], Scope | None] | None = None,
                 target_tokens: int | None = None, keep_decisions: int = 1,
                 horizon: int | Callable[[Any], int | None] | None = None) -> None:
        super().__init__(compactor, FORMAT, trigger=trigger, units=("tool_results", "messages", "tokens"), scope=scope,
                         target_tokens=target_tokens, keep_decisions=keep_decisions, horizon=horizon)

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

    async def on_compress_context(self, agent: Any, input_kwargs: dict, next_handler: Callable[..., Any]) -> None:
        context = agent.state.context
        judged = _dicts(context)
        before = self.last_decision
        out = await self.process(judged, agent, unchanged=lambda _judged: _dicts(agent.state.context) == judged,
                                 context={"session_id": agent.state.session_id},
                                 token_counter=lambda dicts: agent.model.count_tokens(  # as AgentScope counts it
                                     context if dicts is judged else [Msg.model_validate(d) for d in dicts], None))
        if out is not judged:
            agent.state.context[:] = [Msg.model_validate(d) for d in out]
        decision = self.last_decision
        if self.mode is not Mode.ENFORCE or decision is None or decision is before or decision.status is Status.ERROR:
            await next_handler()  # below the trigger, SHADOW, or jev could not plan: AgentScope's own goes on


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
