"""`jev cost`: the billed-cost replay of a user's own sessions, before enforcing.

Every transcript SOURCE names (a folder, a glob or an fsspec URL, any form the library reads, Claude Code
sessions included: one Claude Code compacted itself as one conversation per stretch between its
compactions, `jev.formats.conversations`) is replayed call by call — every assistant message is one model
call — under four policies on the same calls (`jev.billing`): no compaction, clearing all but the last 3
results on every call over the trigger (LangChain's `ClearToolUsesEdit`, not persisted), clearing the
oldest results in batches at each trigger event, and the configured compactor in ENFORCE with a memory
archive. It reports,
per policy, the tokens sent, the input billed under a pricing profile and its ratio to no compaction,
the cache-read share, the compactions adopted and refused (and why), the largest request and the
requests over `--window`, and the later-needed results each let go of under two label proxies computed
from the sessions themselves (`calibration.labels`: labels-v1 and labels-v2-reuse).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import Progress

from ..billing import Bill, ClearBatched, ClearEachCall, JevCompaction, NoCompaction, Replayed, replayed
from ..billing.usage import (
    Billed,
    calls_billed,
    check,
    prefix_of,
    recorded_profile,
    session_prefix,
    sessions_check,
    usage_points,
    warm_tokens,
)
from ..deciding.cost import PROFILES, PricingProfile
from ..deciding.decision import DEFAULT_BUDGET, ExecutionOptions, Mode
from ..errors import ConfigError, FormatError, JevError
from ..formats import conversation_id, conversations, parse
from ..reading.analysis import analyze
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
    table_of,
    write_json,
)
from .compact import add_config_arguments, add_judge_arguments, config_from_args, judge_from
from .replay import sources


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the subparser `jev.cli.main` made for it."""
    p.add_argument("source", metavar="SOURCE", help="folder, glob or fsspec URL of transcripts (.json, .jsonl)")
    add_format_argument(p)
    p.add_argument("--trigger-tokens", type=int, default=50_000,
                   help="a compaction (or a clearing) each time the history passes another multiple of N tokens")
    p.add_argument("--target-tokens", type=int, help="budget mode: bring the history under N tokens at each trigger "
                                                     "(and batched clearing clears down to it); default: the "
                                                     "threshold table, and batched clearing to half the trigger")
    p.add_argument("--clear-at-least", type=int, help="batched clearing clears only when it frees at least N tokens "
                                                      "(default: a tenth of the trigger)")
    p.add_argument("--window", type=int, help="count the requests over N tokens (a model's context window)")
    p.add_argument("--prefix-tokens", default="0", metavar="N|auto",
                   help="tokens every request carries before the history and the transcript does not hold (the "
                        "host's system prompt and tool definitions: ~28 000 for Claude Code), billed alike under "
                        "every policy (default 0); auto: fitted from the billed usage the transcripts record "
                        "(Claude Code, mini-swe-agent), and the replay checked against that bill")
    p.add_argument("--price-as-recorded", action="store_true",
                   help="price each session's cache writes with the lifetimes its usage records (Anthropic's "
                        "5-minute and 1-hour writes), not --pricing's; the cost gate keeps --pricing")
    p.add_argument("--no-labels", dest="labels", action="store_false", default=argparse.SUPPRESS,
                   help="skip counting the later-needed results each policy let go of (default: they are counted)")
    p.set_defaults(labels=True)
    p.add_argument("--plot", help="write a PNG of billed input against needed results let go, per policy "
                                  "(needs matplotlib: pip install 'jev-compaction[calibrate]')")
    add_judge_arguments(p)
    add_config_arguments(p)
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="seconds per plan")
    p.add_argument("--out", help="write the JSON report here instead of stdout")
    p.set_defaults(run=run)


def _checked(args: argparse.Namespace) -> tuple[int, int | None, int | None]:
    """The trigger, the target and the prefix (None: auto), or the `UsageError` naming the flag."""
    trigger = flag(require_integer, "--trigger-tokens", args.trigger_tokens, 1)
    target = args.target_tokens
    if target is not None:
        flag(require_integer, "--target-tokens", target, 1)
        if target >= trigger:
            raise UsageError(f"--target-tokens must be below --trigger-tokens (got {target} >= {trigger})")
    for name, value in (("--clear-at-least", args.clear_at_least), ("--window", args.window)):
        if value is not None:
            flag(require_integer, name, value, 1 if name == "--window" else 0)
    prefix = None  # auto: fitted from the billed usage
    if args.prefix_tokens != "auto":
        try:
            prefix = int(args.prefix_tokens)
        except ValueError:
            raise UsageError(f"--prefix-tokens must be an integer >= 0 or auto (got {args.prefix_tokens!r})") from None
        flag(require_integer, "--prefix-tokens", prefix, 0)
    check_file_target(args.out, "--out")
    check_file_target(args.plot, "--plot")
    return trigger, target, prefix


@dataclass(frozen=True, slots=True)
class _Run:
    """One conversation replayed unpriced: its name, each policy's calls, and — where its transcript records
    the billed usage and the prefix is fitted — its billed calls and their (estimate, billed input) points."""

    name: str
    by_policy: dict[str, Replayed]
    calls: list[Billed] | None
    points: list[tuple[int, int]]


@dataclass
class _Replays:
    """What the one pass over the files gathered: each conversation's policies replayed unpriced, with the
    calls its provider billed when the prefix is to be fitted from them; the (estimate, billed input) points
    of those calls; per policy, the later-needed results it let go under labels-v1 and labels-v2-reuse, and
    how many there were; the files that could not be read, and why."""

    runs: list[_Run] = field(default_factory=list)
    points: list[tuple[int, int]] = field(default_factory=list)
    lost: dict[str, list[int]] = field(default_factory=dict)
    needed: list[int] = field(default_factory=lambda: [0, 0])
    skipped: dict[str, str] = field(default_factory=dict)


def _replay_all(found: list[tuple[str, Any]], form: str, policies: Callable[[], list[Any]], profile: PricingProfile,
                fitting: bool, labels: bool, out: Any, as_recorded: bool = False) -> _Replays:
    """Every conversation of every file replayed under fresh `policies()`, unpriced; its billed calls kept
    when `fitting` the prefix; the needed results each policy let go counted when `labels`. `as_recorded`:
    a conversation whose usage records its cache writes is replayed under its own pricing
    (`jev.billing.usage.recorded_profile`). A file that cannot be read is skipped, with why."""
    from calibration.labels import needed_later

    done = _Replays()
    with Progress(console=out, transient=True, disable=not out.is_terminal) as progress:
        task = progress.add_task("replaying sessions", total=len(found))
        for session, (fs, path) in found:
            progress.update(task, description=f"replaying {session}")
            try:  # each conversation the file holds (one per stretch of a session Claude Code compacted itself)
                document = parse(fs.cat_file(path))
                every = conversations(document, form)
                billed_calls = [calls_billed(document, messages) if fitting or as_recorded else None
                                for messages in every]
                runs_of = [replayed(messages, policies(), recorded_profile(calls, profile)
                                    if as_recorded and calls is not None else profile)
                           for messages, calls in zip(every, billed_calls, strict=True)]
            except (FormatError, OSError, JevError) as exc:
                done.skipped[path] = str(exc) or type(exc).__name__
                progress.advance(task)
                continue
            for k, (messages, run, calls) in enumerate(zip(every, runs_of, billed_calls, strict=True), 1):
                points = usage_points(messages, calls) if fitting and calls is not None else []
                done.points.extend(points)
                done.runs.append(_Run(conversation_id(session, k, len(every)), run, calls if fitting else None,
                                      points))
                if labels:
                    needed = needed_later(analyze(messages))
                    done.needed[0] += needed.total_v1
                    done.needed[1] += needed.total_v2
                    for name, replay_of in run.items():
                        counts = done.lost.setdefault(name, [0, 0])
                        for key, point in replay_of.bill.let_go:
                            counts[0] += needed.v1(key, point)
                            counts[1] += needed.v2(key, point)
            progress.advance(task)
    return done


def run(args: argparse.Namespace) -> int:
    from archive import MemoryStore, StoreArchive

    trigger, target, prefix = _checked(args)
    out = console(args.quiet)
    found = sources(args.source)
    config = config_from_args(args)
    judge = judge_from(args.judge, args.judge_url, args.judge_model)
    try:
        options = ExecutionOptions(Mode.ENFORCE, args.budget, "cost-replay")
        Compactor(judge, config, options, StoreArchive(MemoryStore()))  # the config's own checks, before any work
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    profile = config.profile
    cleared_to = target if target is not None else trigger // 2
    jev_name = f"jev (budget to {target:,})" if target is not None else "jev"

    def policies() -> list[Any]:
        compactor = Compactor(judge, config, options, StoreArchive(MemoryStore()))  # a memory archive per session
        return [NoCompaction(), ClearEachCall(trigger),
                ClearBatched(trigger, cleared_to, clear_at_least=trigger // 10 if args.clear_at_least is None
                             else args.clear_at_least),
                JevCompaction(compactor, trigger, target, name=jev_name),
                JevCompaction(Compactor(judge, config, options, StoreArchive(MemoryStore())), trigger, target,
                              name=f"{jev_name}, warm triggers only", cold=False)]  # the saving a cold cache brings

    # one pass over the files, every conversation replayed unpriced; priced once the prefix is known
    done = _replay_all(found, args.format, policies, profile, prefix is None, args.labels, out, args.price_as_recorded)
    if not done.runs:
        raise UsageError(f"SOURCE {args.source!r}: no session could be read ({len(done.skipped)} unreadable)")
    fit = None
    if prefix is None:
        fit = prefix_of(done.points)
        if fit is None:
            raise UsageError("--prefix-tokens auto: no transcript records the billed usage of its model calls "
                             "(Claude Code sessions and mini-swe-agent trajectories do); give a number")
        prefix = fit.tokens
    totals: dict[str, Bill] = {}
    checked: list[tuple[list[Billed], Bill]] = []  # with a fitted prefix: each conversation's billed calls, its base bill
    each: list[tuple[str, list[Billed], Bill, float]] = []  # the same by name, with its own prefix's scale
    for run in done.runs:
        # with usage, each conversation's own prefix (else the pooled fit), and what its first request found cached
        own = session_prefix(run.points, fit) if fit is not None and run.calls is not None else None
        tokens, warm = (own.tokens, warm_tokens(run.calls, own)) if own is not None and run.calls else (prefix, 0)
        bills = {name: replay_of.priced(tokens, args.window, warm) for name, replay_of in run.by_policy.items()}
        for name, bill in bills.items():
            totals.setdefault(name, Bill()).add(bill)
        if run.calls is not None and own is not None:
            checked.append((run.calls, bills["no compaction"]))
            each.append((run.name, run.calls, bills["no compaction"], own.scale))
    report = _report(totals, done, args, profile.name, jev_name, prefix, len(found) - len(done.skipped))
    if fit is not None:
        report["prefix_fit"] = fit.as_dict()
        recorded = args.price_as_recorded
        report["checked_against_billed"] = check(checked, fit, profile, recorded).as_dict() if checked else None
        if checked:
            report["checked_against_billed"]["priced_as_recorded"] = recorded
            report["checked_against_billed"]["sessions"] = sessions_check(each, None if recorded else profile).as_dict()
    said = report.get("checked_against_billed")
    if fit is not None and said is not None and said["replay_over_billed"] is not None:
        out.print(f"prefix fitted from {fit.calls:,} calls' billed usage: input tokens = {fit.intercept:,.0f} + "
                  f"{fit.scale:.3f} x the history's estimate, so {prefix:,} estimated tokens a request; replayed "
                  f"without compaction, the sessions bill {said['replay_over_billed']:.3f}x what the provider "
                  f"billed ({said['replay_without_prefix_over_billed']:.3f}x without the prefix) under "
                  + ("each write's recorded lifetime" if said.get("priced_as_recorded") else profile.name))
        if said["hour_long_cache_writes"] > 0.5 and profile.cache_write < PROFILES["anthropic-1h"].cache_write \
                and not said.get("priced_as_recorded"):
            out.print(f"the provider cached {said['hour_long_cache_writes']:.0%} of what it wrote for an hour, which "
                      "bills a write at 2x: --pricing anthropic-1h prices these sessions as they were billed")
    write_json(report, args.out)
    _table(out, report)
    if totals[jev_name].events == 0:
        out.print(f"no session reached the trigger of {trigger:,} tokens, so nothing was planned (the largest request "
                  f"carried {totals['no compaction'].largest:,}): lower --trigger-tokens")
    if args.plot:
        _plot(report, args.plot, out)
    return EXIT_OK if len(done.skipped) < len(found) else EXIT_ERROR


def _report(totals: dict[str, Bill], done: _Replays, args: argparse.Namespace, profile: str, planned: str,
            prefix: int, sessions: int) -> dict[str, Any]:
    """The report's JSON: one row per policy (`planned`: the compactor's, the one whose trigger events
    are counted against the target), over the `sessions` files read (`args`: the checked flags)."""
    lost, needed = done.lost if args.labels else None, done.needed
    target, window = args.target_tokens, args.window
    base = totals["no compaction"]
    rows = {}
    for name, bill in totals.items():
        row: dict[str, Any] = {
               "calls": bill.calls, "tokens_sent": bill.sent, "sent_ratio": bill.sent / base.sent if base.sent else None,
               "billed_input": round(bill.billed), "billed_ratio": bill.billed / base.billed if base.billed else None,
               "cache_read_share": round(bill.read_share, 4), "compactions_adopted": bill.adopted,
               "compactions_refused": bill.refused, "largest_request": bill.largest,
               "thinking_stripped": bill.thinking_stripped}
        if window is not None:
            row["requests_over_window"] = bill.over_window
        if target is not None and name == planned:  # its trigger events, and those that ended over the target
            row["target_events"] = {"events": bill.events, "over_target": bill.over_target + bill.unexplained,
                                    "over_target_without_reason": bill.unexplained}
        if lost is not None:
            v1, v2 = lost.get(name, [0, 0])
            row["needed_results_let_go"] = {
                "labels-v1": v1, "labels-v1_share": v1 / needed[0] if needed[0] else None,
                "labels-v2-reuse": v2, "labels-v2-reuse_share": v2 / needed[1] if needed[1] else None}
        rows[name] = row
    return {"sessions": sessions, "profile": profile, "trigger_tokens": args.trigger_tokens, "target_tokens": target,
            "window": window, "prefix_tokens": prefix,
            "needed_results": {"labels-v1": needed[0], "labels-v2-reuse": needed[1]} if lost is not None else None,
            "policies": rows, "unreadable": done.skipped}


def _table(out: Any, report: dict[str, Any]) -> None:
    prefix = f", {report['prefix_tokens']:,} prefix tokens a request" if report["prefix_tokens"] else ""
    title = f"{report['sessions']} sessions, trigger {report['trigger_tokens']:,} tokens, {report['profile']} pricing{prefix}"
    columns = ["policy", "tokens sent", "sent ×", "billed ×", "cache read", "adopted", "refused", "largest"]
    if report["window"] is not None:
        columns.append(f"over {report['window']:,}")
    if report["needed_results"] is not None:
        columns += ["needed let go (v1)", "needed let go (v2)"]
    rows = []
    for name, row in report["policies"].items():
        refused = ", ".join(f"{why} {n}" for why, n in sorted(row["compactions_refused"].items())) or "—"
        cells = [name, f"{row['tokens_sent']:,}", _ratio(row["sent_ratio"]), _ratio(row["billed_ratio"]),
                 f"{row['cache_read_share']:.1%}", str(row["compactions_adopted"]), refused, f"{row['largest_request']:,}"]
        if report["window"] is not None:
            cells.append(str(row["requests_over_window"]))
        if report["needed_results"] is not None:
            lost = row["needed_results_let_go"]
            cells += [_share(lost["labels-v1_share"]), _share(lost["labels-v2-reuse_share"])]
        rows.append(cells)
    out.print(table_of(title, columns, rows, {"policy", "refused"}, out.width))
    for name, row in report["policies"].items():
        if "target_events" in row:
            out.print(_over_target(name, row["target_events"], report["target_tokens"]))
    for path, why in list(report["unreadable"].items())[:5]:
        out.print(f"  unreadable: {path}: {why}")


def _over_target(name: str, events: dict[str, int], target: int) -> str:
    """How many of the compactor's trigger events ended over the target, and whether each plan said why."""
    silent = events["over_target_without_reason"]
    return (f"{name}: {events['over_target']} of {events['events']} trigger events ended over {target:,} tokens, "
            + (f"{silent} of them with no reason in the plan" if silent else "each plan saying why (its detail)"))


def _ratio(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.3f}"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _plot(report: dict[str, Any], path: str, out: Any) -> None:
    """Billed input against the share of later-needed results let go, one point per policy and proxy."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        out.print("[yellow]no plot: matplotlib is not installed (pip install 'jev-compaction[calibrate]')[/]")
        return
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (name, row) in enumerate(report["policies"].items()):  # a color per policy, a marker per proxy
        lost = row.get("needed_results_let_go") or {}
        for proxy, marker in (("labels-v1", "o"), ("labels-v2-reuse", "s")):
            share = lost.get(f"{proxy}_share")
            if share is not None and row["billed_ratio"] is not None:
                ax.scatter(share, row["billed_ratio"], marker=marker, color=colors[k % len(colors)],
                           label=f"{name} ({proxy})")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("share of later-needed results let go")
    ax.set_ylabel(f"billed input / no compaction ({report['profile']})")
    ax.set_title(f"{report['sessions']} sessions, trigger {report['trigger_tokens']:,} tokens")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(Path(path), dpi=110)
    plt.close(fig)
