"""A plan's time grows with the history, not with its square (issue 37). On the whole history, twenty
times the pairs (200 -> 4 000) may take at most 35 times as long: a linear plan reads 20–23x here, and a
quadratic step costing as little as the rest of the plan at 2 500 pairs reads ~50x (checked by injecting
one). In windows, ten times the pairs (400 -> 4 000, windowed at both sizes) may take at most 20 times
as long (it reads 12–14x). Timed with the garbage collector on (its full collections were the
superlinear cost), the best of three runs, on real sessions (the dev set's, else the sample shipped in
examples/data).
The task every window carries is at most half the state budget, so a history whose user messages keep
growing no longer makes windows that hold fewer and fewer pairs (docs/performance-log.md)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench import transcript  # noqa: E402

from jev import CompactionConfig, Compactor, ExecutionOptions, Mode  # noqa: E402
from jev.judges import LocalJudge, ReplayJudge  # noqa: E402

WHOLE = CompactionConfig(eligible_tools=frozenset({"bash"}), max_state_tokens=20_000_000,
                         max_request_tokens=20_100_000, max_questions=512, max_transcript_chars=500_000_000)
WINDOWED = CompactionConfig(eligible_tools=frozenset({"bash"}), max_state_tokens=60_000, max_request_tokens=180_000,
                            max_transcript_chars=500_000_000)  # windows at both sizes


def _best(judge, config: CompactionConfig, messages: list, runs: int = 3) -> float:
    """The best of `runs` first plans (a new compactor each: one that planned this history would not read
    it again)."""
    times = []
    for _ in range(runs):
        compactor = Compactor(judge, config, ExecutionOptions(Mode.SHADOW, 120))
        started = time.perf_counter()
        decision = compactor.plan_sync(messages)
        times.append(time.perf_counter() - started)
        assert decision.plan is not None, decision.detail
    return min(times)


@pytest.mark.parametrize("judge, config, small, large, bound",
                         [(LocalJudge(), WHOLE, 200, 4000, 35), (ReplayJudge({}, default=0.5), WINDOWED, 400, 4000, 20)],
                         ids=["local judge, whole history", "remote-style judge, windows"])
def test_a_plan_grows_linearly_with_the_history(judge, config, small: int, large: int, bound: int) -> None:
    short, long = transcript(small), transcript(large)
    _best(judge, config, short, 1)  # warm the caches both sizes share
    ratio = _best(judge, config, long) / _best(judge, config, short)
    assert ratio <= bound, f"{large // small}x the pairs took {ratio:.1f}x as long (at most {bound}x)"
