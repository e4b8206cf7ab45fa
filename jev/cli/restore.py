"""`jev restore`: read an archived snapshot (or one pair of it) back, verified; never re-runs a tool."""

from __future__ import annotations

import argparse

from archive import check_reference

from ..errors import ArchiveError, FormatError
from ..formats import dump
from .common import (
    EXIT_ERROR,
    EXIT_OK,
    UsageError,
    add_archive_arguments,
    add_format_argument,
    add_scope_arguments,
    archive_from_args,
    check_file_target,
    console,
    must_exist,
    scope_from_args,
    write_json,
)


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the subparser `jev.cli.main` made for it."""
    p.add_argument("ref", metavar="REF", help="the archive reference (64 hex characters)")
    add_archive_arguments(p, required=True)
    add_scope_arguments(p, required=True, session_help="archive scope: the session")
    p.add_argument("--call-id", help="restore only this call and its result (the latest pair with this id)")
    p.add_argument("--occurrence", type=int, help="with --call-id: which pair with this id, 1 = the first "
                   "(a call id may be reused once its pair is complete)")
    add_format_argument(p, default="jev", help="the form to write")
    p.add_argument("--out", help="write the JSON result here instead of stdout")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_file_target(args.out, "--out")  # before any work: a typo costs nothing
    out = console(args.quiet)
    try:
        check_reference(args.ref)
    except ArchiveError as exc:
        raise UsageError(f"REF {args.ref!r}: {exc} (expected 64 lowercase hex characters)") from None
    if args.occurrence is not None and not args.call_id:
        raise UsageError("--occurrence needs --call-id")
    scope = scope_from_args(args)
    must_exist(args.archive)
    archive = archive_from_args(args)
    try:
        messages = (archive.restore_pair(scope, args.ref, args.call_id, args.occurrence) if args.call_id
                    else archive.restore(scope, args.ref))
        rendered = dump(messages, args.format)
    except FormatError as exc:
        raise UsageError(f"--format: {exc}") from None
    except ArchiveError as exc:
        write_json({"status": "ERROR", "reference": args.ref, "detail": str(exc)}, args.out)
        out.print(f"[bold red]restore failed[/]: {exc}")
        return EXIT_ERROR
    write_json({"status": "RESTORED", "reference": args.ref, "call_id": args.call_id,
                "occurrence": args.occurrence, "messages": rendered}, args.out)
    what = f"pair {args.call_id}" if args.call_id else "snapshot"
    out.print(f"[bold]restored[/] {what}: {len(messages)} message(s), verified against {args.ref}")
    return EXIT_OK
