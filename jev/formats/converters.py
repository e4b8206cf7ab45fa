"""What the converters share: where the original rides, walking a list of messages, JSON-string inputs."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson

from ..errors import FormatError
from ..model.transcript import Block, Message, Origin, OtherBlock, TextBlock, ThinkingBlock


def loaded(name: str, source: Any, model: str | None = None) -> Origin:
    """The origin of a message converter `name` loaded: what it kept, whose it is, and the model that wrote it
    where the form names one."""
    return Origin(name, source, model=model)


def source_of(message: Message, name: str) -> Any:
    """What converter `name` kept of `message` when it loaded it, or None for a message made in Python or
    loaded by another converter (whose source has another shape: it is written afresh). A source with no
    name predates the name and is taken as the asking converter's."""
    origin = message.origin
    if origin is None or origin.source is None:
        return None
    return origin.source if origin.format in (name, None) else None


def kept_items(messages: Sequence[Message], name: str) -> tuple[list[tuple[Message, Any]], bool]:
    """Each message beside the item converter `name` kept of it when it loaded it (None: a message to write
    afresh), and whether any came from the host's objects rather than their dict form."""
    out: list[tuple[Message, Any]] = []
    objects = False
    for message in messages:
        source = source_of(message, name) or {}
        out.append((message, source.get("item")))
        objects = objects or (source.get("item") is not None and bool(source.get("objects")))
    return out, objects


def hollow(content: Any, is_text: Callable[[Any], bool]) -> Any:
    """What a converter keeps of a tool result's content for the round trip: its shape without the text,
    which the result block holds (so a result is not kept twice, and a truncation removes its bytes).
    A string becomes "", a text part (`is_text`) "" if it is a bare string, else its text ""; other parts
    and other values are kept as they are."""
    if isinstance(content, str):
        return ""
    if isinstance(content, list):
        return [("" if isinstance(p, str) else {**p, "text": ""}) if is_text(p) else p for p in content]
    return content


def refill(kept: Any, output: str | tuple[Block, ...], is_text: Callable[[Any], bool], text_type: str) -> Any:
    """A result's content written back from its block and what `hollow` kept: a string output as it is;
    block output into the kept parts' order, each text part taking the next text block (a full part kept
    by an older snapshot is refilled the same way), text blocks beyond them as `text_type` parts."""
    if isinstance(output, str):
        return output
    texts = iter(b for b in output if isinstance(b, TextBlock))
    out = []
    for part in kept if isinstance(kept, list) else []:
        if is_text(part):
            block = next(texts, None)
            if block is not None:
                out.append({**part, "text": block.text})
        else:
            out.append(part)
    return out + [{"type": text_type, "text": b.text} for b in texts]


def each_message(data: Any, name: str, roles: tuple[str, ...]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(index, path for errors, message) for a JSON array of message objects with one of `roles`."""
    if not isinstance(data, list):
        raise FormatError(f"{name}: must be a JSON array (got {type(data).__name__})")
    for i, raw in enumerate(data):
        where = f"{name}[{i}]"
        if not isinstance(raw, dict) or raw.get("role") not in roles:
            raise FormatError(f"{where}: must be an object with role {', '.join(roles)}")
        yield i, where, raw


def parse_arguments(raw: Any) -> Any:
    """A call input given as a JSON string, parsed; kept as the string when it is not JSON."""
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw


def dump_arguments(value: Any) -> str:
    """A call input as a JSON-string `arguments`, the inverse of `parse_arguments`: a string input is
    written as a JSON string, so it reads back as the same string whether or not it looks like JSON."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError as exc:
        raise FormatError(f"a call input cannot be written as JSON arguments ({exc})") from None


def hollow_block(raw: Any, block: Block, fields: dict[str, str]) -> Any:
    """What a converter keeps of one loaded non-tool block for the round trip, without what `block` (the
    block it loaded as) holds: an unknown block's object is left to its OtherBlock (its type kept, so the
    block still reads as non-tool), a text or thinking block's field (`fields`: block type -> the field
    holding its text) emptied. Anything else is kept as it is."""
    if not isinstance(raw, dict):
        return raw
    if type(block) is OtherBlock and block.data is raw:
        return {"type": raw.get("type")}
    field = fields.get(raw.get("type"))  # type: ignore[arg-type]
    if field is not None and type(block) in (TextBlock, ThinkingBlock) and isinstance(raw.get(field), str):
        return {**raw, field: ""}
    return raw


def refill_block(kept: Any, block: Block, fields: dict[str, str]) -> Any:
    """A non-tool block written back from what `hollow_block` kept and the block it loaded as (a block kept
    whole by an older snapshot is written the same way)."""
    if type(block) is OtherBlock:
        return dict(block.data)
    if isinstance(kept, dict):
        field = fields.get(kept.get("type"))  # type: ignore[arg-type]
        if field is not None and isinstance(kept.get(field), str):
            if type(block) is TextBlock:
                return {**kept, field: block.text}
            if type(block) is ThinkingBlock:
                return {**kept, field: block.thinking}
    return kept


def part_data(block: Block, form: str) -> dict[str, Any]:
    """A non-text content part written as it was loaded (an `OtherBlock`'s object); any other block (a
    thinking block, a tool call or result nested in a result's output, made in Python) has no part in `form`:
    a `FormatError` that says so, never an attribute error."""
    if type(block) is OtherBlock:
        return dict(block.data)
    raise FormatError(f"{form}: a content part cannot be a {block.type} block (a tool result's output holds one; "
                      f"{form} writes text and the parts it loaded)")


def reproducible_arguments(raw: Any, value: Any) -> bool:
    """A call's JSON-string `arguments` are written back exactly from the input they parsed to, so the
    converter need not keep the string."""
    return isinstance(raw, str) and dump_arguments(value) == raw


@functools.lru_cache(maxsize=512)
def shared_order(keys: tuple) -> list:
    """`keys` (tuples of them nest) as the list a converter keeps to write an object back in the order it was
    read in: one list per distinct order, shared by every message that has it — a history repeats a few
    shapes, and thousands of copies cost memory and garbage-collector time. Never mutate it."""
    return [shared_order(k) if isinstance(k, tuple) else k for k in keys]


def in_order(d: dict[str, Any], keys: list[str] | None) -> dict[str, Any]:
    """`d` with its keys in the order `keys` lists them (the order its object was read in), when they are
    the same keys; else `d` as it is. Converters keep such an order only where it is not their own."""
    if not keys:
        return d
    ordered = {k: d[k] for k in keys if k in d}
    return ordered if len(ordered) == len(d) else d  # every key of `d` listed: the same keys
