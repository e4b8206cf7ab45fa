"""Gemini contents: google-genai `Content` objects (what Google ADK's `LlmRequest.contents` holds), or their
JSON form (`content.model_dump(mode="json", exclude_none=True)`: `{"role": "user" | "model", "parts": [...]}`).

One jev message per content: `model` is the assistant. Parts map one to one, in order: `text` to a text block
(a `thought` part to a thinking block), `function_call` to a call and `function_response` to its result, the
rest (files, inline data, code execution) kept as it is. A part's `thought_signature` rides with the part it is
on, so a signed call goes, or stays, with its signature (https://ai.google.dev/gemini-api/docs/thought-signatures).
Gemini calls may carry no id: such a call gets `gemini-<message>-<part>` and its response the id of the oldest
unanswered call of its name, as Gemini itself pairs them; neither id is written back. A response's text is
`response["result"]` when that is all it holds, else the response's JSON; a cut result is written back as
`{"result": text}`. What a content carries besides the blocks' text rides in the message's `origin.source`, so
`dump(load(x)) == x` in either form. `google-genai` is needed only for objects.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from ..errors import FormatError, shown
from ..model.transcript import Block, Message, OtherBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from .converters import kept_items, loaded

NAME = "gemini"
_ROLES = {"user": "user", "model": "assistant"}
MADE_ID = "jev.made_id"  # on a kept part: the id jev gave a call or response that had none


def is_objects(data: Any) -> bool:
    """A list of google-genai `Content` objects."""
    return isinstance(data, list) and bool(data) and all(
        type(m).__module__.startswith("google.genai") and hasattr(m, "parts") and hasattr(m, "role") for m in data)


def is_contents(data: Any) -> bool:
    """Gemini contents, as objects or in their JSON form (a `model` turn, or parts and no `content`)."""
    if is_objects(data):
        return True
    return isinstance(data, list) and bool(data) and all(
        isinstance(m, dict) and isinstance(m.get("parts"), list) and "content" not in m and "kind" not in m
        and m.get("role") in (None, "user", "model") for m in data) and any(
        isinstance(m, dict) and m.get("role") == "model" for m in data)


def load(data: Any) -> list[Message]:
    """Messages from Gemini contents (objects or their JSON form)."""
    objects = is_objects(data)
    if objects:
        data = [c.model_dump(mode="json", exclude_none=True) for c in data]
    if not isinstance(data, list):
        raise FormatError(f"contents: must be a list of Gemini contents (got {type(data).__name__})")
    waiting: dict[str, deque[str]] = {}  # a name's calls without an id, not yet answered
    out: list[Message] = []
    for i, item in enumerate(data):
        where = f"contents[{i}]"
        role = item.get("role", "user") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(role, str) or role not in _ROLES \
                or not isinstance(item.get("parts"), list):
            raise FormatError(f"{where}: must be a Gemini content (role user or model, with parts)")
        blocks: list[Block] = []
        kept: list[Any] = []
        for k, part in enumerate(item["parts"]):
            block, part = _block(part, f"{where}.parts[{k}]", f"gemini-{i}-{k}", waiting)
            blocks.append(block)
            kept.append(part)
        out.append(Message(f"m{i}", _ROLES[role], tuple(blocks),
                           origin=loaded(NAME, {"item": {**item, "parts": kept}, "objects": objects})))
    return out


def _block(part: Any, where: str, made: str, waiting: dict[str, deque[str]]) -> tuple[Block, Any]:
    """A part as a block, and what is kept of the part beside it (a text part's text emptied: the block holds
    it)."""
    if not isinstance(part, dict):
        raise FormatError(f"{where}: must be an object (got {shown(part)})")
    call, answer = part.get("function_call"), part.get("function_response")
    if isinstance(part.get("text"), str) and call is None and answer is None:
        if part.get("thought") is True:  # kept whole: it goes back, with its signature, only beside its own text
            return ThinkingBlock(part["text"]), part
        return TextBlock(part["text"]), {**part, "text": ""}
    if isinstance(call, dict):
        name = call.get("name")
        if not isinstance(name, str):
            raise FormatError(f"{where}.function_call.name: required string")
        call_id = call.get("id")
        if not isinstance(call_id, str):
            call_id = made
            waiting.setdefault(name, deque()).append(made)
            part = {**part, MADE_ID: made}
        args = call.get("args", {})
        return ToolUseBlock(call_id, name, args if isinstance(args, dict) else {"args": args}), part
    if isinstance(answer, dict):
        name = answer.get("name")
        if not isinstance(name, str):
            raise FormatError(f"{where}.function_response.name: required string")
        answer_id = answer.get("id")
        if not isinstance(answer_id, str):
            queue = waiting.get(name)
            answer_id = queue.popleft() if queue else made
            part = {**part, MADE_ID: answer_id}
        response = answer.get("response")
        failed = isinstance(response, dict) and "error" in response and "result" not in response
        return ToolResultBlock(answer_id, name, _text(response), "error" if failed else "success"), part
    return OtherBlock(part), part


def _text(response: Any) -> str:
    """A function response as the text the judge reads: its `result` string when that is all it holds."""
    if isinstance(response, dict) and set(response) == {"result"} and isinstance(response["result"], str):
        return response["result"]
    try:
        return orjson.dumps(response).decode()
    except TypeError as exc:  # nested past JSON's depth
        raise FormatError(f"a function response cannot be written as JSON ({exc})") from None


def dump(messages: Sequence[Message]) -> Any:
    """Gemini contents in the form they were loaded from (objects or JSON); messages not loaded from Gemini
    contents are written afresh in the JSON form."""
    kept, objects = kept_items(messages, NAME)
    items = [_fresh(message) if item is None else {**item, "parts": list(_parts(item["parts"], message.content))}
             for message, item in kept]
    if objects:
        from google.genai import types
        return [types.Content.model_validate(item) for item in items]
    return items


def _parts(kept: list[Any], blocks: Sequence[Block]) -> Iterator[Any]:
    """The kept parts refilled from the blocks left, in order (a part whose block a plan let go of is left
    out; thinking goes back only while its very text is still there), then text added since."""
    calls = {b.id for b in blocks if isinstance(b, ToolUseBlock)}
    results = {b.id: b for b in blocks if isinstance(b, ToolResultBlock)}
    texts = iter([b.text for b in blocks if isinstance(b, TextBlock)])
    thoughts = Counter(b.thinking for b in blocks if isinstance(b, ThinkingBlock))
    others = iter([b for b in blocks if isinstance(b, OtherBlock)])
    for part in kept:
        call, answer = part.get("function_call"), part.get("function_response")
        if isinstance(call, dict):
            if part.get(MADE_ID, call.get("id")) in calls:
                yield {k: v for k, v in part.items() if k != MADE_ID}
        elif isinstance(answer, dict):
            result = results.get(part.get(MADE_ID, answer.get("id")))
            if result is not None:
                yield _refilled({k: v for k, v in part.items() if k != MADE_ID}, result)
        elif isinstance(part.get("text"), str) and part.get("thought") is True:
            if thoughts[part["text"]] > 0:
                thoughts[part["text"]] -= 1
                yield part
        elif isinstance(part.get("text"), str):
            text = next(texts, None)
            if text is not None:
                yield {**part, "text": text}
        else:
            other = next(others, None)
            if other is not None:
                yield other.data
    yield from ({"text": text} for text in texts)


def _refilled(part: dict[str, Any], result: ToolResultBlock) -> dict[str, Any]:
    """A function response with its block's text: as it was while the text is still the response's, else
    (a plan cut it) `{"result": text}`."""
    answer = part["function_response"]
    if _text(answer.get("response")) == result.text:
        return part
    return {**part, "function_response": {**answer, "response": {"result": result.text}}}


def _fresh(message: Message) -> dict[str, Any]:
    """A message made in Python or loaded from another form: an assistant one as a `model` content, any other
    as a `user` one; each block as its part."""
    parts: list[Any] = []
    for b in message.content:
        if isinstance(b, TextBlock):
            parts.append({"text": b.text})
        elif isinstance(b, ThinkingBlock):
            parts.append({"text": b.thinking, "thought": True})
        elif isinstance(b, ToolUseBlock):
            parts.append({"function_call": {"id": b.id, "name": b.name, "args": b.input}})
        elif isinstance(b, ToolResultBlock):
            parts.append({"function_response": {"id": b.id, "name": b.name, "response": {"result": b.text}}})
        elif isinstance(b.data, dict) and not b.data.get("type"):
            parts.append(dict(b.data))
        else:
            raise FormatError(f"a {shown(b.type)} block has no Gemini part")
    return {"role": "model" if message.role == "assistant" else "user", "parts": parts}
