"""`jev replay`: recorded sessions replayed in SHADOW, the first of the four rollout commands.

Every transcript a folder, glob or fsspec URL names is judged at the decision points a host would have
had — every k pairs, or wherever a token trigger would have fired — and one decision record per plan is
written to one JSON Lines file, whole sessions at a time (an interrupted replay leaves whole sessions).
Session ids are the transcripts' paths below the source without their suffix, which is what `jev label
--transcripts SOURCE` looks up. Nothing is changed or archived: SHADOW decides and records only.
"""

from __future__ import annotations

import argparse
import glob as globbing
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import Progress

from ..deciding.decision import DEFAULT_BUDGET, ExecutionOptions, Mode, Status
from ..deciding.policy import Action
from ..errors import ConfigError, FormatError, JevError
from ..formats import (
    TRANSCRIPT_SUFFIXES,
    by_session,
    claude_code,
    conversation_id,
    conversations,
    detect,
    parse,
)
from ..model.canonical import canonical_json
from ..model.transcript import Message, message_to_dict
from ..reading.analysis import analyze
from ..reading.state import estimate_tokens
from ..running.compactor import Compactor
from ..support.validate import require_integer
from .common import (
    EXIT_ERROR,
    EXIT_OK,
    UsageError,
    add_format_argument,
    check_file_target,
    console,
    flag,
    next_step,
    staged,
    write_json,
)
from .compact import add_config_arguments, add_judge_arguments, config_from_args, judge_from


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the subparser `jev.cli.main` made for it."""
    p.add_argument("source", metavar="SOURCE", help="folder, glob or fsspec URL of transcripts (.json, .jsonl)")
    p.add_argument("--records", required=True, help="JSON Lines file to write the decision records to (must not "
                                                     "exist: a replay never mixes with older records)")
    add_format_argument(p)
    points = p.add_mutually_exclusive_group()
    points.add_argument("--every", type=int, default=8, help="a decision point after every N pairs")
    points.add_argument("--trigger-tokens", type=int,
                        help="instead: a decision point each time the history's estimated tokens pass another "
                             "multiple of N (where a host's token trigger would fire)")
    add_judge_arguments(p)
    add_config_arguments(p)
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="seconds per plan")
    p.set_defaults(run=run)


def sources(url: str) -> list[tuple[str, Any]]:
    """(session id, fsspec file) for every transcript `url` names, in name order; a `UsageError` naming
    SOURCE when it cannot be listed or names none."""
    try:
        found = _sources(url)
    except (OSError, ValueError) as exc:
        raise UsageError(f"SOURCE {url!r}: {exc}") from None
    if not found:
        raise UsageError(f"SOURCE {url!r}: no transcript ({', '.join(TRANSCRIPT_SUFFIXES)}) found")
    return found


def _sources(url: str) -> list[tuple[str, Any]]:
    import fsspec

    fs, _token, paths = fsspec.get_fs_token_paths(url)
    if globbing.has_magic(url):
        stem = fsspec.core.strip_protocol(url)
        magic = min(i for i, ch in enumerate(stem) if ch in "*?[")
        base = stem[:magic].rsplit("/", 1)[0] if "/" in stem[:magic] else ""
        found = paths
    elif len(paths) == 1 and fs.isdir(paths[0]):
        base = paths[0]
        found = fs.find(base)
    else:
        base = str(Path(paths[0]).parent) if paths else ""
        found = paths
    files = by_session((path for path in found if path.endswith(TRANSCRIPT_SUFFIXES) and fs.isfile(path)),
                       base or None)
    return [(session, (fs, path)) for session, path in files.items()]


def decision_points(messages: list[Message], every: int | None, trigger_tokens: int | None) -> list[int]:
    """The message counts at which a host would have planned: after every `every` pairs' results, or where
    the history's estimated tokens first pass each multiple of `trigger_tokens` (at a pair's end)."""
    pairs = analyze(messages).pairs
    ends = [p.result_message + 1 for p in pairs]
    if trigger_tokens is None:
        step = every or 8
        return [ends[n - 1] for n in range(step, len(ends) + 1, step)]
    tokens, upto, crossed, out = 0, 0, 0, []
    for end in ends:
        for m in messages[upto:end]:
            tokens += estimate_tokens(canonical_json(message_to_dict(m)).decode())
        upto = end
        if tokens // trigger_tokens > crossed:
            crossed = tokens // trigger_tokens
            out.append(end)
    return out


@dataclass
class Summary:
    """What a replay saw and would have done."""

    sessions: int = 0
    plans: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    reductions: list[float] = field(default_factory=list)
    let_go: Counter[tuple[str, str]] = field(default_factory=Counter)  # (tool, action) -> pairs
    let_go_chars: Counter[str] = field(default_factory=Counter)  # tool -> result characters
    skipped: Counter[str] = field(default_factory=Counter)
    unreadable: dict[str, str] = field(default_factory=dict)  # path -> why it could not be read
    outcomes: Counter[str] = field(default_factory=Counter)  # "STATUS / REASON: detail" of plans that proposed nothing
    reasons: Counter[str] = field(default_factory=Counter)  # the same, "STATUS / REASON" alone
    examples: dict[str, str] = field(default_factory=dict)  # the first detail of each
    conversations: int = 0  # one per session, but one per stretch of a session Claude Code compacted itself
    stretched: int = 0  # sessions replayed as several conversations (`jev.formats.conversations`)
    rewound_lines: int = 0  # message lines of Claude Code branches the user rewound away from, left out

    def as_dict(self) -> dict[str, Any]:
        tools = sorted({t for t, _a in self.let_go})
        return {"sessions": self.sessions, "plans": self.plans, "statuses": dict(self.statuses),
                "mean_proposed_reduction": sum(self.reductions) / len(self.reductions) if self.reductions else 0.0,
                "let_go_by_tool": {t: {"truncated": self.let_go[(t, "TRUNCATE_RESULT")],
                                       "dropped": self.let_go[(t, "DROP_PAIR")],
                                       "result_chars": self.let_go_chars[t]} for t in tools},
                "skipped": dict(self.skipped), "unreadable": self.unreadable,
                "not_decided": dict(self.outcomes), "not_decided_by_reason": dict(self.reasons),
                "conversations": self.conversations,
                "sessions_in_stretches": self.stretched, "rewound_message_lines_left_out": self.rewound_lines}


def run(args: argparse.Namespace) -> int:
    out = console(args.quiet)
    for name, value in (("--every", args.every), ("--trigger-tokens", args.trigger_tokens)):
        if value is not None:
            flag(require_integer, name, value, 1)
    check_file_target(args.records, "--records", fresh=True)  # a replay never mixes with older records
    found = sources(args.source)
    config = config_from_args(args)
    judge = judge_from(args.judge, args.judge_url, args.judge_model)
    batch: list[bytes] = []
    try:
        options = ExecutionOptions(Mode.SHADOW, args.budget, "replay", lambda _ctx, record: batch.append(
            record.to_json() + b"\n"))
        compactor = Compactor(judge, config, options)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    summary = Summary()
    done = written = 0
    # an interrupted replay keeps what it recorded: whole sessions, and says so
    try:
        with staged(args.records, "--records", keep_partial=True) as sink, \
                Progress(console=out, transient=True, disable=not out.is_terminal) as progress:
            task = progress.add_task("replaying sessions", total=len(found))
            for session, (fs, path) in found:
                progress.update(task, description=f"replaying {session}")
                _replay(compactor, session, fs, path, args, summary, batch)
                sink.write(b"".join(batch))  # whole sessions only
                sink.flush()
                written += len(batch)
                batch.clear()
                done += 1
                progress.advance(task)
    except KeyboardInterrupt:
        print(f"jev: interrupted after {done} of {len(found)} sessions: --records {args.records!r} holds their "
              f"{written} records (whole sessions); to run again, move it aside or name another file", file=sys.stderr)
        raise
    if not written:  # nothing recorded: no empty file left to block the next run
        Path(args.records.removeprefix("file://")).unlink(missing_ok=True)
    result = summary.as_dict()
    write_json(result, None)
    _print(out, summary, result, args.records)
    return EXIT_OK if summary.plans else EXIT_ERROR


def _print(out: Any, summary: Summary, result: dict[str, Any], records: str) -> None:
    """What a replay found, for a reader: its plans, what each tool would let go, why plans did not decide,
    the sessions read stretch by stretch or without rewound branches, and what was skipped or unreadable."""
    reduction = result["mean_proposed_reduction"]
    out.print(f"[bold]replayed {summary.sessions} sessions[/]: {summary.plans} plans "
              f"({', '.join(f'{k} {v}' for k, v in sorted(summary.statuses.items()))}); mean proposed reduction "
              f"{reduction:.1%}; records -> {records}")
    for tool, facts in result["let_go_by_tool"].items():
        out.print(f"  {tool}: would truncate {facts['truncated']}, drop {facts['dropped']} "
                  f"({facts['result_chars']:,} result characters)")
    for reason, count in summary.reasons.most_common():  # counted by reason: details differ plan to plan
        example = summary.examples.get(reason)
        step = next_step(reason.rsplit(" / ", 1)[-1])
        out.print(f"  {count} plan(s) {reason}" + (f" (e.g. {example})" if example else "")
                  + (f" — next: {step}" if step else ""))
    if summary.stretched:
        out.print(f"  {summary.stretched} Claude Code session(s) that Claude Code compacted itself replayed as one "
                  f"conversation per stretch between its compactions ({summary.conversations} conversations in all; "
                  "records name each <session>#stretch-<k>)")
    if summary.rewound_lines:
        out.print(f"  {summary.rewound_lines} message line(s) of Claude Code branches the user rewound away from "
                  "left out")
    for why, count in summary.skipped.most_common():
        out.print(f"  skipped {count}: {why}")
    for n, (path, why) in enumerate(summary.unreadable.items()):
        if n == 5:
            out.print(f"  … and {len(summary.unreadable) - 5} more unreadable (the JSON lists them all)")
            break
        out.print(f"  unreadable: {path}: {why}")


def _replay(compactor: Compactor, session: str, fs: Any, path: str, args: argparse.Namespace, summary: Summary,
            batch: list[bytes]) -> None:
    try:
        data = parse(fs.cat_file(path))
        form = detect(data) if args.format == "auto" else args.format
        every = conversations(data, form)
    except (FormatError, OSError) as exc:
        summary.skipped["unreadable transcript"] += 1
        summary.unreadable[path] = str(exc) or type(exc).__name__
        return
    summary.sessions += 1
    summary.conversations += len(every)
    summary.stretched += len(every) > 1
    if form == "claude-code":
        summary.rewound_lines += len(claude_code.rewound(data))
    for k, messages in enumerate(every, 1):
        _replay_one(compactor, conversation_id(session, k, len(every)), messages, args, summary)


def _replay_one(compactor: Compactor, conversation: str, messages: list[Message], args: argparse.Namespace,
                summary: Summary) -> None:
    """SHADOW at each decision point of one conversation, its records naming it."""
    for end in decision_points(messages, args.every, args.trigger_tokens):
        try:
            decision = compactor.plan_sync(messages[:end], context={"session_id": conversation})
        except JevError as exc:  # a plan never raises for its input; a bad config or judge setup does
            raise UsageError(str(exc)) from None
        summary.plans += 1
        summary.statuses[decision.status.value] += 1
        plan = decision.plan
        if decision.status is not Status.DECIDED:
            reason = f"{decision.status.value} / {decision.reason.value}"
            summary.outcomes[reason + (f": {decision.detail}" if decision.detail else "")] += 1
            summary.reasons[reason] += 1
            if decision.detail:
                summary.examples.setdefault(reason, decision.detail)
        if plan is None or decision.status is not Status.DECIDED:
            continue
        summary.reductions.append(plan.reduction)
        for view in plan.pairs_table():
            if view.action is not Action.KEEP:
                summary.let_go[(view.tool, view.action.value)] += 1
                summary.let_go_chars[view.tool] += view.result_chars
