"""Judge latency: the OpenAI Decisions judge against the test suite's local /v1/decisions server with an
injected 100 ms latency (sequential versus concurrent batches), and the embedded local judge, at 50, 200,
400 and 800 candidate pairs. Ratios are against baselines measured in the same run (the local judge's
timed round by round beside its floor, canonical JSON + SHA-256 of the same transcript; medians of the
rounds). The local judge is timed cold (a history it has not read) and warm (it read the same history
`WARM_BEHIND` pairs back, as a host planning every few turns has it read: only what is new is read).

    python benchmarks/judge_latency.py [--scan-chars N] > benchmarks/judge_latency.md

`--scan-chars N` times the local judge reading N characters of each result end (the shipped weights in a
model file naming that depth: the cost is the depth's, the scores are not a trained model's).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from bench import paired, timeit, transcript
from decisions_server import DecisionsServer

from calibration.train_local import checked_scan_chars
from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, canonical_json
from jev.judges import LocalJudge, OpenAIDecisionsJudge
from jev.judges.local import load_model
from jev.judges.retry import NO_RETRIES
from jev.model.transcript import ToolResultBlock
from jev.reading.analysis import analyze, extend

SIZES = (50, 200, 400, 800)
LATENCY = 0.1
WARM_BEHIND = 8  # pairs: the warm judge read the history this many pairs before the plan timed
ROUNDS = 15


def config(concurrency: int, questions: int = 128) -> CompactionConfig:
    return CompactionConfig(preserve_recent_messages=0, eligible_tools=frozenset({"bash"}), max_questions=questions,
                            max_concurrent_requests=concurrency, minimum_reduction=0.0, max_state_tokens=2_000_000,
                            max_request_tokens=2_100_000, max_transcript_chars=50_000_000)


def remote() -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-local-benchmark")
    print(f"## OpenAI Decisions judge, local server with {LATENCY * 1000:.0f} ms latency per request\n")
    print("| pairs | requests | sequential s | concurrent (4) s | speed-up | floor s | concurrent / floor |")
    print("|---|---|---|---|---|---|---|")
    with DecisionsServer(probability=lambda n: 0.5, latency=LATENCY) as server:
        warm_up = OpenAIDecisionsJudge(server.base_url, timeout=30, retry=NO_RETRIES)
        Compactor(warm_up, config(1), ExecutionOptions(Mode.SHADOW, 600, "bench")).plan_sync(transcript(5))
        for pairs in SIZES:
            messages = transcript(pairs)
            row = []
            for concurrency in (1, 4):
                judge = OpenAIDecisionsJudge(server.base_url, timeout=30, retry=NO_RETRIES)
                c = Compactor(judge, config(concurrency), ExecutionOptions(Mode.SHADOW, 600, "bench"))
                best = float("inf")
                for _ in range(3):  # best of three: network-bound runs are noisy
                    started = time.perf_counter()
                    decision = c.plan_sync(messages)
                    best = min(best, time.perf_counter() - started)
                    assert decision.plan is not None, decision.detail
                row.append(best)
            requests = decision.plan.requests
            floor = -(-requests // 4) * LATENCY  # the injected latency alone, 4 in flight
            print(f"| {pairs} | {requests} | {row[0]:.3f} | {row[1]:.3f} | {row[0] / row[1]:.2f}x | {floor:.2f} | "
                  f"{row[1] / floor:.2f}x |")
    print("\nfloor: the injected latency alone, four requests in flight.")


def local_judge(scan_chars: int | None, model: str | None = None) -> LocalJudge:
    """The shipped judge (or the weights in `model`), or its weights in a model file that names another
    reading depth."""
    if scan_chars is None:
        return LocalJudge(model)
    with tempfile.TemporaryDirectory() as folder:  # read once, when the judge is made
        path = Path(folder) / f"local_model-scan{scan_chars}.json"
        path.write_bytes(orjson.dumps(dict(load_model(), scan_chars=scan_chars)))
        return LocalJudge(str(path))


def local(scan_chars: int | None = None, model: str | None = None, sizes: tuple[int, ...] = SIZES) -> None:
    depth = f", reading {scan_chars} characters of each result end" if scan_chars else ""
    print(f"\n## Embedded local judge (features + both heads{depth}), per plan, cold and warm\n")
    print("| pairs | cold ms | warm ms | validate ms | floor ms | cold / floor | warm / floor |")
    print("|---|---|---|---|---|---|---|")
    for pairs in sizes:
        messages = transcript(pairs)
        t = analyze(messages)
        judge = local_judge(scan_chars, model)
        floor_of = lambda: hashlib.sha256(canonical_json(messages)).digest()  # noqa: E731
        # judge and floor timed back to back, round after round (median of the rounds' ratios), so a
        # machine whose speed drifts slows both alike; cold: a new plan's transcript each time, nothing reused
        cold, floor, cold_ratio = paired(lambda: judge.scores(copy.copy(t)), floor_of, repeat=ROUNDS)
        warm, warm_ratio = warm_time(judge, messages, floor_of)
        validate = timeit(lambda: analyze(messages))  # done once per plan by the compactor, for every judge
        print(f"| {pairs} | {cold * 1000:.2f} | {warm * 1000:.2f} | {validate * 1000:.2f} | {floor * 1000:.2f} | "
              f"{cold_ratio:.2f}x | {warm_ratio:.2f}x |")
    print(f"\ncold: features and both heads on a validated transcript the judge has not read (the goal: <= 2.2x the "
          f"floor at 400 pairs); warm: the same once it has read the history {WARM_BEHIND} pairs back (the goal: "
          "<= 1.0x); validate: the compactor's validation and pairing, shared by every judge; floor: canonical "
          "JSON + SHA-256 of the transcript.")


def warm_time(judge: LocalJudge, messages: list, floor_of: Callable[[], object]) -> tuple[float, float]:
    """Median seconds of scoring `messages` once the judge has scored them `WARM_BEHIND` pairs back (the
    host's earlier plan: the transcript grown by `jev.reading.analysis.extend`), and the median ratio to the floor,
    timed round by round (each round reads the earlier history again, untimed, then the grown one)."""
    results = [k for k, m in enumerate(messages) if any(isinstance(b, ToolResultBlock) for b in m.content)]
    cut = results[-WARM_BEHIND - 1] + 1 if len(results) > WARM_BEHIND else 0
    times, ratios = [], []
    for _ in range(ROUNDS):
        earlier = analyze(messages[:cut])
        grown = extend(earlier, messages)
        judge.scores(earlier)
        started = time.perf_counter()
        judge.scores(grown)
        took = time.perf_counter() - started
        started = time.perf_counter()
        floor_of()
        times.append(took)
        ratios.append(took / (time.perf_counter() - started))
    return statistics.median(times), statistics.median(ratios)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scan-chars", type=int, metavar="N", help="time the local judge reading N characters "
                        "of each result end (default: the shipped model's depth); the remote rows are skipped")
    parser.add_argument("--model", metavar="FILE", help="time the local judge with these weights (a file "
                        "`python -m calibration.train_local` wrote); the remote rows are skipped")
    parser.add_argument("--pairs", type=int, action="append", help="time the local judge at this many pairs only "
                        "(repeatable; default: 50, 200, 400 and 800)")
    args = parser.parse_args()
    if args.scan_chars is not None:
        checked_scan_chars(parser, args.scan_chars)
    import platform
    from datetime import date
    print(f"# Judge latency\n\nWritten by `python benchmarks/judge_latency.py` on {date.today()} "
          f"({platform.machine()}, Python {platform.python_version()}); medians over rounds.\n")
    if args.scan_chars is None and args.model is None:
        remote()
    local(args.scan_chars, args.model, tuple(args.pairs or SIZES))
