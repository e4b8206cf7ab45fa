"""`jev label`: shadow records + the sessions' later history -> labelled pairs (JSON Lines)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson
from rich.progress import Progress

from ..errors import FormatError
from ..errors import TranscriptError
from .common import EXIT_OK, UsageError, console


def add_parser(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("label", parents=[parent], help="label judged pairs from the sessions' later history")
    p.add_argument("records", metavar="RECORDS", help="decision records, JSON Lines (path or fsspec URL)")
    p.add_argument("--transcripts", required=True, help="directory (or fsspec URL) of <session_id>.json files")
    p.add_argument("--format", default="auto", help="transcript format (default auto)")
    p.add_argument("--out", help="write the labelled JSON Lines here instead of stdout")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from calibration.join import LabelReport, label  # pulls scikit-learn only when labelling

    out = console(args.quiet)
    report = LabelReport()
    target = open(args.out, "wb") if args.out else sys.stdout.buffer  # noqa: SIM115 - closed below
    try:
        with Progress(console=out, transient=True, disable=not out.is_terminal) as progress:
            task = progress.add_task("labelling records", total=None)
            for row in label(args.records, args.transcripts, format=args.format, report=report,
                             progress=lambda: progress.advance(task)):
                target.write(orjson.dumps(row) + b"\n")
    except FileNotFoundError as exc:
        raise UsageError(f"cannot read {exc.filename!r}: no such file" if exc.filename else str(exc)) from None
    except (ValueError, FormatError, TranscriptError) as exc:
        raise UsageError(str(exc)) from None
    finally:
        if args.out:
            target.close()
        else:
            target.flush()
    out.print(f"labelled {report.rows} pairs from {report.records} records")
    for why, count in report.skipped.most_common():
        out.print(f"  skipped {count}: {why}")
    return EXIT_OK
