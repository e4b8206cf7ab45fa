"""A restore tool for agents: bring back one archived pair by call id — read-only, scoped, never re-running
a tool. Framework-neutral: a name, a description, a JSON schema and an async callable; integrations wrap it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from jev.applying.archived_pair import BLANK, DESCRIPTION, NAME, SCHEMA, describe, latest_pair, restore_latest
from jev.errors import ArchiveError
from jev.model.scope import Scope

from .snapshot import check_reference


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool an agent framework can register: `await call(call_id=...)` returns the restored text."""

    name: str
    description: str
    parameters: dict[str, Any]
    call: Callable[..., Awaitable[str]]


def restore_tool(archive: Any, scope: Scope, reference: str, *, name: str = NAME) -> ToolDefinition:
    """The tool for one archived snapshot. Failures come back as text the agent can read, never as a retry
    of the original tool."""
    check_reference(reference)
    if not isinstance(scope, Scope):
        raise ArchiveError("restore_tool needs an archive.Scope")

    async def call(call_id: str) -> str:
        import asyncio  # running already (a module-level import would load it for every `import archive`)

        if not isinstance(call_id, str) or not call_id.strip():
            return BLANK
        try:
            return describe(*await asyncio.to_thread(latest_pair, archive, scope, reference, call_id))
        except ArchiveError as exc:
            return f"Could not restore call {call_id!r}: {exc}"

    return ToolDefinition(name, DESCRIPTION, SCHEMA, call)


__all__ = ["DESCRIPTION", "NAME", "SCHEMA", "ToolDefinition", "restore_latest", "restore_tool"]
