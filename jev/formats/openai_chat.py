"""OpenAI Chat Completions messages (`tool_calls` on assistant messages, `role: tool` results).

Chat messages have no ids: they get `m0`, `m1`, … on load and lose them again on dump. Whatever the jev
model has no field for (an `arguments` string its input does not write back exactly, `content: null`,
content-part lists, `developer` role, `refusal`, `audio`, …) travels in the message's `origin.source`, so
`dump(load(x)) == x`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from ..errors import FormatError, shown
from ..model.transcript import Block, Message, OtherBlock, TextBlock, ToolResultBlock, ToolUseBlock
from .converters import (
    dump_arguments,
    in_order,
    loaded,
    parse_arguments,
    part_data,
    reproducible_arguments,
    shared_order,
    source_of,
)

NAME = "openai-chat"
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
# the fields the jev model holds, by kind of message; any other (a `tool_call_id` on a user message, `name:
# null`, as a provider's model_dump() writes every field) rides in the source and is written back as it was
_CORE_KEYS = {False: frozenset({"role", "content", "name", "tool_calls"}),
              True: frozenset({"role", "content", "name", "tool_call_id"})}


def _parts_to_blocks(content: Any, where: str) -> tuple[tuple[Block, ...], str]:
    """Content to blocks, plus how it was written: 'string', 'null', 'absent' or 'list'."""
    if isinstance(content, str):
        return ((TextBlock(content),) if content else ()), "string"
    if content is None:
        return (), "null"
    if not isinstance(content, list):
        raise FormatError(f"{where}.content: must be a string, null or a list of parts")
    blocks: list[Block] = []
    for k, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise FormatError(f"{where}.content[{k}]: a content part must be an object with a 'type'")
        if part["type"] == "text" and set(part) == {"type", "text"} and isinstance(part["text"], str):
            blocks.append(TextBlock(part["text"]))
        else:
            blocks.append(OtherBlock(part))
    return tuple(blocks), "list"


def _blocks_to_content(blocks: Sequence[Block], form: str) -> Any:
    if form == "list":
        return [{"type": "text", "text": b.text} if isinstance(b, TextBlock) else part_data(b, NAME)
                for b in blocks]
    text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
    if form == "null" and not text:
        return None
    return text


def load(data: Any) -> list[Message]:
    """Messages from a Chat Completions `messages` array."""
    if not isinstance(data, list):
        raise FormatError(f"messages: must be a JSON array (got {type(data).__name__})")
    tool_names: dict[str, str] = {}
    out: list[Message] = []
    for i, raw in enumerate(data):
        role, blocks, name, source = read_message(raw, f"messages[{i}]", tool_names)
        out.append(Message(f"m{i}", role, blocks, name, origin=loaded(NAME, source) if source else None))
    return out


def read_message(raw: Any, where: str, tool_names: dict[str, str]) -> tuple[str, tuple[Block, ...], str | None,
                                                                            dict[str, Any]]:
    """One chat message as (jev role, blocks, name, what the jev model has no field for). `tool_names` maps
    the call ids seen so far to their tools, so a `tool` message's result is named after its call."""
    if not isinstance(raw, dict):
        raise FormatError(f"{where}: must be a JSON object")
    role = raw.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise FormatError(f"{where}.role: unsupported chat role {shown(role)}")
    tool = role == "tool"
    core = _CORE_KEYS[tool]
    source: dict[str, Any] = {k: v for k, v in raw.items() if k not in core or (k == "name" and v is None)}
    if role != _ROLES[role]:
        source["role"] = role
    blocks: tuple[Block, ...]
    if "content" not in raw:
        blocks, form = (), "absent"
    else:
        blocks, form = _parts_to_blocks(raw["content"], where)
    if form != "string":
        source["content_form"] = form
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        raise FormatError(f"{where}.name: must be a string or null")
    if tool:
        if "content" not in raw:
            raise FormatError(f"{where}.content: required for a tool message")
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str):
            raise FormatError(f"{where}.tool_call_id: required string for a tool message")
        output: str | tuple[Block, ...] = raw["content"] if isinstance(raw.get("content"), str) else blocks
        blocks = (ToolResultBlock(call_id, tool_names.get(call_id, ""), output),)
    elif raw.get("tool_calls") is not None:
        blocks = blocks + _load_calls(raw["tool_calls"], where, tool_names, source)
    elif "tool_calls" in raw:
        source["tool_calls_null"] = True  # `tool_calls: null`, as a provider's model_dump() writes it
    keys = tuple(raw)
    if not _own_order(keys, tool, name is not None):  # e.g. a model_dump(): content first
        source["order"] = shared_order(keys)
    return _ROLES[role], blocks, name, source


@functools.lru_cache(maxsize=256)  # a history repeats a few shapes: each is checked once
def _own_order(keys: tuple[str, ...], tool: bool, named: bool) -> bool:
    """Whether a message with `keys` is written back in that order by `write_message` without help."""
    own = (("role", "tool_call_id", "content") if tool else ("role", *(k for k in ("content", "tool_calls")
                                                                        if k in keys)))
    return keys == own + (("name",) if named else ()) + tuple(k for k in keys if k not in _CORE_KEYS[tool]
                                                                   or (k == "name" and not named))


def _load_calls(calls: Any, where: str, tool_names: dict[str, str], source: dict[str, Any]) -> tuple[Block, ...]:
    if not isinstance(calls, list):
        raise FormatError(f"{where}.tool_calls: must be a list")
    blocks: list[Block] = []
    extras: dict[str, Any] = {}
    for k, call in enumerate(calls):
        cw = f"{where}.tool_calls[{k}]"
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(call.get("id"), str) or not isinstance(fn.get("name"), str) \
                or not isinstance(fn.get("arguments"), str):
            raise FormatError(f"{cw}: needs a string 'id' and a 'function' with string 'name' and 'arguments'")
        arguments = parse_arguments(fn["arguments"])
        function = {k2: v for k2, v in fn.items() if k2 != "name"}
        if reproducible_arguments(fn["arguments"], arguments):  # the block's input writes them back
            function["arguments"] = None
        extra: dict[str, Any] = {"call": {k2: v for k2, v in call.items() if k2 != "function"}, "function": function}
        if list(call)[-1] != "function" or next(iter(fn)) != "name":  # not the order `_dump_call` writes
            extra["order"] = shared_order((tuple(call), tuple(fn)))
        extras[call["id"]] = extra
        tool_names[call["id"]] = fn["name"]
        blocks.append(ToolUseBlock(call["id"], fn["name"], arguments))
    source["tool_calls"] = extras
    return tuple(blocks)


def _dump_call(block: ToolUseBlock, extra: dict[str, Any] | None) -> dict[str, Any]:
    call: dict[str, Any] = dict(extra["call"]) if extra else {"id": block.id, "type": "function"}
    fn = dict(extra["function"]) if extra else {}
    raw = fn.get("arguments")
    if raw is None or parse_arguments(raw) != block.input:
        fn["arguments"] = dump_arguments(block.input)
    call["id"] = block.id
    call["function"] = {"name": block.name, **fn}
    if extra and "order" in extra:
        call["function"] = in_order(call["function"], extra["order"][1])
        call = in_order(call, extra["order"][0])
    return call


def dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """A Chat Completions `messages` array; generated ids are dropped. A message loaded from chat is written
    back as it came; any other is written afresh: each result as a `tool` message of its own (text beside
    results follows them as a message of its own), content parts when it holds more than text. Chat has no
    place for thinking or for a result's state: those are left out."""
    out: list[dict[str, Any]] = []
    for message in messages:
        out.extend(write_message(message, source_of(message, NAME)))
    return out


def write_message(message: Message, kept: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The chat message(s) of one message: `kept` is what `read_message` set aside for it (None to write
    it afresh); written back in the order its keys were read in."""
    source = dict(kept or {})
    order = source.pop("order", None)
    written = _written(message, source)
    return [in_order(written[0], order)] if order and len(written) == 1 else written


def _written(message: Message, source: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat message(s) of one message, keys in chat's own order."""
    out: list[dict[str, Any]] = []
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    body = [b for b in message.content if isinstance(b, (TextBlock, OtherBlock))]
    calls = [b for b in message.content if isinstance(b, ToolUseBlock)]
    form = source.pop("content_form", "string" if all(isinstance(b, TextBlock) for b in body) else "list")
    # a tool message's own `tool_calls` (null, as a model_dump() writes it) is an extra field, written back as is
    call_extras = None if results and message.role == "tool" else source.pop("tool_calls", None)
    role = source.pop("role", message.role)
    for result in results:
        output = result.output
        content = output if isinstance(output, str) else _blocks_to_content(
            output, form if source or result.text_only else "list")
        out.append(_named({"role": "tool", "tool_call_id": result.id, "content": content}, message, source))
    if results and not body and not calls:
        return out
    d: dict[str, Any] = {"role": "user" if results and role == "tool" else role}
    if form != "absent" or body:
        d["content"] = _blocks_to_content(body, "string" if form == "absent" else form)
    if calls or call_extras is not None:  # an empty list is written back as it came
        d["tool_calls"] = [_dump_call(c, (call_extras or {}).get(c.id)) for c in calls]
    elif source.pop("tool_calls_null", False):
        d["tool_calls"] = None
    out.append(_named(d, message, {} if results else source))
    return out


def _named(d: dict[str, Any], message: Message, source: dict[str, Any]) -> dict[str, Any]:
    if message.name is not None:
        d["name"] = message.name
    d.update(source)
    return d
