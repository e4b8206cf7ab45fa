"""The transcript model (SPEC §1), its own JSON form, canonical JSON, and validation + pairing (SPEC §2)
with the sizes of what the model sees, found in the same pass.

Messages and blocks are frozen values: the library never mutates what a host hands it, and untouched
messages can be passed back as the very same objects.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NoReturn, TypeAlias

import orjson

from .errors import FormatError, TranscriptError, shown
from .quick import quick_init

ROLES = ("system", "user", "assistant", "tool")
RESULT_STATES = ("success", "error", "rejected", "incomplete", "pending")
PINNED_METADATA_KEY = "jev.context.pinned"
SOURCE_KEY = "jev.source"  # metadata key under which a converter keeps what the jev model has no field for
FORMAT_KEY = "jev.format"  # metadata key naming the converter that wrote it: each reads back only its own
ENVELOPE_KEY = "jev.envelope"  # metadata key under which a request body's other fields ride (formats.request)
BOOKKEEPING_KEYS = (SOURCE_KEY, FORMAT_KEY, ENVELOPE_KEY)  # a converter's, for the round trip: never model-visible


@quick_init
@dataclass(frozen=True, slots=True)
class TextBlock:
    """Plain text."""

    text: str
    type: ClassVar[str] = "text"


@quick_init
@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """Model reasoning; pins its message and is never sent to a judge."""

    thinking: str
    type: ClassVar[str] = "thinking"


@quick_init
@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A tool call: `id` is the call id, `input` any JSON value."""

    id: str
    name: str
    input: Any
    type: ClassVar[str] = "tool_use"


@dataclass(frozen=True, slots=True)
class OtherBlock:
    """Any other block (image, audio, file, unknown), kept verbatim as its JSON object."""

    data: Mapping[str, Any]

    @property
    def type(self) -> str:
        return str(self.data.get("type", ""))


@quick_init
@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """The result of call `id`; `output` is a string (one text block) or a tuple of blocks."""

    id: str
    name: str
    output: str | tuple[Block, ...]
    state: str = "success"
    metadata: Mapping[str, Any] | None = None
    type: ClassVar[str] = "tool_result"

    def __post_init__(self) -> None:
        if isinstance(self.output, list):
            object.__setattr__(self, "output", tuple(self.output))
        if self.state not in RESULT_STATES:
            raise FormatError(f"tool_result state must be one of {', '.join(RESULT_STATES)} (got {shown(self.state)})")

    @property
    def text(self) -> str:
        """The result's text: the string output, or its text blocks joined with newlines."""
        if isinstance(self.output, str):
            return self.output
        return "\n".join(b.text for b in self.output if isinstance(b, TextBlock))

    @property
    def text_only(self) -> bool:
        """True when every output block is text (non-text output pins the pair, SPEC §3)."""
        return isinstance(self.output, str) or all(isinstance(b, TextBlock) for b in self.output)


Block: TypeAlias = TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | OtherBlock


@quick_init
@dataclass(frozen=True, slots=True)
class Message:
    """One transcript message; `name`, `metadata` and `timestamp` are carried through untouched."""

    id: str
    role: str
    content: tuple[Block, ...]
    name: str | None = None
    metadata: Mapping[str, Any] | None = None
    timestamp: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.content, list):
            object.__setattr__(self, "content", tuple(self.content))
        if self.role not in ROLES:
            raise FormatError(f"message role must be one of {', '.join(ROLES)} (got {shown(self.role)})")
        if not isinstance(self.id, str):
            raise FormatError(f"message id must be a string (got {type(self.id).__name__})")

    @property
    def text(self) -> str:
        """The message's text blocks joined with newlines (thinking excluded)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def pinned_by_metadata(self) -> bool:
        return self.metadata is not None and self.metadata.get(PINNED_METADATA_KEY) is True

    def replace(self, **changes: Any) -> Message:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


# --- the library's own JSON form (format `jev`) -------------------------------------------------


def block_to_dict(block: Block) -> dict[str, Any]:
    """The JSON object of one block."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultBlock):
        output = block.output if isinstance(block.output, str) else [block_to_dict(b) for b in block.output]
        d: dict[str, Any] = {"type": "tool_result", "id": block.id, "name": block.name, "output": output,
                             "state": block.state}
        if block.metadata is not None:
            d["metadata"] = block.metadata
        return d
    if isinstance(block, ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking}
    return dict(block.data)


def message_to_dict(message: Message) -> dict[str, Any]:
    """The JSON object of one message; absent optional fields are left out."""
    d: dict[str, Any] = {"id": message.id, "role": message.role,
                         "content": [block_to_dict(b) for b in message.content]}
    if message.name is not None:
        d["name"] = message.name
    if message.metadata is not None:
        d["metadata"] = message.metadata
    if message.timestamp is not None:
        d["timestamp"] = message.timestamp
    return d


_BLOCK_FIELDS = {  # type -> (required, allowed)
    "text": (frozenset({"type", "text"}),) * 2,
    "thinking": (frozenset({"type", "thinking"}),) * 2,
    "tool_use": (frozenset({"type", "id", "name", "input"}),) * 2,
    "tool_result": (frozenset({"type", "id", "name", "output"}),
                    frozenset({"type", "id", "name", "output", "state", "metadata"})),
}
_MESSAGE_FIELDS = (frozenset({"id", "role", "content"}), frozenset({"id", "role", "content", "name", "metadata",
                                                                   "timestamp"}))


def _check_fields(obj: Any, where: str, required: frozenset[str], allowed: frozenset[str], what: str) -> None:
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: {what} must be a JSON object (got {type(obj).__name__})")
    keys = obj.keys()
    if keys >= required and keys <= allowed:  # the common case, checked in C
        return
    missing = required - keys
    if missing:
        raise FormatError(f"{where}: {what} is missing required field {sorted(missing)[0]!r}")
    raise FormatError(f"{where}: unknown field {sorted(keys - allowed)[0]!r} in {what}")


def _str_field(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise FormatError(f"{where}.{key}: must be a string (got {type(value).__name__})")
    return value


_VERBATIM_KINDS = frozenset({"text", "thinking"})  # kept as OtherBlock when their fields are not the model's


def block_from_dict(obj: Any, where: str) -> Block:
    """One block from its JSON object; unknown types become `OtherBlock` (validation decides later), and
    so does a text or thinking block with other fields than the model's (an OpenAI text part with
    `annotations`, an AgentScope text block without `text`): kept verbatim, so whatever the writer wrote
    the reader reads. A tool_use or tool_result with other fields is refused: pairing hinges on them."""
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: block must be a JSON object (got {type(obj).__name__})")
    kind = obj.get("type")
    if not isinstance(kind, str):
        raise FormatError(f"{where}.type: must be a string (got {type(kind).__name__})")
    if kind not in _BLOCK_FIELDS:
        return OtherBlock(obj)
    required, allowed = _BLOCK_FIELDS[kind]
    if kind in _VERBATIM_KINDS and obj.keys() != required:
        return OtherBlock(obj)
    _check_fields(obj, where, required, allowed, f"a {kind} block")
    if kind == "text":
        return TextBlock(_str_field(obj, "text", where))
    if kind == "thinking":
        return ThinkingBlock(_str_field(obj, "thinking", where))
    if kind == "tool_use":
        return ToolUseBlock(_str_field(obj, "id", where), _str_field(obj, "name", where), obj["input"])
    output = obj["output"]
    if isinstance(output, list):
        output = tuple(block_from_dict(b, f"{where}.output[{i}]") for i, b in enumerate(output))
    elif not isinstance(output, str):
        raise FormatError(f"{where}.output: must be a string or a list of blocks (got {type(output).__name__})")
    state = obj.get("state", "success")
    if state not in RESULT_STATES:
        raise FormatError(f"{where}.state: must be one of {', '.join(RESULT_STATES)} (got {shown(state)})")
    metadata = _optional(obj, "metadata", dict, where, "a JSON object")
    return ToolResultBlock(_str_field(obj, "id", where), _str_field(obj, "name", where), output, state, metadata)


def message_from_dict(obj: Any, where: str) -> Message:
    """One message from its JSON object, with errors that name the path (`messages[3].content[1].id`)."""
    required, allowed = _MESSAGE_FIELDS
    _check_fields(obj, where, required, allowed, "a message")
    role = _str_field(obj, "role", where)
    if role not in ROLES:
        raise FormatError(f"{where}.role: must be one of {', '.join(ROLES)} (got {shown(role)})")
    content = obj["content"]
    if not isinstance(content, list):
        raise FormatError(f"{where}.content: must be a list of blocks (got {type(content).__name__})")
    blocks = tuple(block_from_dict(b, f"{where}.content[{i}]") for i, b in enumerate(content))
    name = _optional(obj, "name", str, where, "a string")
    metadata = _optional(obj, "metadata", dict, where, "a JSON object")
    timestamp = _optional(obj, "timestamp", str, where, "a string")
    return Message(_str_field(obj, "id", where), role, blocks, name, metadata, timestamp)


def _optional(obj: dict[str, Any], key: str, kind: type, where: str, what: str) -> Any:
    """An optional field of the `jev` form: absent, or of its type — never null, which the writer could not
    give back (it leaves an absent field out)."""
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, kind):
        raise FormatError(f"{where}.{key}: must be {what}" + (" (null: leave the field out)" if value is None else ""))
    return value


def messages_from_dicts(data: Any, where: str = "messages") -> list[Message]:
    """A message list from the `jev` JSON form."""
    if not isinstance(data, list):
        raise FormatError(f"{where}: must be a JSON array of messages (got {type(data).__name__})")
    return [message_from_dict(m, f"{where}[{i}]") for i, m in enumerate(data)]


def _string_problem(value: Any, where: str) -> str | None:
    """Why a field that must be a string is not one the reader takes back: not a string, or one with a lone
    surrogate (as `errors="surrogateescape"` makes), which has no UTF-8 form. Free for ASCII strings."""
    if type(value) is not str:
        return f"{where}: must be a string (got {type(value).__name__})"
    if value.isascii():
        return None
    found = unwritable(value, where)
    return None if found is None else f"{found[0]}: {found[1]}"


def block_problem(block: Any, where: str) -> str | None:
    """Why the `jev` reader would refuse this block once written (a field of the wrong type, a string with
    no UTF-8 form, an `OtherBlock` the reader would not take back), or None. Cheap for the typed blocks; an
    `OtherBlock` is read back."""
    kind = type(block)
    if kind is TextBlock:
        return _string_problem(block.text, f"{where}.text")
    if kind is ThinkingBlock:
        return _string_problem(block.thinking, f"{where}.thinking")
    if kind is ToolUseBlock or kind is ToolResultBlock:
        for name in ("id", "name"):
            if (problem := _string_problem(getattr(block, name), f"{where}.{name}")) is not None:
                return problem
        if kind is ToolUseBlock:
            return None
        if type(block.output) is str:
            return _string_problem(block.output, f"{where}.output") or _metadata_problem(block.metadata, where)
        return _metadata_problem(block.metadata, where) or _blocks_problem(block.output, f"{where}.output",
                                                                          "a string or a list of blocks")
    if kind is OtherBlock:
        data = block.data
        if not isinstance(data, Mapping):
            return f"{where}: an other block's data must be a JSON object (got {type(data).__name__})"
        try:
            block_from_dict(dict(data), where)
        except FormatError as exc:
            return str(exc)
        return None
    return f"{where}: not a jev block (got {kind.__name__})"


def message_problem(message: Any, where: str) -> str | None:
    """Why the `jev` reader would refuse this message once written, or None (see `block_problem`). Runs on
    every plan, so the common case — typed blocks with ASCII string fields — is checked inline."""
    if not isinstance(message, Message):
        return f"{where}: not a jev Message (got {type(message).__name__})"
    if _plain_message(message):
        return None
    for name in ("id", "name", "timestamp"):
        value = getattr(message, name)
        if (value is not None or name == "id") and (problem := _string_problem(value, f"{where}.{name}")) is not None:
            return problem
    return _metadata_problem(message.metadata, where) or _blocks_problem(message.content, f"{where}.content",
                                                                         "a list of blocks")


def _plain_message(message: Message) -> bool:
    """The fast path of `message_problem`: optional fields of the right type, typed blocks whose fields are
    too, every string ASCII (so none can hold a lone surrogate: `isascii` reads a flag). Runs for every
    message of every plan, so it is written inline (no call per block)."""
    if not ((message.name is None or (type(message.name) is str and message.name.isascii()))
            and (message.timestamp is None or (type(message.timestamp) is str and message.timestamp.isascii()))
            and (message.metadata is None or type(message.metadata) is dict or isinstance(message.metadata, Mapping))
            and type(message.content) is tuple and type(message.id) is str and message.id.isascii()):
        return False
    for block in message.content:
        kind = type(block)
        if kind is TextBlock:
            if type(block.text) is not str or not block.text.isascii():
                return False
        elif kind is ToolUseBlock:
            if type(block.id) is not str or type(block.name) is not str or not block.id.isascii() \
                    or not block.name.isascii():
                return False
        elif kind is ToolResultBlock:
            output = block.output
            if type(block.id) is not str or type(block.name) is not str or block.metadata is not None \
                    or not block.id.isascii() or not block.name.isascii():
                return False
            if type(output) is str:
                if not output.isascii():
                    return False
            elif type(output) is not tuple or not all(  # a result of text parts (Anthropic, LangChain lists)
                    type(part) is TextBlock and type(part.text) is str and part.text.isascii() for part in output):
                return False
        elif kind is not ThinkingBlock or type(block.thinking) is not str or not block.thinking.isascii():
            return False
    return True


def _metadata_problem(metadata: Any, where: str) -> str | None:
    if metadata is not None and not isinstance(metadata, Mapping):
        return f"{where}.metadata: must be a JSON object (got {type(metadata).__name__})"
    return None


def _blocks_problem(blocks: Any, where: str, rule: str) -> str | None:
    if not isinstance(blocks, tuple):
        return f"{where}: must be {rule} (got {type(blocks).__name__})"
    for k, block in enumerate(blocks):
        if (problem := block_problem(block, f"{where}[{k}]")) is not None:
            return problem
    return None


# --- canonical JSON ----------------------------------------------------------------------------


def json_default(value: Any) -> Any:
    """orjson's `default`: messages and blocks in their `jev` form, sets sorted, mappings as dicts."""
    if isinstance(value, Message):
        return message_to_dict(value)
    if isinstance(value, (TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, OtherBlock)):
        return block_to_dict(value)
    if isinstance(value, (frozenset, set)):
        return sorted(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


CANONICAL_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS  # with `json_default`: canonical JSON


def canonical_json(value: Any) -> bytes:
    """Canonical JSON (SPEC §1): orjson with sorted keys, UTF-8; messages and blocks in their `jev` form."""
    return orjson.dumps(value, default=json_default, option=CANONICAL_OPTIONS)


_MAX_DEPTH = 254  # orjson refuses values nested deeper than 255 levels (the outermost array included)


def unwritable(value: Any, path: str = "") -> tuple[str, str] | None:
    """Where and why a JSON-like value (messages and blocks in their `jev` form) has no exact JSON form, or
    None: a NaN or an infinity (orjson would write `null`, so two different histories would encode alike),
    a string with a lone surrogate (no UTF-8 form), a key that is not a string, an integer past 64 bits,
    nesting past JSON's 255 levels, or a value that is not JSON at all. Iterative: any depth is reported."""
    stack: list[tuple[str, Any, int]] = [(path, value, 0)]
    while stack:
        at, item, depth = stack.pop()
        where = at or "value"
        kind = type(item)
        if kind is str:
            if not item.isascii():
                try:
                    item.encode()
                except UnicodeEncodeError as exc:
                    return where, f"a lone surrogate (U+{ord(item[exc.start]):04X} at character {exc.start}) has no UTF-8 form"
            continue
        if kind is bool or item is None:
            continue
        if kind is int:
            if not -(2 ** 63) <= item < 2 ** 64:
                return where, "integers past 64 bits have no JSON form here"
            continue
        if kind is float:
            if not math.isfinite(item):
                return where, "NaN and infinities have no JSON form (they would be written as null, a different history)"
            continue
        if depth > _MAX_DEPTH:
            return where, "nested deeper than JSON's 255 levels"
        if isinstance(item, Mapping):
            children = []
            for key, child in item.items():
                if not isinstance(key, str):
                    return where, f"keys must be strings (got {type(key).__name__})"
                if not key.isascii() and unwritable(key) is not None:
                    return where, "a key holds a lone surrogate, which has no UTF-8 form"
                children.append((f"{at}.{key}" if at else key, child, depth + 1))
        elif isinstance(item, (list, tuple)):
            children = [(f"{at}[{i}]", child, depth + 1) for i, child in enumerate(item)]
        elif isinstance(item, (Message, TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, OtherBlock,
                               frozenset, set)):
            try:
                children = [(at, json_default(item), depth)]
            except TypeError:  # a set of values that do not sort
                return where, f"not a JSON value (got {type(item).__name__})"
        elif isinstance(item, (int, float, str)):  # subclasses: orjson writes some, not others
            continue
        else:
            return where, f"not a JSON value (got {type(item).__name__})"
        stack.extend(reversed(children))
    return None


def not_json(value: Any, where: str, error: type[Exception]) -> NoReturn:
    """Raise `error` saying where and why `value` (which failed to serialize) has no JSON form."""
    found = unwritable(value, where)
    raise error(f"{found[0]}: {found[1]}" if found else f"{where}: has no JSON form") from None


def canonical_chars(value: Any) -> int:
    """Size in the spec's unit: characters of the canonical JSON."""
    return len(canonical_json(value).decode())


def chars(data: bytes) -> int:
    """Characters of UTF-8 bytes (the spec's size unit) without decoding when they are ASCII."""
    return len(data) if data.isascii() else len(data.decode())


def visible_chars(blocks: Any, parts: list[Any] | None = None, where: str = "content", first: int = 0) -> int:
    """Characters of what the model sees of `blocks`: text, thinking, each call's tool name and canonical
    input, each result's text, other blocks as their canonical JSON — never envelopes, ids or metadata, so
    a history's size does not depend on the form it was loaded from. With `parts`, every mutable value
    inside the blocks (call inputs, result metadata, other blocks' JSON objects) is appended to it.
    `analyze` applies the same rules inline (it runs on every plan); a unit test keeps the two equal. A
    value with no JSON form is refused naming its place (`where`: the blocks' path, `first`: the index of
    `blocks[0]` there)."""
    total = 0
    for k, block in enumerate(blocks, first):
        kind = type(block)
        if kind is TextBlock:
            total += len(block.text)
        elif kind is ToolResultBlock:
            output = block.output
            if parts is not None and block.metadata is not None:
                parts.append(block.metadata)
            total += len(output) if type(output) is str else visible_chars(output, parts, f"{where}[{k}].output")
        elif kind is ToolUseBlock:
            value = block.input
            if type(value) is str:
                total += len(block.name) + len(value)
            else:
                try:
                    total += len(block.name) + len(canonical_json(value).decode())
                except TypeError:
                    not_json(value, f"{where}[{k}].input", TranscriptError)
                if parts is not None:
                    parts.append(value)
        elif kind is ThinkingBlock:
            total += len(block.thinking)
        else:  # an unknown block: its JSON object is what the model is sent
            data = getattr(block, "data", block)
            try:
                total += chars(canonical_json(data))
            except TypeError:
                not_json(data, f"{where}[{k}]", TranscriptError)
            if parts is not None:
                parts.append(data)
    return total


# --- validation and pairing (SPEC §2) --------------------------------------------------------------


CARRIED_OVER = -1  # the `call_message` of a result whose call is not in the history (see `analyze`)


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
    sizes: tuple[int, ...] = ()  # model-visible characters of each message (`visible_chars`)
    mutable: tuple[Any, ...] = ()  # the mutable values inside the blocks, in order (what a change guard re-reads)

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


def _input_json(call: ToolUseBlock, where: str) -> str:
    try:
        return orjson.dumps(call.input, default=json_default, option=CANONICAL_OPTIONS).decode()
    except orjson.JSONEncodeError:
        not_json(call.input, f"{where}.input", TranscriptError)


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
        if k > i and (type(message) is not Message or not _plain_message(message)):
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
    seen_messages: set[str] = set()
    open_calls: dict[str, tuple[int, ToolUseBlock, str]] = {}
    completed: set[str] = set()
    pairs: list[Pair] = []
    places: dict[tuple[bool, int, str], Pair] = {}
    thinking: set[int] = set()
    sizes: list[int] = []
    parts: list[Any] = []
    part, size_of = parts.append, sizes.append
    opaque: set[int] = set()
    called = False  # a call seen yet: before the first, a result without one is carried over
    for i, message in enumerate(messages):
        if type(message) is not Message or not _plain_message(message):  # the usual message passes here
            _check_message(message, i)
        if message.id in seen_messages:
            raise TranscriptError(f"duplicate message id {message.id!r} at messages[{i}]")
        seen_messages.add(message.id)
        total = 0
        for j, block in enumerate(message.content):
            kind = type(block)
            if kind is TextBlock:
                total += len(block.text)
            elif kind is ThinkingBlock:
                thinking.add(i)
                total += len(block.thinking)
            elif kind is ToolUseBlock:
                if not block.id.strip() or block.id in open_calls:
                    _refuse(messages, i, f"ambiguous call id {block.id!r} at messages[{i}].content[{j}]"
                            + (" (blank)" if not block.id.strip() else
                               f": the call at messages[{open_calls[block.id][0]}] with this id has no result yet"))
                value = block.input
                json = _input_json(block, f"messages[{i}].content[{j}]")
                total += len(block.name) + (len(value) if type(value) is str else len(json))
                if type(value) is not str:
                    part(value)
                open_calls[block.id] = (i, block, json)
                called = True
            elif kind is ToolResultBlock:
                call = open_calls.get(block.id)
                if call is None and not called and block.id not in completed and block.id.strip():
                    call = (CARRIED_OVER, ToolUseBlock(block.id, block.name, None), "null")
                    open_calls[block.id] = call
                if call is None or call[0] >= i or call[1].name != block.name:
                    _refuse(messages, i, f"unpaired result {block.id!r} ({block.name}) at messages[{i}].content[{j}]"
                            + (": its call already has a result" if call is None and block.id in completed else ""))
                del open_calls[block.id]
                completed.add(block.id)
                output = block.output
                if block.metadata is not None:
                    part(block.metadata)
                if type(output) is str:
                    result_chars = len(output)
                    total += result_chars
                else:
                    result_chars = len(block.text)
                    total += visible_chars(output, parts, f"messages[{i}].content[{j}].output")
                pair = Pair(f"t{len(pairs) + 1}", block.id, block.name, call[0], i, call[1], block, call[2],
                            result_chars)
                pairs.append(pair)
                places[place(True, i, block.id)] = pair
                if call[0] != CARRIED_OVER:
                    places[place(False, call[0], block.id)] = pair
            else:  # an image a user pasted, a file, an unknown part: sent as it is, never changed by a plan
                if block.type not in _VERBATIM_KINDS:
                    opaque.add(i)
                total += visible_chars((block,), parts, f"messages[{i}].content", j)
        size_of(total)
    return Transcript(tuple(messages), tuple(pairs), frozenset(open_calls), places, frozenset(thinking),
                      frozenset(opaque), tuple(sizes), tuple(parts))
