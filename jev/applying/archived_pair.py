"""Bringing back one archived pair by call id — read-only, never re-running a tool — as the restore tools
of `archive.restore_tool` and of the integrations do: the tool's name, description and schema, finding a
pair in a snapshot's messages (call ids may be reused once a pair is complete), and the text an agent
reads. Works on any archive with `restore(scope, ref) -> messages`, so the core and the archives share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ArchiveError
from ..model.blocks import kind_of
from ..model.markers import is_truncated
from ..model.scope import Scope
from ..model.transcript import Message, ToolResultBlock, ToolUseBlock
from ..reading.analysis import CARRIED_OVER, analyze

NAME = "restore_archived_result"
DESCRIPTION = ("Bring back the full, original result of an earlier tool call that was archived when the "
               "conversation was compacted. Give the call id. Reads the archive only; it never runs the tool "
               "again.")
SCHEMA = {"type": "object", "properties": {"call_id": {"type": "string", "description":
          "The id of the tool call whose archived result to bring back."}},
          "required": ["call_id"], "additionalProperties": False}
BLANK = "call_id must be a non-blank string"


def occurrences(messages: Sequence[Message], call_id: str) -> list[tuple[int, int | None]]:
    """Where each pair using `call_id` sits, in order: (message of its call, message of its result or
    None while pending) — the pairs `jev.reading.analysis.analyze` finds (a result answers the latest call with
    its id, an id may be reused once its pair is complete), and a call still pending last. A result whose
    call is not in the history (carried over from an earlier one) has no call to bring back."""
    transcript = analyze(messages)
    found: list[tuple[int, int | None]] = [(p.call_message, p.result_message) for p in transcript.pairs
                                            if p.call_id == call_id and p.call_message != CARRIED_OVER]
    if call_id in transcript.pending:
        found.append((max(i for i, m in enumerate(messages) for b in m.content
                          if isinstance(b, ToolUseBlock) and b.id == call_id), None))
    return found


def extract_pair(messages: Sequence[Message], call_id: str, occurrence: int | None = None) -> list[Message]:
    """The call block and the result block of one pair, each in a copy of its message (ids kept). When
    the id was used by several pairs, `occurrence` picks one (1 = the first); the latest by default."""
    places = occurrences(messages, call_id)
    if not places:
        raise ArchiveError(f"call id {call_id!r} is not in this snapshot")
    if occurrence is None:
        occurrence = len(places)
    if isinstance(occurrence, bool) or not isinstance(occurrence, int) or not 1 <= occurrence <= len(places):
        raise ArchiveError(f"occurrence must be 1..{len(places)} for call id {call_id!r} (got {occurrence!r})")
    call_at, result_at = places[occurrence - 1]
    out = [messages[call_at].replace(content=tuple(b for b in messages[call_at].content
                                                   if isinstance(b, ToolUseBlock) and b.id == call_id))]
    if result_at is not None:
        out.append(messages[result_at].replace(content=tuple(
            b for b in messages[result_at].content if isinstance(b, ToolResultBlock) and b.id == call_id)))
    return out


def latest_pair(archive: Any, scope: Scope, reference: str, call_id: str) -> tuple[list[Message], int]:
    """The latest pair with `call_id` in one snapshot, and how many pairs of it used that id."""
    messages = archive.restore(scope, reference)
    return extract_pair(messages, call_id), len(occurrences(messages, call_id))


def describe(messages: list[Message], uses: int = 1) -> str:
    """A restored pair as text for the agent: the call with its input, then the result. When the call id
    was used by several pairs, which one this is (the latest)."""
    parts = []
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                which = f"; the latest of {uses} calls with this id" if uses > 1 else ""
                parts.append(f"Call {block.id} ({block.name}{which}) with input {kind_of(block).restore_text(block)}")
            elif isinstance(block, ToolResultBlock):
                parts.append(f"Archived result ({block.state}):\n{kind_of(block).restore_text(block)}")
    return "\n".join(parts)


async def restore_latest(archive: Any, references: list[tuple[Scope, str]], call_id: str) -> str:
    """Restore `call_id` from the newest snapshot (an agent's compactions, newest last) that holds its
    original result. A snapshot taken after an earlier compaction truncated the result holds only what
    the truncation left, so older snapshots are read too; that remnant is the answer only when no
    snapshot has more. Snapshots that cannot be read are passed over."""
    import asyncio  # running already (a module-level import would load it for every `import archive`)

    if not isinstance(call_id, str) or not call_id.strip():
        return BLANK
    remnant: tuple[list[Message], int] | None = None
    for scope, reference in reversed(references):
        try:
            pair, uses = await asyncio.to_thread(latest_pair, archive, scope, reference, call_id)
        except ArchiveError:
            continue
        if not any(isinstance(b, ToolResultBlock) and is_truncated(b) for m in pair for b in m.content):
            return describe(pair, uses)
        remnant = remnant or (pair, uses)
    return describe(*remnant) if remnant is not None else f"No archived result for call {call_id!r}."
