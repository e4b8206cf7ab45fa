"""The caller's history as judged, taken once at the start of a plan: the very message objects, the JSON
of their mutable parts, and the size of what the model sees in each.

Sizes count model-visible content only — text, thinking, each call's tool name and canonical input, each
result's text (other blocks as their canonical JSON) — and never envelopes, ids or metadata: a history
loaded from any form has the same blocks, so the transcript limit and the reduction do not depend on the
form it came in (Responses writes every call as an item of its own, Chat Completions folds them into one
message; the model sees the same calls).

SPEC §7's guard re-serializes the history and compares; this one proves the same thing with less work.
Messages and blocks are frozen and their strings immutable, so a history whose list holds the same objects
in the same order serializes to the same bytes unless a mutable part changed in place — a tool input, a
metadata mapping, an unknown block's JSON object. Those parts are set aside and serialized at the start,
and again at the guard; everything else is compared by identity — the converters' bookkeeping in
`metadata["jev.source"]` too: it is not judged, not model-visible, and the library's own (it holds what a
form needs to be written back), so a metadata mapping holding it is checked for the same keys holding the
same (or equal) values, and only its other values are serialized.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .errors import TranscriptError
from .transcript import (BOOKKEEPING_KEYS, ENVELOPE_KEY, FORMAT_KEY, SOURCE_KEY, Message, TextBlock, ThinkingBlock,
                         ToolResultBlock, ToolUseBlock, CANONICAL_OPTIONS, json_default, canonical_json)


def chars(data: bytes) -> int:
    """Characters of UTF-8 bytes (the spec's size unit) without decoding when they are ASCII."""
    return len(data) if data.isascii() else len(data.decode())


def size(message: Any) -> int:
    """Characters of what the model sees of a message (see the module's docstring); 0 for anything that is
    not a Message (validation refuses it right after)."""
    return _measure(message.content, None, None) if isinstance(message, Message) else 0


def _measure(blocks: Any, parts: list[Any] | None, inputs: dict[int, str] | None) -> int:
    """Model-visible characters of `blocks`; with `parts`, every mutable value inside them is added to it,
    and with `inputs` the canonical JSON of each call's input, by `id()` of its block."""
    total = 0
    for block in blocks:
        kind = type(block)
        if kind is TextBlock:
            total += len(block.text)
        elif kind is ToolResultBlock:
            output = block.output
            if parts is not None and block.metadata is not None:
                parts.append(block.metadata)
            total += len(output) if type(output) is str else _measure(output, parts, inputs)
        elif kind is ToolUseBlock:
            value = block.input
            if type(value) is str:
                total += len(block.name) + len(value)
            else:
                try:  # orjson called directly: this runs once per call on every plan
                    json = orjson.dumps(value, default=json_default, option=CANONICAL_OPTIONS).decode()
                except TypeError as exc:
                    raise TranscriptError(f"messages are not serializable transcript content ({exc})") from None
                total += len(block.name) + len(json)
                if parts is not None:
                    parts.append(value)
                if inputs is not None:
                    inputs[id(block)] = json
        elif kind is ThinkingBlock:
            total += len(block.thinking)
        else:  # an unknown block: its JSON object is what the model is sent
            data = getattr(block, "data", block)
            total += chars(_encode(data))
            if parts is not None:
                parts.append(data)
    return total


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
    serialized: bytes  # their JSON when judging started
    kept: list[tuple[Any, tuple[Any, ...]]]  # metadata holding a converter's bookkeeping, with its items then
    inputs: dict[int, str]  # the canonical JSON of each call's input, by id() of its block (for `analyze`)
    chars: int  # model-visible characters of the whole list
    sizes: tuple[int, ...]  # model-visible characters of each message


def _serialized(parts: list[Any]) -> bytes:
    """The parts' JSON as orjson writes them (keys in their order: the same objects give the same bytes,
    and a reordering reads as a change, which only makes the guard more cautious)."""
    try:
        return orjson.dumps(parts, default=json_default, option=orjson.OPT_PASSTHROUGH_DATACLASS)
    except TypeError as exc:
        raise TranscriptError(f"messages are not serializable transcript content ({exc})") from None


def take(messages: Sequence[Message]) -> Judged:
    """The history as judged: its model-visible size message by message, and its mutable parts set aside."""
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise TranscriptError("messages must be a list of jev.Message")
    held = tuple(messages)
    parts: list[Any] = []
    kept: list[tuple[Any, tuple[Any, ...]]] = []
    inputs: dict[int, str] = {}
    sizes: list[int] = []
    size_of, keep, part = sizes.append, kept.append, parts.append
    for message in held:
        if type(message) is Message or isinstance(message, Message):
            metadata = message.metadata
            if metadata is not None:
                if SOURCE_KEY in metadata or FORMAT_KEY in metadata or ENVELOPE_KEY in metadata:
                    items = tuple(metadata.items())
                    keep((metadata, items))
                    parts.extend(v for k, v in items if k not in BOOKKEEPING_KEYS)
                else:
                    part(metadata)
            size_of(_measure(message.content, parts, inputs))
        else:
            size_of(0)  # validation refuses it right after; nothing to guard
    return Judged(held, parts, _serialized(parts), kept, inputs, sum(sizes), tuple(sizes))


def unchanged(messages: Sequence[Message], judged: Judged) -> bool:
    """The change guard: the caller's list holds the same messages and their mutable parts, looked at
    again where they were, serialize to the same bytes."""
    if not isinstance(messages, Sequence) or len(messages) != len(judged.messages):
        return False
    if not all(map(operator.is_, messages, judged.messages)):
        return False
    if not all(tuple(metadata.items()) == items for metadata, items in judged.kept):
        return False
    try:
        return _serialized(judged.parts) == judged.serialized
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
    """Model-visible characters of the compacted list: messages the plan kept as they were are counted from
    the judged sizes, only those it rebuilt or made (a cut result's message, a tombstone) are measured."""
    measured = dict(zip(map(id, judged.messages), judged.sizes, strict=True)).get
    total = 0
    for message in compacted:
        n = measured(id(message))
        total += size(message) if n is None else n
    return total
