"""`jev demo`: the seed scenario end to end, offline, with no key."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

from rich.table import Table

from ..deciding.decision import Decision, Status
from ..formats import dump
from ..running import scenario
from .common import EXIT_ERROR, EXIT_OK, console, write_json


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the subparser `jev.cli.main` made for it."""
    p.add_argument("--workdir", help="where the archive goes, kept afterwards (default: a temporary directory, "
                   "removed when the demo ends)")
    p.set_defaults(run=run)


def _scores(decision: Decision) -> dict[str, Any]:
    if decision.plan is None:
        return {}
    return {v.key: {"keep_call": v.keep_call, "keep_result": v.keep_result, "reason": v.reason,
                    "action": v.action.value} for v in decision.plan.pairs_table()}


def run(args: argparse.Namespace) -> int:
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        return _run(args, Path(args.workdir), kept=True)
    with tempfile.TemporaryDirectory(prefix="jev-demo-") as workdir:  # nothing left behind in /tmp
        return _run(args, Path(workdir), kept=False)


def _run(args: argparse.Namespace, workdir: Path, kept: bool) -> int:
    out = console(args.quiet)
    ref = asyncio.run(scenario.run_reference(workdir))
    local = asyncio.run(scenario.run_local(scenario.messages()))
    decision: Decision = ref["decision"]
    result = {
        "scenario": "fix the failing count test (reference §8.2)",
        "reference_run": {
            "judge": "replay of the reference's recorded answers (t1 -> 0.01, everything else 0.99), not a model",
            "mode": "ENFORCE", "status": decision.status.value, "reason": decision.reason.value,
            "judge_calls": ref["judge_calls"], "pairs": _scores(decision),
            "compacted_history": dump(ref["history"]),
            "model_answer": ref["answer"],
            "archive_reference": ref["reference"], "archive_root": str(ref["archive"].root),
            "restored_messages": len(ref["restored"]), "restore_equals_original": ref["restored_equal"],
        },
        "local_judge_shadow": {
            "judge": "embedded local judge (trained on real coding-agent sessions; this synthetic transcript is "
                     "outside them)", "mode": "SHADOW",
            "status": local.status.value, "reason": local.reason.value, "pairs": _scores(local),
        },
    }
    write_json(result, None)
    ok = decision.status is Status.DECIDED and ref["restored_equal"] and ref["judge_calls"] == 1
    _summary(out, result, ok, kept)
    return EXIT_OK if ok else EXIT_ERROR


def _summary(out: Any, result: dict[str, Any], ok: bool, kept: bool) -> None:
    ref, local = result["reference_run"], result["local_judge_shadow"]
    out.rule("jev demo: the seed scenario")
    out.print("Six messages: a constraint, an obsolete read (t1), the current test read (t2), a follow-up.")
    out.print(f"[bold]Reference run[/] (ENFORCE): {ref['status']} / {ref['reason']}, {ref['judge_calls']} judge call.")
    out.print(f"  judge: {ref['judge']}")
    table = Table("pair", "ref call", "ref result", "ref action", "local call", "local result", "local reason",
                  title="P(still needed): reference answers beside the embedded local judge (SHADOW)")
    for key, s in ref["pairs"].items():
        mine = local["pairs"].get(key, {})
        table.add_row(key, f"{s['keep_call']}", f"{s['keep_result']}", s["action"], f"{mine.get('keep_call')}",
                      f"{mine.get('keep_result')}", f"{mine.get('reason')}")
    out.print(table)
    out.print("[bold]Compacted history[/]: " + ", ".join(
        f"{m['id']}({m['role']})" for m in ref["compacted_history"]))
    out.print(f"[bold]Model step[/]: {ref['model_answer']}")
    out.print(f"[bold]Archive[/]: {ref['archive_reference']} under {ref['archive_root']}"
              + ("" if kept else " (temporary, removed at the end; --workdir DIR keeps it)"))
    out.print(f"[bold]Restore[/]: {ref['restored_messages']} messages, equal to the original: "
              f"{ref['restore_equals_original']}")
    out.print(f"Local judge (SHADOW): {local['status']} / {local['reason']} — it changes nothing in SHADOW.")
    out.print("[green]demo ok[/]" if ok else "[red]demo failed[/]")
