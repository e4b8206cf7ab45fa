"""`archive.StoreArchive` and its stores: hashed namespaces, the refusal of stores without acknowledged
create-if-absent, SQLite's errors in its own words, and SQLite's first opens from many processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import SCOPE, reference_messages

from archive import MemoryStore, SqliteStore, StoreArchive
from archive.base import REFUSED
from jev import ArchiveError, ConfigError


def test_store_namespace_is_hashed_per_scope_part() -> None:
    store = MemoryStore()
    ref = StoreArchive(store).save(SCOPE, reference_messages())
    (namespace, key), = store._data
    assert key == ref and namespace[:2] == ("jev", "context") and len(namespace) == 5
    assert all(len(part) == 64 for part in namespace[2:]) and "user-1" not in str(namespace)


def test_stores_without_create_if_absent_are_refused() -> None:
    from langgraph.store.memory import InMemoryStore
    with pytest.raises(ConfigError, match=REFUSED):
        StoreArchive(InMemoryStore())

    class Unacknowledged(MemoryStore):  # claims the method but never acknowledges a create
        def put_if_absent(self, namespace, key, value):
            return None
    with pytest.raises(ArchiveError, match=REFUSED):
        StoreArchive(Unacknowledged()).save(SCOPE, reference_messages())

    class Lying(MemoryStore):  # says "exists" but holds something else
        def put_if_absent(self, namespace, key, value):
            return False
    with pytest.raises(ArchiveError, match=REFUSED):
        StoreArchive(Lying()).save(SCOPE, reference_messages())


def test_sqlite_store_errors_are_archive_errors_with_the_right_words(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "s.db"
    archive = StoreArchive(SqliteStore(path))
    ref = archive.save(SCOPE, reference_messages())
    db = sqlite3.connect(path)
    db.execute("UPDATE jev_store SET value = ?", (b"{not json",))
    db.commit()
    with pytest.raises(ArchiveError, match=r"the stored row for .* is not JSON \(corrupted\)"):
        archive.restore(SCOPE, ref)
    db.execute("UPDATE jev_store SET value = ?", (b'{"snapshot": "{\\"messages\\": []}"}',))  # tampered, valid JSON
    db.commit()
    db.close()
    with pytest.raises(ArchiveError, match="archive checksum mismatch"):
        archive.restore(SCOPE, ref)
    with pytest.raises(ArchiveError, match="archive checksum mismatch: another document is stored"):
        archive.save(SCOPE, reference_messages())
    (tmp_path / "junk.db").write_bytes(b"this is not a database file at all" * 100)
    with pytest.raises(ArchiveError, match=r"sqlite store .*junk.db: file is not a database"):
        SqliteStore(tmp_path / "junk.db")


@pytest.mark.slow
def test_sqlite_first_opens_in_parallel_never_see_a_lock(tmp_path: Path) -> None:
    """Switching a new file to WAL takes a lock SQLite's busy handler does not wait for: the store retries.
    8 processes open the same 40 fresh files in step (each file at an agreed instant), 320 first opens
    (issue 16, item 3)."""
    code = textwrap.dedent("""
        import sys, time; sys.path.insert(0, "tests")
        from archive.store import SqliteStore
        start, folder = float(sys.argv[1]), sys.argv[2]
        for k in range(40):
            time.sleep(max(0.0, start + 0.03 * k - time.time()))
            SqliteStore(f"{folder}/db{k}.sqlite")
    """)
    start = time.time() + 3.0  # after every interpreter has started
    procs = [subprocess.Popen([sys.executable, "-c", code, str(start), str(tmp_path)], stderr=subprocess.PIPE,
                              text=True) for _ in range(8)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), "\n".join(e for e in errors if e)


def test_deleting_never_reads_the_snapshot() -> None:
    """Whether a snapshot is there is the store's key listing, not a read of a possibly large value."""
    class Counting(MemoryStore):
        gets = 0

        def get(self, namespace, key):
            Counting.gets += 1
            return super().get(namespace, key)
    archive = StoreArchive(Counting())
    ref = archive.save(SCOPE, reference_messages())
    Counting.gets = 0
    assert archive.delete(SCOPE, ref) is True and archive.delete(SCOPE, ref) is False
    assert Counting.gets == 0 and archive.snapshots(SCOPE) == []
