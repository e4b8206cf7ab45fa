"""Google ADK: `JevBeforeModel`, a `before_model_callback` that compacts each model request's view.

ADK calls it before every model call with the request it is about to send (`LlmRequest`); it replaces
`llm_request.contents` with the compacted contents in ENFORCE (on DECIDED), and leaves them as they are in
SHADOW and OFF. **The edit is view-only:** ADK builds each request afresh from the session's events, which
the callback never changes, so the next request starts from the full history again and is planned again
(the trigger and the cost gate see the full history each time; a plan is cheap when nothing changed). To make
a compaction last, persist it in the session (ADK's own `EventsCompactionConfig`, or a session service that
stores the compacted contents); jev's archive still holds every original for `restore_tool()`. The request's
`model` is the provider's model the rules follow (a Gemini model: thought signatures stay on the parts they
came with, and a call goes only with its response: `jev.formats.gemini`). An agent built once serves many
sessions: each ADK session (app, user and session id) is a conversation with its own trigger, decisions,
snapshot references and compactor session, and the restore tool reads only the calling session's snapshots
(`conversation=` names conversations otherwise).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ..model.scope import Scope
from ..running.compactor import Compactor
from .processor import Counter, HistoryProcessor

FORMAT = "gemini"


def session_key(context: Any) -> Hashable | None:
    """The ADK session a callback or tool call belongs to — `(app_name, user_id, id)`, as a session service
    keys them — or None outside one."""
    session = getattr(context, "session", None)
    if session is None:
        return None
    return (session.app_name, session.user_id, session.id)


class JevBeforeModel(HistoryProcessor):
    """Judged compaction of a Google ADK agent's model requests: `LlmAgent(..., before_model_callback=jev)`."""

    def __init__(self, compactor: Compactor, *, trigger: tuple[str, int] = ("tokens", 50_000),
                 scope: Scope | Callable[[Any], Scope | None] | None = None, target_tokens: int | None = None,
                 token_counter: Counter | None = None, keep_decisions: int = 1,
                 horizon: int | Callable[[Any], int | None] | None = None,
                 conversation: Callable[[Any], Hashable | None] | None = None, conversations: int = 256) -> None:
        super().__init__(compactor, FORMAT, trigger=trigger, scope=scope, target_tokens=target_tokens,
                         token_counter=token_counter, keep_decisions=keep_decisions, horizon=horizon,
                         conversation=conversation or session_key, conversations=conversations)

    async def __call__(self, callback_context: Any, llm_request: Any) -> None:
        """ADK's `before_model_callback`: returns None, so the model call goes ahead with the request."""
        contents = llm_request.contents
        out = await self.process(contents, callback_context, model=getattr(llm_request, "model", None) or None)
        if out is not contents:
            llm_request.contents = out

    def restore_tool(self) -> Any:
        """An ADK `FunctionTool` that brings back an archived call and result by call id (never re-runs it)."""
        from google.adk.tools import FunctionTool

        self.host.archive()  # a restore tool needs one

        async def restore_archived_result(call_id: str, tool_context: Any) -> str:
            """Bring back the full, original result of an earlier tool call that was archived when the
            history was compacted. Reads the archive only; never runs the tool again."""
            return await self.restore(call_id, tool_context)  # the calling session's snapshots only

        return FunctionTool(restore_archived_result)
