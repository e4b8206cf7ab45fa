"""API request bodies in and out: an Anthropic Messages request (`{"system", "messages", ...}`), an OpenAI
Chat Completions request (`{"messages", ...}`) or a Responses request (`{"instructions", "input", ...}`).

The body's messages load with their form's own converter. The system prompt of a body that keeps it
apart (`system`, `instructions`) becomes a leading system message (pinned, like every system message),
and the rest of the body (model, tools, max_tokens, …) rides with the first message under
`jev.envelope` — converter bookkeeping, counted in no size — so that `dump(load(body)) == body`, key
order included, and the system prompt goes back where it came from. Written as another API's body,
only the messages (and the system prompt) go over: one API's model and tool schemas are not another's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import FormatError
from ..model.transcript import Message, Origin, TextBlock

Codec = tuple[Callable[[Any], list[Message]], Callable[[Sequence[Message]], Any]]

# form -> (the messages' own format, the key holding them, the key of a system prompt kept apart)
FORMS = {"anthropic-request": ("anthropic", "messages", "system"),
         "openai-chat-request": ("openai-chat", "messages", None),
         "openai-responses-request": ("openai-responses", "input", "instructions")}
SYSTEM_ID = "jev.system"  # the id of the system message a body's system prompt becomes


def detect(data: dict[str, Any], inner: Callable[[Any], str]) -> str | None:
    """The request form of a JSON object, or None when it is not one (`inner` detects a messages list)."""
    if isinstance(data.get("input"), (list, str)) and "messages" not in data:
        return "openai-responses-request"
    if isinstance(data.get("messages"), list):
        if "system" in data or _anthropic_fields(data) or (data["messages"] and inner(data["messages"]) == "anthropic"):
            return "anthropic-request"
        return "openai-chat-request"
    return None


def _anthropic_fields(data: dict[str, Any]) -> bool:
    """Whether a body's own fields are an Anthropic request's, whatever its messages hold (a plain chat, or
    one whose tool blocks a plan let go): a tool named at its top level (a Chat tool names its function
    inside it), a tool choice object of a type Chat has not (`auto`, `any`, `tool`, `none`), or
    `stop_sequences` (Chat's is `stop`)."""
    tools, choice = data.get("tools"), data.get("tool_choice")
    return ("stop_sequences" in data
            or (isinstance(tools, list) and any(isinstance(tool, dict) and "name" in tool for tool in tools))
            or (isinstance(choice, dict) and choice.get("type") in ("auto", "any", "tool", "none")))


def _system_text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and isinstance(b.get("text"), str) for b in value):
        return "\n".join(b["text"] for b in value)
    raise FormatError(f"{where}: must be a string or a list of text blocks")


def load(data: Any, form: str, codec: Callable[[str], Codec]) -> list[Message]:
    """Messages of a request body in `form`."""
    inner, key, system_key = FORMS[form]
    if not isinstance(data, dict):
        raise FormatError(f"{form}: must be a JSON object (got {type(data).__name__})")
    items = data.get(key)
    text_input = isinstance(items, str) and form == "openai-responses-request"
    if text_input:
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise FormatError(f"{form}.{key}: must be a JSON array of messages")
    messages = codec(inner)[0](items)
    envelope = {"form": form, "keys": list(data),
                "rest": {k: v for k, v in data.items() if k not in (key, system_key)}, "text_input": text_input}
    if system_key and system_key in data:
        envelope["system"] = data[system_key]
        text = _system_text(data[system_key], f"{form}.{system_key}")
        return [Message(SYSTEM_ID, "system", (TextBlock(text),), origin=Origin(envelope=envelope)), *messages]
    if not messages:
        raise FormatError(f"{form}.{key}: holds no message (nothing to judge, and nowhere to keep the body)")
    return [messages[0].with_origin(envelope=envelope), *messages[1:]]


def dump(messages: Sequence[Message], form: str, codec: Callable[[str], Codec]) -> dict[str, Any]:
    """A request body in `form`: the body the messages were loaded from, with the messages a plan kept."""
    inner, key, system_key = FORMS[form]
    messages = list(messages)
    origin = messages[0].origin if messages else None
    found = origin.envelope if origin is not None else None
    if found is not None:  # the body's fields never go on to the messages' own converter
        messages[0] = messages[0].with_origin(envelope=None)
    # another API's body fields (its model, its tool schemas) do not belong in this one
    envelope: dict[str, Any] = (found if isinstance(found, dict) and found.get("form") == form
                                else {"keys": [key], "rest": {}, "text_input": False})
    body: dict[str, Any] = dict(envelope["rest"])
    if messages and messages[0].id == SYSTEM_ID and messages[0].role == "system" and system_key:
        system, messages = messages[0], messages[1:]
        original = envelope.get("system")
        same = original is not None and _system_text(original, f"{form}.{system_key}") == system.text
        body[system_key] = original if same else system.text
    items = codec(inner)[1](messages)
    if envelope.get("text_input") and len(items) == 1 and isinstance(items[0].get("content"), str):
        items = items[0]["content"]
    body[key] = items
    order = [k for k in envelope["keys"] if k in body] + [k for k in body if k not in envelope["keys"]]
    return {k: body[k] for k in order}
