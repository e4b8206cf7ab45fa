"""Pydantic AI messages: `ModelRequest` / `ModelResponse` objects, or their JSON form
(`ModelMessagesTypeAdapter.dump_python(messages, mode="json")`).

One jev message per Pydantic AI message: a request is a `user` message, a response an `assistant` one (its
`model_name` kept as the message's `Origin.model`, for the provider's rules). Parts map one to one, in order:
`text`, `user-prompt` (text) and `system-prompt` to text blocks, `thinking` to a thinking block (its
signature kept), `tool-call` to a call, `tool-return` and a `retry-prompt` that answers a call (it names the
call's id and tool) to that call's result (an error for a retry), anything else (files, built-in tools,
multimodal prompts) kept as it is. What a message carries besides the parts' text, calls' inputs and
results' content rides in the message's `origin.source`, so `dump(load(x)) == x` in either form. A message made
in Python (a tombstone) is written afresh: an assistant message as a response of text parts, so a note about
the history reads as the model's own, never as a new user instruction. `pydantic-ai` is needed only for
objects; the JSON form needs nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from ..errors import FormatError, shown
from ..model.transcript import (
    Block,
    Message,
    OtherBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from .converters import kept_items, loaded, parse_arguments

NAME = "pydantic-ai"
_TEXT = ("text", "user-prompt", "system-prompt")  # parts whose `content` string is a text block
_RESULTS = ("tool-return", "retry-prompt")
_KINDS = {"request": "user", "response": "assistant"}


def _known(kind: Any) -> bool:
    return isinstance(kind, str) and kind in _KINDS


def is_objects(data: Any) -> bool:
    """A list of Pydantic AI message objects (what `result.all_messages()` and a history processor hold)."""
    return isinstance(data, list) and bool(data) and all(
        not isinstance(m, dict) and _known(getattr(m, "kind", None)) and hasattr(m, "parts") for m in data)


def is_messages(data: Any) -> bool:
    """Pydantic AI messages, as objects or in their JSON form."""
    return is_objects(data) or (isinstance(data, list) and bool(data) and all(
        isinstance(m, dict) and _known(m.get("kind")) and isinstance(m.get("parts"), list) for m in data))


def load(data: Any) -> list[Message]:
    """Messages from Pydantic AI message objects or their JSON form."""
    objects = is_objects(data)
    if objects:
        from pydantic_ai.messages import ModelMessagesTypeAdapter
        data = ModelMessagesTypeAdapter.dump_python(data, mode="json")
    if not isinstance(data, list):
        raise FormatError(f"messages: must be a list of Pydantic AI messages (got {type(data).__name__})")
    out: list[Message] = []
    for i, item in enumerate(data):
        where = f"messages[{i}]"
        if not isinstance(item, dict) or not _known(item.get("kind")) or not isinstance(item.get("parts"), list):
            raise FormatError(f"{where}: must be a Pydantic AI message (kind request or response, with parts)")
        blocks = tuple(_block(part, f"{where}.parts[{k}]") for k, part in enumerate(item["parts"]))
        kept = {**item, "parts": [_hollow(part) for part in item["parts"]]}
        model = item.get("model_name") if item["kind"] == "response" else None
        origin = loaded(NAME, {"item": kept, "objects": objects}, model if isinstance(model, str) and model else None)
        out.append(Message(f"m{i}", _KINDS[item["kind"]], blocks, None, None,
                           item.get("timestamp") if isinstance(item.get("timestamp"), str) else None, origin))
    return out


def _block(part: Any, where: str) -> Block:
    """A part as a block (module docstring)."""
    kind = part.get("part_kind") if isinstance(part, dict) else None
    if not isinstance(kind, str):
        raise FormatError(f"{where}.part_kind: every part needs a string part_kind")
    if kind in _TEXT and isinstance(part.get("content"), str):
        return TextBlock(part["content"])
    if kind == "thinking" and isinstance(part.get("content"), str):
        return ThinkingBlock(part["content"])  # its signature rides in the kept part
    if kind == "tool-call":
        call_id, name = part.get("tool_call_id"), part.get("tool_name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise FormatError(f"{where}: a tool-call part needs string tool_call_id and tool_name")
        args = parse_arguments(part.get("args"))
        return ToolUseBlock(call_id, name, args if isinstance(args, dict) else {"args": args})
    if kind in _RESULTS and isinstance(part.get("tool_call_id"), str) and isinstance(part.get("tool_name"), str):
        error = kind == "retry-prompt" or part.get("outcome") not in (None, "success")
        return ToolResultBlock(part["tool_call_id"], part["tool_name"], _text(part.get("content")),
                               "error" if error else "success")
    return OtherBlock(part)


def _text(content: Any) -> str:
    """A result's content as the text the judge reads and a plan may cut: a string as it is, else its JSON."""
    if isinstance(content, str):
        return content
    try:
        return orjson.dumps(content).decode()
    except TypeError as exc:  # nested past JSON's depth, or a value JSON has no form for
        raise FormatError(f"a tool result's content cannot be written as JSON ({exc})") from None


def _hollow(part: dict[str, Any]) -> dict[str, Any]:
    """What is kept of a part beside its block: the text and result content emptied (the block holds it), a
    non-string result content kept (written back while the block's text is still its JSON); calls keep
    their `args` as they were (a plan never changes an input), thinking its text (a plan only removes thinking,
    and a part goes back with its own signature only while its very text is still there)."""
    kind = part.get("part_kind")
    if kind in _TEXT and isinstance(part.get("content"), str):
        return {**part, "content": ""}
    if kind in _RESULTS and isinstance(part.get("content"), str):
        return {**part, "content": ""}
    return part


def dump(messages: Sequence[Message]) -> Any:
    """Pydantic AI messages in the form they were loaded from (objects or JSON); messages not loaded from
    Pydantic AI are written afresh in the JSON form (module docstring)."""
    kept, objects = kept_items(messages, NAME)
    items = [_fresh(message) if item is None else {**item, "parts": list(_parts(item["parts"], message.content))}
             for message, item in kept]
    if objects:
        from pydantic_ai.messages import ModelMessagesTypeAdapter
        return ModelMessagesTypeAdapter.validate_python(items)
    return items


def _parts(kept: list[dict[str, Any]], blocks: Sequence[Block]) -> Iterator[dict[str, Any]]:
    """The kept parts refilled from the blocks left, in their order (a part whose block a plan let go of is
    left out), then blocks added since (text as text parts)."""
    calls = {b.id: b for b in blocks if isinstance(b, ToolUseBlock)}
    results = {b.id: b for b in blocks if isinstance(b, ToolResultBlock)}
    texts = iter([b.text for b in blocks if isinstance(b, TextBlock)])
    thoughts = Counter(b.thinking for b in blocks if isinstance(b, ThinkingBlock))
    others = iter([b for b in blocks if isinstance(b, OtherBlock)])
    for part in kept:
        kind = part.get("part_kind")
        if kind == "tool-call" and isinstance(part.get("tool_call_id"), str) and isinstance(part.get("tool_name"), str):
            if part["tool_call_id"] in calls:
                yield part
        elif kind in _RESULTS and isinstance(part.get("tool_call_id"), str) and isinstance(part.get("tool_name"), str):
            result = results.get(part["tool_call_id"])
            if result is not None:
                yield _refilled(part, result)
        elif kind in _TEXT and isinstance(part.get("content"), str):
            text = next(texts, None)
            if text is not None:
                yield {**part, "content": text}
        elif kind == "thinking" and isinstance(part.get("content"), str):
            if thoughts[part["content"]] > 0:
                thoughts[part["content"]] -= 1
                yield part
        else:
            other = next(others, None)
            if other is not None:
                yield _other(other, "loaded")
    yield from ({"part_kind": "text", "content": text} for text in texts)


def _refilled(part: dict[str, Any], result: ToolResultBlock) -> dict[str, Any]:
    """A result part with its block's content: a string as the block says; a non-string content as it was
    while the block still reads as its JSON, else (a plan cut it) the block's text."""
    text = result.text
    if isinstance(part.get("content"), str) or _text(part.get("content")) != text:
        return {**part, "content": text}
    return part


def _other(block: Block, role: str) -> dict[str, Any]:
    """A block with no part of its own kind in a `role` message: a Pydantic AI part kept as it was, or a
    `FormatError` naming what has no place (a tool result in an assistant message: a response holds none)."""
    data = block.data if isinstance(block, OtherBlock) else None
    if isinstance(data, dict) and isinstance(data.get("part_kind"), str):
        return data
    raise FormatError(f"a {shown(block.type)} block in a {role} message has no Pydantic AI part")


def _fresh(message: Message) -> dict[str, Any]:
    """A message made in Python or loaded from another form: an assistant one as a response (text, thinking
    and call parts), any other as a request (text as user-prompt parts, results as tool-return parts)."""
    if message.role == "assistant":
        parts: list[dict[str, Any]] = []
        for b in message.content:
            if isinstance(b, TextBlock):
                parts.append({"part_kind": "text", "content": b.text})
            elif isinstance(b, ThinkingBlock):
                parts.append({"part_kind": "thinking", "content": b.thinking})
            elif isinstance(b, ToolUseBlock):
                parts.append({"part_kind": "tool-call", "tool_name": b.name, "args": b.input, "tool_call_id": b.id})
            else:
                parts.append(_other(b, message.role))
        return {"kind": "response", "parts": parts}
    prompt = "system-prompt" if message.role == "system" else "user-prompt"
    return {"kind": "request", "parts": [
        {"part_kind": prompt, "content": b.text} if isinstance(b, TextBlock)
        else {"part_kind": "tool-return", "tool_name": b.name, "content": b.text, "tool_call_id": b.id,
              "outcome": "success" if b.state == "success" else "failed"} if isinstance(b, ToolResultBlock)
        else _other(b, message.role) for b in message.content if not isinstance(b, ThinkingBlock)]}
