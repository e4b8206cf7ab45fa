"""The seed scenario (a fix-the-login-test session): six messages, the reference judge answers, and a
scripted model step. `jev demo`, `examples/fix_login.py` and the tests share it."""

from __future__ import annotations

from collections.abc import Sequence

from .policy import CompactionConfig
from .transcript import Message, TextBlock, ToolResultBlock, ToolUseBlock, canonical_json

CONSTRAINT = "Never edit generated files. Fix the failing count test."
OBSOLETE = "obsolete file contents "
NEEDED = "expected count 3 "
# The reference's synthetic judge: pair t1 is obsolete (0.01), everything else is needed (0.99).
REFERENCE_ANSWERS = {"model": "reference-fixture", "answers": {"call_t1": 0.01, "result_t1": 0.01}, "default": 0.99}
CONFIG = CompactionConfig(preserve_recent_messages=1, truncate_head_chars=100, minimum_reduction=0.05,
                          max_transcript_chars=1_000_000, eligible_tools=frozenset({"read"}))
USER, AGENT, SESSION = "demo", "compaction-demo", "context-demo"


def messages() -> list[Message]:
    """The six-message history: a constraint, an obsolete read, the current test read, a follow-up."""
    return [
        Message("m1", "user", (TextBlock(CONSTRAINT),)),
        Message("m2", "assistant", (ToolUseBlock("obsolete", "read", {"path": "old.txt"}),)),
        Message("m3", "tool", (ToolResultBlock("obsolete", "read", OBSOLETE * 400),)),
        Message("m4", "assistant", (ToolUseBlock("needed", "read", {"path": "current-test.txt"}),)),
        Message("m5", "tool", (ToolResultBlock("needed", "read", NEEDED * 400),)),
        Message("m6", "user", (TextBlock("Continue using the current test result."),)),
    ]


class ScriptedModel:
    """Stands in for the chat model: refuses a request that carries obsolete contents or lost evidence."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, history: Sequence[Message]) -> str:
        self.calls += 1
        request = canonical_json(list(history)).decode()
        if "obsolete file contents" in request:
            raise AssertionError("the model saw obsolete file contents")
        for needed in ("expected count 3", "Never edit generated files"):
            if needed not in request:
                raise AssertionError(f"the model lost {needed!r}")
        return "The test expects count 3; generated files remain unchanged."
