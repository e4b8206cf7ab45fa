"""`jev label`: shadow records + the sessions' later history -> labelled pairs (JSON Lines)."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext

import orjson
from rich.progress import Progress

from ..errors import FormatError, TranscriptError
from .common import EXIT_ERROR, EXIT_OK, UsageError, add_format_argument, check_file_target, console, staged


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the subparser `jev.cli.main` made for it."""
    p.add_argument("records", metavar="RECORDS", help="decision records, JSON Lines (path or fsspec URL)")
    p.add_argument("--transcripts", required=True, help="directory (or fsspec URL) of <session_id>.json files")
    add_format_argument(p, help="the transcripts' form")
    p.add_argument("--out", help="write the labelled JSON Lines here instead of stdout")
    p.set_defaults(run=run)


def _check_records(url: str) -> None:
    """RECORDS names at least one readable file (a glob may name several)."""
    import fsspec
    files = fsspec.open_files(url, "rb")
    if not files:
        raise UsageError(f"no decision records match {url!r}")
    missing = [f.path for f in files if not f.fs.exists(f.path)]
    if missing:
        raise UsageError(f"cannot read {missing[0]!r}: no such file")
    folders = [f.path for f in files if f.fs.isdir(f.path)]
    if folders:
        raise UsageError(f"RECORDS {folders[0]!r} is a folder: name the records file (JSON Lines), or a glob of "
                         f"them ({url.rstrip('/')}/*.jsonl)")


def _check_transcripts(url: str) -> None:
    """The transcripts folder exists and holds at least one file: else every record would be skipped."""
    import fsspec
    fs, _, (base,) = fsspec.get_fs_token_paths(url)
    if not fs.isdir(base):
        raise UsageError(f"--transcripts {url!r}: no such directory")
    if not fs.find(base, maxdepth=None):  # sessions may sit in sub-folders (one per run)
        raise UsageError(f"--transcripts {url!r}: the directory holds no transcript file")


def run(args: argparse.Namespace) -> int:
    check_file_target(args.out, "--out")  # before any work: a typo costs nothing
    from calibration.join import MISSING, LabelReport, label  # pulls scikit-learn only when labelling

    out = console(args.quiet)
    if args.records == "-":
        raise UsageError("RECORDS must be a file or URL: records read from stdin name no file to report against")
    _check_records(args.records)
    _check_transcripts(args.transcripts)
    report = LabelReport()
    try:  # --out is written whole or not at all
        with (staged(args.out, "--out") if args.out else nullcontext(sys.stdout.buffer)) as target, \
                Progress(console=out, transient=True, disable=not out.is_terminal) as progress:
            task = progress.add_task("labelling records", total=None)
            for row in label(args.records, args.transcripts, format=args.format, report=report,
                             progress=lambda: progress.advance(task)):
                target.write(orjson.dumps(row) + b"\n")
            target.flush()
    except FileNotFoundError as exc:
        raise UsageError(f"cannot read {exc.filename!r}: no such file" if exc.filename else str(exc)) from None
    except (ValueError, FormatError, TranscriptError) as exc:
        raise UsageError(str(exc)) from None
    out.print(f"labelled {report.rows} pairs from {report.records} records")
    for why, count in report.skipped.most_common():
        if why == MISSING:  # said once, however many sessions: how many, and the first few names
            names = ", ".join(repr(s) for s in list(report.missing)[:3])
            why = (f"no transcript for {len(report.missing)} session(s) in {args.transcripts} (looked for "
                   f"<session>.traj.json, .json, .jsonl: {names}{', …' if len(report.missing) > 3 else ''})")
        out.print(f"  skipped {count}: {why}")
    if not report.rows:
        out.print("[bold red]nothing labelled[/]: no record joined a transcript (see the reasons above)")
        return EXIT_ERROR
    return EXIT_OK
