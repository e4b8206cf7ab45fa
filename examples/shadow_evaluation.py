"""SHADOW over real trajectories: the compactor judges each session at a decision point every 8 pairs
with the embedded local judge, changes nothing, and writes decision records (JSON Lines); then a summary
of what it would have done.

Run: python examples/shadow_evaluation.py [--data PATH] [--sessions 40] [--records records.jsonl]
--data is a .tar/.tar.xz or a folder of mini-swe-agent trajectories; by default the 61 real SWE-bench
sessions shipped in examples/data/swebench-sample.tar.xz (see examples/data/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jev  # noqa: E402
from calibration.dataset import trajectories  # noqa: E402
from jev.judges import LocalJudge  # noqa: E402
from jev.reading.analysis import analyze  # noqa: E402

SAMPLE = ROOT / "examples" / "data" / "swebench-sample.tar.xz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SAMPLE, help="trajectories: a .tar/.tar.xz or a folder "
                        "(default: the sample shipped in examples/data)")
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--records", help="decision records file, kept (default: in a temporary folder, removed "
                        "at the end)")
    args = parser.parse_args()
    if not args.data.exists():
        parser.error(f"--data {str(args.data)!r}: no such file or folder")
    print(f"sessions from {args.data}")
    if args.records:
        return run(args)
    with tempfile.TemporaryDirectory(prefix="jev-shadow-") as folder:  # nothing left behind in /tmp
        args.records = str(Path(folder) / "records.jsonl")
        run(args)


def run(args: argparse.Namespace) -> None:
    compactor = jev.Compactor(
        LocalJudge(),
        jev.CompactionConfig(eligible_tools={"bash"}, preserve_recent_messages=6),
        jev.ExecutionOptions(jev.Mode.SHADOW, budget=10.0, version="local-1", observer=jev.JsonlSink(args.records)),
    )
    for n, (session, messages) in enumerate(trajectories(args.data)):
        if n == args.sessions:
            break
        pairs = analyze(messages).pairs
        for k in range(8, len(pairs) + 1, 8):  # the host's trigger: every 8 tool pairs
            assert compactor.compact_sync(messages[: pairs[k - 1].result_message + 1],
                                          context={"session_id": session}) is None  # SHADOW never changes
    records = [json.loads(line) for line in Path(args.records).read_text().splitlines()]
    outcomes = Counter(f"{r['status']}/{r['reason']}" for r in records)
    actions = Counter(p["action"] for r in records for p in r["pairs"])
    reductions = [float(r["recommendation"]["reduction"]) for r in records if "reduction" in r["recommendation"]]
    print(f"{len(records)} plans over {args.sessions} sessions -> {args.records}")
    print(f"{'outcome':<40} {'plans':>6}")
    for outcome, count in outcomes.most_common():
        print(f"{outcome:<40} {count:>6}")
    print(f"{'action (judged pairs)':<40} {'pairs':>6}")
    for action, count in actions.most_common():
        print(f"{action:<40} {count:>6}")
    if reductions:
        print(f"median proposed reduction {sorted(reductions)[len(reductions) // 2]:.1%} "
              f"(the default thresholds are for demonstration: calibrate before enforcing)")


if __name__ == "__main__":
    main()
