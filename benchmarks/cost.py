"""The billed-cost replay on the dev sets: what each policy costs under prompt caching, and what it lets go.

Every assistant message is one model call (`jev.billing`); each set is replayed at each trigger and
pricing profile under: no compaction; clearing all but the last 3 results on every call over the trigger
(LangChain's `ClearToolUsesEdit`, not persisted); clearing the oldest results in batches at each trigger
event, down to half the trigger (clear at least a tenth of it); jev at its defaults (the local judge, the
threshold table, the cost gate with the horizon estimated from the history) on the same trigger events;
jev in budget mode to half the trigger; and, as a diagnostic only, jev's gate given each session's true
number of later calls (`calls_after`), which no live host knows. Needed results let go are counted under
labels-v1 and labels-v2-reuse, computed from each session's full history. A Claude Code session that Claude
Code compacted itself is replayed as one conversation per stretch between its compactions (3 of the 110
dev sessions, once each: 113 conversations).

`--adapter-defaults` replays instead each integration's default trigger (at the defaults, no target):
50 messages (LangChain's middleware; the Agents SDK session's 50 items), 20 tool results (AgentScope),
20 000 tokens (the mini-swe-agent hook).

    python benchmarks/cost.py [--sets swebench,deepseek,claude-code] [--triggers 20000,50000]
                              [--profiles anthropic-5m,openai] [--sessions N] [--adapter-defaults]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archive import MemoryStore, StoreArchive
from calibration.dataset import raw_trajectories
from calibration.labels import needed_later
from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, formats
from jev.analysis import analyze
from jev.billing import Bill, ClearBatched, ClearEachCall, JevCompaction, NoCompaction, calls_after, replay
from jev.judges import LocalJudge

DATA = ROOT.parent / "shared" / "data"
SETS = {"swebench": ("mini-swe-agent-swebench-dev.tar.xz", frozenset({"bash"})),
        "deepseek": ("mini-swe-agent-deepseek-dev.tar.xz", frozenset({"bash"})),
        "claude-code": ("claude-code-sessions-dev.tar.xz", frozenset({"Read", "Grep", "Glob", "LS", "WebFetch",
                                                                      "WebSearch", "Bash", "Edit", "MultiEdit",
                                                                      "Write", "NotebookEdit"}))}
LABEL = {"swebench": "SWE-bench (Gemini)", "deepseek": "DeepSeek", "claude-code": "Claude Code"}


def sessions(name: str, limit: int | None) -> list[list[Any]]:
    """The conversations of a set's first `limit` sessions (all by default, `jev.formats.conversations`): a
    Claude Code session that Claude Code compacted itself is one per stretch (the model went on from the
    summary alone), every other session one."""
    out = []
    for n, (_session, data) in enumerate(raw_trajectories(DATA / SETS[name][0]), 1):
        out.extend(formats.conversations(formats.parse(data)))
        if limit and n == limit:
            break
    return out


def policies(tools: frozenset[str], trigger: int, profile: str, judge: Any) -> list[Any]:
    def compactor() -> Compactor:
        return Compactor(judge, CompactionConfig(eligible_tools=tools, pricing=profile),
                         ExecutionOptions(Mode.ENFORCE, 60.0, "cost-benchmark"), StoreArchive(MemoryStore()))
    half = trigger // 2
    return [NoCompaction(), ClearEachCall(trigger), ClearBatched(trigger, half, clear_at_least=trigger // 10),
            JevCompaction(compactor(), trigger, name="jev (defaults)"),
            JevCompaction(compactor(), trigger, half, name=f"jev budget (to {half:,})"),
            JevCompaction(compactor(), trigger, name="jev, true horizon (diagnostic)", horizon=calls_after)]


def adapter_policies(tools: frozenset[str], _trigger: int, profile: str, judge: Any) -> list[Any]:
    """No compaction beside jev at each integration's default trigger."""
    def compactor() -> Compactor:
        return Compactor(judge, CompactionConfig(eligible_tools=tools, pricing=profile),
                         ExecutionOptions(Mode.ENFORCE, 60.0, "cost-benchmark"), StoreArchive(MemoryStore()))
    return [NoCompaction(),
            JevCompaction(compactor(), 50, unit="messages", name="jev, 50 messages (LangChain, Agents SDK)"),
            JevCompaction(compactor(), 20, unit="tool_results", name="jev, 20 tool results (AgentScope)"),
            JevCompaction(compactor(), 20_000, name="jev, 20 k tokens (mini-swe-agent hook)")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="swebench,deepseek,claude-code")
    parser.add_argument("--triggers", default="20000,50000")
    parser.add_argument("--profiles", default="anthropic-5m,openai")
    parser.add_argument("--sessions", type=int, help="the first N sessions of each set (default: all)")
    parser.add_argument("--adapter-defaults", action="store_true",
                        help="each integration's default trigger instead of --triggers")
    args = parser.parse_args()
    make = adapter_policies if args.adapter_defaults else policies
    triggers = [0] if args.adapter_defaults else list(map(int, args.triggers.split(",")))
    started = time.time()
    judge = LocalJudge()
    print("| set | trigger | pricing | policy | sent × | billed × | cache read | adopted | refused | needed let go "
          "(v1) | needed let go (v2) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        loaded = sessions(name, args.sessions)
        labels = [needed_later(analyze(messages)) for messages in loaded]
        needed = (sum(x.total_v1 for x in labels), sum(x.total_v2 for x in labels))
        for trigger in triggers:
            for profile in args.profiles.split(","):
                totals: dict[str, Bill] = {}
                lost: dict[str, list[int]] = {}
                for messages, label in zip(loaded, labels, strict=True):
                    for policy, bill in replay(messages, make(SETS[name][1], trigger, profile, judge),
                                               profile).items():
                        totals.setdefault(policy, Bill()).add(bill)
                        counts = lost.setdefault(policy, [0, 0])
                        for key, point in bill.let_go:
                            counts[0] += label.v1(key, point)
                            counts[1] += label.v2(key, point)
                base = totals["no compaction"]
                for policy, bill in totals.items():
                    refused = ", ".join(f"{why} {n}" for why, n in sorted(bill.refused.items())) or "—"
                    v1, v2 = lost[policy]
                    print(f"| {LABEL[name]} ({len(loaded)}) | {f'{trigger // 1000} k' if trigger else 'default'} | "
                          f"{profile} | {policy} | "
                          f"{bill.sent / base.sent:.3f} | **{bill.billed / base.billed:.3f}** | {bill.read_share:.1%} | "
                          f"{bill.adopted} | {refused} | {v1 / max(1, needed[0]):.1%} | {v2 / max(1, needed[1]):.1%} |",
                          flush=True)
    print(f"\n{time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
