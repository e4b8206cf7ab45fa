"""Validation and pairing (SPEC §2) with the sizes of what the model sees, in one pass over the blocks:
`analyze` turns a message list into a `Transcript` (its pairs, where each block sits, what is pending)."""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..errors import TranscriptError
from ..model.blocks import block_chars, input_json
from ..model.transcript import (
    THINKING_TYPES,
    VERBATIM_KINDS,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ..providers.checks import message_problem, plain_message
from ..support.quick import quick_init

CARRIED_OVER = -1  # the `call_message` of a result whose call is not in the history (see `analyze`)
# the kinds of `Transcript.order`: a result, a call, a text block outside assistant messages (the task, a user's
# words), the agent's own words (an assistant's text or thinking block: what it says it is about to use)
READ_RESULT, READ_CALL, READ_TEXT, READ_AGENT = 0, 1, 2, 3


@quick_init
@dataclass(frozen=True, slots=True)
class Pair:
    """A call and its result: key `tK` in the order results appear; indices point into the messages."""

    key: str
    call_id: str
    tool: str
    call_message: int
    result_message: int
    call: ToolUseBlock
    result: ToolResultBlock
    input_json: str  # the call's input as canonical JSON, made once: the state, tombstones and views show it
    result_chars: int  # characters of the result's text, counted once: ranking, budgets and records use it

    @property
    def call_chars(self) -> int:
        """Model-visible characters of the call block (what dropping the pair frees beside its result)."""
        return block_chars(self.call, None, "call", 0, self.input_json)


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Transcript:
    """A validated message list with its pair table and the ids of calls still pending.

    Call ids may be reused once their pair is complete (providers accept it), so a block is found by its
    place — `call_pair(i, id)` / `result_pair(i, id)`, `i` the message index — never by its id alone."""

    messages: tuple[Message, ...]
    pairs: tuple[Pair, ...]
    pending: frozenset[str] = field(default_factory=frozenset)
    places: Mapping[str, Pair] = field(default_factory=dict)  # `place(is result, message index, id)` -> pair
    thinking: frozenset[int] = frozenset()  # indices of the messages with a thinking block (they pin themselves)
    opaque: frozenset[int] = frozenset()  # indices of the messages with content jev does not read (pinned too)
    # indices of the messages holding a result whose output is not all text (an image: billed by its pixels)
    mixed_results: frozenset[int] = frozenset()
    sizes: tuple[int, ...] = ()  # model-visible characters of each message (`visible_chars`)
    mutable: tuple[Any, ...] = ()  # the mutable values inside the blocks, in order (what a change guard re-reads)
    # the reading order of what a judge reads — each call, result, text and thinking block — as (kind, message
    # index, number) triples of int64, flat: kind READ_RESULT (number: its call's in `calls`, -1 for a
    # carried-over result), READ_CALL (its number in `calls`), READ_TEXT or READ_AGENT (its number in `texts`)
    order: bytes = b""
    calls: tuple[ToolUseBlock, ...] = ()  # the call blocks, in the order they appear
    # the text of each text block (READ_TEXT outside assistant messages, READ_AGENT in them) and of each thinking
    # block (READ_AGENT), in order: read by the embedded judge in process, never sent to a remote one
    texts: tuple[str, ...] = ()
    # indices of the messages that pin themselves by role or metadata: system messages, `jev_pinned` ones
    self_pinned: frozenset[int] = frozenset()
    # who this analysis is, and whose it grew from (`extend`: the earlier messages proven unchanged), so that a
    # reader of an earlier one (the local judge's) may read only what was added; neither is compared
    lineage: object = field(default_factory=object, compare=False, repr=False)
    extends: object = field(default=None, compare=False, repr=False)

    def pair(self, key: str) -> Pair:
        """The pair whose key is `key`."""
        return self.pairs[self.position(key)]

    @staticmethod
    def position(key: str) -> int:
        """Where the pair whose key is `key` sits in `pairs`: `tK` is the K-th, counted from 1 (`analyze`
        numbers them so)."""
        return int(key[1:]) - 1

    def call_pair(self, message_index: int, call_id: str) -> Pair | None:
        """The pair whose call is the block `call_id` of message `message_index` (None: still pending)."""
        return self.places.get(place(False, message_index, call_id))

    def result_pair(self, message_index: int, call_id: str) -> Pair | None:
        """The pair whose result is the block `call_id` of message `message_index`."""
        return self.places.get(place(True, message_index, call_id))

    @property
    def chars(self) -> int:
        """Model-visible characters of the whole history."""
        return sum(self.sizes)


def place(result: bool, message_index: int, call_id: str) -> str:
    """The key of a call (or result) block in `Transcript.places`: a string, which the garbage collector
    does not track (a tuple per block made every plan over thousands of pairs pay for full collections)."""
    return f"{'r' if result else 'c'}{message_index} {call_id}"


def _check_message(message: Any, i: int) -> None:
    """Raise `TranscriptError` naming what is wrong with `messages[i]`, if anything."""
    if not isinstance(message, Message):
        raise TranscriptError(f"messages[{i}] is a {type(message).__name__}, not a jev.Message")
    problem = message_problem(message, f"messages[{i}]")
    if problem is not None:
        raise TranscriptError(problem)


def _refuse(messages: Sequence[Message], i: int, problem: str) -> NoReturn:
    """Raise `problem` (a pairing or content error at `messages[i]`) — unless a later message is malformed
    or repeats an id: those are reported first, as a list validated before pairing would."""
    seen: set[str] = set()
    for k, message in enumerate(messages):
        if k > i and (type(message) is not Message or not plain_message(message)):
            _check_message(message, k)
        if message.id in seen:
            raise TranscriptError(f"duplicate message id {message.id!r} at messages[{k}]")
        seen.add(message.id)
    raise TranscriptError(problem)


def analyze(messages: Sequence[Message]) -> Transcript:
    """Validate a transcript, pair its calls and results, and measure it (model-visible characters per
    message, and the mutable values a change guard re-reads), or raise `TranscriptError` naming the culprit.

    Pairing is by order: a result answers the open call with its id; an id used again after its pair
    completed starts a new pair; only two calls open at once with one id are ambiguous. A history that
    continues an earlier one (a Claude Code session resumed in a new file) may begin with results whose
    calls are not in it: a result before the history's first call, answering an id not seen before, is
    such a *carried-over* result — a pair of its own whose `call_message` is -1 (its call block a stand-in
    with no input, in no message), which policy pins. One pass over the blocks does all of it: this runs
    at the start of every plan."""
    return _Scan().run(messages, 0)


def extend(previous: Transcript, messages: Sequence[Message]) -> Transcript:
    """`analyze(messages)` for a history that begins with `previous.messages` (the very same objects, whose
    mutable parts the caller has checked are unchanged: `jev.reading.history.unchanged`): only the messages after
    them are read — what a host planning the same history grown by a few messages pays for."""
    return _Scan.resumed(previous).run(messages, len(previous.messages), previous.lineage)


class _Scan:
    """The state of one pass over a history's blocks: everything `analyze` accumulates, so that a pass can
    resume where an earlier one ended (`extend`)."""

    def __init__(self) -> None:
        self.seen_messages: set[str] = set()
        self.open_calls: dict[str, tuple[int, ToolUseBlock, str, int]] = {}  # id -> (message, block, json, number)
        self.completed: set[str] = set()
        self.pairs: list[Pair] = []
        self.places: dict[str, Pair] = {}
        self.thinking: set[int] = set()
        self.opaque: set[int] = set()
        self.mixed_results: set[int] = set()
        self.self_pinned: set[int] = set()
        self.sizes: list[int] = []
        self.parts: list[Any] = []
        self.called = False  # a call seen yet: before the first, a result without one is carried over
        self.order = array("q")
        self.calls: list[ToolUseBlock] = []
        self.texts: list[str] = []

    @classmethod
    def resumed(cls, previous: Transcript) -> _Scan:
        """The state at the end of the pass that made `previous` (its pending calls found from the end)."""
        scan = cls()
        messages = previous.messages
        scan.seen_messages = {m.id for m in messages}
        scan.pairs, scan.places = list(previous.pairs), dict(previous.places)
        scan.thinking, scan.opaque = set(previous.thinking), set(previous.opaque)
        scan.mixed_results = set(previous.mixed_results)
        scan.self_pinned = set(previous.self_pinned)
        scan.sizes, scan.parts = list(previous.sizes), list(previous.mutable)
        scan.completed = {p.call_id for p in previous.pairs}
        scan.called = bool(previous.pending) or any(p.call_message != CARRIED_OVER for p in previous.pairs)
        scan.order, scan.calls, scan.texts = array("q", previous.order), list(previous.calls), list(previous.texts)
        missing = set(previous.pending)
        order = memoryview(previous.order).cast("q")
        for k in range(len(order) - 3, -1, -3):  # a pending call is the latest call with its id
            if not missing:
                break
            if order[k] == READ_CALL and (block := previous.calls[order[k + 2]]).id in missing:
                missing.discard(block.id)
                i = order[k + 1]
                j = messages[i].content.index(block)
                scan.open_calls[block.id] = (i, block, input_json(block, i, j), order[k + 2])
        return scan

    def run(self, messages: Sequence[Message], start: int, extends: object = None) -> Transcript:
        """Read `messages[start:]` on from this state; the transcript of the whole list (`extends`: the
        lineage of the transcript this state ended, when resumed)."""
        seen_messages, open_calls, completed, pairs, places = (self.seen_messages, self.open_calls, self.completed,
                                                               self.pairs, self.places)
        thinking, opaque, sizes, parts = self.thinking, self.opaque, self.sizes, self.parts
        self_pinned = self.self_pinned
        size_of = sizes.append
        called, order, calls, texts = self.called, self.order, self.calls, self.texts
        read = order.extend
        for i in range(start, len(messages)):
            message = messages[i]
            if type(message) is not Message or not plain_message(message):  # the usual message passes here
                _check_message(message, i)
            if message.id in seen_messages:
                raise TranscriptError(f"duplicate message id {message.id!r} at messages[{i}]")
            seen_messages.add(message.id)
            if message.role == "system" or message.pinned_by_metadata:
                self_pinned.add(i)
            total = 0
            for j, block in enumerate(message.content):
                json = None
                if type(block) is TextBlock:
                    read((READ_TEXT if message.role != "assistant" else READ_AGENT, i, len(texts)))
                    texts.append(block.text)
                elif type(block) is ThinkingBlock:
                    thinking.add(i)
                    if block.thinking:
                        read((READ_AGENT, i, len(texts)))
                        texts.append(block.thinking)
                elif type(block) is ToolUseBlock:
                    if not block.id.strip() or block.id in open_calls:
                        _refuse(messages, i, f"ambiguous call id {block.id!r} at messages[{i}].content[{j}]"
                                + (" (blank)" if not block.id.strip() else
                                   f": the call at messages[{open_calls[block.id][0]}] with this id has no result yet"))
                    json = input_json(block, i, j)
                    read((READ_CALL, i, len(calls)))
                    open_calls[block.id] = (i, block, json, len(calls))
                    calls.append(block)
                    called = True
                elif type(block) is ToolResultBlock:
                    call = open_calls.get(block.id)
                    if call is None and not called and block.id not in completed and block.id.strip():
                        call = (CARRIED_OVER, ToolUseBlock(block.id, block.name, None), "null", -1)
                        open_calls[block.id] = call
                    if call is None or call[0] >= i or call[1].name != block.name:
                        _refuse(messages, i, f"unpaired result {block.id!r} ({block.name}) at messages[{i}].content[{j}]"
                                + (": its call already has a result" if call is None and block.id in completed else ""))
                    del open_calls[block.id]
                    completed.add(block.id)
                    read((READ_RESULT, i, call[3]))
                    output = block.output
                    if type(output) is not str and not block.text_only:
                        self.mixed_results.add(i)
                    pair = Pair(f"t{len(pairs) + 1}", block.id, block.name, call[0], i, call[1], block, call[2],
                                len(output) if type(output) is str else len(block.text))
                    pairs.append(pair)
                    places[place(True, i, block.id)] = pair
                    if call[0] != CARRIED_OVER:
                        places[place(False, call[0], block.id)] = pair
                else:
                    if block.type not in VERBATIM_KINDS:  # an unknown part: sent as it is, never changed by a plan
                        opaque.add(i)
                    if block.type in THINKING_TYPES:  # thinking kept whole (a signature, redacted): thinking too
                        thinking.add(i)
                total += block_chars(block, parts, i, j, json)
            size_of(total)
        self.called = called
        return Transcript(tuple(messages), tuple(pairs), frozenset(open_calls), places, frozenset(thinking),
                          frozenset(opaque), frozenset(self.mixed_results), tuple(sizes), tuple(parts), order.tobytes(),
                          tuple(calls), tuple(texts), self_pinned=frozenset(self_pinned), extends=extends)
