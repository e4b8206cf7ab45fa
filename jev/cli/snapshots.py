"""`jev snapshots`: list a scope's archived snapshots, or delete some (retention is the host's; this is its tool)."""

from __future__ import annotations

import argparse

from archive import check_reference

from ..errors import ArchiveError
from .common import (
    EXIT_ERROR,
    EXIT_OK,
    UsageError,
    add_archive_arguments,
    add_scope_arguments,
    archive_from_args,
    console,
    must_exist,
    scope_from_args,
    write_json,
)


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the subparser `jev.cli.main` made for it."""
    add_archive_arguments(p, required=True)
    add_scope_arguments(p, required=True, session_help="archive scope: the session")
    p.add_argument("--delete", metavar="REF", action="append", default=[],
                   help="delete this snapshot (repeatable). A compaction adopted with it can no longer be restored")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = console(args.quiet)
    for ref in args.delete:
        try:
            check_reference(ref)
        except ArchiveError as exc:
            raise UsageError(f"--delete {ref!r}: {exc} (expected 64 lowercase hex characters)") from None
    scope = scope_from_args(args)
    must_exist(args.archive)  # listing and deleting never create an archive
    archive = archive_from_args(args)
    try:
        if not args.delete:
            refs = archive.snapshots(scope)
            write_json({"status": "LISTED", "snapshots": refs}, None)
            out.print(f"{len(refs)} snapshot(s) in this scope")
            return EXIT_OK
        deleted = [ref for ref in args.delete if archive.delete(scope, ref)]
    except ArchiveError as exc:
        write_json({"status": "ERROR", "detail": str(exc)}, None)
        out.print(f"[bold red]failed[/]: {exc}")
        return EXIT_ERROR
    missing = [ref for ref in args.delete if ref not in deleted]
    write_json({"status": "DELETED" if not missing else "ERROR", "deleted": deleted, "missing": missing}, None)
    out.print(f"deleted {len(deleted)} snapshot(s)" + (f"; not in this scope: {len(missing)}" if missing else ""))
    return EXIT_OK if not missing else EXIT_ERROR
