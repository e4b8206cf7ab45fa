"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), read-only: for SHADOW, `jev cost` and
`jev inspect` of the sessions Codex users already have; write them out as `openai-responses`.

Each line is `{timestamp, type, payload}`. The conversation is the `response_item` payloads in file order —
Responses input items (`message`, `reasoning`, `function_call` / `function_call_output`, `custom_tool_call` /
`…_output`, and any other item, kept as it is) — each read by the openai-responses reader, so written as
`openai-responses` every item comes back exactly as Codex wrote it. A message's timestamp is its line's; an
assistant item carries the model of the newest `turn_context` before it (`jev.model`, so the providers'
rules know it: reasoning items stay with their calls). `session_meta`, `turn_context` and `event_msg` lines
(the UI's copies of messages, token counts) are left out. Where Codex compacted the session (a `compacted`
line), the model went on from what that line holds — its `replacement_history` items, else its summary
`message` as a user message: `load` reads from the last compaction on, and `stretches` gives every stretch
as its own conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FormatError
from ..model.transcript import Message, TextBlock
from . import openai_responses
from .converters import loaded

NAME = "codex"
_KINDS = ("session_meta", "response_item", "turn_context", "event_msg", "compacted")


def is_rollout(data: Any) -> bool:
    """Whether a parsed document looks like a Codex rollout: typed lines with a payload, a `session_meta` or
    `response_item` among the first."""
    return isinstance(data, list) and any(
        isinstance(e, dict) and e.get("type") in ("session_meta", "response_item") and isinstance(e.get("payload"), dict)
        for e in data[:20])


def load(data: Any) -> list[Message]:
    """The conversation since Codex last compacted the session (the whole rollout if it never did)."""
    return stretches(data)[-1]


def stretches(data: Any) -> list[list[Message]]:
    """The rollout's conversation, one list per stretch the model held: cut at each `compacted` line, oldest
    first, each after the first beginning with what that line gave the model (see the module docstring)."""
    if not isinstance(data, list):
        raise FormatError(f"codex: expected the rollout's lines, one per line (got {type(data).__name__})")
    out: list[list[Message]] = [[]]
    names: dict[str, str] = {}  # call id -> tool, across stretches
    model: str | None = None
    for i, entry in enumerate(data):
        where = f"line {i + 1}"
        if not isinstance(entry, dict):
            raise FormatError(f"{where}: an entry must be a JSON object")
        kind, payload = entry.get("type"), entry.get("payload")
        if kind not in _KINDS:
            continue  # a line type this reader does not know: none of the conversation
        if not isinstance(payload, dict):
            raise FormatError(f"{where}.payload: must be a JSON object")
        stamp = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            model = payload["model"]
        elif kind == "response_item":
            out[-1].append(_message(payload, f"l{i + 1}", where, names, stamp, model))
        elif kind == "compacted":
            out.append(_compacted(payload, i, where, names, stamp, model))
    return out


def _message(item: dict[str, Any], id: str, where: str, names: dict[str, str], stamp: str | None,
             model: str | None) -> Message:
    role, blocks, kept = openai_responses.read_item(item, f"{where}.payload", names)
    origin = loaded(openai_responses.NAME, kept, model if role == "assistant" else None)
    return Message(id, role, blocks, None, None, stamp, origin)


def _compacted(payload: dict[str, Any], i: int, where: str, names: dict[str, str], stamp: str | None,
               model: str | None) -> list[Message]:
    """The start of the stretch after a `compacted` line: its replacement history's items, else its summary."""
    history = payload.get("replacement_history")
    if isinstance(history, list):
        return [_message(item, f"l{i + 1}.{k}", f"{where}.payload.replacement_history[{k}]", names, stamp, model)
                for k, item in enumerate(history) if isinstance(item, dict)]
    summary = payload.get("message", payload.get("summary"))  # older rollouts name it `summary`
    if isinstance(summary, str) and summary:
        return [Message(f"l{i + 1}", "user", (TextBlock(summary),), None, None, stamp)]
    return []


def compactions(data: Any) -> list[int]:
    """The lines (from 1) where Codex compacted the session."""
    return [i + 1 for i, e in enumerate(data) if isinstance(e, dict) and e.get("type") == "compacted"] \
        if isinstance(data, list) else []


def dump(messages: Sequence[Message]) -> Any:
    """Refused: Codex rollouts are read, not written."""
    raise FormatError("codex rollouts are read-only: write the messages as 'openai-responses' (or another form)")
