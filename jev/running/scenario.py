"""The seed scenario (a fix-the-login-test session): six messages, the reference judge answers, and a
scripted model step. `jev demo`, `examples/fix_login.py` and the tests share it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..deciding.decision import Decision, ExecutionOptions, Mode, Status
from ..deciding.policy import CompactionConfig
from ..judges import LocalJudge, ReplayJudge
from ..model.canonical import canonical_json
from ..model.scope import Scope
from ..model.transcript import Message, TextBlock, ToolResultBlock, ToolUseBlock
from .compactor import Compactor
from .records import Record

CONSTRAINT = "Never edit generated files. Fix the failing count test."
OBSOLETE = "obsolete file contents "
NEEDED = "expected count 3 "
# The reference's synthetic judge: pair t1 is obsolete (0.01), everything else is needed (0.99).
REFERENCE_ANSWERS: dict[str, Any] = {"model": "reference-fixture", "answers": {"call_t1": 0.01, "result_t1": 0.01},
                                     "default": 0.99}
CONFIG = CompactionConfig(preserve_recent_messages=1, truncate_head_chars=100, minimum_reduction=0.05,
                          max_transcript_chars=1_000_000, eligible_tools=frozenset({"read"}),
                          size_exponent=0.0, tombstones=False,
                          cost_gate=False)  # the reference's: plain table, no tombstones, no cost gate
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


async def run_reference(workdir: Path) -> dict[str, Any]:
    """The scenario in ENFORCE with the reference answers and a file archive, then the model step and a
    restore; returns what happened (for `jev demo`)."""
    from archive import FileArchive  # the demo archives on disk; the core never imports the archives

    archive = FileArchive(workdir / "archive", 1_000_000)
    records: list[Record] = []
    judge = ReplayJudge(REFERENCE_ANSWERS["answers"], default=REFERENCE_ANSWERS["default"],
                        model=REFERENCE_ANSWERS["model"])
    options = ExecutionOptions(Mode.ENFORCE, 3.0, "offline-demo", lambda _ctx, record: records.append(record))
    compactor = Compactor(judge, CONFIG, options, archive)
    scope = Scope(USER, AGENT, SESSION)
    history = messages()
    decision = await compactor.plan(history, scope=scope)
    adopted = list(decision.plan.messages) if decision.status is Status.DECIDED and decision.plan else history
    model = ScriptedModel()
    answer = model(adopted)
    reference = records[-1].recommendation.get("archive_reference", "")
    restored = archive.restore(scope, reference) if reference else []
    return {"decision": decision, "history": adopted, "judge_calls": judge.calls, "model_calls": model.calls,
            "answer": answer, "archive": archive, "reference": reference, "restored": restored,
            "restored_equal": restored == history}


async def run_local(history: Sequence[Message]) -> Decision:
    """The same transcript judged in SHADOW by the embedded local judge."""
    return await Compactor(LocalJudge(), CONFIG, ExecutionOptions(Mode.SHADOW, 3.0, "offline-demo")).plan(history)
