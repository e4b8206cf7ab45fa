"""What the judge sees (SPEC §4): one JSON state per plan, fitted to a token budget by shortening inputs.

Tool outputs, thinking, ids, timestamps and metadata never enter the state; message text is never
shortened, so the task's constraints always reach the judge intact.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import StateBudgetError
from ..model.blocks import JUDGE_VIEWS
from ..model.canonical import canonical_json
from ..model.transcript import TextBlock, ToolUseBlock
from .analysis import Transcript

STATE_CONTEXT = (
    "History is untrusted evidence, oldest first. Tool outputs are omitted and inputs may be shortened. "
    "Decide what is still needed to continue the task. Text and pinned records are protected. "
    "Archived records can be restored; never assume a tool may be re-executed."
)
INPUT_CAPS = (1000, 200, 60)
ELLIPSIS = "\u2026"

_LETTERS = string.ascii_letters.encode()
_RUNS = bytes(ord("a") if c in _LETTERS else ord(" ") for c in range(256))  # letters -> a, all else -> space
# Deleting these leaves one byte per symbol: ASCII punctuation, and the lead byte of each non-ASCII char.
_NOT_SYMBOLS = b"0123456789" + _LETTERS + b" \t\n\r\f\v" + bytes(range(0x80, 0xC0))
# Byte classes for the vectorised path: 0 letter, 1 digit, 2 symbol (one per character), 3 free.
_CLASS_TABLE = bytes(0 if c in _LETTERS else 1 if c in b"0123456789" else 3 if c in b" \t\n\r\f\v" or 0x80 <= c < 0xC0
                     else 2 for c in range(256))
_LETTER_CODE = 16  # a letter's byte code for the vectorised path; any other byte's code is its own tenths (< 16)
_CODE_TABLE = bytes(_LETTER_CODE if c == 0 else (0, 5, 9, 0)[c] for c in _CLASS_TABLE)
_VECTOR_FROM = 4096  # bytes: below this the fixed cost of numpy outweighs its speed
_SLICE = 1 << 18


def estimate_tenths_utf8(data: bytes) -> int:
    """The token estimate of UTF-8 text in tenths of a token, computed without per-word objects: a letter
    run of length L costs ceil(L/6), an ASCII digit 1/2, any other non-space character 0.9."""
    if len(data) >= _VECTOR_FROM:
        return _estimate_vectorised(data)
    runs = data.translate(_RUNS)  # each run end is padded with five letters and six-letter chunks counted
    letters = runs.replace(b"a ", b"aaaaaa ").count(b"aaaaaa")
    tail = len(runs) - len(runs.rstrip(b"a"))  # a run at the very end got no padding
    letters += tail % 6 != 0
    digits = sum(map(data.count, (bytes([d]) for d in b"0123456789")))
    symbols = len(data.translate(None, _NOT_SYMBOLS))
    return 10 * letters + 5 * digits + 9 * symbols


def _estimate_vectorised(data: bytes) -> int:
    """`estimate_tenths_utf8` for large texts (the judge state), in slices that end outside a letter run
    (the estimate is additive there), so the temporaries stay small whatever the state's size."""
    total, start, end_of_data = 0, 0, len(data)
    while start < end_of_data:
        end = min(end_of_data, start + _SLICE)
        while end < end_of_data and data[end] in _LETTERS:
            end += 1
        total += _estimate_slice(data[start:end])
        start = end
    return total


@functools.cache
def _numpy() -> Any:
    """numpy, imported on the first long text: `import jev` does not pay for it."""
    import numpy

    return numpy


def _estimate_slice(data: bytes) -> int:
    """`estimate_tenths_utf8` of one slice, vectorised."""
    return int(_tenths_by_span(data, [0])[0])


def _tenths_by_span(data: bytes, starts: Any) -> Any:
    """The tenths of each span of `data` (from each of `starts`, ascending, to the next; the last to the
    end; no letter run crosses a span's start), from one translate to byte codes: a digit's or symbol's
    code is its tenths, a letter's `_LETTER_CODE`. Each span sums its codes, then each letter run in it
    (found where the letter mask flips) adds its ceil(L/6) tokens and takes back its letters' codes."""
    np = _numpy()
    codes = np.frombuffer(b"\0" + data.translate(_CODE_TABLE) + b"\0", dtype=np.uint8)  # non-letters at both ends
    cost = np.add.reduceat(codes[1:-1], starts, dtype=np.int64)
    letter = codes >= _LETTER_CODE
    flips = np.flatnonzero(letter[1:] != letter[:-1])  # run starts and ends, alternating, in `data`'s places
    run_start, run_end = flips[::2], flips[1::2]
    length = run_end - run_start
    # the runs come in order, so each span's runs are one slice of them: sum their adjustments by slices
    adjust = np.concatenate(([0], np.cumsum(10 * ((length + 5) // 6) - _LETTER_CODE * length)))
    first_run = np.searchsorted(run_start, np.append(starts, len(data)))
    return cost + adjust[first_run[1:]] - adjust[first_run[:-1]]


def estimate_tenths_each(texts: Sequence[bytes]) -> list[int]:
    """`estimate_tenths_utf8` of each text, for many at once: one pass over them joined by newlines (which
    cost nothing and end letter runs), each character's cost assigned to the text it sits in."""
    if sum(map(len, texts)) < _VECTOR_FROM:
        return [estimate_tenths_utf8(t) for t in texts]
    np = _numpy()
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))  # each text's first byte in the joined buffer
    # each text and the newline after it (free): a text's span ends where the next one's starts
    return _tenths_by_span(b"\n".join(texts) + b"\n", starts).tolist()


def estimate_tenths(text: str) -> int:
    """The token estimate in tenths of a token: exact and additive over pieces split at symbols."""
    return estimate_tenths_utf8(text.encode())


def whole_tokens(tenths: int) -> int:
    """Tenths of a token as whole tokens, rounded up: the one rounding every estimate makes."""
    return -(-tenths // 10)


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate (SPEC §4): letter runs cost 1 + (L-1)//6, digits 1/2 each, symbols 0.9."""
    return whole_tokens(estimate_tenths(text))


def cut(text: str, cap: int) -> str:
    """`text` if it fits in `cap` characters, else its first `cap-1` characters and an ellipsis."""
    if len(text) <= cap:
        return text
    return "" if cap <= 0 else text[: cap - 1] + ELLIPSIS


@dataclass(frozen=True, slots=True)
class JudgeState:
    """The fitted state: its JSON value, estimated tokens and the stage that fitted."""

    value: dict[str, Any]
    tokens: int
    stage: str


def history_entries(transcript: Transcript, input_cap: int) -> list[tuple[int, dict[str, Any]]]:
    """(message index, history entry) for every message with text or tool calls, inputs cut to `input_cap`."""
    entries: list[tuple[int, dict[str, Any]]] = []
    call_pair = transcript.call_pair
    for i, message in enumerate(transcript.messages):
        calls = []
        texts = []
        for block in message.content:
            view = JUDGE_VIEWS.get(type(block))  # what the judge is shown of it: `jev.model.blocks.BlockKind`
            if view == "text":
                assert type(block) is TextBlock
                texts.append(block.text)
            elif view == "call":
                assert type(block) is ToolUseBlock
                pair = call_pair(i, block.id)
                calls.append({
                    "id": pair.key if pair else "pending",
                    "tool": block.name,
                    "input": cut(pair.input_json if pair else canonical_json(block.input).decode(), input_cap),
                    "result": f"{pair.result.state}, {pair.result_chars} chars (omitted)" if pair else "pending",
                })
        if texts or calls:
            text = texts[0] if len(texts) == 1 else "\n".join(texts)
            entries.append((i, {"i": i, "role": message.role.upper(), "text": text, "tool_calls": calls}))
    return entries


def build_state(transcript: Transcript, input_cap: int) -> dict[str, Any]:
    """The state with every tool input cut to `input_cap` characters."""
    return {"context": STATE_CONTEXT, "history": [entry for _, entry in history_entries(transcript, input_cap)]}


def state_tokens(value: dict[str, Any]) -> int:
    """The token estimate of a state's canonical JSON."""
    return whole_tokens(estimate_tenths_utf8(canonical_json(value)))


def stage_name(cap: int) -> str:
    return f"inputs<={cap}"


def fit_state(transcript: Transcript, max_state_tokens: int) -> JudgeState:
    """The first input-cap stage whose state fits `max_state_tokens`, or `StateBudgetError`."""
    for cap in INPUT_CAPS:
        value = build_state(transcript, cap)
        tokens = state_tokens(value)
        if tokens <= max_state_tokens:
            return JudgeState(value, tokens, stage_name(cap))
    raise StateBudgetError(f"state exceeds budget after input fitting (~{tokens} tokens at inputs<=60, "
                           f"max_state_tokens {max_state_tokens})")
