"""FileArchive: atomic publish under SIGKILL, permissions, symlink refusal, verified and scoped restore."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import SCOPE, call, msg, reference_messages, result, text

from archive import FileArchive, ObjectStoreArchive, Scope, open_archive
from jev import ArchiveError, ConfigError


def test_save_restore_is_exact_and_layout_is_scoped(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "root")
    messages = reference_messages()
    ref = archive.save(SCOPE, messages)
    assert len(ref) == 64 and archive.restore(SCOPE, ref) == messages
    path = tmp_path / "root" / SCOPE.digest() / f"{ref}.json"
    assert path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left


def test_reference_is_stable_across_processes(tmp_path: Path) -> None:
    ref = FileArchive(tmp_path).save(SCOPE, reference_messages())
    code = ("import sys; sys.path.insert(0, 'tests'); from conftest import SCOPE, reference_messages;"
            "from archive.snapshot import encode; print(encode(SCOPE, reference_messages())[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "123"})
    assert out.stdout.strip() == ref


def test_restore_refuses_bad_references_scopes_and_tampering(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path)
    ref = archive.save(SCOPE, reference_messages())
    for bad in ("../escape", ref.upper(), ref[:-1], ref + "0", "", None):
        with pytest.raises(ArchiveError, match="invalid archive reference"):
            archive.restore(SCOPE, bad)
    with pytest.raises(ArchiveError):
        archive.restore(Scope("user-1", "agent-2", "session-1"), ref)
    path = tmp_path / SCOPE.digest() / f"{ref}.json"
    original = path.read_bytes()
    path.write_bytes(original[:-1] + b" ")
    with pytest.raises(ArchiveError, match="archive checksum mismatch"):
        archive.restore(SCOPE, ref)
    with pytest.raises(ArchiveError, match="archive checksum mismatch"):  # a tampered file is never "already saved"
        archive.save(SCOPE, reference_messages())


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


def test_size_limit(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="archive limit"):
        FileArchive(tmp_path, max_bytes=100).save(SCOPE, reference_messages())
    ref = FileArchive(tmp_path).save(SCOPE, reference_messages())
    with pytest.raises(ArchiveError, match="stored snapshot exceeds max_bytes 100"):
        FileArchive(tmp_path, max_bytes=100).restore(SCOPE, ref)
    with pytest.raises(ConfigError, match="max_bytes must be a positive integer"):
        FileArchive(tmp_path, max_bytes=0)


LOCAL = [pytest.param(FileArchive, id="FileArchive"),
         pytest.param(lambda root: ObjectStoreArchive(f"file://{root}"), id="ObjectStoreArchive-file-url")]


@pytest.mark.parametrize("make", LOCAL)  # an fsspec file:// URL gets the file archive's protection
def test_symlinked_root_or_scope_directory_is_refused(tmp_path: Path, make) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(ArchiveError, match="archive root is a symlink"):
        make(tmp_path / "link").save(SCOPE, reference_messages())
    root = tmp_path / "root"
    root.mkdir()
    (root / SCOPE.digest()).symlink_to(real)
    with pytest.raises(ArchiveError, match="archive scope is a symlink"):
        make(root).save(SCOPE, reference_messages())
    with pytest.raises(ArchiveError, match="archive scope is a symlink"):
        make(root).restore(SCOPE, "a" * 64)


@pytest.mark.parametrize("make", LOCAL)
def test_a_symlinked_snapshot_file_is_refused(tmp_path: Path, make) -> None:
    archive = make(tmp_path)
    ref = archive.save(SCOPE, reference_messages())
    path = tmp_path / SCOPE.digest() / f"{ref}.json"
    moved = tmp_path / "elsewhere.json"
    path.rename(moved)
    path.symlink_to(moved)
    with pytest.raises(ArchiveError, match=r"archive snapshot is a symlink \(refused\)"):
        archive.restore(SCOPE, ref)


@pytest.mark.parametrize("field, value, message", [
    ("user_id", " ", "scope user_id must be a non-blank string"),
    ("agent_id", "a" * 513, "scope agent_id must be at most 512"),
    ("session_id", "a\x00b", "scope session_id must not contain NUL"),
])
def test_scope_rules(field: str, value: str, message: str) -> None:
    values = {"user_id": "u", "agent_id": "a", "session_id": "s", field: value}
    with pytest.raises(ConfigError, match=message):
        Scope(**values)


def test_restore_pair_returns_exactly_its_two_blocks(tmp_path: Path) -> None:
    messages = [msg("0", "user", text("task")),
                msg("c", "assistant", text("three reads"), call("x"), call("y"), call("z")),
                msg("r", "tool", result("x"), result("y"), result("z")),
                msg("e", "user", text("end"))]
    archive = FileArchive(tmp_path)
    ref = archive.save(SCOPE, messages)
    pair = archive.restore_pair(SCOPE, ref, "y")
    assert [m.id for m in pair] == ["c", "r"]
    assert pair[0].content == (messages[1].content[2],) and pair[1].content == (messages[2].content[1],)
    with pytest.raises(ArchiveError, match="call id 'nope' is not in this snapshot"):
        archive.restore_pair(SCOPE, ref, "nope")


def test_open_archive(tmp_path: Path) -> None:
    assert isinstance(open_archive(tmp_path), FileArchive)
    assert open_archive(f"file://{tmp_path}").root == tmp_path
    with pytest.raises(ArchiveError, match="sqlite archive URL needs a file path"):
        open_archive("sqlite://")


_WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, "tests")
    from conftest import SCOPE, msg, text
    from archive import FileArchive
    archive = FileArchive(sys.argv[1])
    big = "x" * 4_000_000
    i = 0
    print("ready", flush=True)
    while True:
        archive.save(SCOPE, [msg("m", "user", text(big + str(i)))])
        i += 1
""")


def test_killed_writers_never_leave_a_visible_partial_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    for attempt in range(12):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(root)], stdout=subprocess.PIPE)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + 0.037 * attempt)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    archive = FileArchive(root)
    snapshots = list(root.glob("*/*.json"))
    visible = [p for p in snapshots if not p.name.startswith(".")]
    assert visible, "the writers should have published some snapshots"
    for path in visible:  # every published snapshot restores, verified
        assert archive.restore(SCOPE, path.stem)[0].id == "m"


# --- the archive never acknowledges what its own reader refuses (issue 16, item 1) -----------------------

VERBATIM = [{"type": "text", "text": "see the docs", "annotations": [{"type": "url_citation", "url": "u"}]},
            {"type": "text"},  # AgentScope writes text blocks without text
            {"type": "thinking", "thinking": "t", "signature": "abc"}]


def test_text_blocks_with_other_fields_are_read_verbatim_and_archived_exactly(tmp_path: Path) -> None:
    from jev import OtherBlock
    from jev.transcript import message_to_dict, messages_from_dicts
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
    (lambda: text(5), "text: must be a string (got int)"),  # type: ignore[arg-type]
    (lambda: text("\ud800"), "surrogates not allowed"),
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
