"""A restore tool for agents: bring back one archived pair by call id — read-only, scoped, never re-running
a tool. Framework-neutral: a name, a description, a JSON schema and an async callable; integrations wrap it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import asyncio

from jev.errors import ArchiveError
from jev.apply import is_truncated
from jev.transcript import Message, TextBlock, ToolResultBlock, ToolUseBlock, canonical_json

from .scope import Scope
from .snapshot import check_reference, extract_pair, occurrences

NAME = "restore_archived_result"
DESCRIPTION = ("Bring back the full, original result of an earlier tool call that was archived when the "
               "conversation was compacted. Give the call id. Reads the archive only; it never runs the tool "
               "again.")
SCHEMA = {"type": "object", "properties": {"call_id": {"type": "string", "description":
          "The id of the tool call whose archived result to bring back."}},
          "required": ["call_id"], "additionalProperties": False}


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
        if not isinstance(call_id, str) or not call_id.strip():
            return _BLANK
        try:
            return _describe(*await asyncio.to_thread(_latest_pair, archive, scope, reference, call_id))
        except ArchiveError as exc:
            return f"Could not restore call {call_id!r}: {exc}"

    return ToolDefinition(name, DESCRIPTION, SCHEMA, call)


_BLANK = "call_id must be a non-blank string"


def _latest_pair(archive: Any, scope: Scope, reference: str, call_id: str) -> tuple[list[Message], int]:
    """The latest pair with `call_id` in one snapshot, and how many pairs of it used that id."""
    messages = archive.restore(scope, reference)
    return extract_pair(messages, call_id), len(occurrences(messages, call_id))


def _describe(messages: list[Message], uses: int = 1) -> str:
    """A restored pair as text for the agent: the call with its input, then the result. When the call id
    was used by several pairs, which one this is (the latest)."""
    parts = []
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                which = f"; the latest of {uses} calls with this id" if uses > 1 else ""
                parts.append(f"Call {block.id} ({block.name}{which}) with input "
                             f"{canonical_json(block.input).decode()}")
            elif isinstance(block, ToolResultBlock):
                output = block.output if isinstance(block.output, str) else "\n".join(
                    b.text if isinstance(b, TextBlock) else canonical_json(b).decode() for b in block.output)
                parts.append(f"Archived result ({block.state}):\n{output}")
    return "\n".join(parts)


async def restore_latest(archive: Any, references: list[tuple[Scope, str]], call_id: str) -> str:
    """Restore `call_id` from the newest snapshot (an agent's compactions, newest last) that holds its
    original result. A snapshot taken after an earlier compaction truncated the result holds only what
    the truncation left, so older snapshots are read too; that remnant is the answer only when no
    snapshot has more. Snapshots that cannot be read are passed over."""
    if not isinstance(call_id, str) or not call_id.strip():
        return _BLANK
    remnant: tuple[list[Message], int] | None = None
    for scope, reference in reversed(references):
        try:
            pair, uses = await asyncio.to_thread(_latest_pair, archive, scope, reference, call_id)
        except ArchiveError:
            continue
        if not any(isinstance(b, ToolResultBlock) and is_truncated(b) for m in pair for b in m.content):
            return _describe(pair, uses)
        remnant = remnant or (pair, uses)
    return _describe(*remnant) if remnant is not None else f"No archived result for call {call_id!r}."
