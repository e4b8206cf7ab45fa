"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`), read-only: for SHADOW,
labels and calibration of the sessions people already have; write them out in any other form.

Each line is a typed entry. The main thread is read in file order: `user` and `assistant` entries whose
`isSidechain` is not true (sub-agent work stays aside), each `message` an Anthropic message. One
assistant turn is written over several lines, one per content block, sharing `message.id`: those are
joined into one message at the turn's first line. Everything else — `summary`, `system`,
`file-history-snapshot`, `queue-operation` entries, and the entry-level `toolUseResult` (the tool's
structured output, which the model never saw) — is left out. Where Claude Code compacted the session
itself (a main-thread `system` entry of subtype `compact_boundary`, then a user entry with its summary),
the model went on from the summary alone: `load` reads what it holds now, from the last boundary on, and
`stretches` gives every stretch between boundaries as its own conversation. Message ids are the entries' `uuid`s,
timestamps their `timestamp`; a line written twice (same `uuid`, same content, as resumed sessions do)
is read once. Each turn loads as the Anthropic message it is (`{"role", "content"}`), so written as
`anthropic` every block comes back exactly as Claude Code sent it — thinking signatures, `caller`,
`cache_control` and all.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ..errors import FormatError, shown
from ..transcript import Message
from . import anthropic

NAME = "claude-code"
_ROLES = ("user", "assistant")
COMPACT_BOUNDARY = "compact_boundary"  # the subtype of the system entry Claude Code writes where it compacted


def is_transcript(data: Any) -> bool:
    """Whether a parsed document looks like a Claude Code session: typed entries that carry a session id
    and an Anthropic `message`."""
    return isinstance(data, list) and any(
        isinstance(e, dict) and "sessionId" in e and e.get("type") in _ROLES and isinstance(e.get("message"), dict)
        for e in data[:50])


def load(data: Any) -> list[Message]:
    """The main thread's messages since Claude Code last compacted the session (the whole main thread if
    it never did): what the model holds now (see the module docstring)."""
    return stretches(data)[-1]


def stretches(data: Any) -> list[list[Message]]:
    """The main thread's messages, one list per stretch the model held: cut at each `compact_boundary`,
    oldest first, each beginning with the summary Claude Code wrote (one list if it never compacted). Every
    line is checked, whichever stretch it falls in."""
    if not isinstance(data, list):
        raise FormatError(f"claude-code: expected the session's entries, one per line (got {type(data).__name__})")
    cuts: list[int] = []  # where each stretch after the first begins, in `turns`
    turns: list[dict[str, Any]] = []
    at: dict[str, int] = {}  # assistant message.id -> its turn
    seen: dict[str, Any] = {}
    for i, entry in enumerate(data):
        where = f"line {i + 1}"
        if not isinstance(entry, dict):
            raise FormatError(f"{where}: an entry must be a JSON object")
        if entry.get("isSidechain") is True:
            continue
        if _is_boundary(entry):
            cuts.append(len(turns))
            at.clear()  # a turn never spans a boundary: a message id seen again after one is a new turn
            continue
        if entry.get("type") not in _ROLES:
            continue
        message, uuid = entry.get("message"), entry.get("uuid")
        if not isinstance(message, dict):
            raise FormatError(f"{where}.message: must be a JSON object")
        if not isinstance(uuid, str) or not uuid:
            raise FormatError(f"{where}.uuid: must be a non-blank string")
        if uuid in seen:
            if seen[uuid] != message:
                raise FormatError(f"{where}: uuid {uuid!r} appears twice with different messages")
            continue
        seen[uuid] = message
        role, content = message.get("role", entry["type"]), message.get("content")
        if role != entry["type"]:
            raise FormatError(f"{where}.message.role: {shown(role)} in a {shown(entry['type'])} entry")
        if not isinstance(content, (str, list)):
            raise FormatError(f"{where}.message.content: must be a string or a list of blocks")
        turn_id = message.get("id") if role == "assistant" else None
        if isinstance(turn_id, str) and turn_id in at:  # the next block of a turn already begun
            turn = turns[at[turn_id]]
            if isinstance(turn["message"]["content"], str):
                turn["message"]["content"] = [{"type": "text", "text": turn["message"]["content"]}]
            turn["message"]["content"].extend(content if isinstance(content, list) else
                                              [{"type": "text", "text": content}] if content else [])
            continue
        if isinstance(turn_id, str):
            at[turn_id] = len(turns)
        timestamp = entry.get("timestamp")
        turns.append({"message": {"role": role, "content": list(content) if isinstance(content, list) else content},
                      "uuid": uuid, "timestamp": timestamp if isinstance(timestamp, str) else None, "line": i + 1})
    names: dict[str, str] = {}  # call id -> tool, so each result is named after its call (in an earlier stretch too)
    messages = [anthropic.read_message(t["message"], t["uuid"], f"the turn at line {t['line']}", names, t["timestamp"])
                for t in turns]
    bounds = [0, *cuts, len(messages)]
    return [messages[a:b] for a, b in itertools.pairwise(bounds)]


def compactions(data: Any) -> list[int]:
    """The lines (from 1) where Claude Code compacted the session's main thread, in order: where each
    stretch after the first begins (`stretches`)."""
    return [i + 1 for i, entry in enumerate(data) if isinstance(entry, dict) and _is_boundary(entry)] \
        if isinstance(data, list) else []


def _is_boundary(entry: dict[str, Any]) -> bool:
    """A main-thread entry marking where Claude Code compacted the session (the model went on from its summary)."""
    return entry.get("type") == "system" and entry.get("subtype") == COMPACT_BOUNDARY and entry.get("isSidechain") is not True


def dump(messages: Sequence[Message]) -> Any:
    """Refused: Claude Code transcripts are read, not written."""
    raise FormatError("claude-code transcripts are read-only: write the messages as 'anthropic' (or another form)")
