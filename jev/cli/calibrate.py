"""`jev calibrate`: labelled shadow rows -> thresholds with a guarantee, `thresholds.json` and a report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import Progress

from ..support.validate import require_in
from .common import EXIT_ERROR, EXIT_OK, UsageError, check_writable, console, flag, write_json

if TYPE_CHECKING:
    from calibration.thresholds import Calibration


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the subparser `jev.cli.main` made for it."""
    from ..deciding.policy import CompactionConfig  # the compactor's own default keep threshold
    p.add_argument("labelled", metavar="LABELLED", help="labelled rows from `jev label` (JSON Lines, path or URL)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="tolerated R_result and R_call: per session, the share of later-needed results let go and "
                        "of later-needed calls dropped")
    p.add_argument("--delta", type=float, default=0.1, help="tolerated probability that the guarantee fails")
    p.add_argument("--per-tool", action="store_true", help="also certify thresholds per tool")
    p.add_argument("--label", default=None, choices=("labels-v1", "labels-v2-reuse", "labels-v3-strict"),
                   help="which proxy's 'needed' R_result counts (default: labels-v3-strict, the strict proxy, "
                        "whose needs read as genuine most often; R_call always labels-v1's)")
    p.add_argument("--size-aware", action=argparse.BooleanOptionalAction, default=True,
                   help="rank results by expected loss per character saved, as the compactor does by default "
                        "(--no-size-aware: plain probabilities)")
    p.add_argument("--size-exponents", default="1",
                   help="comma-separated size exponents to certify (e.g. 0.5,1,2): each at delta over their number, "
                        "the one letting go of the most kept, so the guarantee holds at delta (size-aware only)")
    p.add_argument("--uncertain-rate", type=float, default=None,
                   help="deprecated, no effect: the thresholds are certified with --keep-threshold")
    p.add_argument("--target", action="store_true",
                   help="also certify the largest budget-mode target_reduction whose R_result and R_call are <= alpha")
    p.add_argument("--keep-threshold", default=str(CompactionConfig().keep_threshold),
                   help="the keep_threshold the compactor will run (never let go a result scored at or above it): "
                        "the discard threshold and --target are certified with it, through the compactor's own "
                        "decision table; comma-separated candidates (e.g. 0.6,0.8) are each certified at delta over "
                        "their number and the one letting go of the most is written (default: %(default)s)")
    p.add_argument("--recent-pairs", default="0",
                   help="recency windows to certify with the thresholds: the newest N candidate pairs never judged "
                        "(preserve_recent_pairs); comma-separated candidates (e.g. 0,4,8,16) are each certified at "
                        "delta over their number and the one letting go of the most is written; not with --target "
                        "(default: %(default)s)")
    p.add_argument("--bound", choices=("wsr", "wsr-avg", "hb"), default=None,
                   help="wsr-avg (default): Waudby-Smith–Ramdas betting, the final capital averaged over 16 orders "
                        "of the sessions fixed in advance, so one order's early run of sessions that needed nothing "
                        "cannot certify; wsr: the same bets along one order, certifying at the capital's peak "
                        "(lets go of more, can hang on that order's luck); hb: Hoeffding–Bentkus")
    p.add_argument("--fit-share", type=float, default=0.0,
                   help="share of sessions spent on a score-quantile grid instead of certifying (0: a fixed grid, "
                        "every session certifies)")
    p.add_argument("--seed", type=int, default=0, help="seed of the session split (with --fit-share)")
    p.add_argument("--out", required=True, help="directory for thresholds.json, calibration.json and the report")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # imported here: scikit-learn and scipy take seconds to import, and only this command needs them
    from calibration import ThresholdSelector, rows_from
    from calibration import report as write_report
    from calibration.join import read_records
    from calibration.risk import DEFAULT_BOUND

    out = console(args.quiet)
    exponents, keeps, windows = _checked(args)  # before any work
    with Progress(console=out, transient=True, disable=not out.is_terminal) as progress:
        task = progress.add_task("reading labelled rows", total=None)
        try:
            records = []
            for row in read_records(args.labelled):
                records.append(row)
                progress.advance(task)
            rows = rows_from(records, args.label)
        except FileNotFoundError as exc:
            raise UsageError(f"cannot read {exc.filename or args.labelled!r}: no such file") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"LABELLED {args.labelled!r}: not labelled rows from jev label ({exc})") from None
        progress.update(task, description="certifying")
        selector = ThresholdSelector(args.alpha, args.delta, per_tool=args.per_tool, size_aware=args.size_aware,
                                     bound=args.bound or DEFAULT_BOUND, fit_share=args.fit_share,
                                     target=args.target, keep_threshold=keeps, curve_bounds=True,
                                     seed=args.seed, size_exponents=exponents, recent_pairs=windows)
        try:
            result = selector.fit(rows).calibration_
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        progress.update(task, description="writing the report")
        try:
            summary = write_report(result, args.out)
        except OSError as exc:
            raise UsageError(f"--out {args.out!r}: cannot write the report ({exc.strerror or exc})") from None
    write_json(summary, None)
    _print(out, result, args.out)
    return EXIT_OK if result.certified else EXIT_ERROR


def _checked(args: argparse.Namespace) -> tuple[tuple[float, ...], tuple[float, ...], tuple[int, ...]]:
    """The size exponents, keep thresholds and recency windows the flags give, once every flag is checked and
    --out is a writable folder (or one to make in an existing folder); else the `UsageError` naming the flag."""
    from calibration.thresholds import parse_keep_thresholds, parse_recent_pairs, parse_size_exponents

    target = Path(args.out).resolve()
    if target.exists() and not target.is_dir():
        raise UsageError(f"--out {args.out!r}: is a file; name a folder for the report")
    if not target.parent.is_dir():
        raise UsageError(f"--out {args.out!r}: no such folder {str(target.parent)!r} (it is never created)")
    check_writable(target if target.is_dir() else target.parent, "--out", args.out)
    flag(require_in, "--alpha", args.alpha, 0, 1, open_low=True, open_high=True)
    flag(require_in, "--delta", args.delta, 0, 1, open_low=True, open_high=True)
    if args.uncertain_rate is not None:
        print("jev: warning: --uncertain-rate is deprecated and has no effect: the thresholds are certified with "
              "--keep-threshold, the keep threshold the compactor runs", file=sys.stderr)
    flag(require_in, "--fit-share", args.fit_share, 0, 1, open_high=True)
    try:
        windows = parse_recent_pairs(args.recent_pairs)
        if args.target and windows != (0,):
            raise UsageError(f"--recent-pairs {args.recent_pairs}: not with --target (budget mode is certified "
                             "without a recency window)")
        return (parse_size_exponents(args.size_exponents, args.size_aware), parse_keep_thresholds(args.keep_threshold),
                windows)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _print(out: Console, result: Calibration, folder: str) -> None:
    """What was certified, for a reader: the thresholds and what they are expected to let go, a budget
    mode target, the guarantee in words, and where the report is."""
    from calibration import guarantee

    s = result.overall
    if s.certified:
        window = f", preserve_recent_pairs {s.recent_pairs}" if s.recent_pairs else ""
        out.print(f"[bold]discard_threshold {s.discard_threshold:.6g}[/], keep_threshold {s.keep_threshold:.4g}{window} "
                  f"-> {folder}/thresholds.json (use with jev compact --config)")
        out.print(f"expected: {s.chars_discarded:.1%} of candidate result characters let go, R_result "
                  f"{s.risk_result:.4f}, R_call {s.risk_call:.4f}")
    if result.target is not None and result.target.certified:
        out.print(f"[bold]target_reduction {result.target.target_reduction:.0%}[/] certified for budget mode")
    out.print(guarantee(result))
    out.print(f"report: {folder}/report.md")
