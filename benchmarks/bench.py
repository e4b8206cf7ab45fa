"""Shared by the benchmarks: real transcripts of a chosen size built from the dev trajectories, and timing."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "servers"))  # the local servers (loopback only) the benchmarks start, as the tests do
DATA = ROOT.parent / "shared" / "data" / "mini-swe-agent-swebench-dev.tar.xz"
SAMPLE = ROOT / "examples" / "data" / "swebench-sample.tar.xz"  # 61 of them, shipped: where the dev set is absent

from calibration.dataset import trajectories
from jev.model.transcript import Message, ToolResultBlock, ToolUseBlock

_SESSIONS: list[list[Message]] = []


def sessions() -> list[list[Message]]:
    """Real mini-swe-agent sessions: the dev set's, else the sample shipped in `examples/data`."""
    if not _SESSIONS:
        _SESSIONS.extend(messages for _session, messages in trajectories(DATA if DATA.exists() else SAMPLE))
    return _SESSIONS


def transcript(pairs: int) -> list[Message]:
    """One long history of real messages: the first session's task, then sessions' turns back to back
    (ids made unique) until it holds `pairs` call/result pairs, ending after a result."""
    out: list[Message] = [sessions()[0][0], sessions()[0][1]]
    count = 0
    for n, session in enumerate(sessions() * 200):
        for message in session[2:]:
            blocks = tuple(dataclasses.replace(b, id=f"{b.id}.{n}") if isinstance(b, (ToolUseBlock, ToolResultBlock))
                           else b for b in message.content)
            out.append(message.replace(id=f"{message.id}.{n}", content=blocks))
            if any(isinstance(b, ToolResultBlock) for b in blocks):
                count += 1
                if count == pairs:
                    return out
    raise RuntimeError("not enough pairs")


def paired(fn: Callable[[], object], baseline: Callable[[], object], repeat: int = 5,
           min_time: float = 0.2, collector: bool = False) -> tuple[float, float, float]:
    """Median seconds per call of `fn` and of `baseline`, and the median of their per-round ratio: each
    round times one then the other back to back, so a machine whose speed drifts slows both alike. The
    garbage collector is paused unless `collector` (then give rounds long enough to hold its full
    collections: `min_time`)."""
    loops = _loops(fn, min_time / repeat), _loops(baseline, min_time / repeat)
    a, b = [], []
    with contextlib.nullcontext() if collector else _collector_paused():
        for _ in range(repeat):
            a.append(_round(fn, loops[0]))
            b.append(_round(baseline, loops[1]))
    return statistics.median(a), statistics.median(b), statistics.median([x / y for x, y in zip(a, b, strict=True)])


def timeit(fn: Callable[[], object], repeat: int = 7, min_time: float = 0.2) -> float:
    """Median seconds per call over `repeat` rounds, each long enough to time reliably."""
    loops = _loops(fn, min_time / repeat)
    with _collector_paused():
        return statistics.median([_round(fn, loops) for _ in range(repeat)])


def _loops(fn: Callable[[], object], enough: float) -> int:
    """How many calls of `fn` take at least `enough` seconds (after one warm-up call)."""
    fn()
    loops = 1
    while loops < 1 << 16 and _round(fn, loops) * loops < enough:
        loops *= 2
    return loops


def _round(fn: Callable[[], object], loops: int) -> float:
    """Seconds per call of `fn` over `loops` calls."""
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def write_table(path: Path, title: str, command: str, note: str, lines: list[str], seconds: float) -> None:
    """A benchmark's table as the file its command writes: a title, the command with the machine, the date and
    how long it took, what the cells mean, then the table."""
    import platform
    from datetime import date

    path.write_text(f"# {title}\n\nWritten by `{command}` on {date.today()} ({platform.machine()}, Python "
                    f"{platform.python_version()}, {seconds:.0f} s). {note}\n\n" + "\n".join(lines) + "\n")
