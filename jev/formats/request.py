"""API request bodies in and out: an Anthropic Messages request (`{"system", "messages", ...}`), an OpenAI
Chat Completions request (`{"messages", ...}`) or a Responses request (`{"instructions", "input", ...}`).

The body's messages load with their form's own converter. The system prompt of a body that keeps it
apart (`system`, `instructions`) becomes a leading system message (pinned, like every system message),
and the rest of the body (model, tools, max_tokens, …) rides with the first message under
`jev.envelope` — converter bookkeeping, counted in no size — so that `dump(load(body)) == body`, key
order included, and the system prompt goes back where it came from. Written as another API's body,
only the messages (and the system prompt) go over: one API's model and tool schemas are not another's.
A host that holds the body apart from its messages reads it as a `Conversation` (`formats.load_request`)
and writes it back with a plan's messages (`formats.dump_request`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import FormatError
from ..model.transcript import Message, TextBlock

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


@dataclass(frozen=True, slots=True)
class Conversation:
    """An API request body read as a conversation: its messages — as `formats.load` reads them: a system
    prompt the body keeps apart is a leading system message (pinned), the body's bookkeeping rides on the
    first — and the rest of the body, typed: its other `fields` (model, tools, max_tokens, …, as given), its
    `keys` in order, the `system` prompt as the body held it (text or text blocks; None when it keeps none
    apart) and whether a Responses body's input was one string (`text_input`). `formats.dump_request` writes
    the body back around whatever messages it holds (`with_messages`), these fields winning over the
    bookkeeping on the messages, so a host may change the fields (`dataclasses.replace`)."""

    form: str
    messages: tuple[Message, ...]
    fields: Mapping[str, Any]
    keys: tuple[str, ...]
    system: Any = None
    text_input: bool = False

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise FormatError(f"form must be one of {', '.join(FORMS)} (got {self.form!r})")
        if not isinstance(self.messages, tuple) or not all(isinstance(m, Message) for m in self.messages):
            raise FormatError("messages must be a tuple of jev.Message")
        if not isinstance(self.fields, Mapping):
            raise FormatError(f"fields must be a mapping of the body's other fields (got {type(self.fields).__name__})")
        _inner, key, system_key = FORMS[self.form]
        taken = [k for k in (key, system_key) if k is not None and k in self.fields]
        if taken:
            raise FormatError(f"fields: {taken[0]!r} is where {self.form} keeps the "
                              f"{'messages' if taken[0] == key else 'system prompt'}, not another field")
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))
        object.__setattr__(self, "keys", tuple(self.keys))

    @property
    def model(self) -> str | None:
        """The body's `model`, when it names one."""
        model = self.fields.get("model")
        return model if isinstance(model, str) and model.strip() else None

    def with_messages(self, messages: Sequence[Message]) -> Conversation:
        """The same body around other messages (a plan's: `decision.plan.messages`)."""
        return dataclasses.replace(self, messages=tuple(messages))


def read(data: Any, form: str, codec: Callable[[str], Codec]) -> Conversation:
    """A request body in `form` as a `Conversation`."""
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
    fields = {k: v for k, v in data.items() if k not in (key, system_key)}
    system = data[system_key] if system_key and system_key in data else None
    if system_key and system_key in data:
        text = _system_text(data[system_key], f"{form}.{system_key}")
        messages = [Message(SYSTEM_ID, "system", (TextBlock(text),)), *messages]
    if not messages:
        raise FormatError(f"{form}.{key}: holds no message (nothing to judge, and nowhere to keep the body)")
    conversation = Conversation(form, (), fields, tuple(data), system, text_input)
    return conversation.with_messages([messages[0].with_origin(envelope=_envelope(conversation)), *messages[1:]])


def load(data: Any, form: str, codec: Callable[[str], Codec]) -> list[Message]:
    """Messages of a request body in `form` (the body's other fields on the first: `Conversation`)."""
    return list(read(data, form, codec).messages)


def write(conversation: Conversation, codec: Callable[[str], Codec]) -> dict[str, Any]:
    """The request body of a conversation: its fields, in its key order, around its messages."""
    form = conversation.form
    inner, key, system_key = FORMS[form]
    messages = list(conversation.messages)
    if messages and messages[0].origin is not None and messages[0].origin.envelope is not None:
        messages[0] = messages[0].with_origin(envelope=None)  # the body's fields never go on to the messages' converter
    body: dict[str, Any] = dict(conversation.fields)
    if messages and messages[0].id == SYSTEM_ID and messages[0].role == "system" and system_key:
        system, messages = messages[0], messages[1:]
        original = conversation.system
        same = original is not None and _system_text(original, f"{form}.{system_key}") == system.text
        body[system_key] = original if same else system.text
    items = codec(inner)[1](messages)
    if conversation.text_input and len(items) == 1 and isinstance(items[0].get("content"), str):
        items = items[0]["content"]
    body[key] = items
    order = [k for k in conversation.keys if k in body] + [k for k in body if k not in conversation.keys]
    return {k: body[k] for k in order}


def dump(messages: Sequence[Message], form: str, codec: Callable[[str], Codec]) -> dict[str, Any]:
    """A request body in `form`: the body the messages were loaded from (the bookkeeping on the first), with
    the messages a plan kept; another API's body fields (its model, its tool schemas) do not come along."""
    origin = messages[0].origin if messages else None
    found = origin.envelope if origin is not None else None
    if isinstance(found, dict) and found.get("form") == form:
        conversation = Conversation(form, tuple(messages), found["rest"], tuple(found["keys"]), found.get("system"),
                                    bool(found.get("text_input")))
    else:
        conversation = Conversation(form, tuple(messages), {}, (FORMS[form][1],))
    return write(conversation, codec)


def _envelope(conversation: Conversation) -> dict[str, Any]:
    """The bookkeeping the first message carries (`Origin.envelope`; the `jev.envelope` key in the jev form
    and snapshots, whose shape stays as written)."""
    envelope: dict[str, Any] = {"form": conversation.form, "keys": list(conversation.keys),
                                "rest": dict(conversation.fields), "text_input": conversation.text_input}
    if conversation.system is not None:
        envelope["system"] = conversation.system
    return envelope
