"""`archive.FileArchive`: the layout and modes on disk, atomic publish under SIGKILL, symlink refusal (also
for a `file://` URL handed to `ObjectStoreArchive`)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import SCOPE, reference_messages

from archive import FileArchive, ObjectStoreArchive, Scope, open_archive
from archive.object_store import open_url
from jev import ArchiveError


def test_layout_modes_and_a_second_save_that_writes_nothing(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "root")
    messages = reference_messages()
    ref = archive.save(SCOPE, messages)
    path = tmp_path / "root" / SCOPE.digest() / f"{ref}.json"
    assert path.is_file() and archive.restore(SCOPE, ref) == messages
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left
    mtime = path.stat().st_mtime_ns
    assert archive.save(SCOPE, messages) == ref and path.stat().st_mtime_ns == mtime  # verified, not rewritten
    assert FileArchive(tmp_path / "root").snapshots(Scope("nobody", "a", "s")) == []  # no folder: none


LOCAL = [pytest.param(FileArchive, id="FileArchive"),
         pytest.param(lambda root: open_archive(f"file://{root}"), id="open_archive-file-url"),
         pytest.param(lambda root: open_url(f"local://{root}"), id="open_url-fsspec-local")]


def test_a_local_url_is_the_file_archives_never_an_object_stores(tmp_path: Path) -> None:
    """Issue 37: an fsspec URL on the local filesystem opens a FileArchive (atomic writes, no symlink
    followed); ObjectStoreArchive refuses it by name instead of hiding a second class inside itself."""
    for url in (f"file://{tmp_path}", f"local://{tmp_path}"):
        assert isinstance(open_archive(url), FileArchive)
        with pytest.raises(ArchiveError, match="is a local path: use FileArchive"):
            ObjectStoreArchive(url)


@pytest.mark.parametrize("make", LOCAL)  # an fsspec URL on the local filesystem gets the file archive's protection
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
def test_a_symlinked_snapshot_file_is_refused_for_reading_and_deleting(tmp_path: Path, make) -> None:
    archive = make(tmp_path)
    ref = archive.save(SCOPE, reference_messages())
    path = tmp_path / SCOPE.digest() / f"{ref}.json"
    moved = tmp_path / "elsewhere.json"
    path.rename(moved)
    path.symlink_to(moved)
    with pytest.raises(ArchiveError, match=r"archive snapshot is a symlink \(refused\)"):
        archive.restore(SCOPE, ref)
    with pytest.raises(ArchiveError, match=r"archive snapshot is a symlink or not a regular file \(refused\)"):
        archive.delete(SCOPE, ref)
    assert moved.exists()  # never followed


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


@pytest.mark.slow
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


@pytest.mark.timeout(20)
@pytest.mark.parametrize("make", [os.mkfifo, os.mkdir], ids=["fifo", "folder"])
def test_a_fifo_or_folder_in_a_snapshots_place_is_refused_at_once(tmp_path: Path, make) -> None:
    """Issue 35 item 4: a FIFO there blocked restore and every save of that history forever (an O_RDONLY
    open waits for a writer); a folder escaped as IsADirectoryError. Both are refused, naming the path, and
    an ENFORCE plan ends as ERROR within its budget, the history unchanged."""
    from conftest import ScriptedJudge, compactor

    from jev import Status
    archive = FileArchive(tmp_path)
    history = reference_messages()
    ref = archive.save(SCOPE, history)
    path = tmp_path / SCOPE.digest() / f"{ref}.json"
    path.unlink()
    make(path)
    for attempt in (lambda: archive.restore(SCOPE, ref), lambda: archive.save(SCOPE, history)):
        with pytest.raises(ArchiveError, match=f"archive snapshot is not a regular file \\(refused\\): {path}"):
            attempt()
    decision = compactor(ScriptedJudge(0.01), archive=archive).plan_sync(history, scope=SCOPE)
    assert decision.status is Status.ERROR and str(path) in decision.detail


def test_archive_errors_name_the_folder_they_could_not_use(tmp_path: Path) -> None:
    root = tmp_path / "ro"
    root.mkdir()
    (root / SCOPE.digest()).write_text("a file where the scope folder goes")
    with pytest.raises(ArchiveError, match=f"archive scope is not a directory: {root / SCOPE.digest()}"):
        FileArchive(root).save(SCOPE, reference_messages())
