"""Decision records and where they go (SPEC §7).

A record holds metadata only: statuses, counts, scores and sizes — never message text, tool inputs or
outputs, or exception text. `session_id` and `history_messages` (how many messages were judged) let
`jev label` join a record with the session's later history. A sink is any callable `(context, record)`;
the ones here write JSON Lines to
any fsspec URL, log through `logging`, or deliver from a bounded background queue.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..deciding.decision import Decision, PairRows, Plan
from ..deciding.policy import Action
from ..support.quick import quick_init

PURPOSE = "context_compaction"
log = logging.getLogger("jev.records")


@quick_init
@dataclass(frozen=True, slots=True)
class PairRecord:
    """The judgment of one candidate pair, for calibration: scores, action, and the result's size."""

    key: str
    call_id: str
    tool: str
    keep_call: float | None
    keep_result: float | None
    action: str
    reason: str
    result_chars: int
    truncate_saves: int = 0  # characters a TRUNCATE_RESULT of this pair would remove (budget calibration)
    drop_saves: int = 0  # characters a DROP_PAIR would remove, net of its tombstone


@dataclass(frozen=True, slots=True)
class Record:
    """One decision record."""

    purpose: str
    version: str
    mode: str
    status: str
    reason: str
    elapsed_ms: int
    recommendation: Mapping[str, str] = field(default_factory=dict)
    pairs: tuple[PairRecord, ...] = ()
    error: str = ""
    session_id: str = ""
    history_messages: int = 0
    judge: str = ""  # the judge's model name: thresholds are calibrated for one judge

    def to_dict(self) -> dict[str, Any]:
        d = {"purpose": self.purpose, "version": self.version, "mode": self.mode, "status": self.status,
             "reason": self.reason, "elapsed_ms": self.elapsed_ms, "recommendation": dict(self.recommendation),
             "pairs": [{"key": p.key, "call_id": p.call_id, "tool": p.tool, "keep_call": p.keep_call,
                        "keep_result": p.keep_result, "action": p.action, "reason": p.reason,
                        "result_chars": p.result_chars, "truncate_saves": p.truncate_saves,
                        "drop_saves": p.drop_saves} for p in self.pairs]}
        if self.error:
            d["error"] = self.error
        if self.session_id:
            d["session_id"] = self.session_id
        d["history_messages"] = self.history_messages
        if self.judge:
            d["judge"] = self.judge
        return d

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())


RECOMMENDED = ("requests", "state_stage", "windows", "request_tokens", "result_share", "input_tokens",
               "output_tokens", "reduction")  # the figures every record's recommendation states


def recommendation(plan: Plan | None, decided: bool) -> dict[str, str]:
    """The string map a host reads from a record (all values strings, as the reference has them)."""
    if plan is None:
        return {}
    figures = plan.figures()
    rec = {name: f"{figures[name]:.4f}" if isinstance(figures[name], float) else str(figures[name])
           for name in RECOMMENDED}
    if decided:
        rec.update({"pairs_removed": str(plan.count(Action.DROP_PAIR)),
                    "results_truncated": str(plan.count(Action.TRUNCATE_RESULT)),
                    "archive_reference": plan.archive_reference})
    return rec


def session_of(scope: Any, context: Any) -> str:
    """The session a record belongs to: the archive scope's, else `context["session_id"]` when given."""
    if scope is not None and isinstance(getattr(scope, "session_id", None), str):
        return scope.session_id
    if isinstance(context, Mapping) and isinstance(context.get("session_id"), str):
        return context["session_id"]
    return ""


def pair_records(rows: PairRows) -> tuple[PairRecord, ...]:
    """The record's rows: the judged pairs' (a pinned pair was never judged, so it has no row)."""
    return tuple(PairRecord(key, call_id, tool, keep_call, keep_result, action.value, reason, chars, truncate, drop)
                 for key, call_id, tool, keep_call, keep_result, action, reason, pinned, chars, truncate, drop
                 in zip(rows.key, rows.call_id, rows.tool, rows.keep_call, rows.keep_result, rows.action, rows.reason,
                        rows.pinned, rows.result_chars, rows.truncate_saves, rows.drop_saves, strict=True)
                 if not pinned)


def build_record(decision: Decision, *, version: str, mode: str, elapsed_ms: int,
                 pairs: tuple[PairRecord, ...] = (), session_id: str = "", history_messages: int = 0,
                 judge: str = "") -> Record:
    return Record(PURPOSE, version, mode, decision.status.value, decision.reason.value, elapsed_ms,
                  dict(decision.recommendation), pairs, decision.error_kind, session_id, history_messages, judge)


def deliver(observer: Callable[[Any, Record], None] | None, context: Any, record: Record) -> None:
    """Call the observer; its exceptions are logged and swallowed (observability never changes outcomes)."""
    if observer is None:
        return
    try:
        observer(context, record)
    except Exception:
        log.warning("decision record observer failed; record dropped", exc_info=True)


class JsonlSink:
    """Appends one JSON line per record to a file on any fsspec URL (`/path`, `file://`, `memory://`, …).
    One writing process per file: an append on an object store rewrites the object, so writers sharing one
    lose each other's lines; give each its own file and read them with a glob (`jev label`)."""

    def __init__(self, url: str, **storage_options: Any) -> None:
        self.url = url
        import fsspec  # only a sink that writes pays for the storage stack

        self._fs, self._path = fsspec.core.url_to_fs(url, **storage_options)
        self._lock = threading.Lock()
        parent = self._path.rstrip("/").rpartition("/")[0]
        if parent:
            self._fs.makedirs(parent, exist_ok=True)

    def __call__(self, context: Any, record: Record) -> None:
        line = record.to_json() + b"\n"
        with self._lock, self._fs.open(self._path, "ab") as f:
            f.write(line)


class LoggingSink:
    """Logs each record as JSON at `level` on the `jev.records` logger (or `logger`)."""

    def __init__(self, logger: logging.Logger | None = None, level: int = logging.INFO) -> None:
        self.logger = logger or log
        self.level = level

    def __call__(self, context: Any, record: Record) -> None:
        self.logger.log(self.level, "%s", record.to_json().decode())


class AsyncSink:
    """Delivers to `inner` from a daemon thread through a bounded queue; when full, drops with a warning
    so that a slow sink never blocks a plan. `close()` drains what is queued."""

    def __init__(self, inner: Callable[[Any, Record], None], maxsize: int = 256) -> None:
        self.inner = inner
        self.dropped = 0
        self._queue: queue.Queue[tuple[Any, Record] | None] = queue.Queue(maxsize)
        self._thread = threading.Thread(target=self._run, name="jev-records", daemon=True)
        self._thread.start()

    def __call__(self, context: Any, record: Record) -> None:
        try:
            self._queue.put_nowait((context, record))
        except queue.Full:
            self.dropped += 1
            log.warning("decision record queue full (%d); record dropped", self._queue.maxsize)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            deliver(self.inner, *item)

    def close(self, timeout: float | None = 5.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout)


def fanout(*observers: Callable[[Any, Record], None]) -> Callable[[Any, Record], None]:
    """One observer that calls several, each isolated from the others' failures."""
    def observe(context: Any, record: Record) -> None:
        for observer in observers:
            deliver(observer, context, record)
    return observe
