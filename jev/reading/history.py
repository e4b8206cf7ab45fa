"""The caller's history as judged, taken once at the start of a plan: the very message objects, their
analysis (pairs and model-visible sizes), and what the change guard re-reads.

Sizes count model-visible content only (`jev.model.blocks.visible_chars`) — never envelopes, ids or
metadata: a history loaded from any form has the same blocks, so the transcript limit and the reduction
do not depend on the form it came in.

SPEC §7's guard re-serializes the history and compares; this one proves the same thing with less work.
Messages and blocks are frozen and their strings immutable, so a history whose list holds the same objects
in the same order serializes to the same bytes unless a mutable part changed in place — a tool input, a
metadata mapping, an unknown block's JSON object. Those parts are set aside (the analysis finds the ones
inside blocks) and serialized at the start, and again at the guard; everything else is compared by
identity — the converters' bookkeeping too: it rides in each message's frozen `origin`, not judged, not
model-visible, and the library's own, so only the host's own metadata is serialized.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import TranscriptError
from ..model.blocks import visible_chars
from ..model.canonical import canonical_json, json_default, not_json
from ..model.transcript import Message
from .analysis import Transcript, analyze, extend


def size(message: Any) -> int:
    """Characters of what the model sees of a message (see the module's docstring); 0 for anything that is
    not a Message (validation refuses it)."""
    return visible_chars(message.content) if isinstance(message, Message) else 0


def _encode(value: Any) -> bytes:
    try:
        return canonical_json(value)
    except TypeError:
        not_json(value, "message", TranscriptError)


@dataclass(frozen=True, slots=True)
class Taken:
    """What a plan remembers of the history it judged."""

    transcript: Transcript  # the history validated, paired and measured
    own: list[Any]  # the messages' own metadata (the mappings themselves), in order; a frozen `Origin` needs none
    serialized: tuple[bytes, bytes]  # the JSON of `own` and of the blocks' (`transcript.mutable`) when judging started

    @property
    def chars(self) -> int:
        """Model-visible characters of the whole list."""
        return self.transcript.chars


def _serialized(parts: Sequence[Any], messages: Sequence[Message] = ()) -> bytes:
    """The parts' JSON as orjson writes them (keys in their order: the same objects give the same bytes,
    and a reordering reads as a change, which only makes the guard more cautious). A part with no JSON
    form is refused naming its place in `messages`."""
    try:
        return orjson.dumps(parts, default=json_default, option=orjson.OPT_PASSTHROUGH_DATACLASS)
    except TypeError:
        not_json(list(messages), "messages", TranscriptError)


def take(messages: Sequence[Message], max_chars: int | None = None, previous: Taken | None = None) -> Taken:
    """The history as judged: analyzed, its mutable parts set aside. `TranscriptError` in SPEC §2's order:
    more than `max_chars` model-visible characters first ("transcript limit"), then what analysis finds.
    With `previous` (an earlier plan's), a history that begins with the very messages it judged, their
    mutable parts unchanged (`unchanged`), is read from where that one ended (`jev.reading.analysis.extend`)."""
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise TranscriptError("messages must be a list of jev.Message")
    held = len(previous.transcript.messages) if previous is not None else 0
    if previous is not None and not (0 < held <= len(messages) and unchanged(messages[:held], previous)):
        previous, held = None, 0
    if previous is not None and held == len(messages):
        return previous  # the same history, unchanged: judged as it was
    try:
        transcript = extend(previous.transcript, messages) if previous is not None else analyze(messages)
    except TranscriptError as exc:  # analysis runs first (it measures too), so the limit is checked here
        try:
            measured = sum(map(size, messages))
        except TranscriptError:  # not even measurable: the analysis's own words say why
            raise exc from None
        _check_limit(measured, max_chars)
        raise
    _check_limit(transcript.chars, max_chars)
    own: list[Any] = list(previous.own) if previous is not None else []  # the earlier messages', as set aside
    # the messages' own metadata; the blocks' parts come from the analysis
    own.extend([message.metadata for message in transcript.messages[held:] if message.metadata is not None])
    messages_read = transcript.messages
    if previous is None:
        serialized = (_serialized(own, messages_read), _serialized(transcript.mutable, messages_read))
    else:  # the earlier parts' JSON is what `unchanged` just re-read: only the new parts are serialized
        old_own, old_blocks = previous.serialized
        serialized = (_joined(old_own, _serialized(own[len(previous.own):], messages_read)),
                      _joined(old_blocks, _serialized(transcript.mutable[len(previous.transcript.mutable):],
                                                      messages_read)))
    return Taken(transcript, own, serialized)


def _joined(head: bytes, tail: bytes) -> bytes:
    """The JSON of two lists' concatenation, from each one's (orjson writes `[a,b]`, no spaces)."""
    if head == b"[]":
        return tail
    if tail == b"[]":
        return head
    return head[:-1] + b"," + tail[1:]


def _check_limit(measured: int, max_chars: int | None) -> None:
    if max_chars is not None and measured > max_chars:
        raise TranscriptError(f"transcript limit: {measured} characters of model-visible content "
                              f"exceed max_transcript_chars {max_chars}")


def unchanged(messages: Sequence[Message], judged: Taken) -> bool:
    """The change guard: the caller's list holds the same messages and their mutable parts, looked at
    again where they were, serialize to the same bytes."""
    held = judged.transcript.messages
    if not isinstance(messages, Sequence) or len(messages) != len(held):
        return False
    if not all(map(operator.is_, messages, held)):
        return False
    try:
        return (_serialized(judged.own), _serialized(judged.transcript.mutable)) == judged.serialized
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


def sizes_each(messages: Sequence[Message]) -> list[int]:
    """`size` of each message."""
    return [size(m) for m in messages]


class Remeasured:
    """One measure of the messages a plan made (a cut result's message, a tombstone), kept by identity for
    the next plan of the same compactor: its applier hands back the very objects it made last time when it
    changes a message the same way, and those are not measured again. It keeps what its last call measured,
    holding the messages (so their ids stay theirs); a compactor starts a new one whenever a history is not
    read on from the last (a part shared by reference may have changed)."""

    def __init__(self, measure: Callable[[Sequence[Message]], list[int]]) -> None:
        self._measure = measure
        self._held: dict[int, Message] = {}
        self._values: dict[int, int] = {}

    def __call__(self, messages: Sequence[Message]) -> list[int]:
        """`measure(messages)`, measuring only those the last call did not."""
        held, values = self._held, self._values
        missing = [m for m in messages if held.get(id(m)) is not m] if held else messages
        if not missing:
            out = [values[id(m)] for m in messages]
        elif len(missing) == len(messages):
            out = self._measure(messages)
        else:
            fresh = iter(self._measure(missing))
            out = [values[id(m)] if held.get(id(m)) is m else next(fresh) for m in messages]
        ids = list(map(id, messages))
        self._held, self._values = dict(zip(ids, messages, strict=True)), dict(zip(ids, out, strict=True))
        return out


def chars_after(compacted: Sequence[Message], judged: Taken,
                sizes: Callable[[Sequence[Message]], list[int]] = sizes_each) -> int:
    """Model-visible characters of the compacted list: messages the plan kept as they were are counted from
    the judged sizes, only those it rebuilt or made (a cut result's message, a tombstone) are measured
    (`sizes`: `sizes_each`, or a `Remeasured` of it)."""
    transcript = judged.transcript
    measured = dict(zip(map(id, transcript.messages), transcript.sizes, strict=True)).get
    total, made = 0, []
    for message in compacted:
        n = measured(id(message))
        if n is None:
            made.append(message)
        else:
            total += n
    return total + sum(sizes(made))
