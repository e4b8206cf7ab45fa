"""Anthropic Messages: `tool_use` blocks in assistant messages, `tool_result` blocks (`is_error`) in user
messages, `thinking` / `redacted_thinking`, string or block content, and an optional `system` role.

Messages get `m0`, `m1`, … (dropped again on dump). Each original block is kept in
the message's `origin.source` without what the jev block holds (text, thinking, a call's input, a result's
text, an unknown block's object) and written back with it filled in from the block — `cache_control`,
`signature`, `citations`, `toolset_name` and all — unless the plan removed it or cut its result, so
`dump(load(x)) == x`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FormatError
from ..model.transcript import (
    Block,
    Message,
    OtherBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_to_dict,
)
from .converters import each_message, hollow, hollow_block, loaded, refill, refill_block, source_of

NAME = "anthropic"


def _result_output(content: Any, where: str) -> str | tuple[Block, ...]:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):
        raise FormatError(f"{where}.content: must be a string or a list of blocks")
    for k, b in enumerate(content):
        if not isinstance(b, dict) or not isinstance(b.get("type"), str):
            raise FormatError(f"{where}.content[{k}]: a block must be an object with a 'type'")
    return tuple(TextBlock(b["text"]) if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
                 else OtherBlock(b) for b in content)


def _block(raw: Any, where: str, names: dict[str, str]) -> Block:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise FormatError(f"{where}: a block must be an object with a 'type'")
    kind = raw["type"]
    if kind == "text":
        if not isinstance(raw.get("text"), str):
            raise FormatError(f"{where}.text: must be a string")
        return TextBlock(raw["text"])
    if kind == "tool_use":
        if not isinstance(raw.get("id"), str) or not isinstance(raw.get("name"), str):
            raise FormatError(f"{where}: tool_use needs string 'id' and 'name'")
        names[raw["id"]] = raw["name"]
        return ToolUseBlock(raw["id"], raw["name"], raw.get("input"))
    if kind == "tool_result":
        call_id = raw.get("tool_use_id")
        if not isinstance(call_id, str):
            raise FormatError(f"{where}.tool_use_id: must be a string")
        return ToolResultBlock(call_id, names.get(call_id, ""), _result_output(raw.get("content"), where),
                               "error" if raw.get("is_error") is True else "success")
    if kind == "thinking":
        thinking = raw.get("thinking")
        return ThinkingBlock(thinking if isinstance(thinking, str) else "")
    if kind == "redacted_thinking":
        return ThinkingBlock("")
    return OtherBlock(raw)


def load(data: Any) -> list[Message]:
    """Messages from an Anthropic `messages` array (optionally with `system` messages)."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for i, where, raw in each_message(data, "messages", ("user", "assistant", "system")):
        out.append(read_message(raw, f"m{i}", where, names))
    return out


def read_message(raw: dict[str, Any], id: str, where: str, names: dict[str, str], timestamp: str | None = None
                 ) -> Message:
    """One Anthropic message (`raw`, with a `role`) as a jev message that `dump` writes back exactly."""
    blocks = content_blocks(raw.get("content"), where, names)
    return Message(id, raw["role"], blocks, None, None, timestamp, loaded(NAME, _kept(raw, blocks)))


def content_blocks(content: Any, where: str, names: dict[str, str]) -> tuple[Block, ...]:
    """The blocks of one Anthropic message's `content` (`where` names it in errors; `names` maps the call
    ids seen so far to their tools, so a result is named after its call)."""
    if isinstance(content, str):
        return (TextBlock(content),) if content else ()
    if isinstance(content, list):
        return tuple(_block(b, f"{where}.content[{k}]", names) for k, b in enumerate(content))
    raise FormatError(f"{where}.content: must be a string or a list of blocks")


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)


_FIELDS = {"text": "text", "thinking": "thinking"}  # block type -> the field a jev block holds


def _kept(raw: dict[str, Any], blocks: tuple[Block, ...]) -> dict[str, Any]:
    """The message as kept for the round trip: without what its blocks hold — text, thinking, call inputs,
    results' text, unknown blocks — so nothing is kept twice and a truncation removes its bytes."""
    content = raw.get("content")
    if isinstance(content, str):
        return {**raw, "content": ""}
    if not isinstance(content, list):
        return raw
    kept = []
    for b, block in zip(content, blocks, strict=True):
        kind = b.get("type")
        if kind == "tool_result" and "content" in b:
            kept.append({**b, "content": hollow(b["content"], _is_text)})
        elif kind == "tool_use":
            kept.append({**b, "input": None} if "input" in b else b)
        else:
            kept.append(hollow_block(b, block, _FIELDS))
    return {**raw, "content": kept}


def _key(block: Any) -> tuple[str, Any] | None:
    if isinstance(block, (ToolUseBlock, ToolResultBlock)):
        return ("use" if isinstance(block, ToolUseBlock) else "result", block.id)
    if isinstance(block, dict) and block.get("type") == "tool_use":
        return ("use", block.get("id"))
    if isinstance(block, dict) and block.get("type") == "tool_result":
        return ("result", block.get("tool_use_id"))
    return None


def _dump_result(original: dict[str, Any], block: ToolResultBlock) -> dict[str, Any]:
    """A kept `tool_result` block with its content written back from the result block (see `hollow`)."""
    if original.get("content") is None and block.output == "":  # loaded without content (or null): as it was
        return original
    return {**original, "content": refill(original.get("content"), block.output, _is_text, "text")}


def dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """An Anthropic `messages` array; blocks the plan kept are written back exactly as loaded. A message not
    loaded from Anthropic is written afresh; a `tool` message becomes a `user` one, where Anthropic carries
    tool results."""
    out: list[dict[str, Any]] = []
    for message in messages:
        source = dict(source_of(message, NAME) or {"role": "user" if message.role == "tool" else message.role,
                                                  "content": []})
        original = source.get("content")
        if isinstance(original, str):
            source["content"] = "\n".join(b.text for b in message.content if isinstance(b, TextBlock))
            out.append(source)
            continue
        current = {_key(b): b for b in message.content if _key(b) is not None}
        others = [b for b in message.content if _key(b) is None]
        blocks: list[Any] = []
        for raw in original or []:
            key = _key(raw)
            if key is None:
                if _stripped(raw, others):  # thinking a plan stripped for a preserved-thinking model
                    continue
                if others:  # other non-tool blocks are never removed by a plan: they pair up in order
                    blocks.append(refill_block(raw, others.pop(0), _FIELDS))
            elif key in current:
                block = current.pop(key)
                blocks.append(_dump_result(raw, block) if isinstance(block, ToolResultBlock)
                              else {**raw, "input": block.input} if "input" in raw and type(block) is ToolUseBlock else raw)
        for block in message.content:  # blocks added in Python, not loaded
            if _key(block) in current or (not original and _key(block) is None):
                blocks.append(_fresh(block))
        source["content"] = blocks
        out.append(source)
    return out


def _stripped(raw: Any, others: list[Block]) -> bool:
    """Whether a loaded thinking block is gone from the message: the next non-tool block left is no thinking
    (`jev.providers.strip_thinking` removes a message's thinking, never its text)."""
    return (isinstance(raw, dict) and raw.get("type") in ("thinking", "redacted_thinking")
            and not (others and (type(others[0]) is ThinkingBlock
                                 or (type(others[0]) is OtherBlock and others[0].type == raw.get("type")))))


def _fresh(block: Block) -> dict[str, Any]:
    """An Anthropic block for one added in Python; text, thinking, tool use and others have jev's shape. A
    result in any state but success is an error: Anthropic has no other."""
    if isinstance(block, ToolResultBlock):
        return _dump_result({"type": "tool_result", "tool_use_id": block.id, "content": None} |
                            ({"is_error": True} if block.state != "success" else {}), block)
    return block_to_dict(block)
