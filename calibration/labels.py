"""Labels from later history (SPEC §11, `labels-v1`): was a pair still needed after a decision point?

A pair is **needed** after decision point `s` (the index of the last message the judge saw) when, later:
- the agent re-ran the same tool with the same input (it needed the information again; the credit goes
  to the most recent earlier run, which is the one a compactor would still hold), or
- the agent used an identifier that this pair's result was the most recent source of, and that was not
  already available from the task or the agent's own earlier messages (last-provider attribution);
for the call, also when the agent mentioned the call's own paths or identifiers, or the call changed
state (an edit). Labels are proxies — lexical, blind to influence on reasoning — and are data: a JSONL
the user can inspect and edit.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from jev.judges.features import command_text, tool_words
from jev.model.markers import is_tombstone
from jev.model.transcript import TextBlock, ToolResultBlock, ToolUseBlock
from jev.reading.analysis import Transcript

T = TypeVar("T")

LABEL_VERSION = "labels-v1"

# labels-v1's vocabulary, fixed here so that changes to the judge's features never move the labels
_KEEP = set(string.ascii_letters + string.digits + "_./-")
_SPLIT = str.maketrans({c: " " for c in map(chr, range(128)) if c not in _KEEP})
_MARKS = re.compile(r"[_./0-9]")
_EDIT = re.compile(r"\bsed\s+-i|>\s*\S|\btee\b|\bpatch\b|\bgit\s+apply\b|\bperl\s+-pi|\bmv\b|\bcp\b|\brm\b|"
                   r"\bcat\s*<<|\.write\(|\bedit\b|\bwrite\b|\bstr_replace\b|\bcreate\b")


def words(text: str) -> set[str]:
    """The distinct words of labels-v1: runs of letters, digits and `_./-` of at least 4 characters that
    are long (8+) or contain one of `_./` or a digit."""
    return {w for w in set(text.translate(_SPLIT).split())
            if len(w) >= 4 and (len(w) >= 8 or _MARKS.search(w) is not None)}


def is_edit(tool: str, command: str) -> bool:
    """Whether a call changed state, by labels-v1's pattern over the command and, for another tool than
    `bash`, its name's lower-case words (`Edit`, `MultiEdit`, `apply_patch`, `write_file` are edits)."""
    return _EDIT.search(f"{' '.join(tool_words(tool))} {command}" if tool != "bash" else command) is not None


@dataclass(frozen=True, slots=True)
class PairUse:
    """The last message index at which each kind of later use of a pair happened (-1: never)."""

    result_used: int
    call_used: int
    rerun: int
    edit: bool

    def needed_result(self, s: int) -> bool:
        return self.result_used > s or self.rerun > s

    def needed_call(self, s: int) -> bool:
        return self.edit or self.call_used > s or self.needed_result(s)


def pair_uses(transcript: Transcript, log: dict[str, list[tuple[int, str | None]]] | None = None
              ) -> dict[str, PairUse]:
    """One pass over the full transcript: the later uses of every pair. `log`, when given, receives each
    use that makes a result needed, per pair in message order: (message index, the word first written,
    or None for a re-run) — what a diagnostic reads to say why a let-go result was needed."""
    keys = [p.key for p in transcript.pairs]
    task: set[str] = set()
    for message in transcript.messages:  # the task: system prompt and first user request
        if message.role in ("system", "user"):
            task |= words(message.text)
            if message.role == "user":
                break
    provider: dict[str, str] = {}  # word -> key of the most recent result containing it
    agent_said: set[str] = set()
    result_used = dict.fromkeys(keys, -1)
    call_used = dict.fromkeys(keys, -1)
    rerun = dict.fromkeys(keys, -1)
    call_words: dict[str, set[str]] = {}
    latest_run: dict[tuple[str, str], str] = {}  # (tool, command) -> key of its most recent run
    word_calls: dict[str, set[str]] = {}
    edits: set[str] = set()
    for k, message in enumerate(transcript.messages):
        said: set[str] = set()
        for block in message.content:
            if isinstance(block, ToolResultBlock) and (answered := transcript.result_pair(k, block.id)):
                for w in words(block.text):
                    provider[w] = answered.key
            elif isinstance(block, ToolUseBlock):
                command = command_text(block.input)
                said |= words(command)
                signature = (block.name, command)
                if signature in latest_run:  # credit goes to the latest run, as with last-provider words
                    rerun[latest_run[signature]] = k
                    if log is not None:
                        log.setdefault(latest_run[signature], []).append((k, None))
                if pair := transcript.call_pair(k, block.id):
                    latest_run[signature] = pair.key
                    own = words(command)
                    call_words[pair.key] = own
                    if is_edit(block.name, command):
                        edits.add(pair.key)
            elif isinstance(block, TextBlock) and message.role == "assistant" and not is_tombstone(block.text):
                said |= words(block.text)  # a tombstone is the library's text, not the agent's
        if message.role != "assistant":
            continue
        for w in sorted(said - task - agent_said):  # sorted: the log lists a message's words in one order
            key = provider.get(w)
            if key is not None:
                result_used[key] = k
                if log is not None:
                    log.setdefault(key, []).append((k, w))
        for w in said:
            for key in word_calls.get(w, ()):
                call_used[key] = k
        agent_said |= said
        for key, own in call_words.items():  # register calls after their own message, so self-mention is not use
            for w in own:
                word_calls.setdefault(w, set()).add(key)
        call_words.clear()
    return {key: PairUse(result_used[key], call_used[key], rerun[key], key in edits) for key in keys}


ALT_LABEL_VERSION = "labels-v2-reuse"
# a file path, relative (`src/a.py`, `./a.py`) or absolute (`/testbed/a.py`, as Claude Code names every file)
_PATH = re.compile(r"(?<![\w./-])(?:\./)?(/?(?:[\w.-]+/)*[\w-]+\.[A-Za-z]\w{0,5})(?![\w/])")
_MIN_LINE = 20


def _lines(text: str) -> set[str]:
    return {line for line in (raw.strip() for raw in text.splitlines()) if len(line) >= _MIN_LINE}


def _paths(command: str) -> set[str]:
    return set(_PATH.findall(command))


def later_reuse(transcript: Transcript, log: dict[str, list[tuple[int, str]]] | None = None) -> dict[str, int]:
    """`labels-v2-reuse`, a second proxy built differently from labels-v1: the last message index at which
    the agent reused what a pair's result showed — it copied a whole line of the output (20+ characters)
    into its text or a command, ran the same command again, or edited a file the pair's call had read.
    Lines and paths, not words; each use credits the latest pair that showed it (the one a compactor
    would still hold). -1: never. `log`, when given, gathers each pair's uses: (message, what was reused).
    """
    used = {p.key: -1 for p in transcript.pairs}
    by_line: dict[str, str] = {}
    by_path: dict[str, str] = {}
    by_command: dict[tuple[str, str], str] = {}
    calls: dict[str, tuple[str, str]] = {}  # call id -> (tool, command), until its result registers the pair
    for k, message in enumerate(transcript.messages):
        if message.role == "assistant":
            hits: dict[str, str] = {}  # pair key -> what was reused
            said = _lines("\n".join(b.text for b in message.content
                                     if isinstance(b, TextBlock) and not is_tombstone(b.text)))
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    command = command_text(block.input)
                    said |= _lines(command)
                    if (block.name, command) in by_command:
                        hits[by_command[(block.name, command)]] = f"re-ran: {command[:200]}"
                    if is_edit(block.name, command):
                        hits.update({by_path[path]: f"edited {path}" for path in _paths(command) if path in by_path})
                    calls[block.id] = (block.name, command)
            hits.update({by_line[line]: f"copied line: {line[:200]}" for line in sorted(said) if line in by_line})
            for key, what in hits.items():
                used[key] = k
                if log is not None:
                    log.setdefault(key, []).append((k, what))
        for block in message.content:
            if isinstance(block, ToolResultBlock) and (pair := transcript.result_pair(k, block.id)) \
                    and block.id in calls:
                key = pair.key
                tool, command = calls.pop(block.id)
                by_command[(tool, command)] = key
                if not is_edit(tool, command):
                    by_path.update(dict.fromkeys(_paths(command), key))
                by_line.update(dict.fromkeys(_lines(block.text), key))
    return used


@dataclass(frozen=True, slots=True)
class NeededLater:
    """Both proxies for one session, as a replay counts let-gos: whether pair `key`'s result was needed
    after decision point `s`, and how many results each proxy calls needed after they appeared."""

    uses: dict[str, PairUse]  # labels-v1
    reuse: dict[str, int]  # labels-v2-reuse: the last message reusing the result (-1: never)
    total_v1: int
    total_v2: int

    def v1(self, key: str, s: int) -> bool:
        return self.uses[key].needed_result(s)

    def v2(self, key: str, s: int) -> bool:
        return self.reuse[key] > s


def needed_later(transcript: Transcript) -> NeededLater:
    """Labels-v1 and labels-v2-reuse of every pair of one session's full history."""
    uses, reuse = pair_uses(transcript), later_reuse(transcript)
    return NeededLater(uses, reuse, sum(1 for p in transcript.pairs if uses[p.key].needed_result(p.result_message)),
                       sum(1 for p in transcript.pairs if reuse[p.key] > p.result_message))


STRICT_LABEL_VERSION = "labels-v3-strict"
# what `jev calibrate` certifies unless told: the proxy whose needs read as genuine most often when read by
# hand (0.75 and 0.83 of the cases on the two dev sets, labels-v1's 0.42 and 0.17:
# benchmarks/proxy_precision_sample.md), so a bound on it bounds needs that were real
CERTIFIED_LABEL = STRICT_LABEL_VERSION
# what a result counts as needed for, under each proxy: the guarantee says it in words
LABEL_MEANINGS = {
    LABEL_VERSION: "the agent later used a word of 4+ characters this result was the latest to show, or re-ran "
                   "its command",
    ALT_LABEL_VERSION: "the agent later copied a whole line of it, re-ran its command or edited a file it read",
    STRICT_LABEL_VERSION: "the agent later wrote, and used in a command, a rare distinctive identifier (a path, a "
                          "dotted name, or a name with _, a digit or an inner capital) that this result alone "
                          "had shown; needs through common words, copied lines or re-runs are not counted",
}
RARE_SHARE = 0.02  # a token shown or run in at most this share of the dev instances is rare
_TOKEN = re.compile(r"[A-Za-z0-9_./-]+")
_LETTER = re.compile(r"[A-Za-z]")
_MARK = re.compile(r"[/._0-9]|.[A-Z]")  # a path or dotted name, a `_`, a digit, or an inner capital
CHECKOUTS = ("testbed/", "repo/", "workspace/")  # a leading checkout folder: `/testbed/src/a.py` is `src/a.py`


def distinctive_tokens(text: str) -> set[str]:
    """The tokens of `text` shaped like an identifier or a path: runs of letters, digits and `_./-`,
    stripped of leading and trailing `./-` and of a leading checkout folder (`testbed/`), at least 4
    characters with a letter, holding a `/`, `.`, `_`, digit or an inner capital."""
    out = set()
    for raw in set(_TOKEN.findall(text)):  # each distinct run once (a long output repeats many)
        if len(raw) < 4:  # stripping only shortens it
            continue
        token = raw.strip("./-")
        if token.startswith(CHECKOUTS):
            token = next(token[len(c):] for c in CHECKOUTS if token.startswith(c))
        if len(token) >= 4 and _LETTER.search(token) and _MARK.search(token):
            out.add(token)
    return out


def _task_tokens(transcript: Transcript) -> set[str]:
    """The task statement's tokens: every system message and the first user message."""
    task: set[str] = set()
    for message in transcript.messages:
        if message.role in ("system", "user"):
            task |= distinctive_tokens(message.text)
            if message.role == "user":
                break
    return task


def session_tokens(transcript: Transcript) -> set[str]:
    """The distinctive tokens a session's results and commands show: what its document frequency counts."""
    seen: set[str] = set()
    for message in transcript.messages:
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                seen |= distinctive_tokens(block.text)
            elif isinstance(block, ToolUseBlock):
                seen |= distinctive_tokens(command_text(block.input))
    return seen


def frequent(sessions: Iterable[Iterable[T]], share: float = RARE_SHARE) -> list[T]:
    """The items more than `share` of the units hold (each iterable one unit's distinct items: an
    instance's, in `calibration.rarity`), in the order first met: a document frequency cut, computed on
    the dev sets and shipped with the judge's weights so the rarity cut never reads the sessions it is
    applied to."""
    counts: dict[T, int] = {}
    n = 0
    for items in sessions:
        n += 1
        for item in items:
            counts[item] = counts.get(item, 0) + 1
    return [item for item, k in counts.items() if k > share * n]


def strict_uses(transcript: Transcript, common: frozenset[str], log: dict[str, list[tuple[int, str]]] | None = None
                ) -> dict[str, int]:
    """`labels-v3-strict`: per pair, the last message at which the agent first wrote a token that this
    pair's result alone introduced (-1: none), so the result is needed after decision point `s` when it
    is greater than `s`. A token counts when it is

    - distinctive (`distinctive_tokens`: a path, a dotted name, an identifier with `_`, a digit or an
      inner capital; 4+ characters with a letter; a leading checkout folder stripped);
    - rare: not in `common` (shown or run in more than 2 % of the dev instances — the runs of one instance
      count once);
    - not from the task (the system messages and the first user message);
    - shown first by this result: among the results before the agent first writes the token, this
      pair's result is the only one that showed it;
    - written later: the agent first writes it (in its text or a command) after `s`, and runs a command
      holding it at or after that point.

    Stricter than labels-v1 (any word of 4+ characters, credited to its latest provider) and
    labels-v2-reuse (copied lines): on cases read by hand it is the proxy whose "needed" most often is.
    `log`, when given, gathers each pair's tokens: (message first writing it, token)."""
    task = _task_tokens(transcript) | common
    showers: dict[str, set[str]] = {}
    first_written: dict[str, int] = {}
    last_run: dict[str, int] = {}
    for k, message in enumerate(transcript.messages):
        if message.role == "assistant":
            run: set[str] = set()
            written: set[str] = set()
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    run |= distinctive_tokens(command_text(block.input))
                elif isinstance(block, TextBlock) and not is_tombstone(block.text):
                    written |= distinctive_tokens(block.text)
            for token in written | run:
                first_written.setdefault(token, k)
            for token in run:
                last_run[token] = k
        for block in message.content:
            if isinstance(block, ToolResultBlock) and (pair := transcript.result_pair(k, block.id)):
                for token in distinctive_tokens(block.text) - task:
                    if token not in first_written:
                        showers.setdefault(token, set()).add(pair.key)
    out = {p.key: -1 for p in transcript.pairs}
    for token, keys in showers.items():
        first = first_written.get(token)
        if len(keys) == 1 and first is not None and last_run.get(token, -1) >= first:
            key = next(iter(keys))
            out[key] = max(out[key], first)
            if log is not None:
                log.setdefault(key, []).append((first, token))
    return out
