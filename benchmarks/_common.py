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
