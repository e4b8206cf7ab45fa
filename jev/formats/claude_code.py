"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`), read-only: for SHADOW,
labels and calibration of the sessions people already have; write them out in any other form.

Each line is a typed entry. The main thread is read in file order: `user` and `assistant` entries whose
`isSidechain` is not true (sub-agent work stays aside), each `message` an Anthropic message. One
assistant turn is written over several lines, one per content block, sharing `message.id`: those are
joined into one message at the turn's first line. Everything else — `summary`, `system`, `attachment`
(newer versions: a hook's added context, a re-read file; the parent chain runs through them),
`file-history-snapshot`, `queue-operation` entries, and the entry-level `toolUseResult` (the tool's
structured output, which the model never saw) — is left out. Where Claude Code compacted the session
itself (a main-thread `system` entry of subtype `compact_boundary`, then a user entry with its summary),
the model went on from the summary alone: `load` reads what it holds now, from the last boundary on, and
`stretches` gives every stretch between boundaries as its own conversation. Where the user rewound the
conversation to an earlier prompt, the branch left behind stays in the file but not in the model's
context: it is left out too. Message ids are the entries' `uuid`s,
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
from ..model.transcript import Message
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
    oldest first, each beginning with the summary Claude Code wrote (one list if it never compacted); a
    branch the user rewound away from is left out (`_rewound`). Every line is checked, whichever stretch
    or branch it falls in."""
    if not isinstance(data, list):
        raise FormatError(f"claude-code: expected the session's entries, one per line (got {type(data).__name__})")
    rewound = _rewound(data)
    cuts: list[int] = []  # where each stretch after the first begins, in `turns`
    turns: list[dict[str, Any]] = []
    at: dict[str, int] = {}  # assistant message.id -> its turn
    seen: dict[str, Any] = {}
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise FormatError(f"line {i + 1}: an entry must be a JSON object")
        if entry.get("isSidechain") is True:
            continue
        if _is_boundary(entry):
            cuts.append(len(turns))
            at.clear()  # a turn never spans a boundary: a message id seen again after one is a new turn
            continue
        message = _main_message(entry, i, seen)
        if message is not None and entry["uuid"] not in rewound:
            _add_turn(turns, at, entry, message, i)
    names: dict[str, str] = {}  # call id -> tool, so each result is named after its call (in an earlier stretch too)
    messages = [_with_model(anthropic.read_message(t["message"], t["uuid"], f"the turn at line {t['line']}", names,
                                                   t["timestamp"]), t.get("model")) for t in turns]
    bounds = [0, *cuts, len(messages)]
    return [messages[a:b] for a, b in itertools.pairwise(bounds)]


def _main_message(entry: dict[str, Any], i: int, seen: dict[str, Any]) -> dict[str, Any] | None:
    """The message of main-thread entry `i` (line i + 1), checked; None for an entry of another type or a
    uuid seen before with the same message (`seen`: uuid -> message, filled here)."""
    if entry.get("type") not in _ROLES:
        return None
    where = f"line {i + 1}"
    message, uuid = entry.get("message"), entry.get("uuid")
    if not isinstance(message, dict):
        raise FormatError(f"{where}.message: must be a JSON object")
    if not isinstance(uuid, str) or not uuid:
        raise FormatError(f"{where}.uuid: must be a non-blank string")
    if uuid in seen:
        if seen[uuid] != message:
            raise FormatError(f"{where}: uuid {uuid!r} appears twice with different messages")
        return None
    seen[uuid] = message
    role, content = message.get("role", entry["type"]), message.get("content")
    if role != entry["type"]:
        raise FormatError(f"{where}.message.role: {shown(role)} in a {shown(entry['type'])} entry")
    if not isinstance(content, (str, list)):
        raise FormatError(f"{where}.message.content: must be a string or a list of blocks")
    return message


def _add_turn(turns: list[dict[str, Any]], at: dict[str, int], entry: dict[str, Any], message: dict[str, Any],
              i: int) -> None:
    """Entry `i`'s message as a new turn, or its blocks appended to the turn it continues (Claude Code writes
    an assistant reply one block per line, under one `message.id`: `at` maps those to their turn)."""
    content = message["content"]
    turn_id = _turn(entry)
    if turn_id is not None and turn_id in at:  # the next block of a turn already begun
        turn = turns[at[turn_id]]
        if isinstance(turn["message"]["content"], str):
            turn["message"]["content"] = [{"type": "text", "text": turn["message"]["content"]}]
        turn["message"]["content"].extend(content if isinstance(content, list) else
                                          [{"type": "text", "text": content}] if content else [])
        return
    if turn_id is not None:
        at[turn_id] = len(turns)
    timestamp = entry.get("timestamp")
    model = message.get("model")
    turns.append({"message": {"role": entry["type"], "content": list(content) if isinstance(content, list) else content},
                  "uuid": entry["uuid"], "timestamp": timestamp if isinstance(timestamp, str) else None, "line": i + 1,
                  "model": model if isinstance(model, str) and model.strip() else None})


def _with_model(message: Message, model: str | None) -> Message:
    """An assistant turn with the model that wrote it (`Origin.model`): the provider's rules follow it
    (`jev.providers.model_of`); never written back (an Anthropic request's messages carry no model)."""
    if model is None or message.role != "assistant":
        return message
    return message.with_origin(model=model)


def _rewound(data: list[Any]) -> set[str]:
    """The uuids of the main-thread messages on a branch the user rewound away from. Rewinding to a prompt
    (Claude Code's Esc Esc, /rewind) writes the new prompt under the same parent as the old one and leaves
    the old branch in the file. In each stretch the conversation is the `parentUuid` chain from its last
    message back; where a prompt on that chain has a sibling prompt, the sibling and everything below it is
    left behind, except the chain's parallel work that hangs there (another line of a turn on the chain,
    results of its calls). Nothing else off the chain is left out: parallel calls' results sit off it in 59 of
    the 110 dev sessions (none rewinds), and a chain that breaks (a parent not in the file) ends the search."""
    out: set[str] = set()
    stretch: list[dict[str, Any]] = []
    for entry in [*data, None]:  # None: the end, which closes the last stretch as a boundary does
        if entry is None or (isinstance(entry, dict) and _is_boundary(entry)):
            out |= _left_behind(stretch)
            stretch = []
        elif isinstance(entry, dict) and entry.get("isSidechain") is not True and isinstance(entry.get("uuid"), str):
            stretch.append(entry)
    return out


def _prompt(entry: dict[str, Any]) -> bool:
    """A user entry holding the user's words (not tool results, not a meta note): what a rewind re-sends."""
    message = entry.get("message")
    if entry.get("type") != "user" or entry.get("isMeta") is True or not isinstance(message, dict):
        return False
    content = message.get("content")
    return isinstance(content, str) or (isinstance(content, list) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content))


def _left_behind(entries: list[dict[str, Any]]) -> set[str]:
    """`_rewound` of one stretch's main-thread entries (those with a uuid), in file order."""
    messages = [e for e in entries if e.get("type") in _ROLES and isinstance(e.get("message"), dict)]
    if not messages:
        return set()
    by = {e["uuid"]: e for e in entries}
    chain: list[str] = []  # from the last message back
    on: set[str] = set()
    at: Any = messages[-1]["uuid"]
    while isinstance(at, str) and at in by and at not in on:
        chain.append(at)
        on.add(at)
        at = by[at].get("parentUuid")
    children: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        if isinstance(parent := e.get("parentUuid"), str):
            children.setdefault(parent, []).append(e)
    stack = [c for k in range(1, len(chain)) if _prompt(by[chain[k - 1]])
             for c in children.get(chain[k], ()) if c["uuid"] not in on and _prompt(c)]
    if not stack:
        return set()
    # (ids are compared only where they are strings: a malformed one is the reader's to refuse, by line)
    turns = {_turn(by[u]) for u in chain} - {None}
    calls = {block["id"] for e in messages if _turn(e) in turns and isinstance(e["message"].get("content"), list)
             for block in e["message"]["content"]
             if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str)}

    def parallel(e: dict[str, Any]) -> bool:  # another line of a turn on the chain, or results of its calls
        content = e["message"].get("content")
        if e["type"] == "assistant":
            return _turn(e) in turns
        return isinstance(content, list) and bool(content) and all(
            isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
            and b["tool_use_id"] in calls for b in content)

    out: set[str] = set()
    done: set[str] = set()
    while stack:  # the left-behind prompts and everything below them
        e = stack.pop()
        if e["uuid"] in done or e["uuid"] in on:
            continue
        done.add(e["uuid"])
        if e.get("type") in _ROLES and isinstance(e.get("message"), dict) and not parallel(e):
            out.add(e["uuid"])
        stack.extend(children.get(e["uuid"], ()))
    return out


def _turn(entry: dict[str, Any]) -> str | None:
    """The turn an assistant line belongs to: its `message.id` when that is a string (Claude Code writes one
    turn over several lines under one id), else None (a line of its own; any other entry, None)."""
    message = entry.get("message")
    turn = message.get("id") if entry.get("type") == "assistant" and isinstance(message, dict) else None
    return turn if isinstance(turn, str) else None


def compactions(data: Any) -> list[int]:
    """The lines (from 1) where Claude Code compacted the session's main thread, in order: where each
    stretch after the first begins (`stretches`)."""
    return [i + 1 for i, entry in enumerate(data) if isinstance(entry, dict) and _is_boundary(entry)] \
        if isinstance(data, list) else []


def rewound(data: Any) -> list[int]:
    """The lines (from 1) of the main-thread messages left out as a branch the user rewound away from."""
    if not isinstance(data, list):
        return []
    left = _rewound(data)
    return [i + 1 for i, entry in enumerate(data) if isinstance(entry, dict) and isinstance(entry.get("uuid"), str)
            and entry["uuid"] in left and entry.get("isSidechain") is not True and entry.get("type") in _ROLES]


def _is_boundary(entry: dict[str, Any]) -> bool:
    """A main-thread entry marking where Claude Code compacted the session (the model went on from its summary)."""
    return entry.get("type") == "system" and entry.get("subtype") == COMPACT_BOUNDARY and entry.get("isSidechain") is not True


def dump(messages: Sequence[Message]) -> Any:
    """Refused: Claude Code transcripts are read, not written."""
    raise FormatError("claude-code transcripts are read-only: write the messages as 'anthropic' (or another form)")
