"""LangChain messages, as objects (`HumanMessage`, `AIMessage.tool_calls`, `ToolMessage` with
`tool_call_id` / `status`, `SystemMessage`) or in their dict form (`messages_to_dict`).

A message keeps its LangChain id as its jev id when it has one (else `m0`, `m1`, …, dropped on dump).
Everything else LangChain carries (`additional_kwargs`, `response_metadata`, `usage_metadata`, `artifact`,
content-block lists, …) rides in `metadata["jev.source"]` as the dict form, so `dump(load(x)) == x` in
either form. `langchain-core` is needed only for objects; the dict form needs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FormatError
from ._common import SOURCE_KEY
from ..transcript import Block, Message, OtherBlock, TextBlock, ToolResultBlock, ToolUseBlock

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "AIMessageChunk": "assistant"}


def _is_objects(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and all(hasattr(m, "type") and hasattr(m, "content") and
                                                         not isinstance(m, dict) for m in data)


def _content(content: Any, where: str) -> tuple[Block, ...]:
    if isinstance(content, str):
        return (TextBlock(content),) if content else ()
    if not isinstance(content, list):
        raise FormatError(f"{where}.content: must be a string or a list")
    return tuple(TextBlock(p) if isinstance(p, str) else
                 TextBlock(p["text"]) if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                 else OtherBlock(p if isinstance(p, dict) else {"type": "unknown", "value": p}) for p in content)


def load(data: Any) -> list[Message]:
    """Messages from LangChain message objects or their dict form."""
    if _is_objects(data):
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
        if not isinstance(item, dict) or item.get("type") not in _ROLES or not isinstance(item.get("data"), dict):
            raise FormatError(f"{where}: must be a LangChain message (type human, ai, system or tool)")
        body = item["data"]
        role = _ROLES[item["type"]]
        blocks = _content(body.get("content", ""), where)
        if role == "assistant":
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
        source = {"item": item, "objects": objects}
        out.append(Message(mid, role, blocks, body.get("name") if isinstance(body.get("name"), str) else None,
                           {SOURCE_KEY: source}))
    return out


def dump(messages: Sequence[Message]) -> Any:
    """LangChain messages in the form they were loaded from (objects or dicts)."""
    items: list[dict[str, Any]] = []
    objects = False
    for message in messages:
        source = (message.metadata or {}).get(SOURCE_KEY) or {}
        objects = objects or bool(source.get("objects"))
        item = source.get("item") or {"type": {"user": "human", "assistant": "ai"}.get(message.role, message.role),
                                      "data": {"content": "", "id": message.id}}
        body = dict(item["data"])
        calls = [b for b in message.content if isinstance(b, ToolUseBlock)]
        result = next((b for b in message.content if isinstance(b, ToolResultBlock)), None)
        if result is not None:
            output = result.output
            body["content"] = output if isinstance(output, str) else (
                "\n".join(b.text for b in output if isinstance(b, TextBlock))
                if isinstance(body.get("content"), str) else _parts(output))
        else:
            rest = [b for b in message.content if not isinstance(b, ToolUseBlock)]
            original = body.get("content", "")
            body["content"] = "\n".join(b.text for b in rest if isinstance(b, TextBlock)) \
                if isinstance(original, str) else _parts(rest, original)
            if item["type"] in ("ai", "AIMessageChunk") or calls:
                before = {c.get("id"): c for c in body.get("tool_calls") or []}
                body["tool_calls"] = [before.get(c.id) or {"name": c.name, "args": c.input, "id": c.id,
                                                           "type": "tool_call"} for c in calls]
        items.append({"type": item["type"], "data": body})
    if objects:
        from langchain_core.messages import messages_from_dict
        return messages_from_dict(items)
    return items


def _parts(blocks: Sequence[Block], original: list[Any] | None = None) -> list[Any]:
    texts = iter(b.text for b in blocks if isinstance(b, TextBlock))
    others = iter(b.data for b in blocks if isinstance(b, OtherBlock))
    out: list[Any] = []
    for part in original or []:
        if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text"):
            text = next(texts, None)
            if text is not None:
                out.append(text if isinstance(part, str) else {**part, "text": text})
        else:
            other = next(others, None)
            if other is not None:
                out.append(other.get("value") if other.get("type") == "unknown" and "value" in other else other)
    out += [{"type": "text", "text": t} for t in texts]
    return out
