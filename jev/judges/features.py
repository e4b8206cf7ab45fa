"""Features of each tool pair at a decision point (the end of the transcript given), for the local judge.

Everything is computed from the transcript as given, so features never see the future: the training
script calls the same code on each history prefix. A `FeatureState` accumulates what the messages say
(who first mentioned which word, which result is still the latest source of it, what the agent has
referred to since) one message at a time, so a host loop that plans again over a grown history only pays
for the new messages — also when it rebuilds equal message objects each turn. Words are found with
`str.translate` + `split` (C speed).
"""

from __future__ import annotations

import bisect
import math
import re
import string
from dataclasses import dataclass, field

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
    """What a call's command says: its text, category, the paths it names and its distinctive words."""

    command: str
    kind: str
    paths: frozenset[str]
    own: frozenset[str]


def call_info(block: ToolUseBlock) -> CallInfo:
    text = command_text(block.input)
    return CallInfo(text, category(block.name, text), frozenset(_PATH.findall(text)),
                    frozenset(w for w in words(text) if _distinctive(w)))


def _result_static(text: str) -> tuple[float, ...]:
    """Features of a result that depend on its text alone."""
    returncode = _RETURNCODE.match(text, 0, 200)
    return (math.log1p(len(text)), math.log1p(text.count("\n")),
            float(returncode is not None and returncode.group(1) != "0"),
            float("Traceback (most recent call last)" in text or "Error:" in text),
            float("<warning>" in text or "too long" in text or "truncated" in text or "elided" in text))


@dataclass(slots=True)
class _Result:
    """Running facts about one answered call."""

    index: int  # message index of the result
    static: tuple[float, ...]
    novel: int  # distinctive words this result was the first to show
    live: int = 0  # novel words for which it is still the latest result
    unsaid: int = 0  # live words nobody has written since
    refs: set[str] = field(default_factory=set)  # novel words referred to later
    last_ref: int = -1
    input_referenced: bool = False


@dataclass
class FeatureState:
    """What the messages seen so far say, updated one message at a time (see the module docstring)."""

    messages: list[object] = field(default_factory=list)
    first_seen: set[str] = field(default_factory=set)
    said: set[str] = field(default_factory=set)  # words the agent or user wrote (text or call input)
    owner: dict[str, str] = field(default_factory=dict)  # novel word -> call id of the result that showed it
    live_of: dict[str, str] = field(default_factory=dict)  # word -> call id still its latest source
    own_owners: dict[str, list[str]] = field(default_factory=dict)  # call word -> call ids using it
    calls: dict[str, tuple[int, CallInfo]] = field(default_factory=dict)
    results: dict[str, _Result] = field(default_factory=dict)
    last_call: dict[tuple[str, str], int] = field(default_factory=dict)
    repeats: dict[tuple[str, str], int] = field(default_factory=dict)
    path_read: dict[str, int] = field(default_factory=dict)
    path_edit: dict[str, int] = field(default_factory=dict)
    edit_at: list[int] = field(default_factory=list)

    def continues(self, messages: tuple[object, ...]) -> bool:
        """True when `messages` starts with the messages already seen: equal values, so a host that
        rebuilds its messages each turn (every framework integration does) still only pays for new ones.
        Identical objects compare in constant time."""
        n = len(self.messages)
        return n <= len(messages) and self.messages == list(messages[:n])

    def add(self, message: object, i: int) -> None:
        """Take in message number `i`."""
        self.messages.append(message)
        for block in message.content:  # type: ignore[attr-defined]
            if isinstance(block, ToolResultBlock):
                self._result(block, i)
            elif isinstance(block, ToolUseBlock):
                info = call_info(block)
                self._said(info.own, i)
                self._call(block, info, i)
            elif isinstance(block, TextBlock):
                self._said(frozenset(w for w in words(block.text) if _distinctive(w)), i)

    def _result(self, block: ToolResultBlock, i: int) -> None:
        text = block.text
        found = {w for w in words(_scan(text)) if _distinctive(w)}
        novel = found - self.first_seen
        for w in found - novel:  # an older result stops being the latest source of these words
            holder = self.live_of.pop(w, None)
            if holder is not None:
                previous = self.results[holder]
                previous.live -= 1
                if w not in self.said:
                    previous.unsaid -= 1
        self.first_seen |= novel
        self.owner.update(dict.fromkeys(novel, block.id))
        self.live_of.update(dict.fromkeys(novel, block.id))
        self.results[block.id] = _Result(i, _result_static(text), len(novel), len(novel), len(novel))

    def _said(self, found: frozenset[str], i: int) -> None:
        for w in found:
            if w in self.owner:
                result = self.results[self.owner[w]]
                if i > result.index:
                    result.refs.add(w)
                    result.last_ref = i
            if w not in self.said:
                holder = self.live_of.get(w)
                if holder is not None:
                    self.results[holder].unsaid -= 1
            for cid in self.own_owners.get(w, ()):
                result = self.results.get(cid)
                if result is not None and i > result.index:
                    result.input_referenced = True
        self.said |= found
        self.first_seen |= found

    def _call(self, block: ToolUseBlock, info: CallInfo, i: int) -> None:
        self.calls[block.id] = (i, info)
        signature = (block.name, info.command)
        self.last_call[signature] = i
        self.repeats[signature] = self.repeats.get(signature, 0) + 1
        if info.kind == "edit":
            self.edit_at.append(i)
        target = self.path_edit if info.kind == "edit" else self.path_read
        target.update(dict.fromkeys(info.paths, i))
        for w in info.own:  # registered after the call's own words were read: self-mention is not use
            self.own_owners.setdefault(w, []).append(block.id)


def transcript_features(transcript: Transcript, state: FeatureState | None = None) -> dict[str, list[float]]:
    """A feature vector (in `FEATURE_NAMES` order) for every pair, at the end of the transcript.

    Pass the `state` of an earlier call to continue from it when this transcript extends the same
    messages; otherwise (or when it does not) the state is rebuilt from the first message."""
    messages = transcript.messages
    if state is None or not state.continues(messages):
        fresh = FeatureState()
        if state is not None:
            state.__dict__.update(fresh.__dict__)
        else:
            state = fresh
    for i in range(len(state.messages), len(messages)):
        state.add(messages[i], i)
    n_messages, n_pairs = len(messages), len(transcript.pairs)
    edits = len(state.edit_at)
    out: dict[str, list[float]] = {}
    for index, pair in enumerate(transcript.pairs):
        c, call = state.calls[pair.call_id]
        result = state.results[pair.call_id]
        r, signature = result.index, (pair.tool, call.command)
        features = [
            math.log1p(n_pairs - index - 1),
            math.log1p(n_messages - r - 1),
            (index + 1) / n_pairs,
            *result.static,
            float(state.last_call[signature] > c),
            float(any(state.path_read.get(p, -1) > c for p in call.paths)),
            float(any(state.path_edit.get(p, -1) > c for p in call.paths)),
            math.log1p(result.novel),
            math.log1p(len(result.refs)),
            float(bool(result.refs)),
            math.log1p(n_messages - 1 - max(result.last_ref, r)),
            float(result.input_referenced),
            float(pair.result.state != "success"),
            math.log1p(result.live),
            math.log1p(result.unsaid),
            result.unsaid / max(1, result.novel),
            math.log1p(state.repeats[signature] - 1),
            math.log1p(edits - bisect.bisect_right(state.edit_at, c)),
            math.log1p(n_pairs),
            math.log1p(edits),
        ]
        features += [float(call.kind == k) for k in CATEGORIES]
        out[pair.key] = features
    return out
