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
from jev.cost import DEFAULT_PROFILE
from jev.judges import LocalJudge

DATA = ROOT.parent / "shared" / "data"
SETS = {"swebench": ("mini-swe-agent-swebench-dev.tar.xz", frozenset({"bash"})),
        "deepseek": ("mini-swe-agent-deepseek-dev.tar.xz", frozenset({"bash"})),
        "claude-code": ("claude-code-sessions-dev.tar.xz", frozenset({"Read", "Grep", "Glob", "LS", "WebFetch",
                                                                      "WebSearch", "Bash", "Edit", "MultiEdit",
                                                                      "Write", "NotebookEdit"}))}
LABEL = {"swebench": "SWE-bench (Gemini)", "deepseek": "DeepSeek", "claude-code": "Claude Code"}


def sessions(name: str, limit: int | None) -> tuple[list[list[Any]], list[list[dict[str, Any]] | None]]:
    """The conversations of a set's first `limit` sessions (all by default, `jev.formats.conversations`): a
    Claude Code session that Claude Code compacted itself is one per stretch (the model went on from the
    summary alone), every other session one. Beside each, the usage the provider billed for each of its
    model calls, where the transcript holds it for every call (Claude Code's `message.usage`), else None."""
    out, usage = [], []
    for n, (_session, data) in enumerate(raw_trajectories(DATA / SETS[name][0]), 1):
        document = formats.parse(data)
        billed = {e["uuid"]: e["message"]["usage"] for e in document if isinstance(e, dict)
                  and e.get("type") == "assistant" and isinstance(e.get("message"), dict)
                  and isinstance(e["message"].get("usage"), dict)} if isinstance(document, list) else {}
        for messages in formats.conversations(document):
            calls = [billed.get(m.id) for k, m in enumerate(messages) if m.role == "assistant" and k > 0]
            out.append(messages)
            usage.append(calls if calls and all(u is not None for u in calls) else None)
        if limit and n == limit:
            break
    return out, usage


def _input(usage: dict[str, Any]) -> int:
    return sum(usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


def _billed(usage: dict[str, Any]) -> float:
    """What a call's input was billed at the base price: uncached 1x, cache reads 0.1x, cache writes 1.25x
    (5 minutes) or 2x (an hour), as the usage splits them."""
    split = usage.get("cache_creation")
    written = (1.25 * split.get("ephemeral_5m_input_tokens", 0) + 2.0 * split.get("ephemeral_1h_input_tokens", 0)
               if isinstance(split, dict) else 1.25 * usage.get("cache_creation_input_tokens", 0))
    return usage.get("input_tokens", 0) + written + 0.1 * usage.get("cache_read_input_tokens", 0)


def prefix_of(loaded: list[list[Any]], usage: list[list[dict[str, Any]] | None]) -> tuple[int, float, float]:
    """What each request carried beyond its history, from the billed usage: one least-squares line through
    every call, billed input tokens = a + b x SPEC's estimate of the history before it. Returns the prefix in
    SPEC tokens (a / b), a and b."""
    import numpy as np

    from jev.cost import tokens_each
    x, y = [], []
    for messages, calls in zip(loaded, usage, strict=True):
        if calls is None:
            continue
        before = np.cumsum([0, *tokens_each(messages)])
        x += [before[k] for k, m in enumerate(messages) if m.role == "assistant" and k > 0]
        y += [_input(u) for u in calls]
    if not x:
        return 0, 0.0, 1.0
    b, a = np.polyfit(np.asarray(x, dtype=float), np.asarray(y, dtype=float), 1)
    return round(a / b), float(a), float(b)


def checked_against_the_bill(loaded: list[list[Any]], usage: list[list[dict[str, Any]] | None], prefix: int,
                             scale: float) -> str:
    """The no-compaction replay's billed input against what the provider billed, summed over the
    conversations with usage: with and without the prefix, the replay's tokens scaled to the provider's
    (`scale`), under each Anthropic profile."""
    real = sum(_billed(u) for calls in usage if calls is not None for u in calls)
    said = []
    for profile in ("anthropic-5m", "anthropic-1h"):
        bills = [replay(m, [NoCompaction()], profile, prefix=prefix)["no compaction"]
                 for m, calls in zip(loaded, usage, strict=True) if calls is not None]
        whole, history = (sum(b.billed for b in bills) * scale, sum(b.billed - b.prefix for b in bills) * scale)
        said.append(f"{profile} {whole / real:.3f}x with the prefix, {history / real:.3f}x without")
    return "; ".join(said)


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
            *(at_default if profile == "anthropic-1h" else []),
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
        prefix, a, b = prefix_of(loaded, usage)  # 0 where no call's usage is known (the mini-swe-agent sets)
        if prefix:
            notes.append(f"{LABEL[name]}: billed input tokens = {a:,.0f} + {b:.3f} x the history's estimate "
                         f"(least squares over {sum(len(u) for u in usage if u):,} calls): a prefix of {prefix:,} "
                         f"estimated tokens on every request. The no-compaction replay against what was billed: "
                         f"{checked_against_the_bill(loaded, usage, prefix, b)}.")
        labels = [needed_later(analyze(messages)) for messages in loaded]
        needed = (sum(x.total_v1 for x in labels), sum(x.total_v2 for x in labels))
        profiles = args.claude_code_profiles if name == "claude-code" else args.profiles
        for trigger in triggers:
            for profile in profiles.split(","):
                totals: dict[str, Bill] = {}
                lost: dict[str, list[int]] = {}
                for messages, label in zip(loaded, labels, strict=True):
                    for policy, bill in replay(messages, make(SETS[name][1], trigger, profile, judge),
                                               profile, prefix=prefix).items():
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
