"""The rollout in one script: SHADOW -> label -> calibrate -> thresholds.json -> ENFORCE.

1. SHADOW: run the compactor with the embedded local judge over dev trajectories, at a decision point every
   8 pairs, writing decision records (JSON Lines) — nothing is changed.
2. Label: join the records with each session's full history (what was needed later).
3. Calibrate: certify a discard threshold with P(loss rate > alpha) <= delta, sessions as the unit; write
   thresholds.json and a report.
4. ENFORCE a held-out trajectory with those thresholds and a file archive.

Caveat printed at the end: the shipped local judge was trained on these same dev sessions, so the numbers
here are optimistic — a walkthrough of the method, not an evaluation. Calibrate on your own sessions.

Run: python examples/calibrate_thresholds.py [--data PATH] [--sessions 120] [--out DIR]
--data is a .tar/.tar.xz or a folder of mini-swe-agent trajectories; by default the 61 real SWE-bench
sessions shipped in examples/data/swebench-sample.tar.xz (see examples/data/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jev  # noqa: E402
from archive import FileArchive, Scope  # noqa: E402
from calibration import report, rows_from, select_thresholds  # noqa: E402
from calibration.dataset import raw_trajectories  # noqa: E402
from calibration.join import label  # noqa: E402
from jev.judges import LocalJudge  # noqa: E402
from jev.reading.analysis import analyze  # noqa: E402

SAMPLE = ROOT / "examples" / "data" / "swebench-sample.tar.xz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=SAMPLE, help="trajectories: a .tar/.tar.xz or a folder "
                        "(default: the sample shipped in examples/data)")
    parser.add_argument("--sessions", type=int, default=120, help="sessions to shadow, at most (one more is held "
                        "out for ENFORCE)")
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--out", default=None, help="folder for records, report and archive, kept (default: a "
                        "temporary folder, removed at the end)")
    args = parser.parse_args()
    if not args.data.exists():
        parser.error(f"--data {str(args.data)!r}: no such file or folder")
    print(f"sessions from {args.data}")
    if args.out:
        return run(args, Path(args.out))
    with tempfile.TemporaryDirectory(prefix="jev-calibrate-") as out:  # nothing left behind in /tmp
        run(args, Path(out))


def run(args: argparse.Namespace, out: Path) -> None:
    transcripts, records = out / "transcripts", out / "records.jsonl"
    transcripts.mkdir(parents=True, exist_ok=True)
    records.unlink(missing_ok=True)

    sessions = []
    for session, data in raw_trajectories(args.data):
        sessions.append((session, data))
        if len(sessions) > args.sessions:
            break
    held_out = sessions.pop()

    # 1. SHADOW with decision records
    config = jev.CompactionConfig(eligible_tools={"bash"}, preserve_recent_messages=6, minimum_reduction=0.0)
    judge = LocalJudge()
    shadow = jev.Compactor(judge, config, jev.ExecutionOptions(jev.Mode.SHADOW, 10.0, "local-1",
                                                               jev.JsonlSink(str(records))))
    for session, data in sessions:
        (transcripts / f"{session}.json").write_bytes(data)
        messages = jev.formats.load(json.loads(data), "mini-swe-agent")
        pairs = analyze(messages).pairs
        for n in range(8, len(pairs) + 1, 8):
            shadow.plan_sync(messages[: pairs[n - 1].result_message + 1], context={"session_id": session})
    print(f"1. SHADOW: {len(sessions)} sessions -> {records}")

    # 2. label, 3. calibrate
    rows = rows_from(label(str(records), str(transcripts)))
    print(f"2. labelled {len(rows.sessions)} judged pairs ({rows.needed_result.mean():.1%} results needed later)")
    result = select_thresholds(rows, args.alpha, args.delta, size_aware=True)
    summary = report(result, out)
    print(f"3. {summary['guarantee']}")
    if not summary["certified"]:
        return

    # 4. ENFORCE on the held-out session with the certified thresholds
    thresholds = json.loads((out / "thresholds.json").read_text())
    print(f"   thresholds.json: {thresholds}")
    enforce_config = jev.CompactionConfig.from_mapping({**thresholds, "eligible_tools": ["bash"],
                                                        "preserve_recent_messages": 6})
    archive = FileArchive(out / "archive")
    enforce = jev.Compactor(LocalJudge(), enforce_config, jev.ExecutionOptions(jev.Mode.ENFORCE, 10.0, "local-1"),
                            archive)
    session, data = held_out
    history = jev.formats.load(json.loads(data), "mini-swe-agent")
    decision = enforce.plan_sync(history, scope=Scope("example", "mini-swe-agent", session))
    plan = decision.plan
    print(f"4. ENFORCE on held-out {session}: {decision.status.value}/{decision.reason.value}"
          + (f", {plan.count(jev.Action.DROP_PAIR)} pairs dropped, {plan.count(jev.Action.TRUNCATE_RESULT)} "
             f"results truncated, reduction {plan.reduction:.1%}" if plan else "")
          + (f", archived as {plan.archive_reference}" if plan and plan.archive_reference else ""))
    print(f"report: {out / 'report.md'}" + ("" if args.out else " (temporary: --out DIR keeps it)")
          + "\nnote: the shipped local judge was trained on these dev sessions, so these "
          "numbers are optimistic; calibrate on your own sessions.")


if __name__ == "__main__":
    main()
