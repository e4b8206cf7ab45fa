"""The billed-cost replay on the dev sets: what each policy costs under prompt caching, and what it lets go.

Every assistant message is one model call (`jev.billing`); each set is replayed at each trigger and
pricing profile under: no compaction; clearing all but the last 3 results on every call over the trigger
(LangChain's `ClearToolUsesEdit`, not persisted); clearing the oldest results in batches at each trigger
event, down to half the trigger (clear at least a tenth of it); jev at its defaults (the local judge, the
threshold table, the cost gate with the horizon estimated from the history) on the same trigger events;
jev in budget mode to half the trigger; and, as a diagnostic only, jev's gate given each session's true
number of later calls (`calls_after`), which no live host knows. jev plans at a cold cache too (idle past the
profile's lifetime, where the transcript's timestamps show it: Claude Code) from a fifth of the trigger on,
as hosts do; "warm triggers only" is the same without it. Needed results let go are counted under
labels-v1 and labels-v2-reuse, computed from each session's full history. A Claude Code session that Claude
Code compacted itself is replayed as one conversation per stretch between its compactions (3 of the 110
dev sessions, once each: 113 conversations).

Every set's transcripts record what the provider billed for each call (`jev.billing.usage`): a least-squares line
through them gives the tokens every request carried beyond its history (the system prompt, tool
definitions: Claude Code's ~32 k), which each replay adds as its `prefix`, and the no-compaction replay is
checked against the bill (printed under the table). "sent ×" and "billed ×" are the history's alone, as
before; "billed × with the prefix" is the whole bill, and "cache read" counts the prefix. Claude Code is
also replayed under `anthropic-1h`, the hour-long cache its requests wrote, with jev's gate there priced at
`anthropic-5m` too, as a host at the defaults has it.

`--adapter-defaults` replays instead each integration's default trigger (at the defaults, no target):
50 messages (LangChain's middleware; the Agents SDK session's 50 items), 20 tool results (AgentScope),
20 000 tokens (the mini-swe-agent hook).

    python benchmarks/cost.py [--sets swebench,deepseek,claude-code] [--triggers 20000,50000]
                              [--profiles anthropic-5m,openai] [--claude-code-profiles anthropic-5m,anthropic-1h,openai]
                              [--sessions N] [--adapter-defaults]
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
from jev.billing import Bill, ClearBatched, ClearEachCall, JevCompaction, NoCompaction, calls_after, replay
from jev.billing.usage import Billed, calls_billed, check, fitted_prefix
from jev.deciding.cost import DEFAULT_PROFILE
from jev.judges import LocalJudge
from jev.reading.analysis import analyze

DATA = ROOT.parent / "shared" / "data"
SETS = {"swebench": ("mini-swe-agent-swebench-dev.tar.xz", frozenset({"bash"})),
        "deepseek": ("mini-swe-agent-deepseek-dev.tar.xz", frozenset({"bash"})),
        "claude-code": ("claude-code-sessions-dev.tar.xz", frozenset({"Read", "Grep", "Glob", "LS", "WebFetch",
                                                                      "WebSearch", "Bash", "Edit", "MultiEdit",
                                                                      "Write", "NotebookEdit"}))}
LABEL = {"swebench": "SWE-bench (Gemini)", "deepseek": "DeepSeek", "claude-code": "Claude Code"}
# the profiles nearest each set's provider, for checking the replay against its bill: Gemini and DeepSeek
# bill no cache write above the base price (`openai`'s shape); Claude Code wrote hour-long cache entries
PROVIDER_PROFILES = {"swebench": ("openai",), "deepseek": ("openai",), "claude-code": ("anthropic-5m", "anthropic-1h")}


def sessions(name: str, limit: int | None) -> tuple[list[list[Any]], list[list[Billed] | None]]:
    """The conversations of a set's first `limit` sessions (all by default, `jev.formats.conversations`): a
    Claude Code session that Claude Code compacted itself is one per stretch (the model went on from the
    summary alone), every other session one. Beside each, what the provider billed for each of its model
    calls (`jev.billing.usage.calls_billed`), or None where the transcript does not record every one."""
    out, usage = [], []
    for n, (_session, data) in enumerate(raw_trajectories(DATA / SETS[name][0]), 1):
        document = formats.parse(data)
        for messages in formats.conversations(document):
            out.append(messages)
            usage.append(calls_billed(document, messages))
        if limit and n == limit:
            break
    return out, usage


def policies(tools: frozenset[str], trigger: int, profile: str, judge: Any) -> list[Any]:
    """Under `anthropic-1h` (Claude Code's cache) also jev with its gate priced at the default profile, as a
    host that keeps the defaults has it."""
    def compactor(gate: str = profile) -> Compactor:
        return Compactor(judge, CompactionConfig(eligible_tools=tools, pricing=gate),
                         ExecutionOptions(Mode.ENFORCE, 60.0, "cost-benchmark"), StoreArchive(MemoryStore()))
    half = trigger // 2
    at_default = [JevCompaction(compactor(DEFAULT_PROFILE), trigger, name=f"jev (defaults, gate at {DEFAULT_PROFILE})")]
    return [NoCompaction(), ClearEachCall(trigger), ClearBatched(trigger, half, clear_at_least=trigger // 10),
            JevCompaction(compactor(), trigger, name="jev (defaults)"),
            JevCompaction(compactor(), trigger, name="jev (defaults), warm triggers only", cold=False),
            *(at_default if profile == "anthropic-1h" else []),
            JevCompaction(compactor(), trigger, half, name=f"jev budget (to {half:,})"),
            JevCompaction(compactor(), trigger, name="jev, true horizon (diagnostic)", horizon=calls_after)]


def billed(loaded: list[list[Any]], labels: list[Any], make: Any, profile: str, prefix: int
           ) -> tuple[dict[str, Bill], dict[str, list[int]]]:
    """Each policy's bill over the conversations (`make()`: fresh policies for each), and the later-needed
    results it let go under labels-v1 and labels-v2-reuse (`labels`: each conversation's `needed_later`)."""
    totals: dict[str, Bill] = {}
    lost: dict[str, list[int]] = {}
    for messages, label in zip(loaded, labels, strict=True):
        for policy, bill in replay(messages, make(), profile, prefix=prefix).items():
            totals.setdefault(policy, Bill()).add(bill)
            counts = lost.setdefault(policy, [0, 0])
            for key, point in bill.let_go:
                counts[0] += label.v1(key, point)
                counts[1] += label.v2(key, point)
    return totals, lost


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
    parser.add_argument("--claude-code-profiles", default="anthropic-5m,anthropic-1h,openai",
                        help="the Claude Code set's (its requests wrote an hour-long cache: anthropic-1h)")
    parser.add_argument("--sessions", type=int, help="the first N sessions of each set (default: all)")
    parser.add_argument("--adapter-defaults", action="store_true",
                        help="each integration's default trigger instead of --triggers")
    args = parser.parse_args()
    make = adapter_policies if args.adapter_defaults else policies
    triggers = [0] if args.adapter_defaults else list(map(int, args.triggers.split(",")))
    started = time.time()
    judge = LocalJudge()
    print("| set | trigger | pricing | policy | sent × | billed × | billed × with the prefix | cache read | adopted | "
          "refused | needed let go (v1) | needed let go (v2) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for name in args.sets.split(","):
        loaded, usage = sessions(name, args.sessions)
        known = [(messages, calls) for messages, calls in zip(loaded, usage, strict=True) if calls is not None]
        fit = fitted_prefix(known)
        prefix = fit.tokens if fit is not None else 0
        if fit is not None:
            checks = [check(((calls, replay(messages, [NoCompaction()], profile, prefix=prefix)["no compaction"])
                             for messages, calls in known), fit, profile).as_dict()
                      for profile in PROVIDER_PROFILES[name]]
            notes.append(f"{LABEL[name]}: billed input tokens = {fit.intercept:,.0f} + {fit.scale:.3f} x the "
                         f"history's estimate (least squares over {fit.calls:,} calls of {len(known)} "
                         f"conversations): a prefix of {prefix:,} estimated tokens on every request. The "
                         "no-compaction replay against what was billed, the replay scaled by that slope: " + "; ".join(
                             f"{c['profile']} {c['replay_over_billed']:.3f}x with the prefix, "
                             f"{c['replay_without_prefix_over_billed']:.3f}x without (cache reads: billed "
                             f"{c['cache_read_share']:.1%}, replayed {c['replay_cache_read_share']:.1%})"
                             for c in checks) + ".")
        labels = [needed_later(analyze(messages)) for messages in loaded]
        needed = (sum(x.total_v1 for x in labels), sum(x.total_v2 for x in labels))
        profiles = args.claude_code_profiles if name == "claude-code" else args.profiles
        for trigger in triggers:
            for profile in profiles.split(","):
                totals, lost = billed(loaded, labels, lambda: make(SETS[name][1], trigger, profile, judge),
                                      profile, prefix)
                base = totals["no compaction"]
                for policy, bill in totals.items():
                    refused = ", ".join(f"{why} {n}" for why, n in sorted(bill.refused.items())) or "—"
                    v1, v2 = lost[policy]
                    print(f"| {LABEL[name]} ({len(loaded)}) | {f'{trigger // 1000} k' if trigger else 'default'} | "
                          f"{profile} | {policy} | "
                          f"{(bill.sent - prefix * bill.calls) / (base.sent - prefix * base.calls):.3f} | "
                          f"**{(bill.billed - bill.prefix) / (base.billed - base.prefix):.3f}** | "
                          f"{bill.billed / base.billed:.3f} | {bill.read_share:.1%} | "
                          f"{bill.adopted} | {refused} | {v1 / max(1, needed[0]):.1%} | {v2 / max(1, needed[1]):.1%} |",
                          flush=True)
    for note in notes:
        print(f"\n{note}")
    print(f"\n{time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
