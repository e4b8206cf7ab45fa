"""Features of each tool pair at a decision point (the end of the transcript given), for the local judge.

Everything here is computed from the transcript as given, so features can never see the future: the
training script calls the same function on each history prefix. Words are found with `str.translate` +
`split` (C speed), which keeps a 400-pair transcript within a few milliseconds.
"""

from __future__ import annotations

import bisect
import math
import re
import string
from dataclasses import dataclass
from typing import Any

from ..transcript import TextBlock, ToolResultBlock, ToolUseBlock, Transcript, canonical_json

CATEGORIES = ("read", "search", "list", "run", "test", "edit", "git", "other")
FEATURE_NAMES = (
    "age_pairs", "age_messages", "position", "result_chars", "result_lines", "returncode_nonzero",
    "error_marker", "truncation_marker", "superseded", "path_reread", "path_edited", "novel_words",
    "result_refs", "result_referenced", "last_ref_age", "input_referenced", "state_error", "live_words",
    "live_unsaid_words", "live_unsaid_share", "repeats", "edits_since", "history_pairs", "history_edits",
) + tuple(f"category_{c}" for c in CATEGORIES)

_KEEP = set(string.ascii_letters + string.digits + "_./-")
_SPLIT = str.maketrans({c: " " for c in map(chr, range(128)) if c not in _KEEP})
_SCAN = 6000  # characters of a result read from each end: the words that matter sit near its edges
_RETURNCODE = re.compile(r"\s*<returncode>(-?\d+)</returncode>")
_PATH = re.compile(r"[\w.-]*[/.][\w./-]*\w")
_EDIT = re.compile(r"\bsed\s+-i|>\s*\S|\btee\b|\bpatch\b|\bgit\s+apply\b|\bperl\s+-pi|\bmv\b|\bcp\b|\brm\b|"
                   r"\bcat\s*<<|\.write\(|\bedit\b|\bwrite\b|\bstr_replace\b|\bcreate\b")
_TEST = re.compile(r"\bpytest\b|runtests|\btox\b|unittest|manage\.py\s+test|\btest\b")
_GIT = re.compile(r"^\s*(?:cd\s+\S+\s*&&\s*)?git\b")
_SEARCH = re.compile(r"\b(?:grep|rg|ag|ack|find|search)\b")
_LIST = re.compile(r"^\s*(?:cd\s+\S+\s*&&\s*)?(?:ls|tree|wc|du)\b|\blist\b")
_READ = re.compile(r"\b(?:cat|head|tail|nl|less|more|awk|view|read)\b|\bsed\s+-n")
_RUN = re.compile(r"\b(?:python3?|bash|sh|make|pip|node|npm)\b|^\s*\./")


def category(tool: str, command: str) -> str:
    """read / search / list / run / test / edit / git / other, from the tool name and command text."""
    text = f"{tool} {command}" if tool != "bash" else command
    for name, pattern in (("edit", _EDIT), ("test", _TEST), ("git", _GIT), ("search", _SEARCH),
                          ("list", _LIST), ("read", _READ), ("run", _RUN)):
        if pattern.search(text):
            return name
    return "other"


def command_text(value: object) -> str:
    """The command of a call: its `command` string when there is one, else its canonical JSON."""
    if isinstance(value, dict) and isinstance(value.get("command"), str):
        return value["command"]
    return value if isinstance(value, str) else canonical_json(value).decode()


def words(text: str) -> set[str]:
    """The distinct identifier-like words (letters, digits, `_./-`) of at least 4 characters."""
    return {w for w in set(text.translate(_SPLIT).split()) if len(w) >= 4}


_MARKS = re.compile(r"[_./0-9]")


def _distinctive(word: str) -> bool:
    """Long, or shaped like a path, identifier or number: words worth tracking."""
    return len(word) >= 8 or _MARKS.search(word) is not None


def _scan(text: str) -> str:
    return text if len(text) <= 2 * _SCAN else text[:_SCAN] + " " + text[-_SCAN:]


@dataclass(frozen=True, slots=True)
class CallInfo:
    """What a call's command says: its text, category and the paths it names."""

    command: str
    kind: str
    paths: frozenset[str]


def _result_static(text: str) -> tuple[float, ...]:
    """Features of a result that depend on its text alone."""
    returncode = _RETURNCODE.match(text, 0, 200)
    return (math.log1p(len(text)), math.log1p(text.count("\n")),
            float(returncode is not None and returncode.group(1) != "0"),
            float("Traceback (most recent call last)" in text or "Error:" in text),
            float("<warning>" in text or "too long" in text or "truncated" in text or "elided" in text))


class WordCache:
    """Distinctive words (and, for calls, `CallInfo`) per block, remembered by block identity: in an
    agent loop each plan re-reads mostly the same immutable blocks, so only new messages cost anything.
    Bounded; the oldest entries go first."""

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._entries: dict[int, tuple[object, frozenset[str], CallInfo | tuple[float, ...] | None]] = {}

    def get(self, block: TextBlock | ToolUseBlock | ToolResultBlock) -> tuple[frozenset[str], Any]:
        """Distinctive words, and `CallInfo` for a call or the static features of a result."""
        hit = self._entries.get(id(block))
        if hit is not None and hit[0] is block:
            return hit[1], hit[2]
        call: CallInfo | tuple[float, ...] | None = None
        if isinstance(block, ToolResultBlock):
            full = block.text
            call = _result_static(full)
            text = _scan(full)
        elif isinstance(block, ToolUseBlock):
            text = command_text(block.input)
            call = CallInfo(text, category(block.name, text), frozenset(_PATH.findall(text)))
        else:
            text = block.text
        found = frozenset(w for w in words(text) if _distinctive(w))
        if len(self._entries) >= self.max_entries:
            for key in list(self._entries)[: self.max_entries // 4]:
                del self._entries[key]
        self._entries[id(block)] = (block, found, call)  # the strong reference keeps id() unambiguous
        return found, call


def transcript_features(transcript: Transcript, cache: WordCache | None = None) -> dict[str, list[float]]:
    """A feature vector (in `FEATURE_NAMES` order) for every pair, at the end of the transcript."""
    cache = cache or WordCache()
    first_seen: dict[str, int] = {}  # distinctive word -> first message index where it appears
    last_mention: dict[str, int] = {}  # distinctive word -> last message index the agent or user wrote it
    last_result: dict[str, int] = {}  # distinctive word -> last message index of a result containing it
    last_call: dict[tuple[str, str], int] = {}
    repeats: dict[tuple[str, str], int] = {}
    edit_at: list[int] = []  # message indices of edit calls, ascending
    path_read: dict[str, int] = {}
    path_edit: dict[str, int] = {}
    result_words: dict[str, tuple[frozenset[str], tuple[float, ...]]] = {}
    calls: dict[str, CallInfo] = {}
    seen_at: list[tuple[int, frozenset[str]]] = []
    for i, message in enumerate(transcript.messages):
        for block in message.content:
            if not isinstance(block, (TextBlock, ToolUseBlock, ToolResultBlock)):
                continue
            found, call = cache.get(block)
            seen_at.append((i, found))
            if isinstance(block, ToolResultBlock):
                result_words[block.id] = (found, call)
                last_result.update(dict.fromkeys(found, i))
                continue
            last_mention.update(dict.fromkeys(found, i))
            if call is not None:
                calls[block.id] = call
                last_call[(block.name, call.command)] = i
                repeats[(block.name, call.command)] = repeats.get((block.name, call.command), 0) + 1
                if call.kind == "edit":
                    edit_at.append(i)
                target = path_edit if call.kind == "edit" else path_read
                target.update(dict.fromkeys(call.paths, i))
    for i, found in reversed(seen_at):  # C-speed updates; the earliest index is written last and wins
        first_seen.update(dict.fromkeys(found, i))
    n_messages, n_pairs = len(transcript.messages), len(transcript.pairs)
    out: dict[str, list[float]] = {}
    for index, pair in enumerate(transcript.pairs):
        r, c = pair.result_message, pair.call_message
        call = calls[pair.call_id]
        found, static = result_words[pair.call_id]
        novel = [w for w in found if first_seen[w] == r]
        refs = [last_mention[w] for w in novel if last_mention.get(w, -1) > r]
        own, _ = cache.get(pair.call)
        features = [
            math.log1p(n_pairs - index - 1),
            math.log1p(n_messages - r - 1),
            (index + 1) / n_pairs,
            *static,
            float(last_call.get((pair.tool, call.command), -1) > c),
            float(any(path_read.get(p, -1) > c for p in call.paths)),
            float(any(path_edit.get(p, -1) > c for p in call.paths)),
            math.log1p(len(novel)),
            math.log1p(len(refs)),
            float(bool(refs)),
            math.log1p(n_messages - 1 - max(refs, default=r)),
            float(any(last_mention.get(w, -1) > r for w in own)),
            float(pair.result.state != "success"),
        ]
        live = [w for w in novel if last_result[w] == r]  # this result is still their latest source
        unsaid = sum(1 for w in live if w not in last_mention)
        features += [math.log1p(len(live)), math.log1p(unsaid), unsaid / max(1, len(novel)),
                     math.log1p(repeats[(pair.tool, call.command)] - 1),
                     math.log1p(len(edit_at) - bisect.bisect_right(edit_at, c)),
                     math.log1p(n_pairs), math.log1p(len(edit_at))]
        features += [float(call.kind == k) for k in CATEGORIES]
        out[pair.key] = features
    return out
