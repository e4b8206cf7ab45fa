"""`jev inspect`: what a transcript file holds — the form detected, its messages and pairs, each tool's
results and sizes, and which tools could be made eligible — before anything is judged.

It suggests as eligible only tools whose names look read-only (read, search, list, fetch, …): their results
can be read again. A tool whose name says it changes something (write, update, book, …), runs commands
or code (bash, python, …), or says neither is listed apart with why: the library never decides a tool is
safe to forget (SPEC §3); this is a hint for the host, who does.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from ..deciding.policy import CompactionConfig, candidates
from ..errors import JevError
from ..reading.analysis import analyze
from ..reading.history import size
from .common import UsageError, add_format_argument, check_file_target, console, read_transcript, write_json


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the subparser `jev.cli.main` made for it."""
    p.add_argument("input", metavar="INPUT", help="a transcript file (JSON or JSON Lines) or - for stdin")
    add_format_argument(p)
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
    # a tool with a blank name is an ordinary tool that no config can name: never eligible
    judged = candidates(transcript, CompactionConfig(eligible_tools=frozenset(t for t in tools if t.strip())))
    per_tool: dict[str, dict[str, Any]] = {}
    for tool in tools:
        sizes = [p.result_chars for p in transcript.pairs if p.tool == tool]
        per_tool[tool] = {"pairs": len(sizes), "result_chars": sum(sizes), "largest_result": max(sizes),
                          "judgeable": sum(1 for p in judged if p.tool == tool)}
    roles: dict[str, int] = {}
    for m in messages:
        roles[m.role] = roles.get(m.role, 0) + 1
    could = [t for t in tools if per_tool[t]["judgeable"]]
    why_not = {t: why for t in could if (why := not_read_only(t)) is not None}
    return {"format": form, "messages": len(messages), "roles": roles, "history_chars": sum(map(size, messages)),
            "pairs": len(transcript.pairs), "pending_calls": sorted(transcript.pending), "tools": per_tool,
            "could_be_eligible": could, "suggested": [t for t in could if t not in why_not],
            "not_suggested": why_not}


_READS = frozenset({"read", "get", "list", "ls", "search", "find", "grep", "glob", "fetch", "view", "show", "cat",
                    "query", "lookup", "look", "describe", "inspect", "head", "tail", "stat", "count", "browse",
                    "websearch", "webfetch", "retrieve", "load", "open", "check", "print", "diff", "status", "info"})
_CHANGES = frozenset({"write", "edit", "update", "create", "delete", "remove", "book", "cancel", "send", "post", "put",
                      "set", "move", "rename", "modify", "insert", "apply", "patch", "exchange", "transfer", "submit",
                      "add", "replace", "commit", "push", "deploy", "install", "kill", "upload", "save", "store",
                      "todowrite", "multiedit", "notebookedit", "pay", "refund", "order", "assign", "close", "merge"})
_RUNS = frozenset({"bash", "shell", "sh", "exec", "execute", "run", "python", "terminal", "command", "cmd", "code",
                   "eval", "script", "sql", "task", "agent"})


def _words(name: str) -> list[str]:
    """A tool name's words: snake_case, kebab-case, dotted and camelCase split, lower-cased."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)] or [name.lower()]


def not_read_only(tool: str) -> str | None:
    """Why `tool` is not suggested as eligible, or None when its name looks read-only."""
    words = _words(tool)
    if any(w in _CHANGES for w in words) or tool.lower() in _CHANGES:
        return "its name says it changes something: a dropped call is a forgotten change"
    if any(w in _RUNS for w in words) or tool.lower() in _RUNS:
        return "it runs commands or code: some of its calls may change something (name it if that is acceptable)"
    if any(w in _READS for w in words) or tool.lower() in _READS:
        return None
    return "its name does not say it only reads"


def run(args: argparse.Namespace) -> int:
    check_file_target(args.out, "--out")  # before any work: a typo costs nothing
    out = console(args.quiet)
    messages, form, left_out = read_transcript(args.input, args.format)
    result = facts(messages, form)
    if left_out:
        result["left_out"] = left_out
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
        if left_out:
            out.print(left_out)
        if result["suggested"]:
            out.print(f"eligible candidates (names that look read-only): --eligible-tools "
                      f"{','.join(result['suggested'])}")
        for tool, why in result["not_suggested"].items():
            out.print(f"not suggested: {tool} — {why}")
    return 0
