"""`jev label`: join shadow decision records with each session's full history and label every judged pair.

Records and transcripts are read through fsspec, so a fleet's logs on object storage work as they are.
A record is labelled at its decision point (the `history_messages` it judged); its pairs are matched to
the transcript by call id. Output rows are plain JSON objects, one per judged pair: labels-v1's
`needed_result`/`needed_call` (what calibration certifies on), and `needed_result_reuse`, the second proxy
(`labels-v2-reuse`, built differently), which the yardstick (`benchmarks/quality.py --labelled`) reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import fsspec
import orjson

from jev import formats
from jev.reading.analysis import analyze

from .labels import LABEL_VERSION, later_reuse, pair_uses, strict_uses
from .rarity import Rarity


def read_records(url: str) -> Iterator[dict[str, Any]]:
    """Decision records from JSON Lines on any fsspec URL, or from every file a glob matches (`s3://logs/
    records-*.jsonl`: one file per writer, as a fleet should write them), in name order; blank lines skipped."""
    files = fsspec.open_files(url, "rb")
    if not files:
        raise FileNotFoundError(f"no decision records match {url!r}")
    count = 0
    for file in sorted(files, key=lambda f: f.path):
        if file.fs.isdir(file.path):
            raise ValueError(f"{file.path!r} is a folder: name the records file (JSON Lines), or a glob of them "
                             f"({url.rstrip('/')}/*.jsonl)")
        with file as f:
            for number, line in enumerate(f, 1):
                if line.strip():
                    try:
                        record = orjson.loads(line)
                    except orjson.JSONDecodeError as exc:
                        raise ValueError(f"{file.path}:{number}: not a JSON record ({exc})") from None
                    count += 1
                    if not isinstance(record, dict):
                        raise ValueError(f"{file.path}:{number}: record {count} is not a decision record (a record "
                                         f"is a JSON object, got {type(record).__name__})")
                    yield record


MISSING = "no transcript for its session"  # a skip reason: `LabelReport.missing` says which sessions


@dataclass
class LabelReport:
    """What `label` did: rows written and why records were skipped."""

    rows: int = 0
    records: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    missing: dict[str, int] = field(default_factory=dict)  # session -> records skipped for want of its transcript


def label(records_url: str, transcripts_url: str, *, format: str = "auto",
          progress: Callable[[], None] | None = None, report: LabelReport | None = None) -> Iterator[dict[str, Any]]:
    """Labelled rows for every judged pair of every record whose session transcript is found."""
    report = report if report is not None else LabelReport()
    fs, base = fsspec.core.url_to_fs(transcripts_url)
    files: dict[str, str] | None = None  # listed at the first record that needs a transcript
    cache: dict[str, Any] = {}
    common = Rarity.shipped().tokens  # the strict proxy's rarity cut, from the dev sets (never these sessions)
    for record in read_records(records_url):
        report.records += 1
        if progress is not None:
            progress()
        if not isinstance(record, dict) or not isinstance(record.get("pairs", []), list):
            raise ValueError(f"{records_url}: record {report.records} is not a decision record (a JSON object "
                             "whose pairs is a list)")
        pairs, session = record.get("pairs") or [], record.get("session_id") or ""
        point = record.get("history_messages")
        if any(not isinstance(p, dict) for p in pairs):
            raise ValueError(f"{records_url}: record {report.records}: every pair must be a JSON object")
        if not pairs:
            report.skipped["no judged pairs"] += 1
            continue
        if not session or not isinstance(point, int) or point < 1:
            report.skipped["no session_id or history_messages"] += 1
            continue
        if files is None:
            files = formats.by_session(fs.find(base), base)
        if session not in cache:
            cache[session] = _load(fs, files, session, format, common)
        uses = cache[session]
        if uses is None:
            report.skipped[MISSING] += 1
            report.missing[session] = report.missing.get(session, 0) + 1
            continue
        s = point - 1
        for pair in pairs:
            found = _use_of(uses, pair.get("key"), pair.get("call_id"), pair.get("tool"), point)
            if found is None:
                report.skipped["pair not in transcript"] += 1
                continue
            use, reused, strict = found
            report.rows += 1
            yield {"session_id": session, "decision_point": s, "version": record.get("version", ""),
                   "judge": record.get("judge", ""),
                   **{k: pair.get(k) for k in ("key", "call_id", "tool", "keep_call", "keep_result", "action",
                                               "reason", "result_chars", "truncate_saves", "drop_saves")},
                   "needed_result": use.needed_result(s), "needed_call": use.needed_call(s),
                   "label_version": LABEL_VERSION, "needed_result_reuse": reused > s,
                   "needed_result_strict": strict > s}


def _use_of(uses: dict[str, Any], key: Any, call_id: Any, tool: Any, point: int) -> tuple[Any, Any, Any] | None:
    """The later uses of a recorded pair (labels-v1's, and the last message reusing it under
    labels-v2-reuse): by its key when the key names the same call and tool there
    (SHADOW judges the original history, whose keys the full transcript shares), else the latest pair
    with that call id whose result was in the judged history (a call id may be reused once its pair is
    complete)."""
    by_key = uses["by_key"].get(key)
    if by_key is not None and by_key[0] == (call_id, tool):
        return by_key[1]
    seen = [use for result_at, use in uses["by_call_id"].get(call_id, ()) if result_at < point]
    return seen[-1] if seen else None


def _conversation(fs: Any, files: dict[str, str], session: str, format: str) -> list[Any] | None:
    """The messages a record's session id names: its file's (`files`, by `formats.by_session`: what `load`
    reads, as `jev compact` judged it), or for `<session>#stretch-<k>` (`jev replay` of a session Claude Code
    compacted itself) that file's k-th conversation; None when no file holds it."""
    path = files.get(session)
    if path is not None:
        return formats.load(formats.parse(fs.cat_file(path)), format)
    owner, k = formats.parse_conversation_id(session)
    if k is None or (path := files.get(owner)) is None:
        return None
    every = formats.conversations(formats.parse(fs.cat_file(path)), format)
    return every[k - 1] if k <= len(every) else None


def _load(fs: Any, files: dict[str, str], session: str, format: str, common: frozenset[str]
          ) -> dict[str, Any] | None:
    messages = _conversation(fs, files, session, format)
    if messages is None:
        return None
    transcript = analyze(messages)
    uses, reuse, strict = pair_uses(transcript), later_reuse(transcript), strict_uses(transcript, common)
    both = {key: (use, reuse[key], strict[key]) for key, use in uses.items()}
    by_call_id: dict[str, list[tuple[int, Any]]] = {}
    for p in transcript.pairs:
        by_call_id.setdefault(p.call_id, []).append((p.result_message, both[p.key]))
    return {"by_key": {p.key: ((p.call_id, p.tool), both[p.key]) for p in transcript.pairs},
            "by_call_id": by_call_id}
