"""`jev compact`: plan (and in ENFORCE, apply) a compaction of a transcript file."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from contextlib import nullcontext
from typing import Any

from ..deciding.cost import DEFAULT_PROFILE, HORIZON_RULE, PROFILES
from ..deciding.decision import DEFAULT_BUDGET, Decision, ExecutionOptions, Mode, PairRows, Plan, Status
from ..deciding.policy import CompactionConfig
from ..errors import ConfigError, FormatError
from ..formats import dump, session_id, writable
from ..judges import LocalJudge, OpenAIDecisionsJudge, ReplayJudge, SystemOneJudge
from ..model.scope import Scope
from ..providers import DEFAULT_THINKING_POLICY, ThinkingPolicy, resolve, with_drop_block
from ..running.compactor import Compactor
from ..running.records import JsonlSink
from ..support.validate import require_integer
from .common import (
    EXIT_ERROR,
    UsageError,
    add_archive_arguments,
    add_format_argument,
    add_scope_arguments,
    archive_from_args,
    check_archive_writable,
    check_file_target,
    console,
    exit_code,
    flag,
    next_step,
    read_json,
    read_transcript,
    scope_from_args,
    table_of,
    write_json,
)


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the subparser `jev.cli.main` made for it."""
    p.add_argument("input", metavar="INPUT|-", help="transcript JSON file, or - for stdin")
    add_format_argument(p)
    p.add_argument("--mode", default="shadow", type=str.lower, choices=["off", "shadow", "enforce"],
                   help="off: pass through; shadow: decide and record, change nothing; enforce: adopt only after "
                        "the full history is archived")
    add_judge_arguments(p)
    add_config_arguments(p)
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="seconds for the whole plan")
    p.add_argument("--horizon", type=int, help="model calls the host expects after this one, for the cost gate "
                                               f"(default: {HORIZON_RULE})")
    add_archive_arguments(p)
    add_scope_arguments(p)
    p.add_argument("--records", help="append decision records (JSON Lines) to this path or fsspec URL")
    p.add_argument("--show", action="store_true", help="also show every pair: tool, input head, size, both "
                   "scores, action and reason (why pinned, too) — a table on stderr, a `table` list in the JSON")
    p.add_argument("--out", help="write the JSON result here instead of stdout")
    p.set_defaults(run=run)


def add_judge_arguments(p: argparse.ArgumentParser) -> None:
    """--judge, --judge-url, --judge-model: which judge plans (credentials from the environment only)."""
    p.add_argument("--judge", default="local", help="local | local:FILE (retrained weights) | systemone | openai | "
                   "replay:FILE")
    p.add_argument("--judge-url", help="judge base URL (else JEV_BASE_URL for systemone, OPENAI_BASE_URL for openai)")
    p.add_argument("--judge-model", help="model name sent to the judge")


def add_config_arguments(p: argparse.ArgumentParser) -> None:
    """--config and the CompactionConfig fields a command line overrides most often."""
    p.add_argument("--config", help="JSON file of CompactionConfig fields by their Python names (thresholds.json "
                                    "from jev calibrate is one)")
    p.add_argument("--eligible-tools", help="comma-separated tools whose history may be judged (default: none; "
                                            "`jev inspect FILE` lists the tools a history holds)")
    defaults = CompactionConfig()
    p.add_argument("--keep-threshold", type=float,
                   help=f"KEEP a result scored at or above this (default {defaults.keep_threshold})")
    p.add_argument("--discard-threshold", type=float, help="let go of a result whose (size-scaled) score is at or "
                                                           f"below this (default {defaults.discard_threshold})")
    p.add_argument("--preserve-recent", type=int,
                   help=f"newest messages never judged (default {defaults.preserve_recent_messages})")
    p.add_argument("--preserve-recent-pairs", type=int,
                   help="newest candidate pairs never judged, after every other pin (default "
                        f"{defaults.preserve_recent_pairs}; `jev calibrate --recent-pairs` certifies one)")
    p.add_argument("--target-reduction", type=float,
                   help="budget mode: let go of the lowest-value results until this share (0..1) of the candidate "
                        "result characters is removed (the thresholds still cap it)")
    p.add_argument("--pricing", help="prompt-cache pricing the cost gate bills under: "
                                     f"{', '.join(PROFILES)} (default: {DEFAULT_PROFILE})")
    p.add_argument("--no-cost-gate", dest="cost_gate", action="store_false", default=None,
                   help="adopt a plan even when it would raise the bill under prompt caching")
    p.add_argument("--model", help="the model the history is sent to next: its provider's rules decide what a plan "
                                   "may change (default: the model the history names, else every rule at its "
                                   "strictest; see `jev check`)")
    p.add_argument("--thinking-policy", choices=[p.value for p in ThinkingPolicy],
                   help="thinking a preserved-thinking model binds to its prefix: strip it after the first change, "
                        "keep it and send drop_block, or change nothing before it "
                        f"(default: {DEFAULT_THINKING_POLICY.value})")


def config_from_args(args: argparse.Namespace) -> CompactionConfig:
    """The CompactionConfig the arguments give: --config, then the flags over it."""
    try:
        config = CompactionConfig()
        if args.config:
            values = read_json(args.config, "--config")
            config = CompactionConfig.from_mapping(values, f"--config {args.config}")
        overrides: dict[str, Any] = {}
        if args.eligible_tools is not None:
            overrides["eligible_tools"] = frozenset(t.strip() for t in args.eligible_tools.split(",") if t.strip())
        for flag, field in (("keep_threshold", "keep_threshold"), ("discard_threshold", "discard_threshold"),
                            ("preserve_recent", "preserve_recent_messages"),
                            ("preserve_recent_pairs", "preserve_recent_pairs"), ("target_reduction", "target_reduction"),
                            ("pricing", "pricing"), ("cost_gate", "cost_gate"), ("model", "model"),
                            ("thinking_policy", "thinking_policy")):
            if getattr(args, flag) is not None:
                overrides[field] = getattr(args, flag)
        return dataclasses.replace(config, **overrides) if overrides else config
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def judge_from(spec: str, url: str | None, model: str | None) -> Any:
    """The judge a `--judge` value names; credentials come from the environment only."""
    try:
        if spec == "local":
            return LocalJudge()
        if spec.startswith("local:"):  # weights you retrained (`python -m calibration.train_local --out FILE`)
            return LocalJudge(spec.removeprefix("local:"))
        if spec == "systemone":
            return SystemOneJudge(url, model=model) if model else SystemOneJudge(url)
        if spec == "openai":
            return OpenAIDecisionsJudge(url, model=model) if model else OpenAIDecisionsJudge(url)
        if spec.startswith("replay:"):
            return ReplayJudge.from_file(spec.removeprefix("replay:"))
    except (ConfigError, FormatError) as exc:
        raise UsageError(str(exc)) from None
    raise UsageError(f"--judge must be local, local:FILE, systemone, openai or replay:FILE (got {spec!r})")


NO_PLAN = Plan((), PairRows(), 0, 0, 0, "", 0.0).figures()  # the figures of a decision without a plan: an empty one's


def result_json(decision: Decision, mode: Mode, messages: list[Any], fmt: str, drop_block: bool = False
                ) -> dict[str, Any]:
    """The JSON `jev compact` writes; `drop_block`: an adopted Anthropic request body asks the API to drop the
    thinking the plan invalidated (the drop-block thinking policy) rather than refuse it."""
    plan = decision.plan
    adopted = decision.status is Status.DECIDED and mode is Mode.ENFORCE and plan is not None
    written = dump(list(plan.messages) if adopted and plan is not None else messages, fmt)
    if adopted and drop_block and fmt == "anthropic-request" and isinstance(written, dict):
        written = with_drop_block(written)
    out: dict[str, Any] = {
        "status": decision.status.value, "reason": decision.reason.value, "mode": mode.value,
        "messages": written,
        "decisions": {k: a.value for k, a in plan.decisions.items()} if plan else {},
        "scores": {k: {"keep_call": s.keep_call, "keep_result": s.keep_result, "reason": s.reason}
                   for k, s in plan.scores.items()} if plan else {},
        "pairs": {k: {"call_id": c, "tool": t} for k, (c, t) in plan.pairs.items()} if plan else {},
        **(plan.figures() if plan else NO_PLAN),
        "thinking_stripped": plan.thinking_stripped if plan else 0,
    }
    if decision.detail:
        out["detail"] = decision.detail
    return out


def show_table(out: Any, plan: Plan) -> None:
    """The plan's pairs as a table for a reader."""
    def score(p: float | None) -> str:
        return "—" if p is None else f"{p:.3f}"
    rows = [[v.key, v.tool, v.input_head, f"{v.result_chars:,}", score(v.keep_call) if not v.pinned else "",
             score(v.keep_result) if not v.pinned else "", score(v.scaled_result) if not v.pinned else "",
             v.action.value, f"PINNED: {v.pinned}" if v.pinned else v.reason] for v in plan.pairs_table()]
    columns = ["key", "tool", "input", "result chars", "keep_call", "keep_result", "scaled", "action", "reason"]
    out.print(table_of("pairs", columns, rows, {"tool", "input", "reason"}, out.width))
    out.print("scaled: keep_result per 1000 result characters (size-aware), the score the thresholds compare; a "
              "raw keep_result at or above keep_threshold keeps the result whatever its size")


def run(args: argparse.Namespace) -> int:
    check_file_target(args.out, "--out")  # before any work: a typo costs nothing
    out = console(args.quiet)
    messages, fmt, left_out = read_transcript(args.input, args.format)
    fmt = writable(fmt)  # a read-only form (Claude Code) is written back as the Anthropic messages it holds
    try:  # what cannot be written back in its form is refused before any judging or archiving
        dump(messages, fmt)
    except FormatError as exc:
        raise UsageError(f"INPUT {args.input!r}: cannot be written back as {fmt} ({exc})") from None
    config = config_from_args(args)
    if args.horizon is not None:
        flag(require_integer, "--horizon", args.horizon, 1)
    mode = Mode(args.mode.upper())
    scope = scope_from_args(args)
    compactor, observer = _compactor(args, config, mode, scope)
    with out.status(f"judging {len(messages)} messages…") if out.is_terminal else nullcontext():
        # a record names its session so that `jev label` can join it; stdin names none, so records of a plan
        # read from stdin carry no session unless --session gives one (label reports them, never mis-joins)
        session = args.session or (None if args.input == "-" else session_id(args.input))
        decision = compactor.plan_sync(messages, scope=scope, context={"session_id": session} if session else None,
                                       horizon=args.horizon)
    if observer is not None and observer.error is not None:  # records are SHADOW's whole output: exit 3
        print(f"jev: error: --records {args.records!r}: the decision record could not be written "
              f"({type(observer.error).__name__}: {observer.error})", file=sys.stderr)
        return EXIT_ERROR
    try:
        result = result_json(decision, mode, messages, fmt, config.thinking is ThinkingPolicy.DROP_BLOCK
                             and resolve(messages, config.model)[1].preserved_thinking)
    except FormatError as exc:  # the compacted history has no form in `fmt`: the input is the answer
        print(f"jev: error: the compacted history cannot be written as {fmt} ({exc}); the history is unchanged"
              + (f" (its snapshot {decision.plan.archive_reference} is an orphan)" if decision.plan
                 and decision.plan.archive_reference else ""), file=sys.stderr)
        return EXIT_ERROR
    if left_out:
        result["left_out"] = left_out
    if args.show:
        result["table"] = [v.as_dict() for v in decision.plan.pairs_table()] if decision.plan else []
    write_json(result, args.out)
    if args.show and decision.plan is not None:
        show_table(out, decision.plan)
    if left_out:
        out.print(left_out)
    _summary(out, result, os.fspath(args.input))
    return exit_code(decision.status)


def _compactor(args: argparse.Namespace, config: CompactionConfig, mode: Mode, scope: Scope | None
               ) -> tuple[Compactor, _Recorder | None]:
    """The compactor the flags configure (its judge, archive and records), and the recorder of its records
    when --records names a sink; every refusal a usage error naming the flag."""
    archive = None
    if mode is Mode.ENFORCE:
        if not args.archive or scope is None:
            raise UsageError("--mode enforce needs --archive and --user, --agent, --session")
        check_archive_writable(args.archive)
        archive = archive_from_args(args)
    judge = judge_from(args.judge, args.judge_url, args.judge_model) if mode is not Mode.OFF else LocalJudge()
    try:
        observer = _Recorder(_records_sink(args.records)) if args.records else None
        options = ExecutionOptions(mode, args.budget, "cli", observer)
    except (ConfigError, ValueError, OSError) as exc:
        raise UsageError(f"--records {args.records!r}: {exc}" if args.records else str(exc)) from None
    try:
        return Compactor(judge, config, options, archive), observer
    except ConfigError as exc:  # e.g. thresholds certified for another judge
        raise UsageError(str(exc)) from None


def _records_sink(url: str) -> JsonlSink:
    """A sink for --records: a local path must name a file in an existing folder (never created silently);
    a URL whose store cannot be reached (no credentials, no bucket) is a usage error naming the cause."""
    check_file_target(url, "--records")
    try:
        return JsonlSink(url)
    except Exception as exc:
        raise UsageError(f"--records {url!r}: cannot be opened ({type(exc).__name__}: {exc})") from None


class _Recorder:
    """Writes records through a sink and keeps a failure for the command to report (the plan never sees it)."""

    def __init__(self, sink: JsonlSink) -> None:
        self.sink = sink
        self.error: Exception | None = None

    def __call__(self, context: Any, record: Any) -> None:
        try:
            self.sink(context, record)
        except Exception as exc:
            self.error = exc


def _summary(out: Any, result: dict[str, Any], source: str) -> None:
    counts: dict[str, int] = {}
    for action in result["decisions"].values():
        counts[action] = counts.get(action, 0) + 1
    line = f"[bold]{result['status']}[/] / {result['reason']} ({result['mode']}) for {source}"
    if result["decisions"]:
        line += f": {len(result['decisions'])} pairs " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        line += f"; reduction {result['reduction']:.1%}, {result['requests']} judge request(s)"
        if result["windows"]:
            line += f" in {result['windows']} windows"
    if result["cost"] and result["status"] == "DECIDED":
        cost = result["cost"]
        line += (f"; pays for itself after {cost['break_even_calls']} later calls under {cost['profile']} "
                 f"(net {cost['net']:+,.0f} tokens over {cost['horizon']})" if cost["pays"] else
                 f"; raises the bill by {cost['net']:,.0f} tokens over {cost['horizon']} calls under {cost['profile']} "
                 + ("(the cost gate is off: cost_gate is false)" if result["target_met"] is None  # else budget mode
                    else "(budget mode is the host's need: never refused for cost)"))
    if result["archive_reference"]:
        line += f"; archived as {result['archive_reference']} (jev restore takes it whole)"
    if result.get("detail"):
        line += f" — {result['detail']}"
    step = next_step(result["reason"]) if result["status"] != "DECIDED" else None
    if step:
        line += f"; next: {step}"
    out.print(line)
