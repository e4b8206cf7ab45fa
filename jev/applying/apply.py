"""Actions to a new message list (SPEC §6): drop pairs together, cut long results, touch nothing else —
but say what was let go: a dropped pair leaves a tombstone line, and a cut result's marker names its call
and how to bring it back (never an archive path, scope or user id)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..deciding.policy import Action, CompactionConfig
from ..model.canonical import canonical_json
from ..model.markers import TOMBSTONE_PREFIX
from ..model.transcript import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..reading.analysis import Pair, Transcript, place
from ..reading.state import cut

SHORT_RESULT_SLACK = 160
_INPUT_HEAD = 60


def _as_is(text: str) -> bool:
    """JSON writes `text` between quotes unchanged (printable ASCII without quotes or backslashes)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def quoted(text: str) -> str:
    """`text` as a JSON string (how markers and tombstones name a call id)."""
    return f'"{text}"' if _as_is(text) else canonical_json(text).decode()  # orjson's output, without the call


def _how(quoted_id: str, restore_tool: str | None) -> str:
    """How to bring back the call whose id, as a JSON string, is `quoted_id`."""
    return (f"restore it with {restore_tool}(call_id={quoted_id})" if restore_tool
            else f"ask the host to restore call {quoted_id}")


def _marker(quoted_id: str, restore_tool: str | None) -> str:
    return f"[JEV archived the full result of call {quoted_id}; {_how(quoted_id, restore_tool)}; " \
           "do not re-execute this tool for recovery.]"


def _tombstone(quoted_id: str, tool: str, head: str, restore_tool: str | None) -> str:
    return (f"{TOMBSTONE_PREFIX}{quoted_id} ({tool} {head}) and its result; "
            f"{_how(quoted_id, restore_tool)}; do not re-execute this tool for recovery.]")


def truncation_marker(call_id: str, config: CompactionConfig) -> str:
    """The marker ending a cut result: it names the call and the way back."""
    return _marker(quoted(call_id), config.restore_tool)


def tombstone(pair: Pair, config: CompactionConfig) -> str:
    """The line a dropped pair leaves: its tool, the head of its input, its call id, the way back."""
    return _tombstone(quoted(pair.call_id), pair.tool, cut(pair.input_json, _INPUT_HEAD), config.restore_tool)


def truncated_output(pair: Pair, config: CompactionConfig) -> tuple[TextBlock, ...] | None:
    """The replacement output for a TRUNCATE_RESULT, or None when the result is short enough to keep."""
    text, head_chars = pair.result.text, config.truncate_head_chars
    if len(text) <= head_chars + SHORT_RESULT_SLACK:
        return None
    return (TextBlock(cut(text, head_chars) + "\n" + truncation_marker(pair.call_id, config)),)


@functools.lru_cache(maxsize=64)
def _fixed_chars(restore_tool: str | None) -> tuple[int, int]:
    """Characters of a marker and of a tombstone naming the empty call id (`""`) with an empty tool and
    input head: each grows by twice the quoted id's extra length (it names the call twice) and, a
    tombstone, by the tool's and the head's."""
    return len(_marker('""', restore_tool)), len(_tombstone('""', "", "", restore_tool))


@dataclass(frozen=True, slots=True)
class LetGo:
    """The characters of result text letting go of each pair removes, by pair key, net of what it leaves: a
    truncation keeps a head and the marker (0 when the result is short enough to keep), a drop leaves its
    tombstone line (when tombstones are on). Counted, not built: a plan sizes every candidate and writes
    few. Two maps of integers, not an object per pair: the garbage collector tracks neither."""

    truncate: dict[str, int]
    drop: dict[str, int]


def let_go(pairs: Sequence[Pair], config: CompactionConfig) -> LetGo:
    """The `LetGo` of the pairs under `config`: the lengths `truncated_output` and `tombstone` would
    write."""
    head, stones = config.truncate_head_chars, config.tombstones
    marker, stone = _fixed_chars(config.restore_tool)
    truncates: dict[str, int] = {}
    drops: dict[str, int] = {}
    for pair in pairs:
        size, call_id = pair.result_chars, pair.call_id
        named = 2 * (len(call_id) if _as_is(call_id) else len(quoted(call_id)) - 2)  # it names the call twice
        truncates[pair.key] = 0 if size <= head + SHORT_RESULT_SLACK else size - (head + 1 + marker + named)
        drops[pair.key] = max(0, size - (stone + named + len(pair.tool) + min(len(pair.input_json), _INPUT_HEAD))) \
            if stones else size
    return LetGo(truncates, drops)


class LetGoSizes:
    """`let_go` for one compactor, planning a history again and again: a pair it sized in the last plan (the
    same frozen `Pair`, which a grown history keeps) is not sized again — its savings depend on nothing
    else but the config's cut, tombstones and restore tool. It keeps only the last plan's pairs."""

    def __init__(self) -> None:
        # the config's fields the sizes depend on, the last plan's pairs by key and their sizes: one value,
        # replaced whole (a compactor and its `for_tokens` copy share this)
        self._last: tuple[tuple[int, bool, str | None] | None, dict[str, Pair], LetGo] = (None, {}, LetGo({}, {}))

    def __call__(self, pairs: Sequence[Pair], config: CompactionConfig) -> LetGo:
        writes = (config.truncate_head_chars, config.tombstones, config.restore_tool)
        then, known, last = self._last
        if writes != then:
            known = {}
        missing = [p for p in pairs if known.get(p.key) is not p]
        fresh = let_go(missing, config)
        if len(missing) == len(pairs):
            out = fresh
        else:
            out = LetGo({}, {})
            truncates, drops = out.truncate, out.drop
            for pair in pairs:
                key = pair.key
                sized = fresh if key in fresh.truncate else last
                truncates[key], drops[key] = sized.truncate[key], sized.drop[key]
        self._last = (writes, {p.key: p for p in pairs}, out)
        return out


def apply_actions(transcript: Transcript, decisions: Mapping[str, Action], config: CompactionConfig) -> list[Message]:
    """The compacted history. Unchanged messages are the same objects; changed ones keep every field
    but their content; a message left with no blocks is removed. With `config.tombstones` each dropped
    pair leaves its tombstone line as a message of its own where its call was, after the results that
    follow that message (a message made here, so every form writes it afresh; never between a call's
    message and its results, never a lone result)."""
    return Applier()(transcript, decisions, config)


class Applier:
    """`apply_actions` for one compactor, planning a history again and again: a message it changed the same
    way last time (the same message object, the same let-gos of the same pairs) is not made again but
    taken from then — what it makes depends on nothing else (frozen values; mutable parts are shared by
    reference, not copied) and the config's cut, tombstones and restore tool. It keeps only what the last
    plan made. A message's let-gos are written as one string (`_signature`), so a plan that changes what the
    last one changed makes no object the collector tracks."""

    def __init__(self) -> None:
        self._writes: tuple[int, bool, str | None] | None = None  # the config's fields that shape what is made
        # by id(original message), in four maps rather than a tuple per message (the collector would track
        # each): the original, the let-gos changing it, what it became, the tombstones after it
        self._source: dict[int, Message] = {}
        self._signature: dict[int, str] = {}
        self._became: dict[int, Message | None] = {}
        self._lines: dict[int, tuple[Message, ...]] = {}

    def __call__(self, transcript: Transcript, decisions: Mapping[str, Action], config: CompactionConfig
                 ) -> list[Message]:
        writes = (config.truncate_head_chars, config.tombstones, config.restore_tool)
        if writes != self._writes:
            self._writes, self._source = writes, {}
        head = config.truncate_head_chars + SHORT_RESULT_SLACK
        acting: dict[int, str] = {}  # message index -> the let-gos changing it, in pair order (`_signature`)
        dropped: set[str] = set()  # places (call or result, message index, id): a call id may be reused
        for pair in transcript.pairs:
            action = decisions.get(pair.key, Action.KEEP)
            if action is Action.DROP_PAIR:
                dropped.add(place(False, pair.call_message, pair.call_id))
                dropped.add(place(True, pair.result_message, pair.call_id))
                sign = _signature(pair.key, action)
                acting[pair.call_message] = acting.get(pair.call_message, "") + sign
                if pair.result_message != pair.call_message:
                    acting[pair.result_message] = acting.get(pair.result_message, "") + sign
            elif action is Action.TRUNCATE_RESULT and pair.result_chars > head:  # else nothing to cut
                acting[pair.result_message] = acting.get(pair.result_message, "") + _signature(pair.key, action)
        source, signature_of, became_of, lines_of = self._source, self._signature, self._became, self._lines
        sources: dict[int, Message] = {}
        signatures: dict[int, str] = {}
        becomes: dict[int, Message | None] = {}
        lines_after: dict[int, tuple[Message, ...]] = {}
        out: list[Message] = []
        waiting: list[Message] = []  # tombstones held back until the results of their message's calls are past
        for i, message in enumerate(transcript.messages):
            if waiting and not _answers(message):
                out += waiting
                waiting = []
            signature = acting.get(i)
            if signature is None:
                out.append(message)
                continue
            k = id(message)
            if source.get(k) is message and signature_of[k] == signature:
                became, lines = became_of[k], lines_of[k]
            else:
                became, lines = _changed(message, i, _acts(transcript, signature), dropped, config)
            sources[k], signatures[k], becomes[k], lines_after[k] = message, signature, became, lines
            if became is not None:
                out.append(became)
            waiting += lines  # where the call was, after its message's results: a message of its own
        out += waiting
        self._source, self._signature, self._became, self._lines = sources, signatures, becomes, lines_after
        _assert_results_have_calls(transcript, dropped)
        return out


def _answers(message: Message) -> bool:
    """A message of results (a tool loop's answers): nothing may come between a call's message and these —
    OpenAI Chat refuses it, and Anthropic wants the results in the very next message."""
    return any(isinstance(b, ToolResultBlock) for b in message.content)


_CODES = {Action.TRUNCATE_RESULT: "T", Action.DROP_PAIR: "D"}
_ACTIONS = {code: action for action, code in _CODES.items()}


def _signature(key: str, action: Action) -> str:
    """One let-go as text: the pair's key, its action's letter, a space (a key holds none)."""
    return f"{key}{_CODES[action]} "


def _acts(transcript: Transcript, signature: str) -> list[tuple[Pair, Action]]:
    """The let-gos a `_signature` string names, as (pair, action) in its order."""
    return [(transcript.pair(word[:-1]), _ACTIONS[word[-1]]) for word in signature.split()]


def _changed(message: Message, i: int, acts: list[tuple[Pair, Action]], dropped: set[str],
             config: CompactionConfig) -> tuple[Message | None, tuple[Message, ...]]:
    """Message `i` with its let-gos applied (None when no block is left), and the tombstones of the pairs
    whose calls it held."""
    replaced: dict[str, ToolResultBlock] = {}
    lines: list[Message] = []
    for pair, action in acts:
        if action is Action.TRUNCATE_RESULT:
            r, output = pair.result, truncated_output(pair, config)
            if output is not None:  # always, for the results `Applier` lets through
                replaced[place(True, i, pair.call_id)] = ToolResultBlock(r.id, r.name, output, r.state, r.metadata)
        elif config.tombstones and pair.call_message == i:
            lines.append(Message(f"{message.id}~dropped~{pair.call_id}", "assistant",
                                 (TextBlock(tombstone(pair, config)),)))
    blocks: list[Block] = []
    for block in message.content:
        if isinstance(block, (ToolUseBlock, ToolResultBlock)):
            at = place(isinstance(block, ToolResultBlock), i, block.id)
            if at in dropped:
                continue
            block = replaced.get(at, block)
        blocks.append(block)
    if not blocks:
        return None, tuple(lines)
    return (Message(message.id, message.role, tuple(blocks), message.name, message.metadata, message.timestamp,
                    message.origin)
            if type(message) is Message  # 3x cheaper than replace()
            else message.replace(content=tuple(blocks))), tuple(lines)


def _assert_results_have_calls(transcript: Transcript, dropped: set[str]) -> None:
    """Provider rules hold: every call let go of takes its result with it (blocks leave only through
    `dropped`, so this is all that could leave a result without its call)."""
    for at in dropped:
        if at[0] == "c":  # a call's place: its pair's result must go too
            pair = transcript.places.get(at)
            if pair is None or place(True, pair.result_message, pair.call_id) not in dropped:
                raise RuntimeError(f"internal error: result of call place {at!r} would survive without its call")
