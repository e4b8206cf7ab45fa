"""The caller's history as judged, taken once at the start of a plan: the very message objects, a digest
of their mutable parts, and the size of their canonical JSON.

Sizes leave out a converter's bookkeeping (`metadata["jev.source"]` and `["jev.format"]`): what a format
keeps only to be written back exactly — provider fields, a copy of the output, the raw response — is not
what the model sees, so it counts neither in the transcript limit nor in the reduction.

It serves the transcript limit, the change guard and the reduction. SPEC §7's guard re-serializes the
history and compares; this one proves the same thing with less work. Messages and blocks are frozen and
their strings immutable, so a history whose list holds the same objects in the same order serializes to
the same bytes unless a mutable part changed in place — a tool input, a metadata mapping, an unknown
block's JSON object. Those parts (usually a small share of a history) are set aside and hashed at the
start, and hashed again at the guard; everything else is compared by identity.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import TranscriptError
from .transcript import BOOKKEEPING_KEYS, Message, OtherBlock, ToolResultBlock, ToolUseBlock, canonical_json


def chars(data: bytes) -> int:
    """Characters of UTF-8 bytes (the spec's size unit) without decoding when they are ASCII."""
    return len(data) if data.isascii() else len(data.decode())


def size(message: Any) -> int:
    """Characters of a message's canonical JSON without the converter's bookkeeping in its metadata."""
    metadata = getattr(message, "metadata", None)
    if type(message) is Message and metadata and any(key in metadata for key in BOOKKEEPING_KEYS):
        rest = {k: v for k, v in metadata.items() if k not in BOOKKEEPING_KEYS}
        message = Message(message.id, message.role, message.content, message.name, rest or None, message.timestamp)
    return chars(_encode(message))


def _encode(value: Any) -> bytes:
    try:
        return canonical_json(value)
    except TypeError as exc:
        raise TranscriptError(f"messages are not serializable transcript content ({exc})") from None


@dataclass(frozen=True, slots=True)
class Judged:
    """What a plan remembers of the history it judged."""

    messages: tuple[Any, ...]
    parts: list[Any]  # the mutable values inside the messages (the objects themselves), in order
    digest: bytes  # SHA-256 of their canonical JSON when judging started
    chars: int  # characters of the canonical JSON of the whole list, bookkeeping left out
    sizes: tuple[int, ...]  # characters of each message's canonical JSON, bookkeeping left out


def _mutable_parts(messages: Sequence[Any]) -> list[Any]:
    """Every value inside the messages that could change without the messages being replaced."""
    parts: list[Any] = []
    add = parts.append
    for message in messages:
        if not isinstance(message, Message):
            continue  # validation rejects it right after; nothing to guard
        if message.metadata is not None:
            add(message.metadata)
        blocks = list(message.content)
        while blocks:
            block = blocks.pop()
            kind = type(block)
            if kind is ToolUseBlock:
                if not isinstance(block.input, str):
                    add(block.input)
            elif kind is ToolResultBlock:
                if block.metadata is not None:
                    add(block.metadata)
                if type(block.output) is not str:
                    blocks.extend(block.output)
            elif kind is OtherBlock:
                add(block.data)
    return parts


def _digest(parts: list[Any]) -> bytes:
    """SHA-256 of the parts' canonical JSON, fed in slices: holding the JSON itself would cost as much
    memory as the metadata of a history (half of it, for some agents)."""
    digest = hashlib.sha256()
    for start in range(0, len(parts), _SLICE):
        digest.update(_encode(parts[start:start + _SLICE]))
    return digest.digest()


_SLICE = 256


def take(messages: Sequence[Message]) -> Judged:
    """The history as judged: its size message by message (ASCII messages are never decoded, and the
    whole document is never built), and its mutable parts set aside."""
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise TranscriptError("messages must be a list of jev.Message")
    held = tuple(messages)
    sizes = tuple(map(size, held))
    parts = _mutable_parts(held)
    return Judged(held, parts, _digest(parts), sum(sizes) + max(0, len(held) - 1) + 2, sizes)


def unchanged(messages: Sequence[Message], judged: Judged) -> bool:
    """The change guard: the caller's list holds the same messages and their mutable parts, looked at
    again where they were, serialize to the same bytes (the same SHA-256)."""
    if not isinstance(messages, Sequence) or len(messages) != len(judged.messages):
        return False
    if not all(map(operator.is_, messages, judged.messages)):
        return False
    try:
        return _digest(judged.parts) == judged.digest
    except TranscriptError:  # mutated into something that no longer serializes
        return False


def fingerprint(messages: Sequence[Message]) -> bytes:
    """SHA-256 of the list's canonical JSON, streamed message by message: equal for equal content, for
    comparing histories rebuilt from a host's objects (where identity says nothing)."""
    digest = hashlib.sha256(b"[")
    for i, message in enumerate(messages):
        digest.update(b"," + _encode(message) if i else _encode(message))
    digest.update(b"]")
    return digest.digest()


def chars_after(compacted: Sequence[Message], judged: Judged) -> int:
    """Characters of the compacted list's canonical JSON, from the judged sizes: removed and untouched
    messages were measured at the start; a message the plan rebuilt with new content only is measured as
    its original's size plus the change in its content, so large metadata is never serialized again."""
    kept = {id(m) for m in compacted}
    before = {id(m) for m in judged.messages}
    replaced: dict[str, tuple[Message, int]] = {}
    removed = 0
    for message, measured in zip(judged.messages, judged.sizes, strict=True):
        if id(message) not in kept:
            removed += measured
            if isinstance(message, Message):
                replaced[message.id] = (message, measured)
    added = 0
    for message in compacted:
        if id(message) in before:
            continue
        original = replaced.get(getattr(message, "id", None))
        if original is not None and _same_but_content(message, original[0]):
            added += original[1] - _content_chars(original[0].content) + _content_chars(message.content)
        else:  # a message the plan made (a tombstone) or rebuilt beyond its content
            added += size(message)
    commas = max(0, len(compacted) - 1) - max(0, len(judged.messages) - 1)
    return judged.chars - removed + added + commas


def _same_but_content(message: Any, original: Message) -> bool:
    """`message` is `original` rebuilt with other content: every other field the very same value."""
    return (type(message) is Message and message.id == original.id and message.role == original.role
            and message.name is original.name and message.metadata is original.metadata
            and message.timestamp is original.timestamp)


def _content_chars(blocks: tuple[Any, ...]) -> int:
    return chars(_encode(blocks))
