"""The transcript model (SPEC §1) and its own JSON form: frozen messages and blocks, read from and written
to `jev` dicts. Canonical JSON is `jev.model.canonical`, the checks of a value already built `jev.providers.checks`, and
validation + pairing with the sizes of what the model sees (SPEC §2) `jev.reading.analysis`.

Messages and blocks are frozen values: the library never mutates what a host hands it, and untouched
messages can be passed back as the very same objects.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from ..errors import FormatError, shown
from ..support.quick import quick_init

ROLES = ("system", "user", "assistant", "tool")
RESULT_STATES = ("success", "error", "rejected", "incomplete", "pending")
PINNED_METADATA_KEY = "jev.context.pinned"
SOURCE_KEY = "jev.source"  # metadata key under which a converter keeps what the jev model has no field for
FORMAT_KEY = "jev.format"  # metadata key naming the converter that wrote it: each reads back only its own
ENVELOPE_KEY = "jev.envelope"  # metadata key under which a request body's other fields ride (formats.request)
MODEL_KEY = "jev.model"  # metadata key naming the model that wrote an assistant message, where its form says so
BOOKKEEPING_KEYS = (SOURCE_KEY, FORMAT_KEY, ENVELOPE_KEY, MODEL_KEY)  # `Origin`'s keys in the `jev` form's metadata


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


@dataclass(frozen=True, slots=True)
class BlockShape:
    """One typed block in the `jev` form, the one description its reader, writer and checks follow: its
    `type`, its class, and its fields in the order they are written — `strings` must be strings, `values`
    hold any JSON (a call's input, a result's output), `optional` may be left out (a result's state and
    metadata)."""

    kind: str
    cls: type
    strings: tuple[str, ...]
    values: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    fields: tuple[str, ...] = dataclasses.field(init=False)  # every block's fields, in order (`type` aside)
    required: frozenset[str] = dataclasses.field(init=False)  # the JSON object's keys a reader requires
    allowed: frozenset[str] = dataclasses.field(init=False)  # and those it takes

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", self.strings + self.values)
        object.__setattr__(self, "required", frozenset(("type", *self.fields)))
        object.__setattr__(self, "allowed", self.required | frozenset(self.optional))


SHAPES = {shape.kind: shape for shape in (
    BlockShape("text", TextBlock, ("text",)),
    BlockShape("thinking", ThinkingBlock, ("thinking",)),
    BlockShape("tool_use", ToolUseBlock, ("id", "name"), ("input",)),
    BlockShape("tool_result", ToolResultBlock, ("id", "name"), ("output",), ("state", "metadata")),
)}
SHAPE_OF: dict[type, BlockShape] = {shape.cls: shape for shape in SHAPES.values()}
STRING_FIELDS: dict[type, tuple[str, ...]] = {cls: shape.strings for cls, shape in SHAPE_OF.items()}


@quick_init
@dataclass(frozen=True, slots=True)
class Origin:
    """Where a message came from, beside it rather than in its host's metadata: the converter that loaded it
    (`format`) and what it kept to write the message back as it was (`source`), the other fields of the
    request body it came in (`envelope`, on the first message), and the model that wrote it (`model`, which
    selects the provider's rules). Never model-visible, never judged; a host leaves it as it is. The `jev`
    form writes it as metadata keys (`BOOKKEEPING_KEYS`), after the host's own, and reads them back into it."""

    format: str | None = None
    source: Any = None
    envelope: Any = None
    model: str | None = None

    def replace(self, **changes: Any) -> Origin | None:
        """A copy with some fields changed; None when nothing is left in it."""
        out = dataclasses.replace(self, **changes)
        return None if out == _NO_ORIGIN else out

    def as_metadata(self) -> dict[str, Any]:
        """Its keys in the `jev` form's metadata (those it holds), in the order converters always wrote them."""
        out: dict[str, Any] = {}
        if self.format is not None:
            out[FORMAT_KEY] = self.format
        if self.source is not None:
            out[SOURCE_KEY] = self.source
        if self.model is not None:
            out[MODEL_KEY] = self.model
        if self.envelope is not None:
            out[ENVELOPE_KEY] = self.envelope
        return out


_NO_ORIGIN = Origin()


def split_origin(metadata: Mapping[str, Any] | None) -> tuple[Mapping[str, Any] | None, Origin | None]:
    """A `jev` form's metadata as the host's own (None when nothing is left) and the `Origin` its bookkeeping
    keys give (None when it has none): the inverse of `Message.written_metadata`."""
    if not metadata or not any(metadata.get(key) is not None for key in BOOKKEEPING_KEYS):
        return metadata, None
    # a key holding null stays the host's: an origin holds no null, and the form must write back what it read
    own = {k: v for k, v in metadata.items() if k not in BOOKKEEPING_KEYS or v is None} or None
    origin = Origin(metadata.get(FORMAT_KEY), metadata.get(SOURCE_KEY), metadata.get(ENVELOPE_KEY),
                    metadata.get(MODEL_KEY))
    return own, (None if origin == _NO_ORIGIN else origin)


@quick_init
@dataclass(frozen=True, slots=True)
class Message:
    """One transcript message; `name`, `metadata` and `timestamp` are carried through untouched, and `origin`
    says where it came from (a converter's bookkeeping, outside the host's `metadata`)."""

    id: str
    role: str
    content: tuple[Block, ...]
    name: str | None = None
    metadata: Mapping[str, Any] | None = None
    timestamp: str | None = None
    origin: Origin | None = None

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

    @property
    def written_metadata(self) -> Mapping[str, Any] | None:
        """The metadata the `jev` form writes: the host's own, then its origin's keys (`Origin.as_metadata`)."""
        if self.origin is None:
            return self.metadata
        return {**(self.metadata or {}), **self.origin.as_metadata()}

    def with_origin(self, **changes: Any) -> Message:
        """A copy whose `origin` has some fields changed (`Origin` fields: format, source, envelope, model)."""
        return dataclasses.replace(self, origin=(self.origin or _NO_ORIGIN).replace(**changes))


# --- the library's own JSON form (format `jev`) -------------------------------------------------


def block_to_dict(block: Block) -> dict[str, Any]:
    """The JSON object of one block: its shape's fields in order; a result's output as written blocks
    when it holds some, its state always, its metadata when it has one."""
    if type(block) is OtherBlock:
        return dict(block.data)  # its JSON object
    shape = SHAPE_OF[type(block)]
    d: dict[str, Any] = {"type": shape.kind}
    for name in shape.fields:
        d[name] = getattr(block, name)
    if type(block) is ToolResultBlock:
        if not isinstance(block.output, str):
            d["output"] = [block_to_dict(b) for b in block.output]
        d["state"] = block.state
        if block.metadata is not None:
            d["metadata"] = block.metadata
    return d


def message_to_dict(message: Message) -> dict[str, Any]:
    """The JSON object of one message; absent optional fields are left out."""
    d: dict[str, Any] = {"id": message.id, "role": message.role,
                         "content": [block_to_dict(b) for b in message.content]}
    if message.name is not None:
        d["name"] = message.name
    metadata = message.written_metadata
    if metadata is not None:
        d["metadata"] = metadata
    if message.timestamp is not None:
        d["timestamp"] = message.timestamp
    return d


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


THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})  # a block of either type is thinking, however kept


def is_thinking(block: object) -> bool:
    """A thinking block of any form: jev's, or one kept whole (a signature, a redacted block) as an `OtherBlock`."""
    return type(block) is ThinkingBlock or (type(block) is OtherBlock and block.type in THINKING_TYPES)


VERBATIM_KINDS = frozenset({"text", "thinking"})  # kept as OtherBlock when their fields are not the model's


def block_from_dict(obj: Any, where: str) -> Block:
    """One block from its JSON object, as its shape (`SHAPES`) says; unknown types become `OtherBlock`
    (validation decides later), and so does a text or thinking block with other fields than the model's
    (an OpenAI text part with `annotations`, an AgentScope text block without `text`): kept verbatim, so
    whatever the writer wrote the reader reads. A tool_use or tool_result with other fields is refused:
    pairing hinges on them."""
    if not isinstance(obj, dict):
        raise FormatError(f"{where}: block must be a JSON object (got {type(obj).__name__})")
    kind = obj.get("type")
    if not isinstance(kind, str):
        raise FormatError(f"{where}.type: must be a string (got {type(kind).__name__})")
    shape = SHAPES.get(kind)
    if shape is None:
        return OtherBlock(obj)
    required = shape.required
    if kind in VERBATIM_KINDS and obj.keys() != required:
        return OtherBlock(obj)
    _check_fields(obj, where, required, shape.allowed, f"a {kind} block")
    values = [obj[name] for name in shape.fields]
    for name, value in zip(shape.strings, values, strict=False):  # the strings lead the fields
        if type(value) is not str:
            _str_field(obj, name, where)  # raises, naming the field
    if shape.cls is not ToolResultBlock:
        return shape.cls(*values)
    output = obj["output"]
    if isinstance(output, list):
        output = tuple(block_from_dict(b, f"{where}.output[{i}]") for i, b in enumerate(output))
    elif not isinstance(output, str):
        raise FormatError(f"{where}.output: must be a string or a list of blocks (got {type(output).__name__})")
    state = obj.get("state", "success")
    if state not in RESULT_STATES:
        raise FormatError(f"{where}.state: must be one of {', '.join(RESULT_STATES)} (got {shown(state)})")
    metadata = _optional(obj, "metadata", dict, where, "a JSON object")
    return ToolResultBlock(values[0], values[1], output, state, metadata)


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
    metadata, origin = split_origin(_optional(obj, "metadata", dict, where, "a JSON object"))
    timestamp = _optional(obj, "timestamp", str, where, "a string")
    return Message(_str_field(obj, "id", where), role, blocks, name, metadata, timestamp, origin)


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


_MOVED = {**dict.fromkeys(("json_default", "CANONICAL_OPTIONS", "canonical_json", "unwritable", "not_json",
                           "canonical_chars", "chars"), "jev.model.canonical"),
          **dict.fromkeys(("block_problem", "message_problem"), "jev.providers.checks"),
          "visible_chars": "jev.model.blocks",
          **dict.fromkeys(("CARRIED_OVER", "Pair", "Transcript", "place", "analyze"),
                          "jev.reading.analysis")}


def __getattr__(name: str) -> Any:
    """Names this module held before it was split: still importable from here, with a warning."""
    if name in _MOVED:
        import importlib
        import warnings

        warnings.warn(f"{__name__}.{name} moved to {_MOVED[name]}.{name}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
