"""LangChain messages, as objects (`HumanMessage`, `AIMessage.tool_calls`, `ToolMessage` with
`tool_call_id` / `status`, `SystemMessage`) or in their dict form (`messages_to_dict`).

A message keeps its LangChain id as its jev id when it has one (else `m0`, `m1`, …, dropped on dump).
Everything else LangChain carries (`additional_kwargs`, `response_metadata`, `usage_metadata`, `artifact`,
content-block lists, …) rides in the message's `origin.source` as the dict form, without what the blocks hold
(text, other parts but reasoning, calls' `args`), so `dump(load(x)) == x` in either form.
`langchain-core` is needed only for objects; the dict form needs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FormatError, shown
from ..model.transcript import Block, Message, OtherBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from .converters import kept_items, loaded, part_data

NAME = "langchain"
_THINKING = {"reasoning": "reasoning", "thinking": "thinking"}  # part type -> its text field
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "AIMessageChunk": "assistant"}


def is_objects(data: Any) -> bool:
    """A list of LangChain message objects (not their dicts): what an agent's state holds."""
    return isinstance(data, list) and bool(data) and all(hasattr(m, "type") and hasattr(m, "content") and
                                                         not isinstance(m, dict) for m in data)


def _content(content: Any, where: str) -> tuple[Block, ...]:
    if isinstance(content, str):
        return (TextBlock(content),) if content else ()
    if not isinstance(content, list):
        raise FormatError(f"{where}.content: must be a string or a list")
    return tuple(_part(p, f"{where}.content[{k}]") for k, p in enumerate(content))


def _is_text(part: Any) -> bool:
    """A text part as `_parts` refills it: a bare string, or a `text` dict."""
    return isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")


def _part(p: Any, where: str = "content") -> Block:
    """A content part: text, reasoning (LangChain's standard block, or a provider's `thinking`), or kept as is."""
    if isinstance(p, str):
        return TextBlock(p)
    kind = p.get("type") if isinstance(p, dict) else None
    if not isinstance(kind, str):
        kind = None
    if kind == "text":
        if not isinstance(p.get("text"), str):
            raise FormatError(f"{where}.text: a text part needs a string 'text'")
        return TextBlock(p["text"])
    if kind in _THINKING and isinstance(p.get(_THINKING[kind]), str):
        return ThinkingBlock(p[_THINKING[kind]])
    return OtherBlock(p if isinstance(p, dict) else {"type": "unknown", "value": p})


def load(data: Any) -> list[Message]:
    """Messages from LangChain message objects or their dict form."""
    if is_objects(data):
        from langchain_core.messages import messages_to_dict
        return _load_dicts(messages_to_dict(data), objects=True)
    return _load_dicts(data, objects=False)


def _load_dicts(data: Any, objects: bool) -> list[Message]:
    if not isinstance(data, list):
        raise FormatError(f"messages: must be a list of LangChain messages (got {type(data).__name__})")
    names: dict[str, str] = {}
    out: list[Message] = []
    seen: set[str] = set()
    for i, item in enumerate(data):
        where = f"messages[{i}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str) or kind not in _ROLES or not isinstance(item.get("data"), dict):
            raise FormatError(f"{where}: must be a LangChain message (type human, ai, system or tool)")
        if len(item) != 2:
            extra = sorted(str(k) for k in item if k not in ("type", "data"))[0]
            raise FormatError(f"{where}: unknown field {shown(extra)} (a LangChain message dict holds type and data)")
        body = item["data"]
        if "content" not in body:
            raise FormatError(f"{where}.data.content: required (LangChain messages always have content)")
        role = _ROLES[item["type"]]
        blocks = _content(body.get("content", ""), where)
        if role == "assistant":
            if "tool_calls" in body and not isinstance(body["tool_calls"], list):
                raise FormatError(f"{where}.data.tool_calls: must be a list")
            for k, call in enumerate(body.get("tool_calls") or []):
                if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(call.get("name"), str):
                    raise FormatError(f"{where}.tool_calls[{k}]: needs string 'id' and 'name'")
                names[call["id"]] = call["name"]
                blocks += (ToolUseBlock(call["id"], call["name"], call.get("args", {})),)
        elif role == "tool":
            call_id = body.get("tool_call_id")
            if not isinstance(call_id, str):
                raise FormatError(f"{where}.tool_call_id: required string for a tool message")
            content = body.get("content", "")
            output: str | tuple[Block, ...] = content if isinstance(content, str) else _content(content, where)
            blocks = (ToolResultBlock(call_id, names.get(call_id, body.get("name") or ""), output,
                                      "error" if body.get("status") == "error" else "success"),)
        lc_id = body.get("id")
        mid = lc_id if isinstance(lc_id, str) and lc_id and lc_id not in seen else f"m{i}"
        seen.add(mid)
        item = {**item, "data": _kept(body, role == "assistant")}  # the blocks hold the text, calls' args, parts
        out.append(Message(mid, role, blocks, body.get("name") if isinstance(body.get("name"), str) else None,
                           origin=loaded(NAME, {"item": item, "objects": objects})))
    return out


def _kept(body: dict[str, Any], calls: bool) -> dict[str, Any]:
    """A message's data as kept for the round trip, without what its blocks hold: text (see `hollow`), other
    parts (but reasoning, written back as it was) down to their type, and an AI message's calls' `args`.
    `tool_calls` on any other message (LangChain lets a human message carry them) are not calls: kept as
    they are."""
    kept = {**body, "content": _hollow_content(body["content"])}
    if calls and isinstance(body.get("tool_calls"), list):
        kept["tool_calls"] = [{**c, "args": None} if "args" in c else c for c in body["tool_calls"]]
    return kept


def _hollow_content(content: Any) -> Any:
    if isinstance(content, str):
        return ""
    return [("" if isinstance(p, str) else {**p, "text": ""}) if _is_text(p)
            else {"type": p["type"]} if isinstance(p, dict) and isinstance(p.get("type"), str)
            and not isinstance(_part(p), ThinkingBlock) else p for p in content]


def dump(messages: Sequence[Message]) -> Any:
    """LangChain messages in the form they were loaded from (objects or dicts); messages not loaded from
    LangChain are written afresh in the dict form (see `_fresh`)."""
    items: list[dict[str, Any]] = []
    kept, objects = kept_items(messages, NAME)
    for message, item in kept:
        if item is None:
            items.extend(_fresh(message))
            continue
        body = dict(item["data"])
        calls = [b for b in message.content if isinstance(b, ToolUseBlock)]
        result = next((b for b in message.content if isinstance(b, ToolResultBlock)), None)
        if result is not None:
            output = result.output
            original = body.get("content")
            body["content"] = output if isinstance(output, str) else (
                "\n".join(b.text for b in output if isinstance(b, TextBlock))
                if isinstance(original, str) else _parts(output, original if isinstance(original, list) else None))
        else:
            rest = [b for b in message.content if not isinstance(b, ToolUseBlock)]
            original = body.get("content", "")
            body["content"] = "\n".join(b.text for b in rest if isinstance(b, TextBlock)) \
                if isinstance(original, str) else _parts(rest, original)
            if item["type"] in ("ai", "AIMessageChunk") and ("tool_calls" in body or calls):
                before = {c.get("id"): c for c in body.get("tool_calls") or []}
                body["tool_calls"] = [_dump_call(before.get(c.id), c) for c in calls]
        items.append({"type": item["type"], "data": body})
    if objects:
        from langchain_core.messages import messages_from_dict
        return messages_from_dict(items)
    return items


def _dump_call(kept: dict[str, Any] | None, call: ToolUseBlock) -> dict[str, Any]:
    """A tool call written back from what `_kept` kept of it (its `args` from the block), or afresh."""
    if kept is None:
        return {"name": call.name, "args": call.input, "id": call.id, "type": "tool_call"}
    return {**kept, "args": call.input} if "args" in kept else kept


def _fresh(message: Message) -> list[dict[str, Any]]:
    """A message made in Python or loaded from another form: each result a `ToolMessage` (`status` error
    for any state but success), then the rest — text, reasoning, other parts, calls — as one message
    (human for text beside results in a tool message)."""
    out = []
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    for k, result in enumerate(results):
        output = result.output
        content = output if isinstance(output, str) else result.text if result.text_only else _parts(output)
        out.append({"type": "tool", "data": {
            "content": content, "tool_call_id": result.id, "name": result.name,
            "status": "success" if result.state == "success" else "error",
            "id": message.id if k == 0 else f"{message.id}#{k}"}})
    rest = [b for b in message.content if not isinstance(b, (ToolResultBlock, ToolUseBlock))]
    calls = [b for b in message.content if isinstance(b, ToolUseBlock)]
    if results and not rest and not calls:
        return out
    text_only = all(isinstance(b, TextBlock) for b in rest)
    body: dict[str, Any] = {"content": "\n".join(b.text for b in rest) if text_only else _parts(rest),  # type: ignore[union-attr]
                            "id": f"{message.id}#{len(results)}" if results else message.id}
    if message.name is not None:
        body["name"] = message.name
    kind = {"user": "human", "assistant": "ai", "system": "system"}.get(message.role, "human")
    if calls:
        kind = "ai"
        body["tool_calls"] = [{"name": c.name, "args": c.input, "id": c.id, "type": "tool_call"} for c in calls]
    return out + [{"type": kind, "data": body}]


def _written(block: Block) -> Any:
    """The content part of a block written afresh."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        return {"type": "reasoning", "reasoning": block.thinking}
    data = part_data(block, NAME)
    return data.get("value") if data.get("type") == "unknown" and "value" in data else data


def _parts(blocks: Sequence[Block], original: list[Any] | None = None) -> list[Any]:
    """Content parts: the original ones paired with the blocks left (written back as they were, text with
    its new text), then text added since; every block in order when there was no original."""
    if original is None:
        return [_written(b) for b in blocks]
    texts = iter(b.text for b in blocks if isinstance(b, TextBlock))
    others = iter(b for b in blocks if isinstance(b, OtherBlock))
    thoughts = iter(b.thinking for b in blocks if isinstance(b, ThinkingBlock))
    out: list[Any] = []
    for part in original or []:
        if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text"):
            text = next(texts, None)
            if text is not None:
                out.append(text if isinstance(part, str) else {**part, "text": text})
        elif isinstance(_part(part), ThinkingBlock):  # never changed by a plan: written back as it was
            if next(thoughts, None) is not None:
                out.append(part)
        else:
            other = next(others, None)
            if other is not None:
                out.append(_written(other))
    out += [{"type": "text", "text": t} for t in texts]
    return out
