"""mini-swe-agent trajectories: format `mini-swe-agent-1` (plain-text chat, actions in fenced blocks) and
`mini-swe-agent-1.1` (mini-swe-agent 2.x: OpenAI chat with tool calls, or the same text mode).

Text mode: an assistant message with exactly one ```bash block (2.x: ```mswea_bash_command), or one
command in the tags of the builtin `swebench_xml` configs (1.x: <bash_code>, 2.x: <mswea_bash_command>), is a
`bash` tool call (input `{"command": ...}`; the rest of the message is its text), and the message right
after it is that call's result. An assistant message with zero or several blocks is plain text.
Tool-call mode (a 1.1 trajectory whose assistant messages carry `tool_calls`): calls and `tool` results
as in OpenAI chat, and fences in text are not actions. Responses mode (2.x's `litellm_response` model
class, e.g. for GPT-5): each turn is a whole Responses API `response` object whose `output` items
(reasoning, message, function_call) become one message each, results are `function_call_output` items,
format errors `message` items, as `openai-responses` reads them; the response's other fields ride on
its first item's message. In every mode, a result is `error` when the command
did not run to its end (a timeout notice, or `extra.exception_info`), else `success` (a non-zero return
code is part of the output); the final `exit` message answers the trailing call that got no result (the
submitted diff), else it is a plain message. `reasoning_content`, `extra` (with `raw_output`, a copy of
the output) and provider fields are kept for the round trip in the message's `origin.source` but are not
what the model sees: they count in no size and no judge reads them. `dump(load(x)) == x`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from ..errors import FormatError
from ..model.transcript import Block, Message, Origin, OtherBlock, TextBlock, ToolResultBlock, ToolUseBlock
from . import openai_chat, openai_responses
from .converters import in_order, loaded, shared_order, source_of

NAME = "mini-swe-agent"
TOOL = "bash"
FORMAT_1_1 = "mini-swe-agent-1.1"
# a fenced block (```bash, 2.x's ```mswea_bash_command) or the tags of the builtin `swebench_xml` configs
# (1.x: <bash_code>, 2.x: <mswea_bash_command>), the command between them; the open and close as matched are
# kept for the round trip
_ACTION = re.compile(r"(?:(?P<fence>```)(?:bash|mswea_bash_command)\s*\n|<(?P<tag>mswea_bash_command|bash_code)>\s*)"
                     r"(?P<command>.*?)(?(fence)\n```|\s*</(?P=tag)>)", re.DOTALL)
_TIMEOUT = re.compile(r"^The last command .{0,4000}? timed out", re.DOTALL)
_FENCES = {"mini-swe-agent-1": ("```bash\n", "\n```"), FORMAT_1_1: ("```mswea_bash_command\n", "\n```")}


def _messages_of(data: Any) -> tuple[list[Any], dict[str, Any] | None]:
    if isinstance(data, dict):
        if not isinstance(data.get("messages"), list):
            raise FormatError("trajectory: must have a 'messages' list")
        return data["messages"], {k: (None if k == "messages" else v) for k, v in data.items()}  # its place kept
    if isinstance(data, list):
        return data, None
    raise FormatError(f"trajectory: must be a JSON object or array (got {type(data).__name__})")


def _tool_mode(raw_messages: list[Any]) -> bool:
    """True when the trajectory calls tools the OpenAI way (then fences in text are not actions)."""
    return any(isinstance(m, dict) and (m.get("role") == "tool" or (m.get("role") == "assistant" and m.get("tool_calls")))
               for m in raw_messages)


def _failed(extra: Any) -> bool:
    """mini-swe-agent 2.x notes in `extra.exception_info` that the command did not run to its end."""
    return isinstance(extra, dict) and isinstance(extra.get("exception_info"), str) and bool(extra["exception_info"])


_RESPONSES_ITEMS = frozenset({"message", "function_call", "function_call_output"})


def _responses_mode(raw_messages: list[Any]) -> bool:
    """True when the trajectory's turns are Responses API objects (2.x's `litellm_response` model) — or,
    before the first answer, when its messages are Responses `message` items (what that model's
    `format_message` makes: typed, with a list of `input_text` parts); chat messages have no `type`."""
    return any(isinstance(m, dict) and (m.get("object") == "response"
                                        or (isinstance(kind := m.get("type"), str) and kind in _RESPONSES_ITEMS))
               for m in raw_messages)


def load(data: Any) -> list[Message]:
    """Messages from a mini-swe-agent trajectory (object or messages list), format 1 or 1.1."""
    raw_messages, envelope = _messages_of(data)
    if _responses_mode(raw_messages):
        return _with_envelope(_load_responses(raw_messages), envelope)
    tool_mode = _tool_mode(raw_messages)
    out: list[Message] = []
    open_calls: list[tuple[str, str]] = []  # (call id, tool) of the latest assistant message, not yet answered
    tool_names: dict[str, str] = {}
    for i, raw in enumerate(raw_messages):
        where = f"messages[{i}]"
        if not isinstance(raw, dict) or raw.get("role") not in ("system", "user", "assistant", "tool", "exit"):
            raise FormatError(f"{where}: must be an object with role system, user, assistant, tool or exit")
        role = raw["role"]
        if role == "exit":
            message, open_calls = _exit(raw, where, i, open_calls)
        elif tool_mode:
            message, open_calls = _chat(raw, where, i, open_calls, tool_names)
        else:
            message, open_calls = _text(raw, where, i, open_calls)
        out.append(message)
    return _with_envelope(out, envelope)


def _with_envelope(messages: list[Message], envelope: dict[str, Any] | None) -> list[Message]:
    """The messages, the trajectory's other fields riding on the first: a trajectory object without
    messages is refused (its fields would have nowhere to ride, so it could not be written back)."""
    if not messages and envelope is not None:
        raise FormatError("messages: a trajectory object with no messages cannot be loaded (there is nothing to "
                          "compact, and its other fields ride on the first message)")
    if messages and envelope is not None:
        source = dict(source_of(messages[0], NAME) or {})
        source["envelope"] = envelope
        messages[0] = dataclasses.replace(messages[0], origin=loaded(NAME, source))
    return messages


def _load_responses(raw_messages: list[Any]) -> list[Message]:
    """Responses mode: a `response` object's output items a message each (`m<i>.<k>`), every other entry
    one message (`m<i>`); the `exit` entry answers the calls of the last response left unanswered."""
    out: list[Message] = []
    names: dict[str, str] = {}
    open_calls: list[tuple[str, str]] = []
    for i, raw in enumerate(raw_messages):
        where = f"messages[{i}]"
        if not isinstance(raw, dict):
            raise FormatError(f"{where}: must be an object")
        if raw.get("role") == "exit":
            message, open_calls = _exit(raw, where, i, open_calls)
            out.append(message)
        elif raw.get("object") == "response":
            output = raw.get("output")
            if not isinstance(output, list):
                raise FormatError(f"{where}.output: a response must hold a list of output items")
            wrapper = {k: (None if k == "output" else v) for k, v in raw.items()}  # the place of `output` kept
            open_calls = []
            if not output:  # nothing the model sees: an empty message that keeps the object
                out.append(Message(f"m{i}", "assistant", (),
                                   origin=loaded(NAME, {"response": i, "index": -1, "wrapper": wrapper})))
            for k, item in enumerate(output):
                role, blocks, kept = openai_responses.read_item(item, f"{where}.output[{k}]", names)
                source: dict[str, Any] = {"response": i, "index": k, "item": kept, "last": k == len(output) - 1}
                if k == 0:
                    source["wrapper"] = wrapper
                out.append(Message(f"m{i}.{k}", role, blocks, origin=loaded(NAME, source)))
                open_calls += [(b.id, b.name) for b in blocks if isinstance(b, ToolUseBlock)]
        else:
            role, blocks, kept = openai_responses.read_item(raw, where, names)
            if role == "tool":
                result = blocks[0]
                assert isinstance(result, ToolResultBlock)
                if _failed(raw.get("extra")):
                    blocks = (dataclasses.replace(result, state="error"),)
                open_calls = [c for c in open_calls if c[0] != result.id]
            else:
                open_calls = []
            out.append(Message(f"m{i}", role, blocks, origin=loaded(NAME, {"item": kept})))
    return out


def _origin(source: dict[str, Any]) -> Origin | None:
    return loaded(NAME, source) if source else None


def _chat(raw: dict[str, Any], where: str, i: int, open_calls: list[tuple[str, str]],
          tool_names: dict[str, str]) -> tuple[Message, list[tuple[str, str]]]:
    """A tool-call-mode message, read as OpenAI chat; what chat keeps aside rides under `chat`."""
    role, blocks, name, chat = openai_chat.read_message(raw, where, tool_names)
    if raw["role"] == "tool":
        result = blocks[0]
        assert isinstance(result, ToolResultBlock)
        if _failed(raw.get("extra")):
            blocks = (dataclasses.replace(result, state="error"),)
        open_calls = [c for c in open_calls if c[0] != result.id]
    elif raw["role"] == "assistant":
        open_calls = [(b.id, b.name) for b in blocks if isinstance(b, ToolUseBlock)]
    else:
        open_calls = []
    return Message(f"m{i}", role, blocks, name, origin=loaded(NAME, {"chat": chat})), open_calls


def _text(raw: dict[str, Any], where: str, i: int,
          open_calls: list[tuple[str, str]]) -> tuple[Message, list[tuple[str, str]]]:
    """A text-mode message: a fenced action is a call; the message after a call is its result."""
    role = raw["role"]  # never `tool`: a trajectory with tool messages is read in tool-call mode
    content = raw.get("content")
    if not isinstance(content, str):
        raise FormatError(f"{where}.content: must be a string")
    source: dict[str, Any] = {k: v for k, v in raw.items() if k not in ("role", "content")}
    keys = tuple(raw)
    if keys[:2] != ("role", "content"):  # 2.x writes a model's message content first: keep that order
        source["order"] = shared_order(keys)
    if role == "assistant":
        actions = list(_ACTION.finditer(content))
        if len(actions) == 1:
            match = actions[0]
            call_id = f"call{i}"
            text = content[:match.start()] + content[match.end():]
            source["action"] = {"at": match.start(), "open": content[match.start():match.start("command")],
                                "close": content[match.end("command"):match.end()]}
            blocks: tuple[Block, ...] = ((TextBlock(text),) if text else ()) + (
                ToolUseBlock(call_id, TOOL, {"command": match.group("command")}),)
            return Message(f"m{i}", role, blocks, origin=_origin(source)), [(call_id, TOOL)]
    elif role == "user" and open_calls:
        state = "error" if _TIMEOUT.match(content) or _failed(raw.get("extra")) else "success"
        blocks = (ToolResultBlock(open_calls[-1][0], TOOL, content, state),)
        return Message(f"m{i}", "tool", blocks, origin=_origin(source)), []
    blocks = (TextBlock(content),) if content else ()
    return Message(f"m{i}", role, blocks, origin=_origin(source)), []


def _exit(raw: dict[str, Any], where: str, i: int,
          open_calls: list[tuple[str, str]]) -> tuple[Message, list[tuple[str, str]]]:
    """The final `exit` message: the result of the one call left open right before it, else plain text."""
    content = raw.get("content")
    if not isinstance(content, str):
        raise FormatError(f"{where}.content: must be a string")
    source = {"exit": {k: v for k, v in raw.items() if k not in ("role", "content")}}
    if len(open_calls) == 1:
        call_id, tool = open_calls[0]
        return Message(f"m{i}", "tool", (ToolResultBlock(call_id, tool, content),), origin=_origin(source)), []
    return Message(f"m{i}", "user", (TextBlock(content),) if content else (), origin=_origin(source)), []


def dump(messages: Sequence[Message]) -> Any:
    """The trajectory: the object form when the first message carries its envelope, else the list.

    A message loaded from this form is written back as it came. A tool-call trajectory (1.1) writes any
    other message as OpenAI chat does. A text-mode trajectory holds plain text, one bash call per
    assistant message and its result as the next message; a history with more (other tools, parallel
    calls, images, results apart from their calls) is refused with a `FormatError` naming the message,
    never written half. Thinking and result states have no place in it and are left out."""
    sources = [dict(source_of(m, NAME) or {}) for m in messages]
    envelope = next((s.pop("envelope") for s in sources if "envelope" in s), None)
    if any("item" in s for s in sources):
        items = _dump_responses(messages, sources)
        return {**envelope, "messages": items} if envelope is not None else items
    tool_mode = any("chat" in s for s in sources)
    fmt: Any = envelope.get("trajectory_format") if isinstance(envelope, dict) else None
    fresh_fence = next((s["action"] for s in sources if "action" in s), None)
    fence = ((fresh_fence["open"], fresh_fence["close"]) if fresh_fence
             else _FENCES.get(fmt, _FENCES["mini-swe-agent-1"]))
    out: list[dict[str, Any]] = []
    waiting: str | None = None  # text mode: the call just written; the next message must be its result
    for message, source in zip(messages, sources, strict=True):
        if "exit" in source:
            out.append(_write_exit(message, source["exit"]))
            waiting = None
        elif tool_mode:
            out.extend(openai_chat.write_message(message, source.get("chat")))
        else:
            out.append(_write_text(message, source, waiting, fence))
            waiting = next((b.id for b in message.content if isinstance(b, ToolUseBlock)), None)
    if envelope is not None:
        return {**envelope, "messages": out}
    return out


def _dump_responses(messages: Sequence[Message], sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Responses mode: the output items of one response regathered into its object (a reasoning item only
    while the item after it is still there: the API refuses one without it; an object whose items are all
    gone is left out, one whose first item is gone written as its bare items), a message made since (a
    tombstone) right after the response it sits in, any other entry as it was read."""
    out: list[dict[str, Any]] = []
    present = {(s["response"], s["index"]) for s in sources if "response" in s}
    group: int | None = None  # the response being gathered
    wrapper: dict[str, Any] | None = None
    items: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []  # messages made inside the response, written after it

    def flush() -> None:
        if items and wrapper is not None:
            out.append({**wrapper, "output": list(items)})
        else:
            out.extend(items)
        out.extend(after)
        items.clear()
        after.clear()

    for message, source in zip(messages, sources, strict=True):
        if not any(k in source for k in ("response", "item", "exit")):  # made here, or read in another form or mode
            (after if group is not None else out).extend(openai_responses.fresh_items(message))
            continue
        response = source.get("response")
        if response != group or "wrapper" in source:
            flush()
            group, wrapper = response, source.get("wrapper")
        if response is not None:
            k, item = source["index"], source.get("item")
            if item is None:  # a response that had no output items
                out.append({**source["wrapper"], "output": []})
            elif item.get("type") != "reasoning" or source["last"] or (response, k + 1) in present:
                items.append(openai_responses.write_item(message.content, item))
        elif "exit" in source:
            out.append(_write_exit(message, source["exit"]))
        else:
            out.append(openai_responses.write_item(message.content, source["item"]))
    flush()
    return out


def _write_exit(message: Message, kept: dict[str, Any]) -> dict[str, Any]:
    """The final `exit` entry: its content is the answer to the submitting call, or its text."""
    result = next((b for b in message.content if isinstance(b, ToolResultBlock)), None)
    return {"role": "exit", "content": result.text if result else message.text, **kept}


def _write_text(message: Message, source: dict[str, Any], waiting: str | None,
                fence: tuple[str, str]) -> dict[str, Any]:
    action = source.pop("action", None)
    order = source.pop("order", None)
    _check(message, waiting)
    text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
    result = next((b for b in message.content if isinstance(b, ToolResultBlock)), None)
    call = next((b for b in message.content if isinstance(b, ToolUseBlock)), None)
    if result is not None:
        content, role = result.text, "user"
    elif call is not None:
        at = action["at"] if action else len(text)
        fence_open, fence_close = (action["open"], action["close"]) if action else fence
        content = text[:at] + fence_open + call.input["command"] + fence_close + text[at:]
        role = "assistant"
    else:
        content, role = text, message.role
    return in_order({"role": role, "content": content, **source}, order)


def _check(message: Message, waiting: str | None) -> None:
    """Refuse what a text-mode trajectory cannot hold, naming the message and the rule."""
    where = f"mini-swe-agent: message {message.id!r}"
    calls = [b for b in message.content if isinstance(b, ToolUseBlock)]
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    if any(isinstance(b, OtherBlock) for b in message.content) or any(not r.text_only for r in results):
        raise FormatError(f"{where} holds content other than text; this format holds text only")
    if calls and (message.role != "assistant" or len(calls) > 1 or calls[0].name != TOOL
                  or not isinstance(calls[0].input, dict) or set(calls[0].input) != {"command"}
                  or not isinstance(calls[0].input["command"], str)):
        raise FormatError(f"{where}: this format holds one {TOOL} call per assistant message, with input "
                          f"{{\"command\": string}} (got {', '.join(repr(c.name) for c in calls)})")
    if results and (len(results) > 1 or len(message.content) > 1 or results[0].id != waiting):
        raise FormatError(f"{where}: a result must be the whole message right after its call's")
    if not results and waiting is not None and message.role == "user":  # it would read as the call's result
        raise FormatError(f"{where}: a user message right after call {waiting!r} would read as its result")
    if not results and message.role not in ("system", "user", "assistant"):
        raise FormatError(f"{where}: role {message.role!r} without a tool result has no place in this format")
