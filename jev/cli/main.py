"""The `jev` command: JSON on stdout (the machine contract), a short summary on stderr.

Exit 0 on any orderly outcome (DECIDED, INCONCLUSIVE, SKIPPED), 3 on ERROR/CANCELLED, 2 on bad usage or
unreadable input (one line, no traceback, nothing on stdout); `jev check` exits 1 on a history the provider
would refuse.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .. import __version__
from .errors import EXIT_USAGE, UsageError

# each command's one-line help; its module (and what it imports: numpy, rich, the judges) loads only when
# the command runs, so `jev --version` and `jev --help` start in a few dozen milliseconds
COMMANDS = {
    "demo": "run the seed scenario offline (no key, no network)",
    "compact": "judge a transcript and propose (or apply) a compaction",
    "inspect": "show what a transcript holds, judging nothing",
    "check": "check a history against the rules of the provider it is sent to (exit 1: it would be refused)",
    "restore": "restore an archived snapshot",
    "snapshots": "list a scope's archived snapshots, or delete some",
    "replay": "replay recorded sessions in SHADOW and write decision records (rollout step 1)",
    "cost": "replay sessions call by call and bill each policy under prompt-cache pricing (run it before you enforce)",
    "label": "label judged pairs from the sessions' later history",
    "calibrate": "certify thresholds from labelled shadow rows",
}


class _Help(argparse.HelpFormatter):
    """Help that states each option's default, unless it has none or the help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "default" not in text and text:
            text += " (default: %(default)s)"
        return text


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:  # every command's --help shows its defaults
        kwargs["formatter_class"] = _Help
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # one line, exit 2
        raise UsageError(message)


def parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `jev` parser. Every command is listed; only the one `argv` names (all of them when `argv` is None)
    gets its arguments, which imports its module."""
    parent = _Parser(add_help=False)
    parent.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    p = _Parser(prog="jev", description="Judged, reversible context compaction for LLM agents.")
    p.add_argument("--version", action="version", version=f"jev-compaction {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    named = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    for name, text in COMMANDS.items():
        command = sub.add_parser(name, parents=[parent], help=text)
        if argv is None or name == named:
            importlib.import_module(f"{__package__}.{name}").configure(command)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parser(argv).parse_args(argv)
        return int(args.run(args))
    except UsageError as exc:
        print(f"jev: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("jev: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
