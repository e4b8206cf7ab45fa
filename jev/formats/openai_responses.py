"""OpenAI Responses input items: `message`, `function_call`, `function_call_output`, `custom_tool_call`,
`custom_tool_call_output`, `reasoning` (and any other item, kept verbatim).

Each item becomes one message (`m0`, `m1`, …; dropped again on dump): a `function_call` an assistant
message with one tool call (input = the parsed `arguments`), a `custom_tool_call` (a freeform tool's,
GPT-5 on) one whose input is its `input` string, either's output a tool message with its result, a
`reasoning` item an assistant message with a thinking block (so it is never sent to a judge and pins
itself). Everything the jev model has no field for — an `arguments` string the input does
not write back exactly, ids, statuses, content-part types, encrypted reasoning — rides in
the message's `origin.source`; text, outputs and arguments that do are left to the blocks, so nothing is kept
twice and `dump(load(x)) == x`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FormatError, shown
from ..model.transcript import Block, Message, OtherBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from .converters import (
    dump_arguments,
    hollow,
    loaded,
    parse_arguments,
    part_data,
    refill,
    reproducible_arguments,
    source_of,
)

NAME = "openai-responses"
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_PARTS = ("input_text", "output_text", "text")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")  # a call's output, read alike
ITEM_TYPES = ("message", "function_call", "custom_tool_call", *_OUTPUTS, "reasoning")  # the items read, not kept


def _content(content: Any, where: str) -> tuple[Block, ...]:
    if isinstance(content, str):
        return (TextBlock(content),) if content else ()
    if not isinstance(content, list):
        raise FormatError(f"{where}.content: must be a string or a list of parts")
    blocks: list[Block] = []
    for k, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise FormatError(f"{where}.content[{k}]: a content part must be an object with a 'type'")
        if part["type"] in _TEXT_PARTS:
            if not isinstance(part.get("text"), str):
                raise FormatError(f"{where}.content[{k}].text: a {part['type']} part needs a string 'text'")
            blocks.append(TextBlock(part["text"]))
        else:
            blocks.append(OtherBlock(part))
    return tuple(blocks)


def load(data: Any) -> list[Message]:
    """Messages from a list of Responses input items."""
    if not isinstance(data, list):
        raise FormatError(f"items: must be a JSON array (got {type(data).__name__})")
    names: dict[str, str] = {}
    out: list[Message] = []
    for i, item in enumerate(data):
        role, blocks, kept = read_item(item, f"items[{i}]", names)
        out.append(Message(f"m{i}", role, blocks, origin=loaded(NAME, kept)))
    return out


def read_item(item: Any, where: str, names: dict[str, str]) -> tuple[str, tuple[Block, ...], Any]:
    """One item as a message's role, blocks and what is kept of it for the round trip (`write_item`);
    `names` maps call ids to tool names, filled by calls and read by their outputs."""
    if not isinstance(item, dict):
        raise FormatError(f"{where}: must be a JSON object")
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        role = item.get("role")
        if not isinstance(role, str) or role not in _ROLES:
            raise FormatError(f"{where}.role: unsupported role {shown(role)}")
        # the blocks hold the text: the item keeps its parts' shape only
        kept = {**item, "content": hollow(item["content"], _is_text)} if "content" in item else item
        return _ROLES[role], _content(item.get("content", ""), where), kept
    if kind == "function_call":
        for key in ("call_id", "name", "arguments"):
            if not isinstance(item.get(key), str):
                raise FormatError(f"{where}.{key}: must be a string")
        names[item["call_id"]] = item["name"]
        block = ToolUseBlock(item["call_id"], item["name"], parse_arguments(item["arguments"]))
        return "assistant", (block,), {**item, "arguments": None} if reproducible_arguments(item["arguments"],
                                                                                             block.input) else item
    if kind == "custom_tool_call":
        for key in ("call_id", "name", "input"):
            if not isinstance(item.get(key), str):
                raise FormatError(f"{where}.{key}: must be a string")
        names[item["call_id"]] = item["name"]
        return "assistant", (ToolUseBlock(item["call_id"], item["name"], item["input"]),), {**item, "input": None}
    if kind in _OUTPUTS:
        if not isinstance(item.get("call_id"), str):
            raise FormatError(f"{where}.call_id: must be a string")
        raw = item.get("output")
        output: str | tuple[Block, ...] = raw if isinstance(raw, str) else _content(raw, where)
        result = ToolResultBlock(item["call_id"], names.get(item["call_id"], ""), output,
                                 "error" if item.get("status") == "incomplete" else "success")
        return "tool", (result,), {**item, "output": hollow(raw, _is_text)} if "output" in item else item
    if kind == "reasoning":
        summary = item.get("summary") or []
        if not isinstance(summary, list) or not all(isinstance(p, dict) and isinstance(p.get("text", ""), str)
                                                    for p in summary):
            raise FormatError(f"{where}.summary: must be a list of summary parts with string text")
        return "assistant", (ThinkingBlock("\n".join(p.get("text", "") for p in summary)),), item
    # any other item is carried as it is; as content of its own it makes a plan abandon (SPEC §2)
    return "assistant", (OtherBlock(item),), item


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in _TEXT_PARTS


def _dump_content(blocks: Sequence[Block], original: Any) -> Any:
    if isinstance(original, str):
        return "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
    return refill(original, tuple(blocks), _is_text, "output_text")


def dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Responses input items; generated ids are dropped. A message not loaded from Responses items is
    written afresh, one item per step (see `fresh_items`)."""
    out: list[dict[str, Any]] = []
    ids: list[str | None] = []  # the jev id each written item came from (None: written afresh)
    for message in messages:
        source = source_of(message, NAME)
        if source is None:
            fresh = fresh_items(message)
            out.extend(fresh)
            ids.extend([None] * len(fresh))
            continue
        ids.append(message.id)
        item = write_item(message.content, source)
        out.append(item)
    return _without_orphaned_reasoning(out, ids)


def write_item(blocks: Sequence[Block], kept: Any) -> dict[str, Any]:
    """The item `read_item` read, from what it kept and the message's blocks as they are now (a result
    cut, a call's input changed)."""
    item = dict(kept)
    call = next((b for b in blocks if isinstance(b, ToolUseBlock)), None)
    result = next((b for b in blocks if isinstance(b, ToolResultBlock)), None)
    if call is not None and item.get("type") == "custom_tool_call":  # a freeform tool's input is text
        item.update(call_id=call.id, name=call.name,
                    input=call.input if isinstance(call.input, str) else dump_arguments(call.input))
    elif call is not None:
        raw = item.get("arguments")
        if raw is None or parse_arguments(raw) != call.input:
            raw = dump_arguments(call.input)
        item.update(type="function_call", call_id=call.id, name=call.name, arguments=raw)
    elif result is not None:
        output = result.output
        item.update(type=item["type"] if item.get("type") in _OUTPUTS else "function_call_output", call_id=result.id,
                    output=output if isinstance(output, str) else (
                        "\n".join(b.text for b in output if isinstance(b, TextBlock))
                        if isinstance(item.get("output"), str) else _dump_content(output, item.get("output"))))
    elif item.get("type", "message") == "message" and "role" in item and ("content" in item or blocks):
        item["content"] = _dump_content(blocks, item.get("content", ""))
    return item


def _without_orphaned_reasoning(items: list[dict[str, Any]], ids: list[str | None]) -> list[dict[str, Any]]:
    """The API refuses a `reasoning` item not followed by an item its response produced ("provided without
    its required following item"), and a call that carries its item id without its reasoning. Reasoning
    pins itself, but the call after it may be compacted away. Ids are the items' positions when loaded (the
    item that followed `m<k>` was `m<k+1>`), None for a message a plan made (a tombstone, which no response
    produced). A reasoning item is written while a loaded item follows it that is its follower or another
    output item (a parallel call of its response); the plan's messages between them are moved after that
    run of output items, so nothing comes between. One that no such item follows is left out of this form
    (the plan's messages and the archive keep it); one that is the history's last item is kept. An
    untouched history is written back exactly."""
    out: list[dict[str, Any]] = []
    i, n = 0, len(items)
    while i < n:
        item, mid = items[i], ids[i]
        if item.get("type") != "reasoning" or mid is None or not mid[1:].isdigit() or i + 1 == n:
            out.append(item)
            i += 1
            continue
        j = i + 1
        while j < n and ids[j] is None:  # messages the plan made right after it
            j += 1
        if j < n and (ids[j] == f"m{int(mid[1:]) + 1}" or _output_item(items[j])):
            k = j
            while k < n and ids[k] is not None and _output_item(items[k]):
                k += 1
            out += [item, *items[j:k], *items[i + 1:j]]
            i = k
            continue
        i += 1  # orphaned: left out
    return out


def _output_item(item: dict[str, Any]) -> bool:
    """An item a model's response produces (a call, an assistant message, a built-in tool's call), which
    may follow a reasoning item; not an input, an output of a call, another reasoning item, or an item of
    no known shape (its type not a string)."""
    kind = item.get("type", "message")
    if kind == "message":
        return item.get("role") == "assistant"
    return isinstance(kind, str) and kind not in ("reasoning", "item_reference") and not kind.endswith("_output")


def fresh_items(message: Message) -> list[dict[str, Any]]:
    """Items for a message made in Python or loaded from another form, in its block order: text and other
    parts as `message` items (a system message as `developer`, text beside results as `user`), thinking as a
    `reasoning` summary, each call a `function_call`, each result a `function_call_output` (status
    `incomplete` for any state but success, as the loader reads it)."""
    role = {"system": "developer", "tool": "user"}.get(message.role, message.role)
    kind = "output_text" if role == "assistant" else "input_text"
    out: list[dict[str, Any]] = []
    parts: list[Block] = []

    def flush() -> None:
        if parts:
            content: Any = ("\n".join(b.text for b in parts) if all(isinstance(b, TextBlock) for b in parts)  # type: ignore[union-attr]
                            else _written(parts, kind))
            out.append({"type": "message", "role": role, "content": content})
            parts.clear()

    for block in message.content:
        if isinstance(block, (TextBlock, OtherBlock)):
            parts.append(block)
            continue
        flush()
        if isinstance(block, ThinkingBlock):
            out.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": block.thinking}]})
        elif isinstance(block, ToolUseBlock):
            out.append({"type": "function_call", "call_id": block.id, "name": block.name,
                        "arguments": dump_arguments(block.input)})
        elif isinstance(block, ToolResultBlock):
            output = block.output
            item = {"type": "function_call_output", "call_id": block.id,
                    "output": output if isinstance(output, str) else _written(output, "input_text")}
            out.append(item | ({} if block.state == "success" else {"status": "incomplete"}))
    flush()
    return out


def _written(blocks: Sequence[Block], kind: str) -> list[Any]:
    """Content parts for blocks written afresh: text as `kind` parts, any other part as it was."""
    return [{"type": kind, "text": b.text} if isinstance(b, TextBlock) else part_data(b, NAME) for b in blocks]
