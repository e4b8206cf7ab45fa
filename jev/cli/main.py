"""The `jev` command: JSON on stdout (the machine contract), a short summary on stderr.

Exit 0 on any orderly outcome (DECIDED, INCONCLUSIVE, SKIPPED), 3 on ERROR/CANCELLED, 2 on bad usage or
unreadable input (one line, no traceback, nothing on stdout).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from . import calibrate, compact, cost, demo, inspect, label, replay, restore, snapshots
from .. import __version__
from .common import EXIT_USAGE, UsageError


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

    def error(self, message: str) -> None:  # one line, exit 2
        raise UsageError(message)


def parser() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    p = _Parser(prog="jev", description="Judged, reversible context compaction for LLM agents.")
    p.add_argument("--version", action="version", version=f"jev-compaction {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    demo.add_parser(sub, parent)
    compact.add_parser(sub, parent)
    inspect.add_parser(sub, parent)
    restore.add_parser(sub, parent)
    snapshots.add_parser(sub, parent)
    replay.add_parser(sub, parent)
    cost.add_parser(sub, parent)
    label.add_parser(sub, parent)
    calibrate.add_parser(sub, parent)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        return int(args.run(args))
    except UsageError as exc:
        print(f"jev: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("jev: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
