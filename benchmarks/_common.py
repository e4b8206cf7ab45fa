"""Shared by the benchmarks: real transcripts of a chosen size built from the dev trajectories, and timing."""

from __future__ import annotations

import dataclasses
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "mini-swe-agent-swebench-dev.tar.xz"

from calibration.dataset import trajectories  # noqa: E402
from jev.transcript import Message, ToolResultBlock, ToolUseBlock  # noqa: E402

_SESSIONS: list[list[Message]] = []


def sessions() -> list[list[Message]]:
    if not _SESSIONS:
        if not DATA.exists():
            sys.exit(f"dev trajectories not found at {DATA}")
        _SESSIONS.extend(messages for _session, messages in trajectories(DATA))
    return _SESSIONS


def transcript(pairs: int) -> list[Message]:
    """One long history of real messages: the first session's task, then sessions' turns back to back
    (ids made unique) until it holds `pairs` call/result pairs, ending after a result."""
    out: list[Message] = [sessions()[0][0], sessions()[0][1]]
    count = 0
    for n, session in enumerate(sessions() * 20):
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
           min_time: float = 0.2) -> tuple[float, float, float]:
    """Median seconds per call of `fn` and of `baseline`, and the median of their per-round ratio: each
    round times one then the other back to back, so a machine whose speed drifts slows both alike."""
    plan = [(fn, _loops(fn, min_time / repeat), []), (baseline, _loops(baseline, min_time / repeat), [])]
    gc.disable()
    try:
        for _ in range(repeat):
            for timed, loops, out in plan:
                start = time.perf_counter()
                for _ in range(loops):
                    timed()
                out.append((time.perf_counter() - start) / loops)
    finally:
        gc.enable()
    a, b = plan[0][2], plan[1][2]
    return statistics.median(a), statistics.median(b), statistics.median([x / y for x, y in zip(a, b)])


def _loops(fn: Callable[[], object], enough: float) -> int:
    """How many calls of `fn` take at least `enough` seconds (after one warm-up call)."""
    fn()
    loops = 1
    while loops < 1 << 16:
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        if time.perf_counter() - start >= enough:
            break
        loops *= 2
    return loops


def timeit(fn: Callable[[], object], repeat: int = 7, min_time: float = 0.2) -> float:
    """Median seconds per call over `repeat` rounds, each long enough to time reliably."""
    fn()
    loops, t = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        t = time.perf_counter() - start
        if t >= min_time / repeat or loops >= 1 << 16:
            break
        loops *= 2
    rounds = []
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(loops):
                fn()
            rounds.append((time.perf_counter() - start) / loops)
    finally:
        gc.enable()
    return statistics.median(rounds)
