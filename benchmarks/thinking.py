"""The dev Claude Code sessions sent as if to a preserved-thinking model (issue 61): which plans the provider
accepts, and what each thinking policy costs and lets go.

Part 1, acceptance: every session cut at a quarter, half, three quarters and its end, planned in budget mode
(half the candidate result characters) in ENFORCE, for `--model` (claude-fable-5-1) under each thinking
policy, and — the behaviour before the providers' rules — for a model without the prefix check
(claude-opus-4-6), whose adopted plans are then checked as if sent to `--model`. Per policy: plans adopted,
adopted plans the provider accepts (`jev.providers.check`), thinking blocks stripped by the plan or dropped
by the API (drop_block), and why the others were not adopted.

Part 2, the bill: the billed-cost replay of `benchmarks/cost.py` (every assistant message one model call, the
prefix fitted from the sessions' recorded usage) at each trigger and pricing profile, for no compaction,
batched clearing, and jev at its defaults and in budget mode under each thinking policy — and, for
comparison only, budget mode as it planned before the providers' rules (for a model without the prefix
check), whose plans the model would refuse. Thinking is billed
as input (on preserved-thinking models usable thinking stays in context); under drop-block the history
sent keeps the blocks the API then drops, so its row counts them as sent (an upper bound on its bill).
Needed results let go are counted under labels-v1 and labels-v2-reuse.

    python benchmarks/thinking.py [--model claude-fable-5-1] [--triggers 50000] [--profiles anthropic-5m,anthropic-1h]
                                  [--sessions N] [--out benchmarks/thinking.md]
"""

from __future__ import annotations

import argparse
import collections
import platform
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from cost import SETS, billed, sessions  # the cost benchmark's loader and replay: one of each

from archive import MemoryStore, Scope, StoreArchive
from calibration.labels import needed_later
from jev import CompactionConfig, Compactor, ExecutionOptions, Mode
from jev.billing import ClearBatched, JevCompaction, NoCompaction
from jev.billing.usage import fitted_prefix
from jev.judges import LocalJudge
from jev.providers import ThinkingPolicy, check
from jev.reading.analysis import analyze

TOOLS = SETS["claude-code"][1]
BEFORE = "claude-opus-4-6"  # a model without the prefix check: the plans the library made before issue 61
CUTS = (0.25, 0.5, 0.75, 1.0)


def acceptance(loaded: list[list[Any]], model: str, judge: Any) -> list[str]:
    """Part 1's table rows."""
    rows = []
    for name, made_for, policy in [(f"{BEFORE} (no prefix check), sent to {model}", BEFORE, ThinkingPolicy.STRIP),
                                   *((p.value, model, p) for p in ThinkingPolicy)]:
        counts: collections.Counter[str] = collections.Counter()
        for k, messages in enumerate(loaded):
            for share in CUTS:
                cut = messages[:max(2, round(len(messages) * share))]
                config = CompactionConfig(eligible_tools=TOOLS, target_reduction=0.5, model=made_for,
                                          thinking_policy=policy)
                compactor = Compactor(judge, config, ExecutionOptions(Mode.ENFORCE, 60.0, "thinking-benchmark"),
                                      StoreArchive(MemoryStore()))
                decision = compactor.plan_sync(cut, scope=Scope("u", "a", f"s{k}"))
                counts["plans"] += 1
                if decision.plan is None or decision.reason.value != "ARCHIVED_PROPOSAL":
                    counts[decision.reason.value] += 1
                    continue
                counts["adopted"] += 1
                verdict = check(cut, decision.plan.messages, model, policy)
                counts["accepted"] += verdict.passes
                counts["refused blocks"] += len(verdict.refused)
                counts["stripped"] += decision.plan.thinking_stripped
                counts["dropped by the API"] += len(verdict.violations) - len(verdict.refused)
        others = ", ".join(f"{why} {n}" for why, n in sorted(counts.items())
                           if why.isupper() or why.startswith(("NO_", "INS", "UNP", "PRO")))
        rows.append(f"| {name} | {counts['plans']} | {counts['adopted']} ({counts['adopted'] / counts['plans']:.0%}) | "
                    f"{counts['accepted']} | {counts['refused blocks']} | {counts['stripped']} | "
                    f"{counts['dropped by the API']} | {others or '—'} |")
    return rows


def policies(trigger: int, profile: str, model: str, judge: Any) -> list[Any]:
    """No compaction, batched clearing, and jev (defaults, and budget to half the trigger) per thinking policy."""
    half = trigger // 2

    def compactor(policy: ThinkingPolicy) -> Compactor:
        return Compactor(judge, CompactionConfig(eligible_tools=TOOLS, pricing=profile, model=model,
                                                 thinking_policy=policy),
                         ExecutionOptions(Mode.ENFORCE, 60.0, "thinking-benchmark"), StoreArchive(MemoryStore()))
    jev = [JevCompaction(compactor(p), trigger, name=f"jev (defaults), {p.value}") for p in ThinkingPolicy]
    budget = [JevCompaction(compactor(p), trigger, half, name=f"jev budget (to {half:,}), {p.value}")
              for p in ThinkingPolicy]
    before = Compactor(judge, CompactionConfig(eligible_tools=TOOLS, pricing=profile, model=BEFORE),
                       ExecutionOptions(Mode.ENFORCE, 60.0, "thinking-benchmark"), StoreArchive(MemoryStore()))
    return [NoCompaction(), ClearBatched(trigger, half, clear_at_least=trigger // 10), *jev, *budget,
            JevCompaction(before, trigger, half, name=f"jev budget (to {half:,}), made for {BEFORE} (refused on the model)")]


def bills(loaded: list[list[Any]], usage: list[Any], triggers: list[int], profiles: list[str], model: str,
          judge: Any) -> list[str]:
    """Part 2's table rows."""
    known = [(messages, calls) for messages, calls in zip(loaded, usage, strict=True) if calls is not None]
    fit = fitted_prefix(known)
    prefix = fit.tokens if fit is not None else 0
    labels = [needed_later(analyze(messages)) for messages in loaded]
    needed = (sum(x.total_v1 for x in labels), sum(x.total_v2 for x in labels))
    rows = []
    for trigger in triggers:
        for profile in profiles:
            totals, lost = billed(loaded, labels, lambda: policies(trigger, profile, model, judge), profile, prefix)
            base = totals["no compaction"]
            for policy, bill in totals.items():
                refused = ", ".join(f"{why} {n}" for why, n in sorted(bill.refused.items())) or "—"
                v1, v2 = lost[policy]
                rows.append(f"| {trigger // 1000} k | {profile} | {policy} | "
                            f"{(bill.sent - prefix * bill.calls) / (base.sent - prefix * base.calls):.3f} | "
                            f"**{(bill.billed - bill.prefix) / (base.billed - base.prefix):.3f}** | "
                            f"{bill.billed / base.billed:.3f} | {bill.adopted} | {bill.thinking_stripped} | {refused} | "
                            f"{v1 / max(1, needed[0]):.1%} | {v2 / max(1, needed[1]):.1%} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="claude-fable-5-1")
    parser.add_argument("--triggers", default="50000")
    parser.add_argument("--profiles", default="anthropic-5m,anthropic-1h")
    parser.add_argument("--sessions", type=int, help="the first N sessions (default: all)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "thinking.md"))
    args = parser.parse_args()
    started = time.time()
    judge = LocalJudge()
    loaded, usage = sessions("claude-code", args.sessions)
    lines = [f"# Thinking policies on the dev Claude Code sessions, sent to {args.model}", "",
             f"Written by `python benchmarks/thinking.py` on {date.today().isoformat()} ({platform.machine()}, "
             f"Python {platform.python_version()}); {len(loaded)} conversations. What the columns mean: the "
             "script's docstring.", "",
             "## 1. Budget-mode plans at four cut points: adopted, and accepted by the provider", "",
             "| plans made for | plans | adopted | accepted | refused blocks | thinking stripped | dropped by the API "
             "(drop_block) | not adopted |",
             "|---|---|---|---|---|---|---|---|",
             *acceptance(loaded, args.model, judge), "",
             "## 2. The bill and the needed results let go, per thinking policy", "",
             "| trigger | pricing | policy | sent × | billed × | billed × with the prefix | adopted | thinking stripped | "
             "refused | needed let go (v1) | needed let go (v2) |",
             "|---|---|---|---|---|---|---|---|---|---|---|",
             *bills(loaded, usage, list(map(int, args.triggers.split(","))), args.profiles.split(","), args.model,
                    judge), ""]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"\n{time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
