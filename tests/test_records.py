"""Record sinks: JSON Lines on fsspec URLs, logging, and the bounded asynchronous queue."""

from __future__ import annotations

import json
import logging
import threading

import fsspec
from conftest import ScriptedJudge, reference_config, reference_messages

from jev import AsyncSink, Compactor, ExecutionOptions, JsonlSink, LoggingSink, Mode
from jev.running.records import fanout


def _plan(observer) -> None:
    options = ExecutionOptions(Mode.SHADOW, 2.0, "test", observer)
    Compactor(ScriptedJudge(0.01), reference_config(), options).plan_sync(reference_messages())


def test_jsonl_sink_on_local_and_memory_urls(tmp_path) -> None:
    for url in (str(tmp_path / "a" / "records.jsonl"), "memory://jev-test/records.jsonl"):
        sink = JsonlSink(url)
        _plan(sink)
        _plan(sink)
        with fsspec.open(url, "rb") as f:
            lines = f.read().splitlines()
        assert len(lines) == 2 and json.loads(lines[0])["status"] == "DECIDED"


def test_logging_sink(caplog) -> None:
    with caplog.at_level(logging.INFO, logger="jev.records"):
        _plan(LoggingSink())
    assert json.loads(caplog.records[0].getMessage())["purpose"] == "context_compaction"


def test_async_sink_never_blocks_and_drops_when_full() -> None:
    gate = threading.Event()
    got: list = []

    def slow(ctx, record) -> None:
        gate.wait(5)
        got.append(record)
    sink = AsyncSink(slow, maxsize=2)
    for _ in range(6):
        _plan(sink)  # returns at once although the sink is stuck
    assert sink.dropped >= 3
    gate.set()
    sink.close()
    assert 2 <= len(got) <= 3


def test_fanout_isolates_failures() -> None:
    got: list = []

    def broken(ctx, record) -> None:
        raise RuntimeError("down")
    _plan(fanout(broken, lambda ctx, r: got.append(r)))
    assert len(got) == 1
