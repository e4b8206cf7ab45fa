"""Words worth tracking, found and hashed with numpy over one byte buffer of many texts (segments).

A word is a run of letters, digits, `_./-` and non-ASCII bytes; it is tracked when at least 4 bytes long
and either 8+ long or not all letters — shaped like a path, identifier or number. Words are identified by
a 64-bit polynomial hash of their bytes alone (the same word hashes alike in any buffer, so a table
shipped with the weights can be looked up: `portable`; once sorted, its top 62 - b bits, b the bits of
the segment count: 51 for a history of 2 000 segments), so equal words compare equal wherever they sit,
without a Python object per word. A word is *distinctive* when it holds a letter and a byte of another
class (a digit, `_`, `-`, `/`, `.` or non-ASCII): near the strict proxy's shape
(`calibration.labels.distinctive_tokens`) at the cost of one pass over runs, not bytes — camelCase
alone does not count, a hyphenated word does.
"""

from __future__ import annotations

import bisect
import functools
import re
import string
from dataclasses import dataclass

import numpy as np

_WORD_BYTES = frozenset((string.ascii_letters + string.digits + "_./-").encode()) | frozenset(range(0x80, 0x100))
# byte classes: 0 outside words, 1 letter, 2 other word byte (digit, `_`, `-`, non-ASCII), 3 `/` or `.`
_CLASS = bytes(0 if c not in _WORD_BYTES else 1 if chr(c) in string.ascii_letters else 3 if c in b"/." else 2
               for c in range(256))
_PRIME_INT = 0x9E3779B97F4A7C15
_PRIME = np.uint64(_PRIME_INT)
_INVERSE = pow(_PRIME_INT, -1, 1 << 64)  # the prime is odd: it has an inverse mod 2**64
_ROW_BITS = 16  # the buffer is hashed in rows of 2**16 bytes, each byte times P**(its place in its row)
_ROW = 1 << _ROW_BITS
SEPARATOR_TEXT = "\x00"  # before each segment: not a word byte, so no word spans two segments


@functools.cache
def _powers(base: int) -> np.ndarray:
    """base**0 .. base**(2**16 - 1) mod 2**64 (512 kB, made once)."""
    return np.concatenate(([np.uint64(1)], np.cumprod(np.full(_ROW - 1, base, dtype=np.uint64))))


def _spans(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """`starts` and `ends` interleaved, as `np.add.reduceat` reads [start, end) spans (every other sum)."""
    spans = np.empty(2 * starts.size, dtype=np.intp)
    spans[::2], spans[1::2] = starts, ends
    return spans


def _word_hashes(data: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The polynomial hash of each word [start, end) of `data`, position-free: sum of byte_j * P**(j-start+1)
    (mod 2**64). Each byte is multiplied by P to its place within its row of 2**16, so one small table
    serves any buffer; a word's row sum is then shifted to its own start by P**-(start's place), and the
    few words that cross into the next row add that row's part times P**(2**16)."""
    n = len(data)
    full = n >> _ROW_BITS << _ROW_BITS  # the bytes in whole rows; the rest is a part of one
    terms = np.empty(n + 1, dtype=np.uint64)
    terms[n] = 0  # a 0 past the end: a word may end at n
    values = np.frombuffer(data, dtype=np.uint8)
    powers = _powers(_PRIME_INT)
    np.multiply(values[:full].reshape(-1, _ROW), powers, out=terms[:full].reshape(-1, _ROW))
    np.multiply(values[full:], powers[: n - full], out=terms[full:n])
    row_end = ((starts >> _ROW_BITS) + 1) << _ROW_BITS
    crossing = np.flatnonzero(ends > row_end)
    first_end = ends.copy()
    first_end[crossing] = row_end[crossing]
    sums = np.add.reduceat(terms, _spans(starts, first_end))[::2]
    if crossing.size:
        rest = np.add.reduceat(terms, _spans(row_end[crossing], ends[crossing]))[::2]
        sums[crossing] += rest * np.uint64(pow(_PRIME_INT, _ROW, 1 << 64))
    return sums * _powers(_INVERSE)[starts & (_ROW - 1)] * _PRIME


COMMON_SHIFT = 24  # a word's hash without its low 24 bits names it across buffers: tables shipped with
# weights (the words too common to count) hold these, 40 bits each


def portable(words: Words) -> np.ndarray:
    """Each word's hash as it reads in any buffer (its top 40 bits), to look up in a shipped table."""
    if words.shift > COMMON_SHIFT:
        raise ValueError(f"a history of {2 ** (words.shift - 2)}+ segments is beyond the word tables' reach")
    return words.hash >> np.uint64(COMMON_SHIFT - words.shift)


@dataclass(frozen=True, slots=True)
class Buffer:
    """The segments' UTF-8, each after a separator, and where each one ends (exclusive, its separator
    counted)."""

    data: bytes
    bounds: np.ndarray

    @classmethod
    def of(cls, texts: list[str]) -> Buffer:
        joined = SEPARATOR_TEXT + SEPARATOR_TEXT.join(texts)
        data = joined.encode()
        if len(data) == len(joined):  # ASCII: characters are bytes
            lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
            return cls(data, 1 + np.cumsum(lengths + 1))
        separators = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0)
        if separators.size == len(texts):  # one before each text, none inside one: they mark the bounds
            return cls(data, np.append(separators[1:], len(data)) + 1)
        lengths = np.fromiter((len(t.encode()) for t in texts), dtype=np.int64, count=len(texts))
        return cls(data, 1 + np.cumsum(lengths + 1))

    def segment_of(self, positions: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.bounds, positions, side="right")

    def segments_containing(self, literals: tuple[bytes, ...]) -> np.ndarray:
        """The segments holding any of `literals` (none holds the separator), found with `bytes.find`:
        a literal search is many times faster than a regular expression's alternation. Once a literal is
        found in a segment, the search goes on from the segment's end."""
        data, bounds, ends = self.data, self.bounds.tolist(), []
        for literal in literals:
            at = data.find(literal)
            while at >= 0:
                end = at + len(literal) - 1
                ends.append(end)
                segment = bisect.bisect_right(bounds, end)
                at = data.find(literal, bounds[segment]) if segment < len(bounds) else -1
        return self.segment_of(np.asarray(ends, dtype=np.int64))

    def segments_matching(self, pattern: re.Pattern[bytes]) -> np.ndarray:
        """The segments in which `pattern` matches (a match opening with the separator belongs to the
        segment after it)."""
        return self.segment_of(np.asarray([m.end() - 1 for m in pattern.finditer(self.data)], dtype=np.int64))


@dataclass(frozen=True, slots=True)
class Words:
    """Distinct words per segment: `segment[i]` showed the word hashed `hash[i]` (the hash's top bits: the
    low ones hold the segment while sorting); `path[i]` if it names a path (has `/` or `.`). Sorted by hash,
    then segment, so each word's first segment leads its group."""

    hash: np.ndarray
    segment: np.ndarray
    path: np.ndarray
    distinctive: np.ndarray  # a letter and a byte of another class (near the strict proxy's shape)
    shift: int  # the low bits dropped from each word's 64-bit hash to make `hash`


@dataclass(frozen=True, slots=True)
class RawWords:
    """The words `find_words` tracks, one entry per occurrence in buffer order, before sorting: each one's
    full 64-bit position-free hash, segment, and flags. What one segment shows does not depend on the
    others, so the raw words of segments read in two buffers, concatenated (the later ones' segments
    numbered on), are those of one buffer holding both (`find_words` sorts them)."""

    hash: np.ndarray  # uint64
    segment: np.ndarray  # uint64
    path: np.ndarray  # bool
    distinctive: np.ndarray  # bool

    def then(self, later: RawWords, segments: int) -> RawWords:
        """These words and `later`'s, read from a buffer of the `segments`-th segment on."""
        return RawWords(np.concatenate((self.hash, later.hash)),
                        np.concatenate((self.segment, later.segment + np.uint64(segments))),
                        np.concatenate((self.path, later.path)), np.concatenate((self.distinctive, later.distinctive)))


def find_words(buffer: Buffer) -> Words:
    """The words worth tracking — at least 4 bytes and either 8+ long or not all letters (shaped like a
    path, identifier or number) — of each segment, hashed position-free: the polynomial hash of a word
    at [s, e) is scaled by P**(1-s), so equal words hash alike wherever they sit, in any buffer (mod 2**64)."""
    return sorted_words(raw_words(buffer), int(buffer.bounds.size))


def raw_words(buffer: Buffer) -> RawWords:
    """`find_words` before sorting. The bytes are read as runs of one class: a word is a row of runs, a
    path when a run of it is `/` or `.`, distinctive when it holds letters and another class. So only the
    hash touches every byte."""
    data, n = buffer.data, len(buffer.data)
    classes = np.zeros(n + 2, dtype=np.uint8)  # a non-word byte either side: every word starts and ends
    classes[1:-1] = np.frombuffer(data.translate(_CLASS), dtype=np.uint8)
    change = np.flatnonzero(classes[1:] != classes[:-1])  # where each run starts (n: after the last)
    run = classes[change + 1]  # each run's class
    in_word = (run > 0).view(np.int8)
    step = np.empty(run.size, dtype=np.int8)  # +1 where a word's runs begin, -1 at the run after its last
    step[:1] = in_word[:1]
    np.subtract(in_word[1:], in_word[:-1], out=step[1:])
    first, after = np.flatnonzero(step == 1), np.flatnonzero(step == -1)  # a word's first run, the run after it
    length = change[after] - change[first]
    keep = np.flatnonzero((length >= 8) | ((length >= 4) & ((after - first > 1) | (run[first] != 1))))
    first, after = first[keep], after[keep]
    starts, ends = change[first], change[after]
    # distinctive: a letter and another class (a run of letters alone, camelCase too, is not)
    letter_runs = np.zeros(run.size + 1, dtype=np.int32)
    np.cumsum(run == 1, dtype=np.int32, out=letter_runs[1:])
    distinctive = (after - first > 1) & (letter_runs[after] > letter_runs[first])
    slashes = np.flatnonzero(run == 3) if first.size else first  # runs of `/` or `.`: each in one word at most
    path = np.zeros(starts.size, dtype=bool)
    word = np.searchsorted(first, slashes, side="right") - 1  # the kept word starting at or before each
    inside = (word >= 0) & (after[np.maximum(word, 0)] > slashes)
    path[word[inside]] = True
    hashes = _word_hashes(data, starts, ends) if starts.size else np.zeros(0, dtype=np.uint64)
    return RawWords(hashes, buffer.segment_of(starts).astype(np.uint64), path, distinctive)


def sorted_words(raw: RawWords, segments: int) -> Words:
    """The raw words of a buffer of `segments` segments, one entry per word and segment, sorted: one sort
    of one key — the hash's top bits, then the segment, then two flags (a word's own)."""
    return KeyedWords.of(raw, segments).words()


def _shift(segments: int) -> np.uint64:
    """Where a word's key puts the hash's top bits: above the segment number and the two flags."""
    return np.uint64(segments.bit_length() + 2)


def _keys(raw: RawWords, shift: np.uint64) -> np.ndarray:
    return raw.hash >> shift << shift | raw.segment << np.uint64(2) | raw.path << np.uint64(1) | raw.distinctive


@dataclass(frozen=True, slots=True)
class KeyedWords:
    """Raw words with their keys sorted (`sorted_words`' one sort), kept so that the words of segments read
    later are put in place among them (`then`) rather than all sorted again: the same keys either way."""

    raw: RawWords
    segments: int  # the segments the keys were made for (their number sets the keys' layout)
    keys: np.ndarray  # uint64, sorted

    @classmethod
    def of(cls, raw: RawWords, segments: int) -> KeyedWords:
        return cls(raw, segments, np.sort(_keys(raw, _shift(segments))))

    def then(self, later: RawWords, segments: int) -> KeyedWords:
        """These words and `later`'s, read from a buffer of this one's `self.segments`-th segment on, in
        `segments` segments in all."""
        raw = self.raw.then(later, self.segments)
        shift = _shift(segments)
        if shift != _shift(self.segments):  # the segment number needs another bit: every key moves
            return KeyedWords.of(raw, segments)
        n = self.raw.hash.size  # the words `raw` holds from here on are `later`'s, placed by `RawWords.then`
        added = np.sort(_keys(RawWords(raw.hash[n:], raw.segment[n:], raw.path[n:], raw.distinctive[n:]), shift))
        return KeyedWords(raw, segments, np.insert(self.keys, np.searchsorted(self.keys, added), added))

    def words(self) -> Words:
        """One entry per word and segment, sorted."""
        shift = _shift(self.segments)
        key = self.keys[run_starts(self.keys >> np.uint64(2))]
        found = (key & ((np.uint64(1) << shift) - np.uint64(1))) >> np.uint64(2)
        return Words(key >> shift, found.astype(np.intp), (key >> np.uint64(1) & np.uint64(1)).astype(bool),
                     (key & np.uint64(1)).astype(bool), int(shift))


def run_starts(keys: np.ndarray) -> np.ndarray:
    """Where a run of equal `keys` begins (sorted keys: once per distinct key)."""
    start = np.ones(keys.size, dtype=bool)
    start[1:] = keys[1:] != keys[:-1]
    return start
