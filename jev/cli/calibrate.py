"""`jev calibrate`: labelled shadow rows -> thresholds with a guarantee, `thresholds.json` and a report."""

from __future__ import annotations

import argparse
from typing import Any

from rich.progress import Progress

from .common import EXIT_ERROR, EXIT_OK, UsageError, console, write_json


def add_parser(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("calibrate", parents=[parent], help="certify thresholds from labelled shadow rows")
    p.add_argument("labelled", metavar="LABELLED", help="labelled rows from `jev label` (JSON Lines, path or URL)")
    p.add_argument("--alpha", type=float, default=0.05, help="tolerated share of needed pairs lost per session")
    p.add_argument("--delta", type=float, default=0.1, help="tolerated probability that the guarantee fails")
    p.add_argument("--per-tool", action="store_true", help="also certify thresholds per tool")
    p.add_argument("--size-aware", action=argparse.BooleanOptionalAction, default=True,
                   help="rank results by expected loss per character saved, as the compactor does by default "
                        "(--no-size-aware: plain probabilities)")
    p.add_argument("--uncertain-rate", type=float, default=0.1,
                   help="largest share of let-go results left UNCERTAIN (sets keep_threshold)")
    p.add_argument("--seed", type=int, default=0, help="seed of the session split")
    p.add_argument("--out", required=True, help="directory for thresholds.json, calibration.json and the report")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # imported here: scikit-learn and scipy take seconds to import, and only this command needs them
    from calibration import report as write_report
    from calibration import rows_from, select_thresholds
    from calibration.join import read_records
    from calibration.report import guarantee

    out = console(args.quiet)
    for flag, value in (("--alpha", args.alpha), ("--delta", args.delta)):
        if not 0 < value < 1:
            raise UsageError(f"{flag} must be in (0, 1) (got {value})")
    if not 0 <= args.uncertain_rate <= 1:
        raise UsageError(f"--uncertain-rate must be in [0, 1] (got {args.uncertain_rate})")
    try:
        with Progress(console=out, transient=True, disable=not out.is_terminal) as progress:
            task = progress.add_task("reading labelled rows", total=None)
            records = []
            for row in read_records(args.labelled):
                records.append(row)
                progress.advance(task)
            progress.update(task, description="calibrating and certifying")
            rows = rows_from(records)
            result = select_thresholds(rows, args.alpha, args.delta, per_tool=args.per_tool,
                                       size_aware=args.size_aware, uncertain_rate=args.uncertain_rate, seed=args.seed)
            summary = write_report(result, args.out)
    except FileNotFoundError as exc:
        raise UsageError(f"cannot read {exc.filename or args.labelled!r}: no such file") from None
    except (ValueError, KeyError) as exc:
        raise UsageError(f"LABELLED {args.labelled!r}: {exc}") from None
    write_json(summary, None)
    s = result.overall
    if s.certified:
        out.print(f"[bold]discard_threshold {s.discard_threshold:.6g}[/], keep_threshold {s.keep_threshold:.4g} "
                  f"-> {args.out}/thresholds.json (use with jev compact --config)")
        out.print(f"expected: {s.chars_discarded:.1%} of candidate result characters let go, loss {s.risk:.4f}")
    out.print(guarantee(s))
    out.print(f"report: {args.out}/report.md")
    return EXIT_OK if s.certified else EXIT_ERROR
