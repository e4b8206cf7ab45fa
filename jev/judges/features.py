"""Features of each tool pair at a decision point (the end of the transcript given), for the local judge.

Everything is computed from the transcript as given, so features never see the future: the training
script calls the same code on each history prefix. One pass, vectorised: the words of every result's
ends, every command and the task's text are found and hashed over one byte buffer (`words`), and "which
result showed a word first, is it still the latest to show it, did the agent use it since" become group
operations over the sorted hashes. No per-word Python, so a first look at a 400-pair history takes a few
milliseconds; a `FeatureReader` (the local judge's) keeps what it read, so a history grown from the last
one it read has only its new results, calls and texts read (the group operations run over all).
"""

from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass

import numpy as np

from ..model.canonical import canonical_json
from ..reading.analysis import READ_AGENT, READ_CALL, READ_RESULT, READ_TEXT, Transcript
from .words import Buffer, KeyedWords, RawWords, Words, portable, raw_words, run_starts

CATEGORIES = ("read", "search", "list", "run", "test", "edit", "git", "other")
_CATEGORY_INDEX = {name: k for k, name in enumerate(CATEGORIES)}
FEATURE_NAMES = (
    "age_pairs", "age_messages", "position", "result_chars", "result_lines", "returncode_nonzero",
    "error_marker", "truncation_marker", "superseded", "path_reread", "path_edited", "novel_words",
    "result_refs", "result_referenced", "last_ref_age", "input_referenced", "state_error", "live_words",
    "live_unsaid_words", "live_unsaid_share", "repeats", "edits_since", "history_pairs", "history_edits",
) + tuple(f"category_{c}" for c in CATEGORIES) + (
    "recent_overlap", "recent_share", "call_recent_overlap",
) + tuple(f"rank_{name}" for name in ("result_chars", "live_unsaid_words", "live_words", "recent_overlap",
                                       "novel_words", "unsaid_per_char")) + (
    "held_words", "held_unsaid", "held_unsaid_paths", "held_unsaid_repeated", "held_per_char",
    "held_unsaid_per_char", "credits", "credit_age", "reader_paths", "reader_paths_edited", "latest_run",
    # provenance: the rare distinctive words (not the task's, not `common`) a result showed first
    "intro_words", "intro_unsaid", "intro_unique_unsaid", "intro_unique_unsaid_paths", "intro_unsaid_per_char",
    "intro_said_age", "rank_intro_unique_unsaid",
    # the agent's own words (its text and reasoning): the result's words it wrote since, when last, those
    # its newest words name (what it says it is about to use), of the words a result holds and introduced
    "agent_refs", "agent_ref_age", "agent_recent", "held_agent", "intro_agent",
    # the unsaid words again, now counting the agent's own words as said (as the labels do: a word the agent
    # already wrote is no longer the result's to give), their share per 1 000 characters and rank
    "live_unwritten", "held_unwritten", "held_unwritten_per_char", "intro_unwritten", "rank_intro_unwritten",
    # line numbers a result showed (`grep -n`, `cat -n`, an editor's view) and those a later call addresses
    # (`sed -n 120,140p`, `sed -i '123s/…/'`, a view range, a read's offset), and when last
    "line_numbers", "line_used", "line_use_age",
)

# the features that need the agent's own words read, and those that need line numbers read: a model
# without any of them need not pay for that reading (`FeatureReader`'s `agent`, `numbers`)
AGENT_FEATURES = frozenset({"agent_refs", "agent_ref_age", "agent_recent", "held_agent", "intro_agent", "live_unwritten",
                            "held_unwritten", "held_unwritten_per_char", "intro_unwritten", "rank_intro_unwritten"})
LINE_NUMBER_FEATURES = frozenset({"line_numbers", "line_used", "line_use_age"})

SCAN_CHARS = 120  # characters of a result read from each end by default: the words that matter sit near
# its edges (a model file may name another depth, `scan_chars`, and is scored reading that)
_WORDS_OF_COMMAND = 600  # characters of a command read for words (a heredoc's body adds little)
_AGENT_END = 150  # characters of the agent's text or reasoning read from each end: what it says it will do
_LINE_NUMBERS = 40  # line numbers read per result (its scanned ends'), at most
_LINE_SLACK = 5  # a call's line range counts a line shown this close to it as used (a range around a hit)
_HEAD = 160  # characters of a command its category is read from
RECENT_PAIRS = 3  # the newest pairs, as a host keeps them: what the agent works on now
# a non-zero return code leading a result, found over all segments at once (each follows a separator)
_RETURNCODE = re.compile(rb"\x00\s*<returncode>(?!0</)-?\d+</returncode>")
# the marks of an error and of a truncated output, anywhere in a result's ends
_ERROR_MARK = (b"Traceback (most recent call last)", b"Error:")
_TRUNCATION_MARK = (b"<warning>", b"too long", b"truncated", b"elided")
# line numbers are found over bytes with numpy (a regular expression tries every position: too slow here):
# shown at a line's start after at most `_INDENT` blanks and followed by `:`, `-`, a tab or `→` (`grep -n`,
# `cat -n`, `nl`, an editor's view, Claude Code's Read), or between colons (`grep -rn`'s `path:12:`);
# addressed as a range `120,140` (sed's `p`/`d`/`s`, a view range `[120, 140]`), one line (`123s/…/`, `123d`,
# `123p`) or a read's offset (canonical JSON: `"limit":40,"offset":120`, or no limit)
_INDENT = 8
_DIGITS = 7  # longer runs of digits are not line numbers
_READ_OFFSET = re.compile(rb'"offset":(\d{1,7})')
_LIMIT_BEFORE = re.compile(rb'"limit":(\d{1,7}),\Z')  # the key canonical JSON puts just before "offset"
_READ_LIMIT = 200  # the lines a read from an offset without a limit is taken to show
_MAX_RANGE = 5000  # a pair `a,b` reads as a range only when a <= b <= a + this

# --- the category of a command ------------------------------------------------------------------

_EDIT_WORDS = frozenset({"tee", "patch", "mv", "cp", "rm", "edit", "write", "str_replace", "create"})
_TEST_WORDS = frozenset({"pytest", "tox", "test"})
_SEARCH_WORDS = frozenset({"grep", "rg", "ag", "ack", "find", "search"})
_LIST_PROGRAMS = frozenset({"ls", "tree", "wc", "du"})
_READ_WORDS = frozenset({"cat", "head", "tail", "nl", "less", "more", "awk", "view", "read"})
_RUN_WORDS = frozenset({"python", "python3", "bash", "sh", "make", "pip", "node", "npm"})
_MARKED = _EDIT_WORDS | _TEST_WORDS | _SEARCH_WORDS | _LIST_PROGRAMS | _READ_WORDS | _RUN_WORDS | {"list", "cat"}


def command_category(command: str) -> str:
    """read / search / list / run / test / edit / git / other, from the head of a shell command: its
    whitespace-separated words and a few literal marks, in this order (an edit that also reads is an
    edit). The first program is the first word, or the fourth after `cd X &&`."""
    text = command[:_HEAD]
    words = text.split()
    first = words[3] if len(words) > 3 and words[0] == "cd" and words[2] == "&&" else words[0] if words else ""
    tokens = _MARKED.intersection(words)  # the few words that decide, found in one set operation
    if (">" in text or "sed -i" in text or "git apply" in text or "perl -pi" in text or ".write(" in text
            or not tokens.isdisjoint(_EDIT_WORDS) or ("cat" in tokens and "<<" in text)):
        return "edit"
    if "runtests" in text or "unittest" in text or "manage.py test" in text or not tokens.isdisjoint(_TEST_WORDS):
        return "test"
    if first == "git":
        return "git"
    if not tokens.isdisjoint(_SEARCH_WORDS):
        return "search"
    if first in _LIST_PROGRAMS or "list" in tokens:
        return "list"
    if not tokens.isdisjoint(_READ_WORDS) or "sed -n" in text:
        return "read"
    if not tokens.isdisjoint(_RUN_WORDS) or first.startswith("./"):
        return "run"
    return "other"


# the words of tool names and verbs (`Read`, `str_replace_editor` + `view`, `list_dir`, `apply_patch`) hosts use
_TOOL_VOCABULARY = {word: name for name, words in (
    ("other", "todo"),  # a to-do list's write changes no file
    ("edit", "edit edits write create replace insert patch apply delete remove rename move undo save"),
    ("test", "test tests pytest"),
    ("git", "git"),
    ("search", "grep search find glob query lookup rg"),
    ("list", "ls list tree dir directory"),
    ("read", "read view cat open get fetch show head tail goto scroll"),
    ("run", "bash shell sh zsh terminal exec execute run command cmd powershell python ipython"),
) for word in words.split()}
_SHELL_NAMES = frozenset({"bash", "shell", "sh", "zsh", "terminal", "exec", "execute", "run", "command", "cmd",
                          "powershell"})  # with a `command` string: a shell
_PRIORITY = ("other", "edit", "test", "git", "search", "list", "read", "run")  # as `command_category` decides
_VERB_KEYS = ("command", "action", "operation")  # an editor's sub-command: `{"command": "view", "path": …}`
_TOOL_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
_RUN_ARGS = frozenset({"command", "description", "timeout", "run_in_background", "is_input", "restart"})


def tool_words(name: str) -> list[str]:
    """A tool's name as lower-case words: `str_replace_editor` -> str, replace, editor; `MultiEdit` ->
    multi, edit."""
    return [w.lower() for w in _TOOL_SPLIT.split(name) if w]


@functools.lru_cache(maxsize=1024)
def _is_shell(tool: str) -> bool:
    """Whether a tool with a `command` string is a shell (by its name's words; a history has few tools)."""
    return not _SHELL_NAMES.isdisjoint(tool_words(tool))


def category(tool: str, value: object) -> str:
    """read / search / list / run / test / edit / git / other, for a call of `tool` with input `value`.
    A shell tool (`bash`, Claude Code's `Bash`, OpenHands' `execute_bash`, Codex's `shell`) is read by its
    command (`command_category`), whatever else its input holds (a `cwd`, a `timeout`); another tool by
    its verb (`command`/`action`/`operation`, as editor tools have) and then its name's words, the same
    order deciding (`Edit`, `MultiEdit` -> edit, `Read`, `view` -> read, `Grep`, `Glob` -> search, `LS`,
    `list_dir` -> list); a tool none of these name is read as a command over its name and input."""
    command = value.get("command") if isinstance(value, dict) else value
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        command = command[2] if len(command) == 3 and command[1] in ("-c", "-lc") else " ".join(command)
    if isinstance(command, str) and _is_shell(tool):
        return command_category(command)
    names = tool_words(tool)
    verbs = [value[key] for key in _VERB_KEYS if isinstance(value, dict) and isinstance(value.get(key), str)
             and 0 < len(value[key]) <= 40 and " " not in value[key]]
    for words in ([w for verb in verbs for w in tool_words(verb)], names):
        found = {_TOOL_VOCABULARY[w] for w in words if w in _TOOL_VOCABULARY}
        for name in _PRIORITY:
            if name in found:
                return name
    return command_category(f"{tool} {command_text(value)}")


def command_text(value: object) -> str:
    """The command of a call: its `command` string when the rest of its input only says how to run it (a
    description, a timeout), else the input's canonical JSON — so two calls read as the same command only
    when their inputs agree (an editor's `{"command": "view", "path": …}` of two files are two reads)."""
    if isinstance(value, dict) and isinstance(command := value.get("command"), str) \
            and (len(value) == 1 or _RUN_ARGS.issuperset(value)):
        return command
    return value if isinstance(value, str) else canonical_json(value).decode()


def _bytes_in(values: bytes) -> np.ndarray:
    table = np.zeros(256, dtype=bool)
    table[list(values)] = True
    return table


_DIGIT, _BLANK, _LINE_START = _bytes_in(b"0123456789"), _bytes_in(b" \t"), _bytes_in(b"\n\x00")
_AFTER_SHOWN, _WORDY = _bytes_in(b":-\t\xe2"), _bytes_in(string.ascii_letters.encode() + b"0123456789_.,")
_SLASHES = _bytes_in(b"/\\|#")


def _digit_runs(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The runs of at most `_DIGITS` digits in `data` (with a byte of padding after it): the bytes as an
    array, each run's start, end and value."""
    raw = np.frombuffer(data + b"\x00", dtype=np.uint8)
    digit = _DIGIT[raw]
    edges = np.flatnonzero(digit[1:] != digit[:-1]) + 1
    if digit[0]:
        edges = np.concatenate(([0], edges))
    starts, ends = edges[::2], edges[1::2]
    keep = ends - starts <= _DIGITS
    starts, ends = starts[keep], ends[keep]
    k = np.arange(_DIGITS)
    width = (ends - starts)[:, None]
    places = raw[np.minimum(starts[:, None] + k, raw.size - 1)].astype(np.int64) - 48
    values = (np.where(k < width, places, 0) * 10 ** np.maximum(width - 1 - k, 0) * (k < width)).sum(axis=1)
    return raw, starts, ends, values


def line_numbers(buffer: Buffer) -> tuple[np.ndarray, np.ndarray]:
    """The line numbers each segment shows (see `_INDENT`): segment, number."""
    raw, starts, ends, values = _digit_runs(buffer.data)
    if not starts.size:
        return _NONE, _NONE
    blank = np.flatnonzero(~_BLANK[raw])  # where the bytes that are not blanks sit
    before = blank[np.maximum(np.searchsorted(blank, starts) - 1, 0)]  # the last such byte before each run
    after = raw[ends]
    led = _LINE_START[raw[before]] & (starts - before - 1 <= _INDENT) & _AFTER_SHOWN[after]
    arrow = after == 0xE2  # `→` is e2 86 92
    led &= ~arrow | (raw[np.minimum(ends + 2, raw.size - 1)] == 0x92)
    colons = (raw[np.maximum(starts - 1, 0)] == ord(":")) & (after == ord(":"))
    found = led | colons
    return buffer.segment_of(starts[found]), values[found]


def line_ranges(buffer: Buffer) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The line ranges each segment addresses (see `_INDENT`): segment, first, last."""
    raw, starts, ends, values = _digit_runs(buffer.data)
    if starts.size:
        free = ~_WORDY[raw[np.maximum(starts - 1, 0)]]  # not inside a word or a number
        # a range: a run, blanks, a comma, blanks, the next run, its end not inside a word
        comma = np.concatenate(([0], np.cumsum(raw == ord(","))))
        blank = np.concatenate(([0], np.cumsum(_BLANK[raw])))
        gap_start, gap_end = ends[:-1], starts[1:]
        between = gap_end - gap_start
        pair = (free[:-1] & (comma[gap_end] - comma[gap_start] == 1)
                & (blank[gap_end] - blank[gap_start] == between - 1) & (raw[ends[1:]] != ord(".")))
        a, b = values[:-1], values[1:]
        pair &= (a <= b) & (b <= a + _MAX_RANGE)
        nxt = raw[np.minimum(ends + 1, raw.size - 1)]
        after = raw[ends]
        one = free & ((np.isin(after, (ord("p"), ord("d"))) & ~_WORDY[nxt])
                      | (np.isin(after, (ord("s"), ord("a"), ord("c"))) & _SLASHES[nxt]))
        where = np.concatenate((starts[:-1][pair], starts[one]))
        first, last = np.concatenate((a[pair], values[one])), np.concatenate((b[pair], values[one]))
    else:
        where = first = last = _NONE
    data = buffer.data
    reads = [(m.start(), int(m.group(1)), int(limit.group(1)) if (limit := _LIMIT_BEFORE.search(
        data, max(0, m.start() - 20), m.start())) else _READ_LIMIT) for m in _READ_OFFSET.finditer(data)]
    if reads:
        at, offset, count = (np.asarray(column, dtype=np.int64) for column in zip(*reads, strict=True))
        where, first, last = (np.concatenate((where, at)), np.concatenate((first, offset)),
                              np.concatenate((last, offset + count)))
    return buffer.segment_of(where), first, last


_RESULT, _CALL, _TEXT, _AGENT = READ_RESULT, READ_CALL, READ_TEXT, READ_AGENT
_NONE = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class _Reading:
    """The texts searched for words (segments) and where each came from, and the facts of each result and
    call: read from the analysis (`Transcript.order`), not from the messages again."""

    texts: list[str]
    kind: np.ndarray  # per segment: _RESULT, _CALL or _TEXT
    at: np.ndarray  # per segment: message index
    owner: np.ndarray  # per segment: result or call number (-1 for text)
    static: np.ndarray  # per result: characters, lines, error mark, truncation mark (`feature_matrix` sets
    # the marks, found over every segment at once), not a success
    result_call: np.ndarray  # per result: its call's number
    result_at: np.ndarray  # per result: message index
    call_at: np.ndarray  # per call: message index (-1 for the stand-in call of a carried-over result)
    commands: np.ndarray  # per call: its command's category (index), runs, last message index running it
    calls_read: int  # the calls that sit in the history (the first `calls_read` of `call_at`, ascending)
    agent_at: np.ndarray  # per segment of the agent's own words (`_Read.agent_words`): its message index
    shown: tuple[np.ndarray, ...]  # the line numbers results showed: result number, line number
    addressed: tuple[np.ndarray, ...]  # the line ranges calls addressed: first, last, message


@dataclass(frozen=True, slots=True)
class _Read:
    """What reading a transcript's texts gave, kept to read a transcript grown from it (`Transcript.extends`)
    by its new pairs, calls and segments only: per pair, its result's scanned ends, characters, lines and
    whether it failed; per call, its distinct command and that command's category and text; per segment,
    its text, its words and its marks. Never changed once made (a later read makes a new one)."""

    lineage: object  # the transcript it was read from
    scan: int
    lines: bool
    agent: bool  # the agent's own words read
    numbers: bool  # line numbers read
    result_texts: list[str]
    result_chars: list[int]
    result_lines: list[int]
    not_success: list[bool]
    known: dict[str, dict[str, int]]  # by tool, then command text: the distinct command's number
    command_of: list[int]  # per call
    kinds_of: list[int]  # per distinct command: its category
    call_texts: list[str]
    texts: list[str]  # per segment, in reading order
    words: KeyedWords  # every segment's words, their keys sorted
    returncode: np.ndarray  # segments opening with a non-zero return code
    error: np.ndarray  # segments holding an error mark
    truncation: np.ndarray  # segments holding a truncation mark
    agent_words: RawWords  # the words of the agent's own texts and reasoning (its segments numbered apart)
    agent_at: np.ndarray  # per agent segment: its message index
    shown: tuple[np.ndarray, ...]  # the line numbers results' scanned ends show: result, number
    addressed: tuple[np.ndarray, ...]  # the line ranges calls address: call, first, last


_NO_RAW_WORDS = RawWords(*(np.zeros(0, dtype=t) for t in (np.uint64, np.uint64, bool, bool)))
_NO_SEGMENTS = np.zeros(0, dtype=np.intp)
_NOTHING_READ = _Read(None, 0, False, False, False, [], [], [], [], {}, [], [], [], [], KeyedWords.of(_NO_RAW_WORDS, 0),
                      _NO_SEGMENTS, _NO_SEGMENTS, _NO_SEGMENTS, _NO_RAW_WORDS, _NONE, (_NONE, _NONE),
                      (_NONE, _NONE, _NONE))


def _agent_text(text: str) -> str:
    """What is read of one of the agent's texts: `_AGENT_END` characters from each end."""
    return text if len(text) <= 2 * _AGENT_END else text[:_AGENT_END] + " " + text[-_AGENT_END:]


def _then(before: tuple[np.ndarray, ...], found: tuple[np.ndarray, ...], done: int) -> tuple[np.ndarray, ...]:
    """Facts per segment read before, and those found in a buffer of the `done`-th segment on."""
    return tuple(np.concatenate((a, b + done if k == 0 else b)) for k, (a, b) in enumerate(zip(before, found,
                                                                                              strict=True)))


def _read(transcript: Transcript, scan: int, lines: bool, agent_read: bool = True, numbers: bool = True,
          before: _Read | None = None) -> tuple[_Reading, _Read]:
    """The segments and facts, in reading order (a word's first segment is where it was first seen);
    `scan` characters of each result's ends are read for words; each result's lines are counted when
    `lines` (the one fact read over whole results), else 0. A carried-over result (its call before the
    history) answers a stand-in call of category "other", run once, at message -1, which shows no words.
    `agent_read`: the agent's own texts and reasoning are read for words; `numbers`: line numbers are read
    (else neither is: see `feature_matrix`). `before`: what reading the transcript this one grew from
    gave (else None): only what was added is read, the rest taken from it."""
    every_read = np.frombuffer(transcript.order, dtype=np.int64).reshape(-1, 3)
    agent_kind = every_read[:, 0] == _AGENT
    agent, order = every_read[agent_kind], every_read[~agent_kind]  # the agent's own words are read apart
    kinds, at, number = order[:, 0], order[:, 1], order[:, 2]
    is_result, is_call = kinds == _RESULT, kinds == _CALL
    pairs, calls = transcript.pairs, transcript.calls
    if before is None or before.lineage is not transcript.extends or (
            before.scan, before.lines, before.agent, before.numbers) != (scan, lines, agent_read, numbers):
        before = _NOTHING_READ
    new_pairs = pairs[len(before.result_texts):]
    texts_of = [pair.result.text for pair in new_pairs]
    result_texts = before.result_texts + [text if len(text) <= 2 * scan else text[:scan] + " " + text[-scan:]
                                          for text in texts_of]
    result_chars = before.result_chars + [pair.result_chars for pair in new_pairs]
    result_lines = before.result_lines + ([text.count("\n") for text in texts_of] if lines else [0] * len(new_pairs))
    not_success = before.not_success + [pair.result.state != "success" for pair in new_pairs]
    static = np.zeros((len(pairs), 5))  # characters, lines, error mark, truncation mark, not a success
    static[:, 0] = result_chars
    static[:, 1] = result_lines
    static[:, 4] = not_success
    # each call's command: its category read once per distinct (tool, command); runs and the last message
    # running it counted over the whole history
    known = {tool: dict(commands) for tool, commands in before.known.items()}  # by tool (no tuple key per call)
    command_of, kinds_of, call_texts = list(before.command_of), list(before.kinds_of), list(before.call_texts)
    for call in calls[len(before.call_texts):]:
        said = command_text(call.input)
        of_tool = known.get(call.name)
        if of_tool is None:
            of_tool = known[call.name] = {}
        k = of_tool.get(said)
        if k is None:
            k = of_tool[said] = len(kinds_of)
            kinds_of.append(_CATEGORY_INDEX[category(call.name, call.input)])
        command_of.append(k)
        call_texts.append(said[:_WORDS_OF_COMMAND])
    call_at = at[is_call]
    result_call = number[is_result].copy()
    carried = np.flatnonzero(result_call < 0)
    result_call[carried] = len(calls) + np.arange(carried.size)  # each its own stand-in call
    commands = np.empty((len(calls) + carried.size, 3), dtype=np.int64)
    if calls:
        command = np.asarray(command_of, dtype=np.intp)
        last = np.full(len(kinds_of), -1, dtype=np.int64)
        np.maximum.at(last, command, call_at)
        commands[: len(calls), 0] = np.asarray(kinds_of, dtype=np.int64)[command]
        commands[: len(calls), 1] = np.bincount(command, minlength=len(kinds_of))[command]
        commands[: len(calls), 2] = last[command]
    commands[len(calls):] = (_CATEGORY_INDEX["other"], 1, -1)
    # the segments in reading order: results, calls and texts placed where `order` has them; those read
    # before are the first ones (reading order only grows)
    owner = np.where(is_result, np.cumsum(is_result) - 1, np.where(is_call, number, -1))
    done = len(before.texts)
    place = np.empty(kinds.size, dtype=np.intp)
    place[is_result] = np.arange(len(result_texts))
    place[is_call] = len(result_texts) + np.arange(len(call_texts))
    is_text = kinds == _TEXT
    place[is_text] = len(result_texts) + len(call_texts) + number[is_text]  # its number in `transcript.texts`
    every = [*result_texts, *call_texts, *transcript.texts]
    new_texts = [every[k] for k in place[done:].tolist()]
    buffer = Buffer.of(new_texts)
    agent_done = before.agent_at.size
    agent_texts = [_agent_text(transcript.texts[k]) for k in agent[agent_done:, 2].tolist()] if agent_read else []
    agent_words = before.agent_words.then(raw_words(Buffer.of(agent_texts)), agent_done) if agent_texts \
        else before.agent_words
    new_results, new_calls = result_texts[len(before.result_texts):], call_texts[len(before.call_texts):]
    read = _Read(transcript.lineage, scan, lines, agent_read, numbers, result_texts, result_chars, result_lines,
                 not_success, known,
                 command_of, kinds_of, call_texts, before.texts + new_texts,
                 before.words.then(raw_words(buffer), done + len(new_texts)),
                 np.concatenate((before.returncode, buffer.segments_matching(_RETURNCODE) + done)),
                 np.concatenate((before.error, buffer.segments_containing(_ERROR_MARK) + done)),
                 np.concatenate((before.truncation, buffer.segments_containing(_TRUNCATION_MARK) + done)),
                 agent_words, np.concatenate((before.agent_at, agent[agent_done:agent_done + len(agent_texts), 1])),
                 _then(before.shown, line_numbers(Buffer.of(new_results)) if numbers else (_NONE, _NONE),
                       len(before.result_texts)),
                 _then(before.addressed, line_ranges(Buffer.of(new_calls)) if numbers else (_NONE,) * 3,
                       len(before.call_texts)))
    addressed_call, first, last = read.addressed
    reading = _Reading(read.texts, kinds, at, owner, static, result_call, at[is_result],
                       np.concatenate((call_at, np.full(carried.size, -1, dtype=np.int64))), commands, len(calls),
                       read.agent_at, read.shown, (first, last, call_at[addressed_call]))
    return reading, read


@dataclass(frozen=True, slots=True)
class _WordFacts:
    """Per result: words it showed first (novel), those no later result shows (live), those of them
    nobody wrote (unsaid), those written since (refs) and when last (-1: never). Per call: its own words
    written again after its result; its paths named by a later read or edit. Recent: the words of a result
(a call) that the calls and results of the newest `RECENT_PAIRS` pairs show elsewhere. Held: the words a
result is the latest to show (it holds them now: labels-v1's last-provider rule), those nobody wrote, of
them paths and words shown more than once; credits: words first written after a result showed them
while it held them, and when last. Readers: the paths a call is the latest non-editing call to name,
and of them those some edit names."""

    novel: np.ndarray
    recent: np.ndarray
    recent_share: np.ndarray
    call_recent: np.ndarray
    live: np.ndarray
    unsaid: np.ndarray
    refs: np.ndarray
    last_ref: np.ndarray
    input_referenced: np.ndarray
    reread: np.ndarray
    edited: np.ndarray
    held: np.ndarray
    held_unsaid: np.ndarray
    held_unsaid_paths: np.ndarray
    held_unsaid_repeated: np.ndarray
    credits: np.ndarray
    last_credit: np.ndarray
    reader_paths: np.ndarray
    reader_paths_edited: np.ndarray
    intro: np.ndarray
    intro_unsaid: np.ndarray
    intro_unique_unsaid: np.ndarray
    intro_unique_unsaid_paths: np.ndarray
    intro_last_said: np.ndarray
    agent_refs: np.ndarray  # per result: the words it showed first that the agent wrote in its own words since
    agent_last_ref: np.ndarray  # and when last (-1: never)
    agent_recent: np.ndarray  # its words the agent's newest words name
    held_agent: np.ndarray  # the words it holds that the agent wrote since it showed them
    intro_agent: np.ndarray  # the distinctive words it introduced that the agent wrote since
    live_unwritten: np.ndarray  # `unsaid`, `held_unsaid`, `intro_unique_unsaid` with the agent's words as said
    held_unwritten: np.ndarray
    intro_unwritten: np.ndarray


def _agent_facts(words: Words, lead: np.ndarray, agent_words: RawWords, agent_at: np.ndarray, recent_from: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per word group (`lead`: each group's first entry): the last message in which the agent wrote the
    word in its own words (-1: never), and whether it did in its newest ones (from `recent_from`). The
    agent's words are hashed apart, so they are matched by the hash's top bits, as `Words.hash` holds them."""
    n_groups = lead.size
    if not agent_words.hash.size:
        return np.full(n_groups, -1, dtype=np.int64), np.zeros(n_groups, dtype=bool)
    keys = agent_words.hash >> np.uint64(words.shift)
    when = agent_at[agent_words.segment.astype(np.intp)]
    sort = np.lexsort((when, keys))  # by key, then message: each key's last entry is its latest
    keys, when = keys[sort], when[sort]
    last = np.roll(run_starts(keys), -1)
    unique, latest = keys[last], when[last]
    hashes = words.hash[lead]
    k = np.minimum(np.searchsorted(unique, hashes), unique.size - 1)
    found = unique[k] == hashes
    last_written = np.where(found, latest[k], -1)
    return last_written, last_written >= recent_from


def _word_facts(reading: _Reading, words: Words, edit: np.ndarray, recent_from: int, common: np.ndarray,
                agent_words: RawWords) -> _WordFacts:
    kind, at, owner = (a[words.segment] for a in (reading.kind, reading.at, reading.owner))
    n_results, n_calls = reading.result_at.size, reading.call_at.size
    # groups: one per distinct word, its first segment leading
    new = run_starts(words.hash)
    group = np.cumsum(new) - 1
    n_groups = int(group[-1]) + 1 if group.size else 0
    lead = np.flatnonzero(new)
    is_said = kind != _RESULT  # a call or a text outside the agent's (those are read apart: `_agent_facts`)
    shown = np.bincount(group, weights=~is_said, minlength=n_groups)
    said = np.bincount(group, weights=is_said, minlength=n_groups)
    last_said = np.full(n_groups, -1, dtype=np.int64)
    np.maximum.at(last_said, group[is_said], at[is_said])

    in_recent = (at >= recent_from) & (kind != _TEXT)
    recent_count = np.bincount(group, weights=in_recent, minlength=n_groups)
    elsewhere = recent_count[group] - in_recent > 0  # the word shows in a recent segment besides this one
    is_result = kind == _RESULT
    recent = np.bincount(owner[is_result], weights=elsewhere[is_result], minlength=n_results)
    recent_share = recent / np.maximum(1, np.bincount(owner[is_result], minlength=n_results))
    call_recent = np.bincount(owner[kind == _CALL], weights=elsewhere[kind == _CALL], minlength=n_calls)

    novel_groups = np.flatnonzero(kind[lead] == _RESULT)
    holder = owner[lead][novel_groups]
    live = shown[novel_groups] == 1
    used = last_said[novel_groups] > reading.result_at[holder]
    last_ref = np.full(n_results, -1, dtype=np.int64)
    np.maximum.at(last_ref, holder[used], last_said[novel_groups][used])

    is_call = kind == _CALL
    own_call = owner[is_call]
    call_result_at = np.full(n_calls, np.iinfo(np.int64).max, dtype=np.int64)  # pending: never answered
    call_result_at[reading.result_call] = reading.result_at
    input_referenced = np.zeros(n_calls, dtype=bool)
    np.logical_or.at(input_referenced, own_call, last_said[group[is_call]] > call_result_at[own_call])

    is_path = is_call & words.path
    path_call, path_group, path_at = owner[is_path], group[is_path], at[is_path]
    by_edit = edit[path_call]
    last_read = np.full(n_groups, -1, dtype=np.int64)
    last_edit = np.full(n_groups, -1, dtype=np.int64)
    np.maximum.at(last_read, path_group[~by_edit], path_at[~by_edit])
    np.maximum.at(last_edit, path_group[by_edit], path_at[by_edit])
    reread = np.zeros(n_calls, dtype=bool)
    edited = np.zeros(n_calls, dtype=bool)
    np.logical_or.at(reread, path_call, last_read[path_group] > path_at)
    np.logical_or.at(edited, path_call, last_edit[path_group] > path_at)

    # held: a group's entries run in reading order, so its last result entry is its latest showing
    entry = np.arange(words.hash.size)
    shown_at = np.flatnonzero(is_result)
    last_shown = _last_of_runs(group[shown_at], shown_at)
    holding = owner[last_shown]
    held_groups = group[last_shown]
    unsaid_held = said[held_groups] == 0
    is_path_group = words.path[lead]
    # credits: a group's first call entry credits the result entry just before it in the group, unless the
    # task's text shows the word (the agent could have it from there)
    call_at_entry = np.flatnonzero(is_call)
    first_call = _first_of_runs(group[call_at_entry], call_at_entry)
    results_so_far = np.maximum.accumulate(np.where(is_result, entry, -1))  # latest result entry up to each
    task = np.bincount(group[kind == _TEXT], minlength=n_groups) > 0
    first_group = group[first_call]
    before = results_so_far[np.maximum(first_call - 1, 0)]
    credited = ~task[first_group] & (first_call > lead[first_group]) & (before >= lead[first_group])
    credit_owner, credit_at = owner[before[credited]], at[first_call[credited]]
    last_credit = np.full(n_results, -1, dtype=np.int64)
    np.maximum.at(last_credit, credit_owner, credit_at)
    # readers: a path group's latest non-editing call entry
    reading_entry = np.flatnonzero(is_path)[~by_edit]
    last_reader = _last_of_runs(group[reading_entry], reading_entry)
    edited_group = np.bincount(path_group[by_edit], minlength=n_groups) > 0
    reader = owner[last_reader]
    # provenance: the result that first showed a distinctive word that is neither the task's nor common
    # (`common`: the `portable` hashes of the words more than 2 % of the dev sessions show, shipped with
    # the weights), what of it the agent has not written yet, and when it last wrote one
    rare = ~_member(portable(words)[lead], common)
    intro_groups = novel_groups[(words.distinctive[lead] & rare & ~task)[novel_groups]]
    intro_holder = owner[lead][intro_groups]
    unsaid_intro = said[intro_groups] == 0
    unique_unsaid = unsaid_intro & (shown[intro_groups] == 1)
    intro_last_said = np.full(n_results, -1, dtype=np.int64)
    np.maximum.at(intro_last_said, intro_holder, last_said[intro_groups])
    # the agent's own words: of the words a result showed first, holds and introduced, those it wrote since
    agent_last, agent_recent = _agent_facts(words, lead, agent_words, reading.agent_at, recent_from)
    agent_used = agent_last[novel_groups] > reading.result_at[holder]
    agent_last_ref = np.full(n_results, -1, dtype=np.int64)
    np.maximum.at(agent_last_ref, holder[agent_used], agent_last[novel_groups][agent_used])
    result_entries = group[is_result]
    unwritten = (said == 0) & (agent_last < 0)  # per group: neither a call, a text nor the agent wrote it
    return _WordFacts(np.bincount(holder, minlength=n_results), recent, recent_share, call_recent,
                      np.bincount(holder, weights=live, minlength=n_results),
                      np.bincount(holder, weights=live & (said[novel_groups] == 0), minlength=n_results),
                      np.bincount(holder, weights=used, minlength=n_results), last_ref, input_referenced, reread,
                      edited, np.bincount(holding, minlength=n_results),
                      np.bincount(holding, weights=unsaid_held, minlength=n_results),
                      np.bincount(holding, weights=unsaid_held & is_path_group[held_groups], minlength=n_results),
                      np.bincount(holding, weights=unsaid_held & (shown[held_groups] >= 2), minlength=n_results),
                      np.bincount(credit_owner, minlength=n_results), last_credit,
                      np.bincount(reader, minlength=n_calls),
                      np.bincount(reader, weights=edited_group[group[last_reader]], minlength=n_calls),
                      np.bincount(intro_holder, minlength=n_results),
                      np.bincount(intro_holder, weights=unsaid_intro, minlength=n_results),
                      np.bincount(intro_holder, weights=unique_unsaid, minlength=n_results),
                      np.bincount(intro_holder, weights=unique_unsaid & is_path_group[intro_groups],
                                  minlength=n_results), intro_last_said,
                      np.bincount(holder, weights=agent_used, minlength=n_results), agent_last_ref,
                      np.bincount(owner[is_result], weights=agent_recent[result_entries], minlength=n_results),
                      np.bincount(holding, weights=agent_last[held_groups] > reading.result_at[holding],
                                  minlength=n_results),
                      np.bincount(intro_holder, weights=agent_last[intro_groups] > reading.result_at[intro_holder],
                                  minlength=n_results),
                      np.bincount(holder, weights=live & unwritten[novel_groups], minlength=n_results),
                      np.bincount(holding, weights=unwritten[held_groups], minlength=n_results),
                      np.bincount(intro_holder, weights=unique_unsaid & unwritten[intro_groups], minlength=n_results))


def _results_in(segments: np.ndarray, reading: _Reading) -> np.ndarray:
    """The results (numbers) of those of `segments` that are results' ends."""
    return reading.owner[segments[reading.kind[segments] == _RESULT]]


def _member(values: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Whether each value is in the sorted `table` (a search per value: the table is the larger)."""
    if not table.size:
        return np.zeros(values.size, dtype=bool)
    return table[np.minimum(np.searchsorted(table, values), table.size - 1)] == values


def _last_of_runs(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The value at the end of each run of equal `keys` (sorted keys: one per distinct key)."""
    return values[np.roll(run_starts(keys), -1)]  # a run ends where the next begins; the last at the end


def _first_of_runs(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The value at the start of each run of equal `keys`."""
    return values[run_starts(keys)]


_NO_WORDS = np.zeros(0, dtype=np.uint64)


def feature_matrix(transcript: Transcript, scan_chars: int = SCAN_CHARS, lines: bool = True,
                   common: np.ndarray = _NO_WORDS, agent: bool = True, numbers: bool = True
                   ) -> tuple[list[str], np.ndarray]:
    """The pair keys and their feature rows (`FEATURE_NAMES` order), at the end of the transcript, reading
    `scan_chars` characters of each result's ends for words. `lines=False` skips counting each result's
    lines, the one pass over whole results (a model without `result_lines`, as the shipped one, need not
    pay for it): that column is then NaN. `common`: the `portable` hashes of words too common to count as
    a result's own (the provenance features leave them out). `agent=False` skips reading the agent's own
    words, `numbers=False` line numbers: `AGENT_FEATURES` and `LINE_NUMBER_FEATURES` then read as if the
    agent wrote nothing and no result showed a line number (a model not scored on them need not pay)."""
    return FeatureReader(scan_chars, lines, common, agent, numbers)(transcript)


class FeatureReader:
    """`feature_matrix` for one history planned again and again: it keeps what reading the last transcript
    gave, and a transcript grown from that one (`jev.reading.analysis.extend`, its earlier messages proven
    unchanged) has only its new pairs, calls and segments read — the same rows as a first reading."""

    def __init__(self, scan_chars: int = SCAN_CHARS, lines: bool = True, common: np.ndarray = _NO_WORDS,
                 agent: bool = True, numbers: bool = True) -> None:
        self.scan_chars, self.lines, self.common, self.agent, self.numbers = scan_chars, lines, common, agent, numbers
        self._last: _Read | None = None  # replaced whole, never changed: a reader shared by threads stays sound

    def __call__(self, transcript: Transcript) -> tuple[list[str], np.ndarray]:
        if not transcript.pairs:
            return [], np.zeros((0, len(FEATURE_NAMES)))
        reading, self._last = _read(transcript, self.scan_chars, self.lines, self.agent, self.numbers, self._last)
        return _rows(transcript, reading, self._last, self.lines, self.common)


def _rows(transcript: Transcript, reading: _Reading, read: _Read, lines: bool, common: np.ndarray
          ) -> tuple[list[str], np.ndarray]:
    """The feature rows from what was read."""
    messages, pairs = transcript.messages, transcript.pairs
    edit = reading.commands[:, 0] == _CATEGORY_INDEX["edit"]
    n_messages, n_pairs = len(messages), len(pairs)
    calls_at = reading.call_at[: reading.calls_read]  # the history's calls, in call order, so ascending
    recent_from = int(calls_at[-min(RECENT_PAIRS, calls_at.size)]) if calls_at.size else 0
    w = _word_facts(reading, read.words.words(), edit, recent_from, common, read.agent_words)
    failed = np.zeros(reading.result_at.size, dtype=bool)  # a non-zero return code leads the result
    failed[_results_in(read.returncode, reading)] = True
    reading.static[_results_in(read.error, reading), 2] = 1
    reading.static[_results_in(read.truncation, reading), 3] = 1

    if reading.result_at.size != n_pairs:  # analyze pairs every result, in the order they appear
        raise ValueError("feature_matrix needs a transcript validated by jev.reading.analysis.analyze")
    edit_at = reading.call_at[edit]
    r = np.arange(n_pairs)  # pairs are numbered in the order their results appear: per-result arrays are per pair
    c = reading.result_call
    c_at, r_at, static = reading.call_at[c], reading.result_at, reading.static
    kind_of, runs, last_run = reading.commands[c].T  # per pair: its command's category, runs, last run
    X = np.empty((n_pairs, len(FEATURE_NAMES)))
    X[:, 0] = np.log1p(n_pairs - r - 1)
    X[:, 1] = np.log1p(n_messages - r_at - 1)
    X[:, 2] = (r + 1) / n_pairs
    X[:, 3:5] = np.log1p(static[:, 0:2])
    if not lines:
        X[:, 4] = np.nan
    X[:, 5] = failed
    X[:, 6:8] = static[:, 2:4]
    X[:, 8] = last_run > c_at
    X[:, 9] = w.reread[c]
    X[:, 10] = w.edited[c]
    X[:, 11] = np.log1p(w.novel)
    X[:, 12] = np.log1p(w.refs)
    X[:, 13] = w.refs > 0
    X[:, 14] = np.log1p(n_messages - 1 - np.maximum(w.last_ref, r_at))
    X[:, 15] = w.input_referenced[c]
    X[:, 16] = static[:, 4]
    X[:, 17] = np.log1p(w.live)
    X[:, 18] = np.log1p(w.unsaid)
    X[:, 19] = w.unsaid / np.maximum(1, w.novel)
    X[:, 20] = np.log1p(runs - 1)
    X[:, 21] = np.log1p(edit_at.size - np.searchsorted(edit_at, c_at, side="right"))
    X[:, 22] = np.log1p(n_pairs)
    X[:, 23] = np.log1p(edit_at.size)
    end = 24 + len(CATEGORIES)
    X[:, 24:end] = kind_of[:, None] == np.arange(len(CATEGORIES))
    X[:, end] = np.log1p(w.recent)
    X[:, end + 1] = w.recent_share
    X[:, end + 2] = np.log1p(w.call_recent[c])
    for k, column in enumerate((X[:, 3], X[:, 18], X[:, 17], X[:, end], X[:, 11], X[:, 18] - X[:, 3])):
        X[:, end + 3 + k] = _rank(column)
    h = end + 9
    per_kchar = 1000 / np.maximum(static[:, 0], 1)
    X[:, h] = np.log1p(w.held)
    X[:, h + 1] = np.log1p(w.held_unsaid)
    X[:, h + 2] = np.log1p(w.held_unsaid_paths)
    X[:, h + 3] = np.log1p(w.held_unsaid_repeated)
    X[:, h + 4] = np.log1p(w.held * per_kchar)
    X[:, h + 5] = np.log1p(w.held_unsaid * per_kchar)
    X[:, h + 6] = np.log1p(w.credits)
    never = -n_messages  # a result never credited reads as older than any credit could be
    X[:, h + 7] = np.log1p(n_messages - 1 - np.where(w.last_credit >= 0, w.last_credit, never))
    X[:, h + 8] = np.log1p(w.reader_paths[c])
    X[:, h + 9] = np.log1p(w.reader_paths_edited[c])
    X[:, h + 10] = np.where(X[:, 8] > 0, 0.0, np.log1p(runs))
    i = h + 11
    X[:, i] = np.log1p(w.intro)
    X[:, i + 1] = np.log1p(w.intro_unsaid)
    X[:, i + 2] = np.log1p(w.intro_unique_unsaid)
    X[:, i + 3] = np.log1p(w.intro_unique_unsaid_paths)
    X[:, i + 4] = np.log1p(w.intro_unsaid * per_kchar)
    X[:, i + 5] = np.log1p(n_messages - 1 - np.where(w.intro_last_said >= 0, w.intro_last_said, never))
    X[:, i + 6] = _rank(X[:, i + 2])
    a = i + 7
    X[:, a] = np.log1p(w.agent_refs)
    X[:, a + 1] = np.log1p(n_messages - 1 - np.where(w.agent_last_ref >= 0, w.agent_last_ref, never))
    X[:, a + 2] = np.log1p(w.agent_recent)
    X[:, a + 3] = np.log1p(w.held_agent)
    X[:, a + 4] = np.log1p(w.intro_agent)
    X[:, a + 5] = np.log1p(w.live_unwritten)
    X[:, a + 6] = np.log1p(w.held_unwritten)
    X[:, a + 7] = np.log1p(w.held_unwritten * per_kchar)
    X[:, a + 8] = np.log1p(w.intro_unwritten)
    X[:, a + 9] = _rank(X[:, a + 8])
    a += 5
    shown, used, last_use = _lines_used(reading, n_pairs)
    X[:, a + 5] = np.log1p(shown)
    X[:, a + 6] = np.log1p(used)
    X[:, a + 7] = np.log1p(n_messages - 1 - np.where(last_use >= 0, last_use, never))
    return [p.key for p in pairs], X


def _lines_used(reading: _Reading, n_pairs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per result: the line numbers it showed, those a later call addressed (within `_LINE_SLACK` of a
    range), and the last message doing so (-1: none). Each shown number is looked up in the elementary
    spans of the ranges' ends, each span holding the latest message addressing it (ranges laid on in
    message order: a later one overwrites)."""
    result, number = reading.shown
    first, last, when = reading.addressed
    shown = np.bincount(result, minlength=n_pairs)
    if not number.size or not first.size:
        return shown, np.zeros(n_pairs), np.full(n_pairs, -1, dtype=np.int64)
    ends = np.unique(np.concatenate((first - _LINE_SLACK, last + _LINE_SLACK + 1)))
    latest = np.full(ends.size, -1, dtype=np.int64)  # span k: [ends[k], ends[k + 1])
    starts, stops = np.searchsorted(ends, first - _LINE_SLACK), np.searchsorted(ends, last + _LINE_SLACK + 1)
    for k in np.argsort(when, kind="stable").tolist():
        latest[starts[k]:stops[k]] = when[k]
    span = np.searchsorted(ends, number, side="right") - 1
    at = np.where(span >= 0, latest[np.maximum(span, 0)], -1)
    used = at > reading.result_at[result]
    last_use = np.full(n_pairs, -1, dtype=np.int64)
    np.maximum.at(last_use, result[used], at[used])
    return shown, np.bincount(result, weights=used, minlength=n_pairs), last_use


def _rank(values: np.ndarray) -> np.ndarray:
    """Each value's place among the history's pairs, 0 (least) to 1 (most), ties in pair order: features
    relative to the history itself, so that histories of other lengths and agents read alike."""
    out = np.empty(values.size)
    out[np.argsort(values, kind="stable")] = np.arange(values.size) / max(values.size - 1, 1)
    return out


def transcript_features(transcript: Transcript, scan_chars: int = SCAN_CHARS, common: np.ndarray = _NO_WORDS
                        ) -> dict[str, list[float]]:
    """A feature vector (in `FEATURE_NAMES` order) for every pair, at the end of the transcript."""
    keys, X = feature_matrix(transcript, scan_chars, common=common)
    return dict(zip(keys, X.tolist(), strict=True))
