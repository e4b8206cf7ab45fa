"""Transcript formats: `load(data, format=...)` to `jev.Message` lists and `dump(messages, format=...)` back.

Every converter keeps what the judge and the host need, so `dump(load(x), f) == x` for each supported
form; a message it did not load (made in Python, or loaded from another form) it writes afresh, leaving
out only what the form has no place for, or refuses with a `FormatError` naming the message. An unknown
format name raises a `FormatError` that lists the available ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from importlib import import_module
from types import ModuleType
from typing import Any

import orjson

from ..errors import FormatError, shown
from ..model.transcript import ROLES, Message, ToolResultBlock, ToolUseBlock
from . import request
from .request import Conversation

# each form's converter module, imported when the form is first read or written (not by `import jev`)
_MODULES = {"jev": "jev_json", "openai-chat": "openai_chat", "mini-swe-agent": "mini_swe_agent",
            "openai-responses": "openai_responses", "anthropic": "anthropic", "langchain": "langchain",
            "agentscope": "agentscope", "pydantic-ai": "pydantic_ai", "gemini": "gemini",
            "claude-code": "claude_code",
            "codex": "codex"}  # claude-code and codex are read-only: dump refuses
FORMATS = (*_MODULES, *request.FORMS)


def _module(name: str) -> ModuleType:
    return import_module(f"{__name__}.{name}")


def detect(data: Any) -> str:
    """Guess the format of a parsed JSON document: `jev` when messages carry ids and block lists."""
    if isinstance(data, dict) and str(data.get("trajectory_format", "")).startswith("mini-swe-agent"):
        return "mini-swe-agent"
    if _module("langchain").is_objects(data):
        return "langchain"
    if _module("pydantic_ai").is_messages(data):
        return "pydantic-ai"
    if _module("gemini").is_contents(data):
        return "gemini"
    if _module("claude_code").is_transcript(data):
        return "claude-code"
    if _module("codex").is_rollout(data):
        return "codex"
    if isinstance(data, dict) and (form := request.detect(data, detect)) is not None:
        return form
    if not isinstance(data, list):
        raise FormatError(f"cannot detect the transcript format: expected a JSON array of messages or an API "
                          f"request body with messages or input (got {type(data).__name__})")
    if not data:
        return "jev"
    if any(isinstance(m, dict) and m.get("role") == "exit" for m in data):
        return "mini-swe-agent"  # a 1.1 messages list without its envelope: only mini-swe-agent writes 'exit'
    first = data[0]
    if not isinstance(first, dict):
        raise FormatError("cannot detect the transcript format: messages[0] is not a JSON object")
    if "id" in first and isinstance(first.get("content"), list) and "created_at" in first:
        return "agentscope"  # Msg dumps carry created_at; the jev form has no such field
    if "id" in first and isinstance(first.get("content"), list) and first.get("role") in ROLES:
        return "jev"
    if first.get("type") in ("human", "ai", "system", "tool") and isinstance(first.get("data"), dict):
        return "langchain"
    if any(isinstance(item, dict) and (item.get("type") in _module("openai_responses").ITEM_TYPES
                                       or (isinstance(item.get("type"), str) and "role" not in item)) for item in data):
        return "openai-responses"  # its items, or any typed item without a role (a built-in tool's call, a reference)
    if "role" in first:
        for message in data:
            if not isinstance(message, dict):
                break
            if "tool_calls" in message or message.get("role") in ("tool", "developer"):
                return "openai-chat"
            content = message.get("content")
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_call" for b in content):
                return "agentscope"
            if isinstance(content, list) and any(isinstance(b, dict) and _anthropic_block(b.get("type"))
                                                 for b in content):
                return "anthropic"
        return "openai-chat"
    raise FormatError("cannot detect the transcript format: pass --format / format= explicitly")


def _anthropic_block(kind: Any) -> bool:
    """A block type only Anthropic's messages hold: a call or result of a client tool, of a server tool
    (`server_tool_use`, `web_search_tool_result`, `code_execution_tool_result`, …) or of an MCP server,
    or thinking. Chat parts are text, image_url, input_audio, file and refusal."""
    return isinstance(kind, str) and (kind in ("tool_use", "tool_result", "thinking", "redacted_thinking")
                                      or kind.endswith(("_tool_use", "_tool_result")))


class Lines(list):
    """JSON Lines as `parse` read them: a list of the values, with what it left out in words (`left_out`:
    a last line cut short, as a session still being written ends), else None."""

    left_out: str | None = None


def parse(data: bytes | str) -> Any:
    """Parsed JSON, or JSON Lines (one value per non-blank line, as many agents write sessions) as a list
    (`Lines`). As sessions lie on disk: a line holding several values written without a newline between
    (`…}{"type":"summary"…`) reads as those values, and a last line cut short (a session still being
    written) is left out, `Lines.left_out` saying so. Any other bad line is a `FormatError` naming it."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        whole = exc
    lines = [line for line in (data.splitlines() if isinstance(data, (bytes, str)) else []) if line.strip()]
    if len(lines) < 2:
        raise FormatError(f"not valid JSON: {whole}") from None
    out = Lines()
    for n, line in enumerate(lines, 1):
        try:
            out.append(orjson.loads(line))
            continue
        except orjson.JSONDecodeError as exc:
            bad = exc
        glued = _glued(line)
        if glued is not None:
            out.extend(glued)
        elif n == len(lines) and n > 1:
            out.left_out = (f"the last line ({len(line):,} bytes) is cut short, as a session still being written "
                            f"ends ({bad}): left out")
        else:
            raise FormatError(f"neither JSON nor JSON Lines: line {n} of the non-blank lines: {bad} "
                              f"(as one JSON document: {whole})") from None
    return out


def _glued(line: bytes | str) -> list[Any] | None:
    """The values of a line that holds several JSON objects written one after another with no newline between
    (`{…}{…}`), or None when it is not exactly that."""
    import json

    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    decoder, values, at = json.JSONDecoder(), [], 0
    text = text.strip()
    while at < len(text):
        try:
            value, end = decoder.raw_decode(text, at)
        except (json.JSONDecodeError, RecursionError):
            return None
        if not isinstance(value, dict):
            return None
        values.append(value)
        at = end
        while at < len(text) and text[at] in " \t":
            at += 1
    return values if len(values) > 1 else None


TRANSCRIPT_SUFFIXES = (".traj.json", ".json", ".jsonl")  # what a transcript file's name ends with


RUNS_FOLDER = "trajectories"  # the folder mini-swe-agent writes its runs under: ids start below it


def session_id(path: str, root: str | None = None) -> str:
    """The session a transcript file holds — the one id every command gives it (`jev compact`, `jev replay`,
    `jev label`, calibration's datasets), so a file's records, labels and training rows join. Its path below
    the last `trajectories/` folder the path passes (mini-swe-agent runs' layout: the same id whichever
    command reads the file, from wherever it was unpacked); else its path below `root`, the folder a command
    was given ("" for a path already relative, as an archive's members are); else (no `root`, or a path
    outside it) the file's name. Without its suffix (`TRANSCRIPT_SUFFIXES`)."""
    parts = [part for part in path.split("/") if part and part != "."]
    runs = [i for i, part in enumerate(parts[:-1]) if part == RUNS_FOLDER]
    base = None if root is None else root.rstrip("/")
    if runs:
        parts = parts[runs[-1] + 1:]
    elif base is None or (base and not path.startswith(base + "/")):
        parts = parts[-1:]
    elif base:
        parts = [part for part in path[len(base) + 1:].split("/") if part and part != "."]
    name = "/".join(parts)
    for suffix in TRANSCRIPT_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def by_session(paths: Iterable[str], root: str | None = None) -> dict[str, str]:
    """The transcript files among `paths` by their `session_id` below `root`, in id order. Where one folder
    holds a session under two suffixes, the first of `TRANSCRIPT_SUFFIXES` is the session's (as mini-swe-agent
    writes `x.traj.json`); two files elsewhere that give one id are refused (ValueError), never joined to
    the same records."""
    found: dict[str, tuple[int, str]] = {}
    for path in paths:
        rank = next((k for k, suffix in enumerate(TRANSCRIPT_SUFFIXES) if path.endswith(suffix)), None)
        if rank is None:
            continue
        session = session_id(path, root)
        seen = found.get(session)
        if seen is None or (_stem(seen[1]) == _stem(path) and rank < seen[0]):
            found[session] = (rank, path)
        elif _stem(seen[1]) != _stem(path):
            raise ValueError(f"{seen[1]!r} and {path!r} both hold session {session!r}: name the folder of one")
    return {session: path for session, (_rank, path) in sorted(found.items())}


def _stem(path: str) -> str:
    """`path` without its transcript suffix."""
    return next((path[: -len(suffix)] for suffix in TRANSCRIPT_SUFFIXES if path.endswith(suffix)), path)


STRETCH_MARK = "#stretch-"  # between a session's id and the number of one of its conversations


def conversation_id(session: str, k: int, count: int) -> str:
    """The id of the `k`-th (from 1) of the `count` conversations a session's file holds (`conversations`):
    the session's own id when it holds one, else `<session>#stretch-<k>` — what `jev replay` records and
    `jev label` looks up."""
    return session if count == 1 else f"{session}{STRETCH_MARK}{k}"


def parse_conversation_id(conversation: str) -> tuple[str, int | None]:
    """The session a `conversation_id` belongs to, and which of its conversations (None: the id is the
    session's own)."""
    head, mark, tail = conversation.rpartition(STRETCH_MARK)
    if mark and head and tail.isascii() and tail.isdigit() and not tail.startswith("0"):
        return head, int(tail)
    return conversation, None


WRITTEN_AS = {"claude-code": "anthropic", "codex": "openai-responses"}  # read-only forms, and the form their
# messages are written in


def writable(format: str) -> str:
    """The form to write messages loaded from `format` in: itself, or for a read-only form (Claude Code
    sessions) the API form its messages are in."""
    return WRITTEN_AS.get(format, format)


def _codec(format: str) -> tuple[Callable[[Any], list[Message]], Callable[[Sequence[Message]], Any]]:
    if format in _MODULES:
        module = _module(_MODULES[format])
        return module.load, module.dump
    if format in request.FORMS:  # a request body: its messages in the API's form, the rest kept beside them
        return (lambda data: request.load(data, format, _codec)), (lambda messages: request.dump(messages, format, _codec))
    raise FormatError(f"unknown format {shown(format)} (available: {', '.join(FORMATS)}, auto)")


def load(data: Any, format: str = "auto") -> list[Message]:
    """Messages from parsed JSON in `format` (`auto` detects it). Refused with a `FormatError`: values nested
    too deep for JSON, and two calls (or two results) with one id in one message — no form can write such
    a message back and pairing could not tell them apart."""
    return _read(lambda document: [_codec(_form(document, format))[0](document)], data)[0]


def load_request(data: Any, format: str = "auto") -> Conversation:
    """An API request body (`anthropic-request`, `openai-chat-request`, `openai-responses-request`; `auto`
    detects it) as a `Conversation`: its messages as `load` reads them, and the rest of the body typed beside
    them. Refused with a `FormatError`: a document that is not a request body, and what `load` refuses."""
    form = _read(lambda document: _form(document, format), data)
    if form not in request.FORMS:
        raise FormatError(f"{shown(form)} is not an API request body form (those are {', '.join(request.FORMS)})")
    return _read(lambda document: request.read(document, form, _codec), data)


def dump_request(conversation: Conversation) -> dict[str, Any]:
    """The request body of `conversation` (its fields, in its key order, around its messages — a plan's,
    after `conversation.with_messages(decision.plan.messages)`) as parsed JSON."""
    if not isinstance(conversation, Conversation):
        raise FormatError(f"conversation must be a jev.formats.Conversation (got {type(conversation).__name__})")
    return _written(lambda: request.write(conversation, _codec), conversation.messages, conversation.form)


def conversations(data: Any, format: str = "auto") -> list[list[Message]]:
    """Each conversation a document holds, as the model held it: `[load(data, format)]`, but for a Claude Code
    session or a Codex rollout that its host compacted itself one per stretch between its compactions, oldest
    first (the model went on from each summary alone; `claude_code.stretches`, `codex.stretches`), empty ones
    left out — what a replay of
    every model call reads."""
    form = _read(lambda document: _form(document, format), data)
    if form not in _STRETCHED:
        return [load(data, form)]
    return [messages for messages in _read(_module(_STRETCHED[form]).stretches, data) if messages]


_STRETCHED = {"claude-code": "claude_code", "codex": "codex"}  # forms whose host compacts: a conversation a stretch


def _form(data: Any, format: str) -> str:
    return detect(data) if format == "auto" else format


def _read(reader: Callable[[Any], Any], data: Any) -> Any:
    """`reader(data)` — lists of messages, each message checked as `load` says (or a form's name) — with a
    document nested too deep to read refused by a `FormatError`."""
    try:
        read = reader(data)
    except RecursionError:
        raise FormatError("the document is nested too deep to read (JSON written back allows 255 levels)") from None
    if isinstance(read, str):
        return read
    for messages in ([read.messages] if isinstance(read, Conversation) else read):
        for i, message in enumerate(messages):
            seen: set[tuple[bool, str]] = set()
            for j, block in enumerate(message.content):
                if isinstance(block, (ToolUseBlock, ToolResultBlock)):
                    key = (isinstance(block, ToolResultBlock), block.id)
                    if key in seen:
                        raise FormatError(f"messages[{i}].content[{j}]: a second {block.type} with id {block.id!r} "
                                          "in one message is ambiguous")
                    seen.add(key)
    return read


def dump(messages: Sequence[Message], format: str = "jev") -> Any:
    """The messages as parsed JSON in `format`. Messages carry what their reader kept for the round trip
    (`Message.origin`, `metadata["jev.source"]` in the `jev` form); a `jev` document is free to carry any, so
    a source that is not what this form's reader wrote (edited, or made up) is refused with a `FormatError`
    rather than written wrong."""
    codec = _codec(format)[1]
    return _written(lambda: codec(messages), messages, format)


def _written(write: Callable[[], Any], messages: Sequence[Message], format: str) -> Any:
    """`write()`, the messages in `format`: a document nested too deep, or a message whose bookkeeping is not
    its reader's (see `dump`), refused by a `FormatError`."""
    try:
        return write()
    except RecursionError:
        raise FormatError(f"{format}: a value is nested too deep to write (JSON allows 255 levels)") from None
    except (TypeError, KeyError, AttributeError, ValueError, IndexError) as exc:
        if isinstance(exc, FormatError):
            raise
        reader = request.FORMS[format][0] if format in request.FORMS else format  # whose bookkeeping is read
        kept = [i for i, m in enumerate(messages) if isinstance(m, Message) and m.origin is not None and (
            (m.origin.source is not None and m.origin.format in (reader, None))
            or (reader != format and m.origin.envelope is not None))]
        if not kept:
            raise  # no bookkeeping to blame: a bug, never dressed up as bad input
        raise FormatError(f"{format}: the bookkeeping of messages{kept[:3]} (origin.source, metadata['jev.source'] "
                          f"in the jev form) is not what the {format} reader keeps ({type(exc).__name__}: "
                          f"{shown(str(exc))}); remove it to write those messages afresh") from None


__all__ = ["FORMATS", "TRANSCRIPT_SUFFIXES", "WRITTEN_AS", "Conversation", "by_session", "conversation_id",
           "conversations", "detect", "dump", "dump_request", "load", "load_request", "parse", "parse_conversation_id",
           "session_id", "writable"]
