"""What every command shares: usage errors, reading JSON input, writing JSON output, the stderr console."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

import orjson
from rich.console import Console

from ..deciding.decision import Status
from ..errors import ConfigError, FormatError
from ..formats import Lines, detect, load, parse
from ..model.scope import Scope
from .errors import EXIT_ERROR, EXIT_OK, EXIT_USAGE, UsageError

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "UsageError"]  # and the helpers below, for the commands


def flag(rule: Callable[..., Any], name: str, value: Any, *args: Any, **kwargs: Any) -> Any:
    """A `jev.support.validate` rule applied to a command-line flag: the same words, as a usage error."""
    try:
        return rule(name, value, *args, **kwargs)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def read_json(source: str, what: str = "INPUT") -> Any:
    """Parse JSON from a file path or `-` (stdin); errors say what and where."""
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {what} {source!r}: {exc.strerror or exc}") from None
    if not data.strip():
        raise UsageError(f"{what} {source!r} is empty")
    try:
        return parse(data)
    except FormatError as exc:
        raise UsageError(f"{what} {source!r}: {exc}") from None


def read_transcript(source: str, format: str) -> tuple[list[Any], str, str | None]:
    """The messages of a transcript file (JSON or JSON Lines), the form they were read in, and what the
    reader left out that a user would miss (None when nothing): the summary says it."""
    data = read_json(source)
    try:  # what cannot be written back cannot be echoed or archived: refuse it here (orjson writes 255 levels)
        orjson.dumps(data)
    except orjson.JSONEncodeError as exc:
        raise UsageError(f"INPUT {source!r}: cannot be written back as JSON ({exc}; values nested deeper than "
                         "255 levels have no JSON form here)") from None
    try:
        form = detect(data) if format == "auto" else format
        messages = load(data, form)
    except FormatError as exc:
        raise UsageError(f"INPUT {source!r}: {exc}") from None
    return messages, form, _left_out(data, form)


def _left_out(data: Any, form: str) -> str | None:
    """What reading left out of a session: a last line cut short (`jev.formats.Lines`); for Claude Code, what
    came before its last compaction of the session, and branches the user rewound away from."""
    said = [data.left_out] if isinstance(data, Lines) and data.left_out else []
    if form == "codex":
        from ..formats.codex import compactions as codex_compactions
        if lines := codex_compactions(data):
            said.append(f"Codex compacted this session {len(lines)} time(s): read from its last compaction (line "
                        f"{lines[-1]}) on, what the model holds now; jev.formats.codex.stretches reads each stretch")
    if form != "claude-code":
        return "; ".join(said) or None
    from ..formats.claude_code import compactions, rewound
    if lines := compactions(data):
        times = "once" if len(lines) == 1 else f"{len(lines)} times"
        said.append(f"Claude Code compacted this session {times}: read from its last compaction (line {lines[-1]}) "
                    "on, what the model holds now; jev.formats.claude_code.stretches reads each stretch")
    if lines := rewound(data):
        said.append(f"left out {len(lines)} message line(s), from line {lines[0]}, of a branch the user rewound "
                    "away from")
    return "; ".join(said) or None


def _jsonable(value: Any) -> Any:
    """LangChain message objects (what an archived LangChain agent held) in their dict form, which
    `--format langchain` reads back."""
    if type(value).__module__.startswith("langchain_core."):
        from langchain_core.messages import BaseMessage, message_to_dict
        if isinstance(value, BaseMessage):
            return message_to_dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def check_file_target(path: str | None, flag: str, *, fresh: bool = False) -> None:
    """A local file a command will write: not a folder, in a folder that exists (never created silently)
    and that this process can write in (a file is created there and removed: the one honest test, as root
    or not, on a read-only mount too); with `fresh`, not there yet. Checked before any work, so a typo or a
    locked folder costs nothing; URLs are left to their filesystem."""
    if path is None or ("://" in path and not path.startswith("file://")):
        return
    target = Path(path.removeprefix("file://")).resolve()
    if target.is_dir():
        raise UsageError(f"{flag} {path!r}: is a folder; name a file")
    if not target.parent.is_dir():
        raise UsageError(f"{flag} {path!r}: no such folder {str(target.parent)!r} (it is never created)")
    if fresh and target.exists():
        raise UsageError(f"{flag} {path!r} exists: this command writes a fresh file (remove it or name another)")
    check_writable(target.parent, flag, path)


def check_writable(folder: Path, flag: str, path: str) -> None:
    """`folder` takes a new file, or a usage error naming the flag, the folder and why."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UsageError(f"{flag} {path!r}: cannot write in {str(folder)!r} ({exc.strerror or exc})") from None


def new_file_mode() -> int:
    """The mode of every file the command line writes (`--out`, `--records`, the calibration report): what
    a new file gets under the process's umask, as with any Unix tool (0644 under the usual 022). Archive
    snapshots are the exception: 0600 from creation, in 0700 scope folders (they hold whole histories)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextmanager
def staged(path: str, flag: str, *, keep_partial: bool = False) -> Iterator[BinaryIO]:
    """A file written whole or not at all: a temporary file beside `path`, renamed onto it on success and
    removed on failure — or, with `keep_partial`, renamed anyway (for output written in whole units, such
    as a replay's sessions). Failing to create or publish it is a usage error naming the flag."""
    target = Path(path.removeprefix("file://")).resolve()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
        os.fchmod(fd, new_file_mode())
    except OSError as exc:
        raise UsageError(f"{flag} {path!r}: cannot write ({exc.strerror or exc})") from None
    done = False
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        done = True
    finally:
        if done or keep_partial:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                os.unlink(tmp)
                raise UsageError(f"{flag} {path!r}: cannot write ({exc.strerror or exc})") from None
        elif os.path.exists(tmp):
            os.unlink(tmp)


def write_json(value: Any, out: str | None) -> None:
    """JSON to stdout, or atomically to `out` (never a partial file)."""
    data = orjson.dumps(value, default=_jsonable, option=orjson.OPT_INDENT_2) + b"\n"
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    with staged(out, "--out") as f:
        f.write(data)


def table_of(title: str, columns: list[str], rows: list[list[str]], text: set[str], width: int) -> Any:
    """Tables a reader can read at `width` columns (80 and up): a number is never cut (each numeric column at
    least as wide as its widest cell, its header a word a line), the `text` columns fold, and columns that do
    not fit go on into a further table led by the first column again."""
    from rich.console import Group
    from rich.table import Table

    def least(k: int) -> int:
        widest = max((len(row[k]) for row in rows), default=0)
        return min(widest, 10) if columns[k] in text else max(widest, *map(len, columns[k].split()))

    parts: list[list[int]] = [[0]]
    used = least(0) + 4
    for k in range(1, len(columns)):
        if used + least(k) + 3 > width and len(parts[-1]) > 1:
            parts.append([0])
            used = least(0) + 4
        parts[-1].append(k)
        used += least(k) + 3
    tables = []
    for n, part in enumerate(parts):
        table = Table(title=title + (f" ({n + 1} of {len(parts)})" if len(parts) > 1 else ""), pad_edge=False)
        for k in part:
            header = columns[k].replace(" ", "\n")  # a narrow column keeps its header whole
            if columns[k] in text:
                table.add_column(header, justify="left", overflow="fold", min_width=least(k))
            else:
                table.add_column(header, justify="right", no_wrap=True, min_width=least(k))
        for row in rows:
            table.add_row(*(row[k] for k in part))
        tables.append(table)
    return Group(*tables)


def console(quiet: bool) -> Console:
    """The human summary goes to stderr; `-q` silences it. Off a terminal (a log, a pipe, CI) rich would
    wrap tables at 80 columns; there the width is the `COLUMNS` environment variable, else 160."""
    probe = Console(stderr=True)
    width = None if probe.is_terminal else int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() \
        else 160
    return Console(stderr=True, quiet=quiet, highlight=False, width=width)


def exit_code(status: Status) -> int:
    return EXIT_ERROR if status in (Status.ERROR, Status.CANCELLED) else EXIT_OK


def scope_from_args(args: Any) -> Scope | None:
    """The archive scope from --user/--agent/--session, None when none is given."""
    given = [args.user, args.agent]
    if not any(given):
        return None  # --session alone only names the session in records
    try:
        return Scope(args.user or "", args.agent or "", args.session or "")
    except ConfigError as exc:
        raise UsageError(f"--user, --agent and --session: {exc}") from None


NEXT_STEPS = {  # what to try after a plan that adopted nothing, by its reason
    "NO_CANDIDATES": "name the tools whose history may be judged (--eligible-tools; `jev inspect` lists them), or "
                     "keep fewer recent messages (--preserve-recent)",
    "INSUFFICIENT_REDUCTION": "too little to let go: name more eligible tools (`jev inspect` lists them), keep fewer "
                              "recent messages (--preserve-recent), or let go of a set share (--target-reduction)",
    "UNPROFITABLE": "re-writing the cache would cost more than it saves: plan when more calls lie ahead (give "
                    "--horizon if you know them), or bring the history under a token budget (--target-reduction)",
    "PROVIDER_REFUSES": "the model's provider would refuse the history it leaves: check --model, or try "
                        "--thinking-policy strip (`jev check` names each block)",
    "TRANSCRIPT_CHANGED": "the history changed while it was judged: plan it again",
    "TIMEOUT": "give the plan more time (--budget)",
}


def next_step(reason: str) -> str | None:
    """What to try next after a plan that ended for `reason` (a `jev.Reason` value), or None."""
    return NEXT_STEPS.get(reason)


def add_format_argument(parser: Any, default: str = "auto", help: str = "the transcript's form") -> None:
    """--format, its value checked against the forms there are before any work (a typo is a usage error)."""
    from ..formats import FORMATS
    choices = (*(("auto",) if default == "auto" else ()), *FORMATS)
    parser.add_argument("--format", default=default, choices=choices, metavar="FORMAT",
                        help=f"{help}: {', '.join(choices)}")


def add_scope_arguments(parser: Any, required: bool = False, session_help: str = "") -> None:
    """--user, --agent, --session: the archive scope (all three for ENFORCE and restore)."""
    parser.add_argument("--user", required=required, help="archive scope: the user the history belongs to")
    parser.add_argument("--agent", required=required, help="archive scope: the agent")
    parser.add_argument("--session", required=required,
                        help=session_help or "archive scope: the session (also names the session in records)")


def add_archive_arguments(parser: Any, required: bool = False) -> None:
    parser.add_argument("--archive", required=required,
                        help="archive location: a directory, file://, s3://bucket/prefix, gs://, az://, sqlite:///x.db")
    parser.add_argument("--archive-endpoint", help="S3 endpoint URL for self-hosted object stores "
                                                   "(credentials from the standard AWS environment variables)")


def must_exist(location: str) -> None:
    """Restore, listing and deleting never create an archive: a local archive folder or SQLite file that is
    not there is named, never created."""
    parts = urlsplit(location)
    if parts.scheme == "sqlite":
        path = Path(parts.path[1:]) if not parts.netloc else None
        if path is not None and not path.is_file():
            raise UsageError(f"--archive {location!r}: no such SQLite archive {str(path)!r}")
    elif parts.scheme in ("", "file") or len(parts.scheme) == 1:
        path = Path(parts.path if parts.scheme == "file" else location)
        if not path.is_dir():
            raise UsageError(f"--archive {location!r}: no such archive folder")


def check_archive_writable(location: str) -> None:
    """A local --archive takes new snapshots (its nearest existing folder is writable), checked before any
    judging: a plan found unarchivable only after the judge answered wasted the judge and read like its failure.
    An object store's URL is the store's to refuse."""
    if "://" in location and not location.startswith("file://"):
        return
    folder = Path(location.removeprefix("file://")).resolve()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"--archive {location!r}: {str(folder)!r} is not a folder")
    check_writable(folder, "--archive", location)


def archive_from_args(args: Any) -> Any:
    """The archive that --archive (and --archive-endpoint) name."""
    from archive import open_archive

    from ..errors import ArchiveError
    options: dict[str, Any] = {"client_kwargs": {"endpoint_url": args.archive_endpoint}} if args.archive_endpoint else {}
    try:
        return open_archive(args.archive, **options)
    except (ArchiveError, ConfigError) as exc:
        raise UsageError(f"--archive {args.archive!r}: {exc}") from None
