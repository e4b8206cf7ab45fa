"""Trajectories in, decision-point rows out: features known at each point and labels from what followed.

A session is simulated the way a host runs compaction: a decision point after every `every` pairs, the
newest `protect` pairs kept out of judgment. Features come from `jev.judges.features` on the history
prefix — the same code the local judge runs — and labels from `calibration.labels` on the full history.
"""

from __future__ import annotations

import multiprocessing
import os
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import orjson

from jev import formats
from jev.judges.features import FEATURE_NAMES, SCAN_CHARS, FeatureReader
from jev.model.canonical import canonical_json
from jev.model.transcript import Message
from jev.reading.analysis import analyze, extend

from .labels import later_reuse, pair_uses, strict_uses
from .rarity import Rarity


def raw_trajectories(source: str | Path) -> Iterator[tuple[str, bytes]]:
    """(session id, JSON or JSON Lines bytes) from a `.tar`/`.tar.xz` of trajectories or a directory of them, sorted
    by name so every run sees the same order. Where some are named `*.traj.json` (as mini-swe-agent names
    them) only those are read: a run folder also holds `preds.json` and other JSON that is no trajectory."""
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.name.endswith(formats.TRANSCRIPT_SUFFIXES) and p.is_file())
        for file in _trajectories_only(files, str):
            yield formats.session_id(file.as_posix(), path.as_posix()), file.read_bytes()
        return
    found: list[tuple[str, bytes]] = []
    with tarfile.open(path, "r|*") as tar:  # one streaming pass: random access into .xz is quadratic
        for member in tar:
            if member.isfile() and member.name.endswith(formats.TRANSCRIPT_SUFFIXES):
                found.append((member.name, tar.extractfile(member).read()))  # type: ignore[union-attr]
    for name, data in _trajectories_only(sorted(found), lambda item: item[0]):
        yield formats.session_id(name, ""), data


T = TypeVar("T")


def _trajectories_only(items: list[T], name: Callable[[T], str]) -> list[T]:
    """The `*.traj.json` among `items` when there are any, else all of them."""
    named = [item for item in items if name(item).endswith(".traj.json")]
    return named or items


def trajectories(source: str | Path, format: str = "mini-swe-agent") -> Iterator[tuple[str, list[Message]]]:
    """(session id, messages) of every trajectory in `source`."""
    for session, data in raw_trajectories(source):
        yield session, formats.load(orjson.loads(data), format)


def group_of(session: str) -> str:
    """The group a session belongs to for splitting: its instance (the file name), so that the runs of one
    instance always land in the same split — and the stretches `jev replay` names apart in one session Claude
    Code compacted itself (`jev.formats.parse_conversation_id`) with it."""
    return formats.parse_conversation_id(session)[0].rsplit("/", 1)[-1]


class _Serial:
    """A stand-in for a process pool when one worker is asked for."""

    def __enter__(self) -> _Serial:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def imap(self, fn, items, chunksize: int = 1):
        return map(fn, items)


@dataclass(frozen=True, slots=True)
class TrainingRows:
    """Decision-point rows: features `X`, labels, and per-row session, pair key and decision point."""

    X: np.ndarray
    needed_result: np.ndarray
    needed_call: np.ndarray
    sessions: np.ndarray
    keys: np.ndarray
    points: np.ndarray
    result_chars: np.ndarray
    needed_result_alt: np.ndarray | None = None  # labels-v2-reuse, the second proxy
    call_chars: np.ndarray | None = None  # characters of the call's input (canonical JSON)
    call_ids: np.ndarray | None = None  # the pair's call id (its truncation marker names it)
    needed_strict: np.ndarray | None = None  # labels-v3-strict, the strict proxy

    @classmethod
    def concat(cls, parts: list[TrainingRows]) -> TrainingRows:
        """The rows of several sources, one after the other."""
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))

    def take(self, index: np.ndarray) -> TrainingRows:
        """The rows at `index`."""
        return TrainingRows(*(getattr(self, f)[index] for f in self.__dataclass_fields__))


def session_rows(session: str, messages: list[Message], every: int = 8, protect: int = 3,
                 scan_chars: int = SCAN_CHARS, rarity: Rarity = Rarity()) -> list[tuple]:
    """TrainingRows of one session: (features, needed_result, needed_call, session, key, point, result_chars,
    needed_result_alt, call_chars, call_id, needed_strict); the features read `scan_chars` of each result
    end; `rarity` holds what is too common to count (the strict proxy's tokens, the features' words)."""
    full = analyze(messages)
    uses = pair_uses(full)
    reuse = later_reuse(full)
    strict = strict_uses(full, rarity.tokens)
    rows = []
    # each prefix the last one grown (the same message objects): analyzed and read from where that one
    # ended, as a compactor planning a growing history does — the same rows as reading each afresh
    reader, prefix = FeatureReader(scan_chars, common=rarity.words), None
    for n in range(every, len(full.pairs) + 1, every):
        s = full.pairs[n - 1].result_message
        prefix = analyze(messages[: s + 1]) if prefix is None else extend(prefix, messages[: s + 1])
        keys, X = reader(prefix)
        feats = dict(zip(keys, X.tolist(), strict=True))
        for pair in prefix.pairs[: max(0, n - protect)]:
            use = uses[pair.key]
            rows.append((feats[pair.key], use.needed_result(s), use.needed_call(s), session, pair.key, s,
                         len(pair.result.text), reuse[pair.key] > s, len(canonical_json(pair.call.input)),
                         pair.call_id, strict[pair.key] > s))
    return rows


_RARITY = Rarity()  # a worker's copy of the common tables (set once per process)


def _set_rarity(rarity: Rarity) -> None:
    global _RARITY
    _RARITY = rarity


def _rows_of(item: tuple[str, bytes, int, int, int]) -> list[tuple]:
    session, data, every, protect, scan_chars = item
    return session_rows(session, formats.load(orjson.loads(data), "mini-swe-agent"), every, protect, scan_chars,
                        _RARITY)


def build_rows(source: str | Path, every: int = 8, protect: int = 3, progress=None, workers: int | None = None,
               scan_chars: int = SCAN_CHARS, rarity: Rarity | None = None) -> TrainingRows:
    """All rows of all sessions in `source`, in session order (sessions spread over `workers` processes).
    `rarity`: what is too common to count (default: the tables shipped with the local judge)."""
    rows: list[tuple] = []
    items = ((session, data, every, protect, scan_chars) for session, data in raw_trajectories(source))
    workers = workers or min(4, os.cpu_count() or 1)
    rarity = Rarity.shipped() if rarity is None else rarity
    _set_rarity(rarity)
    with (multiprocessing.get_context("spawn").Pool(workers, _set_rarity, (rarity,)) if workers > 1
          else _Serial()) as pool:
        for part in pool.imap(_rows_of, items, chunksize=4):
            rows.extend(part)
            if progress is not None:
                progress(part[0][3] if part else "")
    if not rows:
        return TrainingRows(np.zeros((0, len(FEATURE_NAMES))), *(np.zeros(0) for _ in range(10)))
    cols = list(zip(*rows, strict=True))
    return TrainingRows(np.asarray(cols[0], dtype=float), np.asarray(cols[1], dtype=bool), np.asarray(cols[2], dtype=bool),
                np.asarray(cols[3]), np.asarray(cols[4]), np.asarray(cols[5]), np.asarray(cols[6]),
                np.asarray(cols[7], dtype=bool), np.asarray(cols[8]), np.asarray(cols[9]),
                np.asarray(cols[10], dtype=bool))
