"""Pydantic AI: `JevHistoryProcessor`, a history processor over Pydantic AI's own message types.

Pydantic AI runs it before every model request with the run's context: `Agent(..., capabilities=[jev.capability()])`
(the `ProcessHistory` capability, where the installed version has it) or `history_processors=[jev]` (versions
that take processors directly). What it returns is what the model gets, and `ProcessHistory` also writes it
into the run's messages, so an adopted ENFORCE plan persists for the rest of the run; SHADOW and every plan
not adopted return the messages unchanged. Calls and their returns go together or not at all, a response's
thinking stays with the calls it made, and a dropped pair's note is written as a response text part: the
model's own account of its history, never a new user instruction (`jev.formats.pydantic_ai`). The run's usage
limits bound the horizon: with `UsageLimits(request_limit=n)`, no more than the requests left. An agent built
once serves many conversations: each Pydantic AI conversation (`RunContext.conversation_id`, which a run going
on from another's messages inherits) has its own trigger, decisions, snapshot references and compactor
session, and the restore tool reads only the calling conversation's snapshots (`conversation=` names
conversations otherwise; `conversation_of(result.conversation_id)` shows one's decisions).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage

from ..model.scope import Scope
from ..running.compactor import Compactor
from .processor import Counter, HistoryProcessor

FORMAT = "pydantic-ai"


def calls_left(ctx: Any) -> int | None:
    """The model requests a run may still make, the coming one included, under its `request_limit`; None
    without one."""
    limits = getattr(ctx, "usage_limits", None)
    limit = getattr(limits, "request_limit", None)
    made = getattr(getattr(ctx, "usage", None), "requests", None)
    if not isinstance(limit, int) or not isinstance(made, int):
        return None
    return max(1, limit - made)


def conversation_id(ctx: Any) -> Hashable | None:
    """The conversation a run belongs to (`RunContext.conversation_id`), or None where the version has none."""
    key = getattr(ctx, "conversation_id", None)
    return key if isinstance(key, str) else None


class JevHistoryProcessor(HistoryProcessor):
    """Judged compaction of a Pydantic AI agent's message history, before each model request."""

    def __init__(self, compactor: Compactor, *, trigger: tuple[str, int] = ("tokens", 50_000),
                 scope: Scope | Callable[[Any], Scope | None] | None = None, target_tokens: int | None = None,
                 token_counter: Counter | None = None, keep_decisions: int = 1,
                 horizon: int | Callable[[Any], int | None] | None = None,
                 conversation: Callable[[Any], Hashable | None] | None = None, conversations: int = 256) -> None:
        super().__init__(compactor, FORMAT, trigger=trigger, scope=scope, target_tokens=target_tokens,
                         token_counter=token_counter, keep_decisions=keep_decisions, horizon=horizon,
                         calls_left=calls_left, conversation=conversation or conversation_id,
                         conversations=conversations)

    async def __call__(self, ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        """The history this model request gets (Pydantic AI's history-processor signature)."""
        out: list[ModelMessage] = await self.process(messages, ctx)
        return out

    def capability(self) -> Any:
        """This processor as Pydantic AI's `ProcessHistory` capability: `Agent(..., capabilities=[...])`."""
        from pydantic_ai.capabilities import ProcessHistory

        return ProcessHistory(self)

    def restore_tool(self) -> Any:
        """A Pydantic AI `Tool` that brings back an archived call and result by call id (never re-runs it)."""
        from pydantic_ai import Tool

        from ..applying.archived_pair import DESCRIPTION, NAME

        self.host.archive()  # a restore tool needs one

        async def restore(ctx: RunContext[Any], call_id: str) -> str:  # the calling conversation's snapshots only
            return await self.restore(call_id, ctx)

        return Tool(restore, name=NAME, description=DESCRIPTION, takes_ctx=True)
