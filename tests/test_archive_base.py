"""`archive.ArchiveBase`: what every archive does, on every backend through one matrix — a real SeaweedFS
S3 server via s3fs, fsspec memory:// and file://, SqliteStore, MemoryStore, and a bare subclass that
supplies only the five storage primitives. Concurrency uses real processes wherever the store is shared
across them. Also `open_archive`, which picks the backend."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import SCOPE, call, msg, reference_messages, result, s3_archive, text

from archive import (
    ArchiveBase,
    FileArchive,
    MemoryStore,
    ObjectStoreArchive,
    Scope,
    SqliteStore,
    StoreArchive,
    open_archive,
)
from archive.snapshot import encode
from jev import ArchiveError, ConfigError

ROOT = Path(__file__).resolve().parents[1]


class DictArchive(ArchiveBase):
    """The least a backend can be: five primitives over a dict. Everything else is the base's."""

    def __init__(self, data: dict) -> None:
        self.data = data

    def _read(self, scope, ref, limit):
        return self.data.get((scope.digest(), ref))

    def _create(self, scope, ref, data):
        return self.data.setdefault((scope.digest(), ref), data) is data

    def _exists(self, scope, ref):
        return (scope.digest(), ref) in self.data

    def _names(self, scope):
        return [ref for digest, ref in self.data if digest == scope.digest()]

    def _remove(self, scope, ref):
        return self.data.pop((scope.digest(), ref), None) is not None


KINDS = ["s3", "memory", "file", "sqlite", "memorystore", "bare"]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Callable[[], ArchiveBase], dict]:
    """(name, build, spec): `build()` makes a new client of one shared store; `spec` lets another process
    open the same store (url or sqlite kinds)."""
    name = request.param
    if name == "s3":
        build, spec = s3_archive(request.getfixturevalue("seaweed"))
    elif name == "memory":
        spec = {"kind": "url", "url": f"memory://jev-{uuid.uuid4().hex}/archive", "options": {}}
        build = lambda: ObjectStoreArchive(spec["url"])  # noqa: E731
    elif name == "file":
        spec = {"kind": "url", "url": f"file://{tmp_path}/objects", "options": {}}
        build = lambda: open_archive(spec["url"])  # noqa: E731  (a FileArchive: a local URL is its)
    elif name == "sqlite":
        spec = {"kind": "sqlite", "path": str(tmp_path / "archive.db")}
        build = lambda: StoreArchive(SqliteStore(spec["path"]))  # noqa: E731
    elif name == "memorystore":
        store = MemoryStore()
        spec = {"kind": "memorystore"}
        build = lambda: StoreArchive(store)  # noqa: E731
    else:
        data: dict = {}
        spec = {"kind": "bare"}
        build = lambda: DictArchive(data)  # noqa: E731
    return name, build, spec


def test_save_restore_idempotent_scoped(kind) -> None:
    _, build, _ = kind
    archive = build()
    messages = reference_messages()
    ref = archive.save(SCOPE, messages)
    assert len(ref) == 64 and archive.restore(SCOPE, ref) == messages
    assert archive.save(SCOPE, messages) == ref
    assert build().restore(SCOPE, ref) == messages  # a second client sees the same snapshot
    assert archive.restore_bytes(SCOPE, ref) == encode(SCOPE, messages)[1]  # byte-exact document
    for other in (Scope("user-2", "agent-1", "session-1"), Scope("user-1", "agent-1", "session-2")):
        with pytest.raises(ArchiveError):
            archive.restore(other, ref)
    for bad in ("../escape", ref.upper(), ref[:-1], ref + "0", "", None):
        for method in (archive.restore, archive.restore_bytes, archive.delete):
            with pytest.raises(ArchiveError, match="invalid archive reference"):
                method(SCOPE, bad)
    with pytest.raises(ArchiveError, match=r"archive needs an archive.Scope \(got str\)"):
        archive.restore("user-1/agent-1/session-1", ref)


def test_size_limit_on_write_and_on_read(kind) -> None:
    _, build, _ = kind
    archive = build()
    ref = archive.save(SCOPE, reference_messages())
    archive.max_bytes = 100
    with pytest.raises(ArchiveError, match=r"archive limit: snapshot of .* bytes exceeds max_bytes 100"):
        archive.save(SCOPE, reference_messages()[:2])
    with pytest.raises(ArchiveError, match="stored snapshot exceeds max_bytes 100"):
        archive.restore(SCOPE, ref)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_are_refused_never_archived_as_null(kind, bad: float) -> None:
    _, build, _ = kind
    archive = build()
    messages = [msg("0", "user", text("task")), msg("c", "assistant", call("x", "read", {"limit": [1, bad]})),
                msg("r", "tool", result("x", "out")), msg("e", "user", text("end"))]
    with pytest.raises(ArchiveError, match=r"messages\[1\]\.content\[0\]\.input\.limit\[1\]: NaN and infinities"):
        archive.save(SCOPE, messages)
    as_null = [*messages[:1], msg("c", "assistant", call("x", "read", {"limit": [1, None]})), *messages[2:]]
    assert archive.restore(SCOPE, archive.save(SCOPE, as_null)) == as_null  # a real null is fine


def test_restore_pair_returns_exactly_its_two_blocks(kind) -> None:
    _, build, _ = kind
    messages = [msg("0", "user", text("task")),
                msg("c", "assistant", text("three reads"), call("x"), call("y"), call("z")),
                msg("r", "tool", result("x"), result("y"), result("z")),
                msg("e", "user", text("end"))]
    archive = build()
    ref = archive.save(SCOPE, messages)
    pair = archive.restore_pair(SCOPE, ref, "y")
    assert [m.id for m in pair] == ["c", "r"]
    assert pair[0].content == (messages[1].content[2],) and pair[1].content == (messages[2].content[1],)
    with pytest.raises(ArchiveError, match="call id 'nope' is not in this snapshot"):
        archive.restore_pair(SCOPE, ref, "nope")


def _edit(text: bytes | str) -> bytes | str:
    return text.replace(b"evidence" if isinstance(text, bytes) else "evidence",
                        b"EVIDENCE" if isinstance(text, bytes) else "EVIDENCE", 1)


def _tamper(name: str, archive: ArchiveBase, ref: str, change=_edit) -> None:
    """Change the stored snapshot's bytes behind the archive's back (`change`: its bytes or text -> new)."""
    if name == "sqlite":
        import sqlite3
        db = sqlite3.connect(archive.store.path)
        value = json.loads(db.execute("SELECT value FROM jev_store WHERE key = ?", (ref,)).fetchone()[0])
        value["snapshot"] = change(value["snapshot"])
        db.execute("UPDATE jev_store SET value = ? WHERE key = ?", (json.dumps(value).encode(), ref))
        db.commit()
        db.close()
    elif name == "memorystore":
        key = next(k for k in archive.store._data if k[1] == ref)
        archive.store._data[key]["snapshot"] = change(archive.store._data[key]["snapshot"])
    elif name == "bare":
        key = next(k for k in archive.data if k[1] == ref)
        archive.data[key] = change(archive.data[key])
    elif isinstance(archive, FileArchive):
        path = archive.root / SCOPE.digest() / f"{ref}.json"
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(change(data))
    else:
        path = archive.path(SCOPE, ref)
        data = archive.fs.cat_file(path)
        archive.fs.rm_file(path)
        archive.fs.pipe_file(path, change(data))


@pytest.mark.parametrize("change", [_edit, lambda data: data[:0]], ids=["edited", "emptied"])
def test_tampered_snapshot_is_a_checksum_mismatch(kind, change) -> None:
    """An edited or emptied snapshot (a zero-length S3 object read as "read failed (OSError)") is a checksum
    mismatch on every backend, and never "already saved"."""
    name, build, _ = kind
    archive = build()
    ref = archive.save(SCOPE, reference_messages())
    _tamper(name, archive, ref, change)
    with pytest.raises(ArchiveError, match="archive checksum mismatch"):
        build().restore(SCOPE, ref)
    with pytest.raises(ArchiveError, match="archive checksum mismatch"):
        build().restore_bytes(SCOPE, ref)
    with pytest.raises(ArchiveError, match="another document is stored under this reference"):
        build().save(SCOPE, reference_messages())  # never "already saved" over a tampered copy


_WRITER = textwrap.dedent("""
    import json, sys
    sys.path[:0] = ["tests", "servers"]
    from conftest import SCOPE, msg, text
    from archive import SqliteStore, StoreArchive, open_archive
    spec, payload = json.loads(sys.argv[1]), sys.argv[2]
    if spec["kind"] == "sqlite":
        archive = StoreArchive(SqliteStore(spec["path"]))
    else:
        archive = open_archive(spec["url"], skip_instance_cache=True, **spec["options"])
    print(archive.save(SCOPE, [msg("m", "user", text(payload))]))
""")


def _objects(name: str, archive: ArchiveBase) -> int:
    if name == "sqlite":
        import sqlite3
        db = sqlite3.connect(archive.store.path)
        n = db.execute("SELECT COUNT(*) FROM jev_store").fetchone()[0]
        db.close()
        return n
    if name == "memorystore":
        return len(archive.store._data)
    if name == "bare":
        return len(archive.data)
    if isinstance(archive, FileArchive):
        return len([p for p in archive.root.rglob("*.json") if not p.name.startswith(".")])
    return len([p for p in archive.fs.find(archive.root) if p.endswith(".json") and "/.pending-" not in p])


@pytest.mark.slow
def test_eight_writers_of_one_snapshot_agree_on_one_object(kind) -> None:
    name, build, spec = kind
    payload = "same snapshot " * 5000
    if spec["kind"] in ("url", "sqlite") and name != "memory":
        procs = [subprocess.Popen([sys.executable, "-c", _WRITER, json.dumps(spec), payload], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(8)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert all(p.returncode == 0 for p in procs), [o[1].decode()[-500:] for o in outs]
        refs = {o[0].decode().strip() for o in outs}
    else:  # in-process stores: threads share them
        archive = build()
        with ThreadPoolExecutor(8) as pool:
            refs = set(pool.map(lambda _: archive.save(SCOPE, [msg("m", "user", text(payload))]), range(8)))
    assert len(refs) == 1
    archive = build()
    assert _objects(name, archive) == 1
    assert archive.restore(SCOPE, refs.pop())[0].content[0].text == payload


@pytest.mark.slow
def test_different_snapshots_in_parallel(kind) -> None:
    name, build, _ = kind
    archive = build()
    snapshots = [[msg("m", "user", text(f"snapshot {i} " * 200))] for i in range(12)]
    with ThreadPoolExecutor(6) as pool:
        refs = list(pool.map(lambda s: archive.save(SCOPE, s), snapshots))
    assert len(set(refs)) == 12 and _objects(name, archive) == 12
    for ref, messages in zip(refs, snapshots, strict=True):
        assert archive.restore(SCOPE, ref) == messages


def test_restore_failures_say_which_without_revealing_other_scopes(kind, tmp_path: Path) -> None:
    """A wrong scope and an unknown reference read alike (no other scope's existence leaks); a typo'd
    archive folder says so."""
    _, build, _ = kind
    archive = build()
    ref = archive.save(SCOPE, reference_messages())
    for scope, wanted in ((Scope("someone-else", "agent-1", "session-1"), ref), (SCOPE, "b" * 64)):
        with pytest.raises(ArchiveError, match=r"^missing snapshot: no snapshot with this reference in this scope$"):
            archive.restore(scope, wanted)
    with pytest.raises(ArchiveError, match=f"archive root {tmp_path / 'typo'} does not exist"):
        FileArchive(tmp_path / "typo").restore(SCOPE, ref)


def test_list_and_delete_a_scopes_snapshots(kind) -> None:
    """Retention is the host's; the archive gives it the tool."""
    _, build, _ = kind
    archive = build()
    scope = Scope("u-list", "a", str(uuid.uuid4()))
    assert archive.snapshots(scope) == []
    refs = sorted(archive.save(scope, reference_messages()[:k]) for k in (2, 4, 6))
    other = archive.save(Scope("u-list", "a", "another"), reference_messages())
    assert archive.snapshots(scope) == refs and other not in refs
    assert archive.delete(scope, refs[0]) is True
    assert archive.delete(scope, refs[0]) is False  # already gone
    assert archive.delete(scope, other) is False  # another scope's snapshot is not this scope's to delete
    assert archive.snapshots(scope) == refs[1:]
    with pytest.raises(ArchiveError, match="missing snapshot"):
        archive.restore(scope, refs[0])
    assert archive.restore(Scope("u-list", "a", "another"), other) == reference_messages()


def test_open_archive_picks_the_backend(tmp_path: Path) -> None:
    assert isinstance(open_archive(tmp_path), FileArchive)
    assert open_archive(f"file://{tmp_path}").root == tmp_path
    assert isinstance(open_archive("memory://x/y"), ObjectStoreArchive)
    db = open_archive(f"sqlite:///{tmp_path}/a.db")
    assert isinstance(db, StoreArchive) and db.store.path == f"{tmp_path}/a.db"
    with pytest.raises(ArchiveError, match="sqlite archive URL needs a file path"):
        open_archive("sqlite://")
    with pytest.raises(ArchiveError, match="not installed"):
        open_archive("gs://bucket/prefix")
    for location in (tmp_path, "memory://x/y", f"sqlite:///{tmp_path}/b.db"):
        with pytest.raises(ConfigError, match=r"max_bytes must be an integer >= 1 \(got 0\)"):
            open_archive(location, max_bytes=0)
