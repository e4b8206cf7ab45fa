"""The caller's history as judged, taken once at the start of a plan: its size, and a SHA-256 of its
canonical JSON rather than the JSON itself, so a plan never holds two copies of a large history.

It serves the transcript limit, the change guard (the history must hash the same after judging) and the
reduction (only messages the plan changed are serialized again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import TranscriptError
from .transcript import Message, canonical_json


def chars(data: bytes) -> int:
    """Characters of UTF-8 bytes (the spec's size unit) without decoding when they are ASCII."""
    return len(data) if data.isascii() else len(data.decode())


def _encode(value: Message) -> bytes:
    try:
        return canonical_json(value)
    except TypeError as exc:
        raise TranscriptError(f"messages are not serializable transcript content ({exc})") from None


@dataclass(frozen=True, slots=True)
class Judged:
    """What a plan remembers of the history it judged."""

    digest: bytes
    length: int
    chars: int


def serialize(messages: Sequence[Message]) -> Judged:
    """Hash and size of the list's canonical JSON, streamed message by message: the whole document is
    never built (one-shot encoders hold several times its size while growing their buffer)."""
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise TranscriptError("messages must be a list of jev.Message")
    digest = hashlib.sha256(b"[")
    length = total_chars = 1
    for i, message in enumerate(messages):
        part = b"," + _encode(message) if i else _encode(message)
        digest.update(part)
        length += len(part)
        total_chars += chars(part)
    digest.update(b"]")
    return Judged(digest.digest(), length + 1, total_chars + 1)


def unchanged(messages: Sequence[Message], judged: Judged) -> bool:
    """The change guard: the caller's messages still serialize to the bytes judged."""
    try:
        again = serialize(messages)
    except TranscriptError:  # mutated into something that no longer serializes
        return False
    return again.length == judged.length and again.digest == judged.digest


def chars_after(compacted: Sequence[Message], originals: Sequence[Message], judged: Judged) -> int:
    """Characters of the compacted list's canonical JSON, from the judged size: messages the plan removed or
    rebuilt are serialized again, untouched ones (the same objects) are not."""
    kept = {id(m) for m in compacted}
    before = {id(m) for m in originals}
    removed = sum(chars(_encode(m)) for m in originals if id(m) not in kept)
    added = sum(chars(_encode(m)) for m in compacted if id(m) not in before)
    commas = max(0, len(compacted) - 1) - max(0, len(originals) - 1)
    return judged.chars - removed + added + commas
