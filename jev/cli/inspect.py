"""`jev inspect`: what a transcript file holds — the form detected, its messages and pairs, each tool's
results and sizes, and which tools could be made eligible — before anything is judged."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import JevError
from ..formats import FORMATS
from ..history import size
from ..policy import CompactionConfig, candidates
from ..transcript import analyze
from .common import UsageError, check_file_target, console, read_transcript, write_json


def add_parser(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("inspect", parents=[parent], help="show what a transcript holds, judging nothing")
    p.add_argument("input", metavar="INPUT", help="a transcript file (JSON or JSON Lines) or - for stdin")
    p.add_argument("--format", default="auto", choices=("auto", *FORMATS))
    p.add_argument("--out", help="write the JSON here instead of stdout")
    p.set_defaults(run=run)


def facts(messages: list[Any], form: str) -> dict[str, Any]:
    """The inspection as JSON: per tool, its pairs, result characters (total, largest) and how many of its
    pairs would be judged if it were eligible (plain successful text results outside the pinned messages,
    with the default config otherwise)."""
    try:
        transcript = analyze(messages)
    except JevError as exc:
        raise UsageError(f"INPUT: {exc}") from None
    tools = sorted({p.tool for p in transcript.pairs})
    judged = candidates(transcript, CompactionConfig(eligible_tools=frozenset(tools)))
    per_tool: dict[str, dict[str, Any]] = {}
    for tool in tools:
        sizes = [p.result_chars for p in transcript.pairs if p.tool == tool]
        per_tool[tool] = {"pairs": len(sizes), "result_chars": sum(sizes), "largest_result": max(sizes),
                          "judgeable": sum(1 for p in judged if p.tool == tool)}
    roles: dict[str, int] = {}
    for m in messages:
        roles[m.role] = roles.get(m.role, 0) + 1
    return {"format": form, "messages": len(messages), "roles": roles, "history_chars": sum(map(size, messages)),
            "pairs": len(transcript.pairs), "pending_calls": sorted(transcript.pending), "tools": per_tool,
            "could_be_eligible": [t for t in tools if per_tool[t]["judgeable"]]}


def run(args: argparse.Namespace) -> int:
    check_file_target(args.out, "--out")  # before any work: a typo costs nothing
    out = console(args.quiet)
    messages, form = read_transcript(args.input, args.format)
    result = facts(messages, form)
    write_json(result, args.out)
    if not args.quiet:  # the table goes to stderr, beside the JSON on stdout
        from rich.table import Table
        table = Table(title=f"{args.input}: {form}, {result['messages']} messages, {result['pairs']} pairs, "
                            f"{result['history_chars']:,} characters")
        for column in ("tool", "pairs", "result chars", "largest", "judgeable if eligible"):
            table.add_column(column, justify="left" if column == "tool" else "right")
        for tool, row in sorted(result["tools"].items(), key=lambda item: -item[1]["result_chars"]):
            table.add_row(tool, str(row["pairs"]), f"{row['result_chars']:,}", f"{row['largest_result']:,}",
                          str(row["judgeable"]))
        out.print(table)
        if result["could_be_eligible"]:
            out.print(f"eligible candidates: --eligible-tools {','.join(result['could_be_eligible'])}")
    return 0
