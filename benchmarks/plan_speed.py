"""Speed of one plan with the replay judge — all local work: parse, validate, state, batches, apply,
reduction, change guard, records — on real transcripts of 40, 400, 4 000 and 16 000 pairs, against
(a) the floor: orjson with sorted keys of the same history's jev-form dicts, plus SHA-256, and
(b) LangChain's ClearToolUsesEdit(trigger=0, keep=3).apply on the same transcript as LangChain messages
    with the approximate token counter; and the peak memory of a plan against the transcript's size.
The edit slices the message list once per result it clears, so its time grows with the square of the
pairs while a plan's grows with the pairs: the 16 000-pair row shows them drawing apart. A second table
times the default local judge with the collector on, cold and warm, against the floor and against the
held floor (the same canonical JSON made from the `Message` objects inside the timing).

    python benchmarks/plan_speed.py
"""

from __future__ import annotations

import argparse
import copy
import gc
import hashlib
import statistics
import time
import tracemalloc
from collections.abc import Callable

import orjson
from bench import paired, timeit, transcript

from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, canonical_json, formats
from jev.judges import LocalJudge, ReplayJudge
from jev.model.transcript import TextBlock, ToolResultBlock, ToolUseBlock
from jev.reading.analysis import analyze

SIZES = (40, 400, 4000, 16000)
CONFIG = CompactionConfig(eligible_tools=frozenset({"bash"}), preserve_recent_messages=6, max_state_tokens=20_000_000,
                          max_request_tokens=20_100_000, max_questions=512, max_transcript_chars=500_000_000,
                          minimum_reduction=0.0)


def floor_of(messages) -> Callable[[], object]:
    """The floor: the history's jev-form dicts as canonical JSON (orjson, sorted keys), hashed. The dicts are
    dumped before any timing, so the floor leaves out reading the `Message` objects a plan is given."""
    data = formats.dump(messages)
    return lambda: hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).digest()


def held_floor_of(messages) -> Callable[[], object]:
    """The floor's other reading: the same canonical JSON made from the `Message` objects a plan is given
    (`jev.canonical_json`), hashed — the same bytes, the objects read inside the timing."""
    return lambda: hashlib.sha256(canonical_json(messages)).digest()


def answers_for(messages) -> dict[str, float]:
    """Every third pair dropped, every third truncated, the rest kept."""
    out = {}
    for i, pair in enumerate(analyze(messages).pairs):
        c, r = ((0.05, 0.05), (0.95, 0.05), (0.95, 0.95))[i % 3]
        out[f"call_{pair.key}"], out[f"result_{pair.key}"] = c, r
    return out


def langchain_messages(messages):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    out = []
    for m in messages:
        text = "\n".join(b.text for b in m.content if isinstance(b, TextBlock))
        if m.role == "system":
            out.append(SystemMessage(text, id=m.id))
        elif m.role == "user":
            out.append(HumanMessage(text, id=m.id))
        elif m.role == "assistant":
            calls = [{"name": b.name, "args": b.input, "id": b.id, "type": "tool_call"}
                     for b in m.content if isinstance(b, ToolUseBlock)]
            out.append(AIMessage(text, tool_calls=calls, id=m.id))
        else:
            for b in m.content:
                if isinstance(b, ToolResultBlock):
                    out.append(ToolMessage(b.text, tool_call_id=b.id, name=b.name, id=m.id))
    return out


def main() -> None:
    from langchain.agents.middleware import ClearToolUsesEdit
    from langchain_core.messages.utils import count_tokens_approximately

    print(f"{'pairs':>6} {'MB':>6} {'load+plan ms':>13} {'plan ms':>8} {'floor ms':>9} {'plan/floor':>11} "
          f"{'LC edit ms':>11} {'load+plan/LC':>13} {'plan/LC':>8} {'LC copy+edit ms':>16} {'plan/that':>10} "
          f"{'peak MB':>8} {'peak/size':>10}")
    times, plans, edits = {}, {}, {}
    for pairs in SIZES:
        messages = transcript(pairs)
        data = formats.dump(messages)
        size = len(canonical_json(messages))
        judge = ReplayJudge(answers_for(messages), default=0.5)
        records: list = []
        options = ExecutionOptions(Mode.SHADOW, 600, "bench", lambda _c, r: records.append(r))

        def load_and_plan() -> None:  # a host that hands over JSON
            decision = Compactor(judge, CONFIG, options).plan_sync(formats.load(data, "jev"))
            assert decision.plan is not None, decision.detail

        def plan() -> None:  # a host that holds jev messages, planning them for the first time
            decision = Compactor(judge, CONFIG, options).plan_sync(messages)
            assert decision.plan is not None, decision.detail

        repeat = 5 if pairs <= 4000 else 2  # the median of 5 where the goal is set
        t_load_plan = timeit(load_and_plan, repeat=repeat)

        floor = floor_of(messages)
        t_plan, t_floor, plan_over_floor = paired(plan, floor, repeat=repeat)  # timed in turns: drift hits both
        lc = langchain_messages(messages)
        edit = ClearToolUsesEdit(trigger=0, keep=3)
        # the edit works in place, so each run gets a fresh deep copy made outside the timing
        t_lc = min(_once(lambda m=copy.deepcopy(lc): edit.apply(m, count_tokens=count_tokens_approximately))  # noqa: B008
                   for _ in range(repeat))
        # what ContextEditingMiddleware does per model call: deep-copy the request's messages, then edit
        t_lc_copy = min(_once(lambda: edit.apply(copy.deepcopy(lc), count_tokens=count_tokens_approximately))
                        for _ in range(repeat))
        tracemalloc.start()
        load_and_plan()
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        times[pairs], plans[pairs], edits[pairs] = t_load_plan, t_plan, t_lc
        print(f"{pairs:>6} {size / 1e6:>6.1f} {t_load_plan * 1000:>13.1f} {t_plan * 1000:>8.1f} {t_floor * 1000:>9.2f} "
              f"{plan_over_floor:>10.2f}x {t_lc * 1000:>11.1f} {t_load_plan / t_lc:>12.2f}x {t_plan / t_lc:>7.2f}x "
              f"{t_lc_copy * 1000:>16.1f} {t_plan / t_lc_copy:>9.2f}x {peak / 1e6:>8.1f} {peak / size:>9.2f}x")
    collected()
    print(f"scaling: 100x the pairs took {times[4000] / times[40]:.0f}x the time (goal <= 120x); "
          f"4x the pairs (4 000 -> 16 000): plan {plans[16000] / plans[4000]:.1f}x, "
          f"LC edit {edits[16000] / edits[4000]:.1f}x")
    print("goals: plan/floor <= 5x at 400 and 4 000 pairs; plan/LC <= 1x at 400 pairs and <= 0.25x at 4000; "
          "peak <= 3x the transcript")
    print("every timing runs with the garbage collector paused, ours and LangChain's alike")


def collected() -> None:
    """The plan as a host runs it: the default local judge, the collector on (its full collections are
    the cost that grows faster than the history), cold (a history the compactor has not planned) and
    warm (the history it planned, grown by one pair, read from there), each against the floor of the
    history (timed in turns with the cold plan; one pair more changes it by a quarter of a percent at 400
    pairs). Warm is timed two ways: right after a cold plan (which leaves the collector the garbage of a
    first reading to sweep), and steady — a host planning after each new pair, one plan after another
    (`_steady`)."""
    print("\nlocal judge, garbage collector on (cold: a compactor that has planned nothing; warm: one that planned "
          "the history before it grew by one pair, read from there):")
    print(f"{'pairs':>6} {'cold ms':>8} {'floor ms':>9} {'cold/floor':>11} {'warm after cold ms':>19} {'/floor':>7} "
          f"{'warm steady ms':>15} {'/floor':>7} {'held floor ms':>14} {'cold/held floor':>16}")
    cold = {}
    for pairs in (400, 4000):
        messages = transcript(pairs)
        grown = [*messages, *transcript(pairs + 1)[len(messages):]]  # the same message objects, one pair more
        judge, options = LocalJudge(), ExecutionOptions(Mode.SHADOW, 600, "bench")

        floor = floor_of(messages)
        def cold_plan(m: list = messages) -> object:
            return Compactor(judge, CONFIG, options).plan_sync(m)

        t_cold, t_floor, ratio = paired(cold_plan, floor, repeat=5, min_time=4.0, collector=True)
        _t, t_held, held_ratio = paired(cold_plan, held_floor_of(messages), repeat=5, min_time=4.0, collector=True)

        t_warm, warm_ratio = _after_cold(messages, grown, judge, options, floor)
        t_steady, steady_ratio = _steady(pairs, judge, options, floor)
        cold[pairs] = t_cold
        print(f"{pairs:>6} {t_cold * 1000:>8.1f} {t_floor * 1000:>9.2f} {ratio:>10.2f}x {t_warm * 1000:>19.1f} "
              f"{warm_ratio:>6.2f}x {t_steady * 1000:>15.1f} {steady_ratio:>6.2f}x {t_held * 1000:>14.2f} "
              f"{held_ratio:>15.2f}x")
    print(f"scaling with the collector on: 10x the pairs (400 -> 4 000) took {cold[4000] / cold[400]:.1f}x the "
          "time (goal <= 11x)")
    print("goals: cold <= 5x the floor at 400 and 4 000 pairs, warm <= 2.5x (counted against the floor; the held "
          "floor makes the same canonical JSON from the Message objects inside the timing)")


def _after_cold(messages: list, grown: list, judge: LocalJudge, options: ExecutionOptions,
                floor: Callable[[], object], min_time: float = 4.0) -> tuple[float, float]:
    """Mean seconds of a warm plan right after a cold one — a fresh compactor plans `messages` (untimed),
    then `grown` (timed) — and the median over rounds of its ratio to the floor timed right after it
    (in turns, so a machine whose speed drifts slows both alike)."""
    times, ratios = [], []
    while sum(times) < min_time / 2 or len(times) < 3:
        compactor = Compactor(judge, CONFIG, options)
        compactor.plan_sync(messages)
        started = time.perf_counter()
        compactor.plan_sync(grown)
        times.append(time.perf_counter() - started)
        ratios.append(times[-1] / _floor_time(floor, times[-1]))
    return statistics.mean(times), statistics.median(ratios)


def _steady(pairs: int, judge: LocalJudge, options: ExecutionOptions, floor: Callable[[], object],
            min_time: float = 2.0) -> tuple[float, float]:
    """Mean seconds of a warm plan in a host's steady state, and the median over cycles of its ratio to
    the floor timed after each cycle: a compactor plans the history of `pairs` pairs, then that history
    grown by one pair at a time, `pairs // 100` times (at least 5; so it grows by about 1 % and the floor of
    `pairs` still stands), each growth's plan timed with the collector on, whatever it sweeps counted where it
    falls; cycles of that until `min_time` is spent, each started from a fresh compactor whose first
    (cold) plan is untimed and its garbage swept before the timing starts."""
    growth = max(5, pairs // 100)
    whole = transcript(pairs + growth)  # the history of `pairs` pairs is its head: `transcript` ends after a result
    ends = [k + 1 for k, m in enumerate(whole) if any(isinstance(b, ToolResultBlock) for b in m.content)]
    histories = [whole[:end] for end in ends[pairs - 1:pairs + growth]]
    times, ratios = [], []
    while sum(times) * growth < min_time or len(times) < 3:
        compactor = Compactor(judge, CONFIG, options)
        compactor.plan_sync(histories[0])
        gc.collect()
        started = time.perf_counter()
        for history in histories[1:]:
            compactor.plan_sync(history)
        times.append((time.perf_counter() - started) / growth)
        ratios.append(times[-1] / _floor_time(floor, times[-1] * 5))
    return statistics.mean(times), statistics.median(ratios)


def _floor_time(floor: Callable[[], object], spend: float) -> float:
    """Mean seconds of the floor over calls spending about `spend` seconds (at least 3), the collector on."""
    loops, spent = 0, 0.0
    while loops < 3 or spent < spend:
        started = time.perf_counter()
        floor()
        spent += time.perf_counter() - started
        loops += 1
    return spent / loops


def _once(fn) -> float:
    """Seconds of one call, the collector paused as in `timeit`."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help, and nothing else
    main()
