"""The snapshot document (`archive.snapshot`): its reference is the same in any process, it carries its
scope, and nothing is acknowledged that its reader would refuse — NaN, blocks the reader refuses, strings
without a UTF-8 form — so ENFORCE never adopts what it could not restore."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SCOPE, msg, reference_messages, result, text

from archive import FileArchive, Scope, open_archive
from jev import ArchiveError


def test_reference_is_stable_across_processes(tmp_path: Path) -> None:
    ref = FileArchive(tmp_path).save(SCOPE, reference_messages())
    code = ("import sys; sys.path.insert(0, 'tests'); from conftest import SCOPE, reference_messages;"
            "from archive.snapshot import encode; print(encode(SCOPE, reference_messages())[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "123"})
    assert out.stdout.strip() == ref


def test_a_snapshot_copied_into_another_scope_is_refused(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path)
    ref = archive.save(SCOPE, reference_messages())
    other = Scope("intruder", "agent-1", "session-1")
    archive.save(other, [msg("x", "user", text("x"))])
    src = tmp_path / SCOPE.digest() / f"{ref}.json"
    (tmp_path / other.digest() / f"{ref}.json").write_bytes(src.read_bytes())
    with pytest.raises(ArchiveError, match="scope or version mismatch"):
        archive.restore(other, ref)
    with pytest.raises(ArchiveError, match="scope or version mismatch"):
        archive.restore_bytes(other, ref)


VERBATIM = [{"type": "text", "text": "see the docs", "annotations": [{"type": "url_citation", "url": "u"}]},
            {"type": "text"},  # AgentScope writes text blocks without text
            {"type": "thinking", "thinking": "t", "signature": "abc"}]


def test_text_blocks_with_other_fields_are_read_verbatim_and_archived_exactly(tmp_path: Path) -> None:
    from jev import OtherBlock
    from jev.model.transcript import message_to_dict, messages_from_dicts
    doc = [{"id": "a", "role": "user", "content": VERBATIM}]
    messages = messages_from_dicts(doc)
    assert all(isinstance(b, OtherBlock) for b in messages[0].content)
    assert [message_to_dict(m) for m in messages] == doc
    history = reference_messages()
    history[0] = messages[0]
    archive = FileArchive(tmp_path)
    assert archive.restore(SCOPE, archive.save(SCOPE, history)) == history


@pytest.mark.parametrize("bad, words", [
    (lambda: __import__("jev").OtherBlock({"type": "tool_use", "id": "x", "name": "r"}),
     "a tool_use block is missing required field 'input'"),
    (lambda: __import__("jev").OtherBlock({"type": "tool_result", "id": "x", "name": "r", "output": "", "y": 1}),
     "unknown field 'y' in a tool_result block"),
    (lambda: __import__("jev").OtherBlock({"type": ["image"]}), "type: must be a string (got list)"),
    # a tool_use AgentScope keeps as another block (its input a string): the jev form would read a call back
    (lambda: __import__("jev").OtherBlock({"type": "tool_use", "id": "x", "name": "r", "input": "null"}),
     "an other block with the fields of a tool_use block would be read back as one"),
    (lambda: text(5), "text: must be a string (got int)"),  # type: ignore[arg-type]
    (lambda: text("\ud800"), "output[0].text: a lone surrogate (U+D800 at character 0) has no UTF-8 form"),
])
def test_save_refuses_what_restore_would_refuse_and_writes_nothing(tmp_path: Path, bad, words: str) -> None:
    from archive import StoreArchive
    from archive.store import MemoryStore
    history = reference_messages()
    history[2] = msg("r-old", "tool", result("old", output=[bad()]))  # inside a result: a place blocks may be
    for archive in (FileArchive(tmp_path / "files"), StoreArchive(MemoryStore())):
        with pytest.raises(ArchiveError, match=re.escape(words)):
            archive.save(SCOPE, history)
    assert not (tmp_path / "files").exists() or not any((tmp_path / "files").rglob("*.json"))


def test_enforce_never_adopts_a_compaction_it_could_not_restore(tmp_path: Path) -> None:
    from conftest import ScriptedJudge, compactor

    from jev import OtherBlock, Status
    history = reference_messages()  # the pinned pair's output holds a block the reader would refuse
    history[6] = msg("r-needed", "tool", result("needed", output=[OtherBlock({"type": "tool_use", "id": "q"})]))
    archive = FileArchive(tmp_path)
    decision = compactor(ScriptedJudge(0.01), archive=archive).plan_sync(history, scope=SCOPE)
    assert decision.status is Status.ERROR  # refused before judging, with the reader's words
    assert decision.detail == "messages[6].content[0].output[0]: a tool_use block is missing required field 'input'"
    assert compactor(ScriptedJudge(0.01), archive=archive).compact_sync(history, scope=SCOPE) == history
    assert not any(tmp_path.rglob("*.json"))
    history[6] = msg("r-needed", "tool", result("needed", output=[OtherBlock(VERBATIM[0])]))  # readable: adopted
    decision = compactor(ScriptedJudge(0.01), archive=archive).plan_sync(history, scope=SCOPE)
    assert decision.status is Status.DECIDED
    assert archive.restore(SCOPE, decision.plan.archive_reference) == history


def test_enforce_with_a_non_finite_number_adopts_nothing(tmp_path: Path) -> None:
    from conftest import ScriptedJudge, reference_config

    from jev import Compactor, ExecutionOptions, Mode, Status
    messages = reference_messages()
    messages[0] = msg("first", "user", text("task"), metadata={"weight": float("nan")})
    compactor = Compactor(ScriptedJudge(lambda q: 0.01), reference_config(),
                          ExecutionOptions(Mode.ENFORCE, 5.0), open_archive(tmp_path))
    decision = compactor.plan_sync(messages, scope=SCOPE)
    assert decision.status is Status.ERROR and "NaN and infinities" in decision.detail
    assert compactor.compact_sync(messages, scope=SCOPE) == messages  # the original history, untouched
