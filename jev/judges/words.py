"""Words worth tracking, found and hashed with numpy over one byte buffer of many texts (segments).

A word is a run of letters, digits, `_./-` and non-ASCII bytes; it is tracked when at least 4 bytes long
and either 8+ long or not all letters — shaped like a path, identifier or number. Words are identified by
a 64-bit polynomial hash, so equal words compare equal wherever they sit, without a Python object per
word.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

import numpy as np

_WORD_BYTES = frozenset((string.ascii_letters + string.digits + "_./-").encode()) | frozenset(range(0x80, 0x100))
# byte classes: 0 outside words, 1 letter, 2 other word byte (digit, `_`, `-`, non-ASCII), 3 `/` or `.`
_CLASS = bytes(0 if c not in _WORD_BYTES else 1 if chr(c) in string.ascii_letters else 3 if c in b"/." else 2
               for c in range(256))
_PRIME = np.uint64(0x9E3779B97F4A7C15)
_POWERS_KEPT = 1 << 19  # powers of the prime kept between calls: 4 MB
_powers = np.ones(1, dtype=np.uint64)
SEPARATOR_TEXT = "\x00"  # before each segment: not a word byte, so no word spans two segments


def _powers_to(n: int) -> np.ndarray:
    """P**0 .. P**n (mod 2**64); the table is kept for buffers up to `_POWERS_KEPT` bytes."""
    global _powers
    if _powers.size > n:
        return _powers[: n + 1]
    table = np.concatenate(([np.uint64(1)], np.cumprod(np.full(n, _PRIME, dtype=np.uint64))))
    if n < _POWERS_KEPT:
        _powers = table
    return table


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
        else:
            lengths = np.fromiter((len(t.encode()) for t in texts), dtype=np.int64, count=len(texts))
        return cls(data, 1 + np.cumsum(lengths + 1))

    def segment_of(self, positions: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.bounds, positions, side="right")

    def segments_matching(self, pattern: re.Pattern[bytes]) -> np.ndarray:
        """The segments in which `pattern` matches (a match opening with the separator belongs to the
        segment after it)."""
        return self.segment_of(np.asarray([m.end() - 1 for m in pattern.finditer(self.data)], dtype=np.int64))


@dataclass(frozen=True, slots=True)
class Words:
    """Distinct words per segment: `segment[i]` showed the word hashed `hash[i]`; `path[i]` if it names a
    path (has `/` or `.`). Sorted by hash, then segment, so each word's first segment leads its group."""

    hash: np.ndarray
    segment: np.ndarray
    path: np.ndarray


def find_words(buffer: Buffer) -> Words:
    """The words worth tracking — at least 4 bytes and either 8+ long or not all letters (shaped like a
    path, identifier or number) — of each segment, hashed position-free: the polynomial hash of a word
    at [s, e) is scaled by P**(n-s), so equal words hash alike wherever they sit (mod 2**64)."""
    data, n = buffer.data, len(buffer.data)
    classes = np.frombuffer(data.translate(_CLASS), dtype=np.uint8)
    word = (classes > 0).view(np.int8)
    edges = np.flatnonzero(word[1:] != word[:-1]) + 1
    if n and word[0]:
        edges = np.concatenate(([0], edges))
    if n and word[-1]:
        edges = np.concatenate((edges, [n]))
    starts, ends = edges[::2], edges[1::2]
    length = ends - starts
    keep = (length >= 8) | ((length >= 4) & _holds(classes >= 2, starts, ends))
    starts, ends = starts[keep], ends[keep]
    path = _contains(np.flatnonzero(classes == 3), starts, ends)  # `/` and `.` are few: search them
    powers = _powers_to(n)
    prefix = np.concatenate(([np.uint64(0)], np.cumsum(np.frombuffer(data, dtype=np.uint8) * powers[:n])))
    hashes = (prefix[ends] - prefix[starts]) * powers[n - starts]
    segment = buffer.segment_of(starts)
    order = np.lexsort((segment, hashes))
    hashes, segment, path = hashes[order], segment[order], path[order]
    distinct = np.ones(hashes.size, dtype=bool)
    distinct[1:] = (hashes[1:] != hashes[:-1]) | (segment[1:] != segment[:-1])
    return Words(hashes[distinct], segment[distinct], path[distinct])


def _contains(positions: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each span [start, end) contains one of the sorted `positions`."""
    if positions.size == 0:
        return np.zeros(starts.size, dtype=bool)
    first = np.searchsorted(positions, starts)
    return (first < positions.size) & (positions[np.minimum(first, positions.size - 1)] < ends)


def _holds(flags: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each span [start, end) holds a flagged byte."""
    running = np.concatenate(([0], np.cumsum(flags, dtype=np.int32)))
    return running[ends] > running[starts]
