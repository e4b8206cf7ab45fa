"""Judge latency: the OpenAI Decisions judge against the test suite's local /v1/decisions server with an
injected 100 ms latency (sequential versus concurrent batches), and the embedded local judge, at 50, 200,
400 and 800 candidate pairs. Ratios are against baselines measured in the same run (the local judge's
timed round by round beside its floor, canonical JSON + SHA-256 of the same transcript).

    python benchmarks/judge_latency.py [--scan-chars N]

`--scan-chars N` times the local judge reading N characters of each result end (the shipped weights in a
model file naming that depth: the cost is the depth's, the scores are not a trained model's).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import tempfile
import time
from pathlib import Path

import orjson
from bench import paired, timeit, transcript
from decisions_server import DecisionsServer

from calibration.train_local import checked_scan_chars
from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, canonical_json
from jev.analysis import analyze
from jev.judges import LocalJudge, OpenAIDecisionsJudge
from jev.judges.local import load_model
from jev.judges.retry import NO_RETRIES

SIZES = (50, 200, 400, 800)
LATENCY = 0.1


def config(concurrency: int, questions: int = 128) -> CompactionConfig:
    return CompactionConfig(preserve_recent_messages=0, eligible_tools=frozenset({"bash"}), max_questions=questions,
                            max_concurrent_requests=concurrency, minimum_reduction=0.0, max_state_tokens=2_000_000,
                            max_request_tokens=2_100_000, max_transcript_chars=50_000_000)


def remote() -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-local-benchmark")
    print(f"OpenAI Decisions judge, local server with {LATENCY * 1000:.0f} ms latency per request")
    print(f"{'pairs':>6} {'requests':>8} {'sequential s':>13} {'concurrent(4) s':>16} {'speed-up':>9} "
          f"{'floor s':>8} {'concurrent/floor':>17}")
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
            print(f"{pairs:>6} {requests:>8} {row[0]:>13.3f} {row[1]:>16.3f} {row[0] / row[1]:>8.2f}x "
                  f"{floor:>8.2f} {row[1] / floor:>16.2f}x")


def local_judge(scan_chars: int | None) -> LocalJudge:
    """The shipped judge, or its weights in a model file that names another reading depth."""
    if scan_chars is None:
        return LocalJudge()
    with tempfile.TemporaryDirectory() as folder:  # read once, when the judge is made
        path = Path(folder) / f"local_model-scan{scan_chars}.json"
        path.write_bytes(orjson.dumps(dict(load_model(), scan_chars=scan_chars)))
        return LocalJudge(str(path))


def local(scan_chars: int | None = None) -> None:
    depth = f", reading {scan_chars} characters of each result end" if scan_chars else ""
    print(f"\nEmbedded local judge (features + both heads{depth}), per plan; the judge keeps no state between plans")
    print(f"{'pairs':>6} {'judge ms':>9} {'validate ms':>12} {'floor ms':>9} {'judge/floor':>12}")
    for pairs in SIZES:
        messages = transcript(pairs)
        t = analyze(messages)
        judge = local_judge(scan_chars)
        # judge and floor timed back to back, round after round (median of the rounds' ratios), so a
        # machine whose speed drifts slows both alike; a new plan's transcript each time: nothing reused
        judge_time, floor, ratio = paired(lambda: judge.scores(copy.copy(t)),
                                          lambda: hashlib.sha256(canonical_json(messages)).digest(), repeat=15)
        validate = timeit(lambda: analyze(messages))  # done once per plan by the compactor, for every judge
        print(f"{pairs:>6} {judge_time * 1000:>9.2f} {validate * 1000:>12.2f} {floor * 1000:>9.2f} "
              f"{ratio:>11.2f}x")
    print("judge: features and both heads on the validated transcript (the goal: judge/floor <= 2x at 400 pairs); "
          "validate: the compactor's validation and pairing, shared by every judge; floor: canonical JSON + "
          "SHA-256 of the transcript.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scan-chars", type=int, metavar="N", help="time the local judge reading N characters "
                        "of each result end (default: the shipped model's depth); the remote rows are skipped")
    args = parser.parse_args()
    if args.scan_chars is not None:
        checked_scan_chars(parser, args.scan_chars)
    if args.scan_chars is None:
        remote()
    local(args.scan_chars)
