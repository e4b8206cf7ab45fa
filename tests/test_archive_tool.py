"""`archive.restore_tool` and `archive.restore_latest`: an agent brings back one archived pair, also past a
later snapshot that holds only a cut head; and the example that shows it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SCOPE, call, msg, plain, reference_messages, result, text

from archive import open_archive, restore_tool
from jev import Action, ArchiveError, ToolResultBlock

ROOT = Path(__file__).resolve().parents[1]


def test_restore_tool_brings_back_one_pair(tmp_path: Path) -> None:
    import asyncio
    archive = open_archive(tmp_path)
    ref = archive.save(SCOPE, reference_messages())
    tool = restore_tool(archive, SCOPE, ref)
    assert tool.name == "restore_archived_result" and tool.parameters["required"] == ["call_id"]
    out = asyncio.run(tool.call(call_id="preview"))
    assert out.startswith("Call preview (read)") and ("evidence-preview " * 500) in out
    assert "Could not restore" in asyncio.run(tool.call(call_id="nope"))
    with pytest.raises(ArchiveError, match="invalid archive reference"):
        restore_tool(archive, SCOPE, "../escape")


def test_restore_latest_looks_past_a_later_snapshot_that_holds_only_the_truncated_result(tmp_path: Path) -> None:
    """Round 1 truncates the results (the originals go into snapshot A); round 2 archives the compacted
    history (snapshot B holds only the cut heads). The agent asking for a result gets the original."""
    import asyncio

    from conftest import ScriptedJudge, reference_config

    from archive import restore_latest
    from jev import Compactor, ExecutionOptions, Mode, Status

    archive = open_archive(tmp_path)
    options = ExecutionOptions(Mode.ENFORCE, 30, "v1")
    first = Compactor(ScriptedJudge(lambda q: 0.99 if q.startswith("call_") else 0.01), reference_config(),
                      options, archive).plan_sync(reference_messages(), scope=SCOPE)
    assert first.status is Status.DECIDED and set(first.plan.decisions.values()) == {Action.TRUNCATE_RESULT}
    later = [*first.plan.messages, msg("c-new", "assistant", call("new")), msg("r-new", "tool", result("new")),
             msg("last2", "user", text("go on"))]
    second = Compactor(ScriptedJudge(lambda q: 0.99 if q.startswith("call_") else 0.01), reference_config(),
                       options, archive).plan_sync(later, scope=SCOPE)
    assert second.status is Status.DECIDED
    references = [(SCOPE, first.plan.archive_reference), (SCOPE, second.plan.archive_reference)]

    newest_only = asyncio.run(restore_tool(archive, SCOPE, references[1][1]).call(call_id="old"))
    assert newest_only.endswith('result of call "old"; ask the host to restore call "old"; do not re-execute '
                                'this tool for recovery.]')  # what the later snapshot holds: the cut head
    restored = asyncio.run(restore_latest(archive, references, "old"))
    assert "evidence-old " * 500 in restored and "JEV archived" not in restored
    assert "evidence-new " * 500 in asyncio.run(restore_latest(archive, references, "new"))  # only in B, in full
    # with no older snapshot, the remnant is still better than nothing; an unknown id says so
    assert asyncio.run(restore_latest(archive, references[1:], "old")) == newest_only
    assert asyncio.run(restore_latest(archive, references, "nope")) == "No archived result for call 'nope'."
    assert asyncio.run(restore_latest(archive, references, " ")) == "call_id must be a non-blank string"


def test_a_truncated_result_is_recognised_after_a_format_round_trip() -> None:
    from jev import formats
    from jev.applying.apply import apply_actions
    from jev.model.markers import is_truncated
    from jev.reading.analysis import analyze

    messages = reference_messages()
    cut = apply_actions(analyze(messages), {"t1": Action.TRUNCATE_RESULT}, plain(30))
    for form in ("jev", "langchain", "openai-chat", "anthropic"):
        back = formats.load(formats.dump(cut, form), form)
        results = [b for m in back for b in m.content if isinstance(b, ToolResultBlock)]
        assert [is_truncated(b) for b in results] == [True, False, False], form


def test_example_restore_archive_runs() -> None:
    proc = subprocess.run([sys.executable, "examples/restore_archive.py"], cwd=ROOT, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    assert out.count("restored 6 messages (equal: True)") == 3 and "another scope:" in out
