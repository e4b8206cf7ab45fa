"""mini-swe-agent trajectories (`mini-swe-agent-1`): plain-text chat where actions are fenced bash blocks.

An assistant message with exactly one ```bash block is a `bash` tool call (input `{"command": ...}`; the
rest of the message is its text), and the user message right after it is that call's result: state
`error` for a timeout notice, `success` otherwise (a non-zero return code is part of the output). An
assistant message with zero or several blocks is plain text. Accepts the whole trajectory object or its
`messages` list; the envelope, per-message extras and the exact fence text ride in
`metadata["jev.source"]`, so `dump(load(x)) == x`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..errors import FormatError
from ._common import loaded, source_of
from ..transcript import Block, Message, OtherBlock, TextBlock, ToolResultBlock, ToolUseBlock

NAME = "mini-swe-agent"
TOOL = "bash"
_ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_TIMEOUT = re.compile(r"^The last command .{0,4000}? timed out", re.DOTALL)


def _messages_of(data: Any) -> tuple[list[Any], dict[str, Any] | None]:
    if isinstance(data, dict):
        if not isinstance(data.get("messages"), list):
            raise FormatError("trajectory: must have a 'messages' list")
        return data["messages"], {k: v for k, v in data.items() if k != "messages"}
    if isinstance(data, list):
        return data, None
    raise FormatError(f"trajectory: must be a JSON object or array (got {type(data).__name__})")


def load(data: Any) -> list[Message]:
    """Messages from a mini-swe-agent trajectory (object or messages list)."""
    raw_messages, envelope = _messages_of(data)
    out: list[Message] = []
    open_call: str | None = None
    for i, raw in enumerate(raw_messages):
        where = f"messages[{i}]"
        if not isinstance(raw, dict) or raw.get("role") not in ("system", "user", "assistant"):
            raise FormatError(f"{where}: must be an object with role system, user or assistant")
        content = raw.get("content")
        if not isinstance(content, str):
            raise FormatError(f"{where}.content: must be a string")
        source: dict[str, Any] = {k: v for k, v in raw.items() if k not in ("role", "content")}
        if i == 0 and envelope is not None:
            source["envelope"] = envelope
        role = raw["role"]
        blocks: tuple[Block, ...]
        if role == "assistant":
            actions = list(_ACTION.finditer(content))
            if len(actions) == 1:
                match = actions[0]
                call_id = f"call{i}"
                text = content[:match.start()] + content[match.end():]
                source["action"] = {"at": match.start(), "open": content[match.start():match.start(1)],
                                    "close": content[match.end(1):match.end()]}
                blocks = ((TextBlock(text),) if text else ()) + (ToolUseBlock(call_id, TOOL, {"command": match.group(1)}),)
                open_call = call_id
                out.append(Message(f"m{i}", role, blocks, None, loaded(NAME, source) if source else None))
                continue
            open_call = None
        elif role == "user" and open_call is not None:
            state = "error" if _TIMEOUT.match(content) else "success"
            blocks = (ToolResultBlock(open_call, TOOL, content, state),)
            open_call = None
            out.append(Message(f"m{i}", "tool", blocks, None, loaded(NAME, source) if source else None))
            continue
        else:
            open_call = None
        blocks = (TextBlock(content),) if content else ()
        out.append(Message(f"m{i}", role, blocks, None, loaded(NAME, source) if source else None))
    return out


def dump(messages: Sequence[Message]) -> Any:
    """The trajectory: the object form when the first message carries its envelope, else the list. This
    form holds plain text, one bash call per assistant message and its result as the next message; a
    history with more (other tools, parallel calls, images, results apart from their calls) is refused with
    a `FormatError` naming the message, never written half. Thinking and result states have no place in
    it and are left out."""
    out: list[dict[str, Any]] = []
    envelope = None
    waiting: str | None = None  # the call just written: the next message must be its result
    for message in messages:
        source = dict(source_of(message, NAME) or {})
        envelope = source.pop("envelope", envelope)
        action = source.pop("action", None)
        _check(message, waiting)
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        result = next((b for b in message.content if isinstance(b, ToolResultBlock)), None)
        call = next((b for b in message.content if isinstance(b, ToolUseBlock)), None)
        waiting = None
        if result is not None:
            content = result.text
            role = "user"
        elif call is not None:
            at = action["at"] if action else len(text)
            fence_open = action["open"] if action else "```bash\n"
            fence_close = action["close"] if action else "\n```"
            content = text[:at] + fence_open + call.input["command"] + fence_close + text[at:]
            role = "assistant"
            waiting = call.id
        else:
            content, role = text, message.role
        out.append({"role": role, "content": content, **source})
    if envelope is not None:
        return {**envelope, "messages": out}
    return out


def _check(message: Message, waiting: str | None) -> None:
    """Refuse what a mini-swe-agent trajectory cannot hold, naming the message and the rule."""
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
