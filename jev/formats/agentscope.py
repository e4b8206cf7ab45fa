"""AgentScope 2.x `Msg` dicts (`Msg.model_dump(mode="json")`): `ToolCallBlock` with a JSON-string `input`,
`ToolResultBlock` with `ToolResultState`, `ThinkingBlock`, `TextBlock`; other blocks kept verbatim.

AgentScope keeps a whole reply — hints, calls, their results, text — in *one* assistant `Msg`. The jev
model wants a result in a later message (SPEC §2) and recency counted in steps, so such a `Msg` becomes
one jev message per block, `<id>#0`, `<id>#1`, … (results with role `tool`), after a header `<id>` with
no blocks that carries the original `Msg` in the message's `origin.source` — without what its blocks hold
(text, hints, thinking, inputs that write back exactly, results' text, unknown blocks), so nothing is kept
twice. `dump` merges them back in the original block order, filling those fields from the blocks, so
`dump(load(x)) == x`. AgentScope's `hint` blocks read as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FormatError, shown
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
from .converters import (
    dump_arguments,
    each_message,
    hollow,
    hollow_block,
    loaded,
    parse_arguments,
    refill,
    refill_block,
    reproducible_arguments,
    source_of,
)

NAME = "agentscope"
_STATES = {"success": "success", "error": "error", "interrupted": "incomplete", "denied": "rejected",
           "running": "pending"}


def _output(output: Any, where: str) -> str | tuple[Block, ...]:
    if isinstance(output, str):
        return output
    if not isinstance(output, list):
        raise FormatError(f"{where}.output: a tool_result's output must be a string or a list of blocks")
    return tuple(TextBlock(b["text"]) if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
                 else OtherBlock(b if isinstance(b, dict) else {"type": "unknown", "value": b}) for b in output)


def _block(raw: Any, where: str) -> Block:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise FormatError(f"{where}: a block must be an object with a 'type'")
    kind = raw["type"]
    if kind == "text" and isinstance(raw.get("text"), str):
        return TextBlock(raw["text"])
    if kind == "hint" and isinstance(raw.get("hint"), str):  # guidance the framework injects: plain text here
        return TextBlock(raw["hint"])
    if kind == "thinking":
        thinking = raw.get("thinking")
        return ThinkingBlock(thinking if isinstance(thinking, str) else "")
    if kind == "tool_call":
        if not isinstance(raw.get("id"), str) or not isinstance(raw.get("name"), str):
            raise FormatError(f"{where}: tool_call needs string 'id' and 'name'")
        if not isinstance(raw.get("input"), str):
            raise FormatError(f"{where}.input: a tool_call's input must be a JSON string")
        return ToolUseBlock(raw["id"], raw["name"], parse_arguments(raw["input"]))
    if kind == "tool_result":
        if not isinstance(raw.get("id"), str) or not isinstance(raw.get("name"), str):
            raise FormatError(f"{where}: tool_result needs string 'id' and 'name'")
        state = _STATES.get(str(raw.get("state", "success")).lower())
        if state is None:
            raise FormatError(f"{where}.state: unknown tool result state {shown(raw.get('state'))}")
        metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else None
        return ToolResultBlock(raw["id"], raw["name"], _output(raw.get("output"), where), state, metadata)
    return OtherBlock(raw)


def load(data: Any) -> list[Message]:
    """Messages from a list of AgentScope `Msg` dicts."""
    out: list[Message] = []
    ids: set[str] = set()
    for i, where, raw in each_message(data, "msgs", ("user", "assistant", "system")):
        content = raw.get("content")
        if not isinstance(content, list):
            raise FormatError(f"{where}.content: must be a list of blocks")
        blocks = [_block(b, f"{where}.content[{k}]") for k, b in enumerate(content)]
        seen: set[tuple[bool, str]] = set()
        for k, b in enumerate(blocks):  # a Msg is split into steps below: check its ids as one message
            if isinstance(b, (ToolUseBlock, ToolResultBlock)):
                if (isinstance(b, ToolResultBlock), b.id) in seen:
                    raise FormatError(f"{where}.content[{k}]: a second {raw['content'][k]['type']} with id {b.id!r} "
                                      "in one Msg is ambiguous")
                seen.add((isinstance(b, ToolResultBlock), b.id))
        own = raw.get("id")
        mid = _unused(own if isinstance(own, str) and own else f"m{i}", ids)
        ids.add(mid)
        name = raw.get("name") if isinstance(raw.get("name"), str) else None
        own_calls = {b.id for b in blocks if isinstance(b, ToolUseBlock)}
        if not any(isinstance(b, ToolResultBlock) and b.id in own_calls for b in blocks):
            out.append(Message(mid, raw["role"], tuple(blocks), name, origin=loaded(NAME, _kept(raw, blocks))))
            continue
        # A header with no blocks carries the original Msg: a plan never touches a message without blocks,
        # so the Msg survives whichever of its blocks are dropped.
        out.append(Message(mid, raw["role"], (), name, origin=loaded(NAME, _kept(raw, blocks))))
        for k, block in enumerate(blocks):  # one step per block: results come after their calls
            role = "tool" if isinstance(block, ToolResultBlock) else raw["role"]
            out.append(Message(f"{mid}#{k}", role, (block,), name, origin=loaded(NAME, {"part_of": mid})))
    return out


def _unused(mid: str, ids: set[str]) -> str:
    """`mid`, or when an earlier Msg has that id, `mid~2` (`~3`, …): AgentScope's own context truncation can
    leave two Msgs with one id, which it accepts. The jev message gets the distinct id; the Msg keeps its
    own, and is written back with it."""
    if mid not in ids:
        return mid
    n = 2
    while f"{mid}~{n}" in ids:
        n += 1
    return f"{mid}~{n}"


def _key(block: Any) -> tuple[str, Any] | None:
    if isinstance(block, ToolUseBlock):
        return ("call", block.id)
    if isinstance(block, ToolResultBlock):
        return ("result", block.id)
    if isinstance(block, dict) and block.get("type") in ("tool_call", "tool_result"):
        return ("call" if block["type"] == "tool_call" else "result", block.get("id"))
    return None


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)


_FIELDS = {"text": "text", "hint": "hint", "thinking": "thinking"}  # block type -> the field a jev block holds


def _kept(raw: dict[str, Any], blocks: list[Block]) -> dict[str, Any]:
    """The `Msg` as kept for the round trip: without what its blocks hold — text, hints, thinking, call
    inputs that write back exactly, results' text, unknown blocks — so nothing is kept twice and a truncation
    removes its bytes (see `hollow`)."""
    content = []
    for b, block in zip(raw["content"], blocks, strict=True):
        kind = b.get("type")
        if kind == "tool_result":
            content.append({**b, "output": hollow(b["output"], _is_text)} if "output" in b else b)
        elif kind == "tool_call" and type(block) is ToolUseBlock:
            content.append({**b, "input": None} if reproducible_arguments(b["input"], block.input) else b)
        else:
            content.append(hollow_block(b, block, _FIELDS))
    return {**raw, "content": content}


def _dump_result(raw: dict[str, Any], block: ToolResultBlock) -> dict[str, Any]:
    """A kept `tool_result` with its output written back from the result block."""
    return {**raw, "output": refill(raw.get("output"), block.output, _is_text, "text")}


def dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """`Msg` dicts; a call's results merged back into its `Msg` in the original block order. A message not
    loaded from AgentScope is written afresh, its results joining the `Msg` that holds their call (where
    AgentScope keeps them) and the rest a `Msg` of its own (`user` for text beside results)."""
    parts: dict[str, list[Block]] = {}
    order: list[Message] = []
    for message in messages:
        owner = (source_of(message, NAME) or {}).get("part_of")
        if owner is not None:
            parts.setdefault(owner, []).extend(message.content)
        else:
            order.append(message)
    out: list[dict[str, Any]] = []
    holders: dict[str, dict[str, Any]] = {}  # call id -> the Msg written with that call
    for message in order:
        source = source_of(message, NAME)
        written = ([_written_back(source, list(message.content) + parts.get(message.id, []))] if source
                   else _fresh_msgs(message, holders))
        for msg in written:
            holders.update((b["id"], msg) for b in msg["content"]
                           if isinstance(b, dict) and b.get("type") == "tool_call" and isinstance(b.get("id"), str))
        out.extend(written)
    return out


def _written_back(source: dict[str, Any], present: list[Block]) -> dict[str, Any]:
    """A loaded `Msg` with the blocks a plan kept, each written as it was loaded (a cut result cut)."""
    raw = dict(source)
    tools = {_key(b): b for b in present if _key(b) is not None}
    others = [b for b in present if _key(b) is None]
    content: list[Any] = []
    for block in raw.get("content") or []:
        key = _key(block)
        if key is None:
            if others:
                content.append(refill_block(block, others.pop(0), _FIELDS))
        elif key in tools:
            kept = tools.pop(key)
            content.append(_dump_result(block, kept) if isinstance(kept, ToolResultBlock)
                           else {**block, "input": dump_arguments(kept.input)}
                           if block.get("input") is None and type(kept) is ToolUseBlock else block)
    raw["content"] = content
    return raw


def _fresh_msgs(message: Message, holders: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    for result in results:
        holder = holders.get(result.id)
        if holder is None:
            raise FormatError(f"agentscope: the result of call {result.id!r} in message {message.id!r} has no "
                              "Msg with its call before it (AgentScope keeps a result in its call's Msg)")
        holder["content"].append(_fresh(result))
    rest = [b for b in message.content if not isinstance(b, ToolResultBlock)]
    if results and not rest:
        return []
    role = "user" if message.role == "tool" else message.role
    return [{"id": message.id, "role": role, "name": message.name or role, "content": [_fresh(b) for b in rest],
             "created_at": message.timestamp or ""}]


_STATE_NAMES = {v: k for k, v in _STATES.items()}


_OWN_TYPES = frozenset({"tool_call", "tool_result"})  # an unknown block of these types would read back as a call


def _fresh(block: Block) -> dict[str, Any]:
    """An AgentScope block for one added in Python; text, thinking and others have jev's own shape. An
    unknown block (another form's part) typed as AgentScope's calls and results is refused: AgentScope
    would read it as one."""
    if isinstance(block, OtherBlock) and block.type in _OWN_TYPES:
        raise FormatError(f"agentscope: a {block.type!r} part that is not a jev {block.type.replace('_call', ' call')}"
                          " cannot be written (AgentScope would read it as one)")
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_call", "id": block.id, "name": block.name, "input": dump_arguments(block.input)}
    if isinstance(block, ToolResultBlock):
        return _dump_result({"type": "tool_result", "id": block.id, "name": block.name, "output": None,
                             "state": _STATE_NAMES.get(block.state, "success")}, block)
    return block_to_dict(block)
