"""`jev check`: would the model's provider accept this history, sent after that one? The check every plan
passes before it is adopted (`jev.providers.check`), for a host's own edits.

Exit 0 when the provider accepts it, 1 when it would refuse it (a 400), 2 on bad usage or unreadable input.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..providers import DEFAULT_THINKING_POLICY, ThinkingPolicy, check
from .common import add_format_argument, check_file_target, console, read_transcript, write_json

EXIT_REFUSED = 1


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the subparser `jev.cli.main` made for it."""
    p.add_argument("sent", metavar="SENT", help="the history as last sent (JSON or JSON Lines; - for stdin)")
    p.add_argument("proposed", metavar="PROPOSED", help="the history to send next, in the same form")
    add_format_argument(p)
    p.add_argument("--model", help="the model it is sent to (default: the model SENT names, else every rule at "
                                   "its strictest)")
    p.add_argument("--thinking-policy", choices=[p.value for p in ThinkingPolicy], default=DEFAULT_THINKING_POLICY.value,
                   help="drop-block: the request carries drop_block, so invalidated thinking is dropped, not refused")
    p.add_argument("--out", help="write the JSON here instead of stdout")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_file_target(args.out, "--out")
    out = console(args.quiet)
    sent, form, _ = read_transcript(args.sent, args.format)
    proposed, _, _ = read_transcript(args.proposed, form if args.format == "auto" else args.format)
    verdict = check(sent, proposed, args.model, args.thinking_policy)
    rules = verdict.rules
    result: dict[str, Any] = {
        "model": verdict.model, "family": rules.family, "thinking_policy": verdict.policy.value,
        "passes": verdict.passes,
        "violations": [{"rule": v.rule, "path": v.path, "message_id": v.message_id, "detail": v.detail,
                        "outcome": "refused" if v.refused else "dropped"} for v in verdict.violations]}
    write_json(result, args.out)
    model = verdict.model or "no model named: every rule at its strictest"
    if verdict.passes:
        dropped = len(verdict.violations)
        out.print(f"[bold]accepted[/] by {model} ({rules.family})"
                  + (f"; the API drops {dropped} thinking block(s) (drop_block)" if dropped else ""))
        return 0
    out.print(f"[bold]refused[/] by {model} ({rules.family}): {len(verdict.refused)} block(s) — {verdict.summary()}")
    return EXIT_REFUSED
