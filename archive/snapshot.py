"""The snapshot document (SPEC §9): encoding, its reference, verification on restore, and pair extraction."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import orjson

from jev.errors import ArchiveError, FormatError
from jev.transcript import Message, ToolResultBlock, ToolUseBlock, canonical_json, messages_from_dicts

from .scope import Scope

VERSION = 1
_REFERENCE = re.compile(r"[a-f0-9]{64}")


def encode(scope: Scope, messages: Sequence[Message]) -> tuple[str, bytes]:
    """The snapshot's reference (SHA-256 hex of its bytes) and its canonical JSON bytes."""
    data = canonical_json({"version": VERSION, "scope": scope.to_dict(), "messages": list(messages)})
    return hashlib.sha256(data).hexdigest(), data


def check_reference(ref: Any) -> str:
    """`ref` if it is 64 lowercase hex characters, else "invalid archive reference" (no path ever built)."""
    if not isinstance(ref, str) or not _REFERENCE.fullmatch(ref):
        raise ArchiveError("invalid archive reference")
    return ref


def check_size(size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise ArchiveError(f"archive limit: snapshot of {size} bytes exceeds max_bytes {max_bytes}")


def verify(scope: Scope, ref: str, data: bytes) -> bytes:
    """Check bytes read back without parsing them: the hash, then version and scope. The document is
    canonical JSON with sorted keys, so it must end with exactly this scope and version."""
    if hashlib.sha256(data).hexdigest() != ref:
        raise ArchiveError("archive checksum mismatch")
    tail = b',"scope":' + canonical_json(scope.to_dict()) + b',"version":' + str(VERSION).encode() + b"}"
    if not data.startswith(b'{"messages":[') or not data.endswith(tail):
        raise ArchiveError("archive scope or version mismatch")
    return data


def decode(scope: Scope, ref: str, data: bytes) -> list[Message]:
    """Verify bytes read back (hash, version, scope) and return the messages."""
    verify(scope, ref, data)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise ArchiveError("archive snapshot unreadable: not JSON") from None
    if not isinstance(doc, dict) or doc.get("version") != VERSION or doc.get("scope") != scope.to_dict():
        raise ArchiveError("archive scope or version mismatch")
    try:
        return messages_from_dicts(doc.get("messages"), "snapshot.messages")
    except FormatError as exc:
        raise ArchiveError(f"archive snapshot unreadable: {exc}") from None


def extract_pair(messages: Sequence[Message], call_id: str) -> list[Message]:
    """The call block and the result block of one pair, each in a copy of its message (ids kept)."""
    out: list[Message] = []
    for message in messages:
        blocks = tuple(b for b in message.content
                       if isinstance(b, (ToolUseBlock, ToolResultBlock)) and b.id == call_id)
        if blocks:
            out.append(message.replace(content=blocks))
    kinds = [type(b) for m in out for b in m.content]
    if ToolUseBlock not in kinds:
        raise ArchiveError(f"call id {call_id!r} is not in this snapshot")
    return out
