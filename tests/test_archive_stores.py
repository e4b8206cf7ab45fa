"""Archive stores through one matrix: a real SeaweedFS S3 server via s3fs, fsspec memory:// and file://,
SqliteStore and MemoryStore. Concurrency uses real processes wherever the store is shared across them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import plain, SCOPE, call, msg, reference_messages, result, text
from seaweed import SeaweedFS

from archive import FileArchive, MemoryStore, ObjectStoreArchive, Scope, SqliteStore, StoreArchive, open_archive, restore_tool
from archive.store import REFUSED
from jev import Action, ArchiveError, ConfigError, ToolResultBlock

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedFS]:
    with SeaweedFS(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


class Kind:
    """How to build one store kind, and whether separate processes share it."""

    def __init__(self, name: str, make: Callable[[], tuple[Callable[[], object], dict]], shared: bool) -> None:
        self.name, self.make, self.shared = name, make, shared


def _s3(seaweed: SeaweedFS) -> tuple[Callable[[], object], dict]:
    import s3fs
    bucket = f"jev-{uuid.uuid4().hex[:12]}"
    s3fs.S3FileSystem(skip_instance_cache=True, **seaweed.storage_options).mkdir(bucket)
    spec = {"kind": "url", "url": f"s3://{bucket}/archive", "options": seaweed.storage_options}
    return (lambda: ObjectStoreArchive(spec["url"], skip_instance_cache=True, **spec["options"])), spec


@pytest.fixture(params=["s3", "memory", "file", "sqlite", "memorystore"])
def kind(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Callable[[], object], dict]:
    name = request.param
    if name == "s3":
        build, spec = _s3(request.getfixturevalue("seaweed"))
    elif name == "memory":
        spec = {"kind": "url", "url": f"memory://jev-{uuid.uuid4().hex}/archive", "options": {}}
        build = lambda: ObjectStoreArchive(spec["url"])  # noqa: E731
    elif name == "file":
        spec = {"kind": "url", "url": f"file://{tmp_path}/objects", "options": {}}
        build = lambda: ObjectStoreArchive(spec["url"])  # noqa: E731
    elif name == "sqlite":
        spec = {"kind": "sqlite", "path": str(tmp_path / "archive.db")}
        build = lambda: StoreArchive(SqliteStore(spec["path"]))  # noqa: E731
    else:
        store = MemoryStore()
        spec = {"kind": "memorystore"}
        build = lambda: StoreArchive(store)  # noqa: E731
    return name, build, spec


def test_save_restore_idempotent_scoped(kind) -> None:
    name, build, _ = kind
    archive = build()
    messages = reference_messages()
    ref = archive.save(SCOPE, messages)
    assert archive.restore(SCOPE, ref) == messages
    assert archive.save(SCOPE, messages) == ref
    assert build().restore(SCOPE, ref) == messages  # a second client sees the same snapshot
    from archive.snapshot import encode
    assert archive.restore_bytes(SCOPE, ref) == encode(SCOPE, messages)[1]  # byte-exact document
    for other in (Scope("user-2", "agent-1", "session-1"), Scope("user-1", "agent-1", "session-2")):
        with pytest.raises(ArchiveError):
            archive.restore(other, ref)
    with pytest.raises(ArchiveError, match="invalid archive reference"):
        archive.restore(SCOPE, "../escape")


def test_size_limit(kind) -> None:
    name, build, _ = kind
    archive = build()
    archive.max_bytes = 100
    with pytest.raises(ArchiveError, match="archive limit"):
        archive.save(SCOPE, reference_messages())


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


def test_restore_pair_in_the_middle_of_parallel_calls(kind) -> None:
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


def _tamper(name: str, archive: object, ref: str) -> None:
    if name == "sqlite":
        import sqlite3
        db = sqlite3.connect(archive.store.path)
        value = json.loads(db.execute("SELECT value FROM jev_store WHERE key = ?", (ref,)).fetchone()[0])
        value["snapshot"] = value["snapshot"].replace("evidence", "EVIDENCE", 1)
        db.execute("UPDATE jev_store SET value = ? WHERE key = ?", (json.dumps(value), ref))
        db.commit()
        db.close()
    elif name == "memorystore":
        key = next(k for k in archive.store._data if k[1] == ref)
        archive.store._data[key]["snapshot"] = archive.store._data[key]["snapshot"].replace("evidence", "EVIDENCE", 1)
    else:
        path = archive.path(SCOPE, ref)
        data = archive.fs.cat_file(path)
        archive.fs.pipe_file(path, data.replace(b"evidence", b"EVIDENCE", 1))


def test_tampered_snapshot_is_a_checksum_mismatch(kind) -> None:
    name, build, _ = kind
    archive = build()
    ref = archive.save(SCOPE, reference_messages())
    _tamper(name, archive, ref)
    with pytest.raises(ArchiveError, match="archive checksum mismatch"):
        build().restore(SCOPE, ref)
    with pytest.raises(ArchiveError, match="archive checksum mismatch"):
        build().restore_bytes(SCOPE, ref)
    with pytest.raises(ArchiveError):  # never "already saved" over a tampered copy
        build().save(SCOPE, reference_messages())


_WRITER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, "tests")
    from conftest import SCOPE, msg, text
    from archive import ObjectStoreArchive, SqliteStore, StoreArchive
    spec, payload = json.loads(sys.argv[1]), sys.argv[2]
    if spec["kind"] == "sqlite":
        archive = StoreArchive(SqliteStore(spec["path"]))
    else:
        archive = ObjectStoreArchive(spec["url"], skip_instance_cache=True, **spec["options"])
    print(archive.save(SCOPE, [msg("m", "user", text(payload))]))
""")


def _objects(name: str, archive: object) -> int:
    if name == "sqlite":
        import sqlite3
        db = sqlite3.connect(archive.store.path)
        n = db.execute("SELECT COUNT(*) FROM jev_store").fetchone()[0]
        db.close()
        return n
    if name == "memorystore":
        return len(archive.store._data)
    return len([p for p in archive.fs.find(archive.root) if p.endswith(".json") and "/.pending-" not in p])


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


def test_different_snapshots_in_parallel(kind) -> None:
    name, build, _ = kind
    archive = build()
    snapshots = [[msg("m", "user", text(f"snapshot {i} " * 200))] for i in range(12)]
    with ThreadPoolExecutor(6) as pool:
        refs = list(pool.map(lambda s: archive.save(SCOPE, s), snapshots))
    assert len(set(refs)) == 12 and _objects(name, archive) == 12
    for ref, messages in zip(refs, snapshots, strict=True):
        assert archive.restore(SCOPE, ref) == messages


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


def test_open_archive_picks_the_store(tmp_path: Path) -> None:
    from archive import FileArchive
    assert isinstance(open_archive(tmp_path), FileArchive)
    assert isinstance(open_archive("memory://x/y"), ObjectStoreArchive)
    db = open_archive(f"sqlite:///{tmp_path}/a.db")
    assert isinstance(db, StoreArchive) and db.store.path == f"{tmp_path}/a.db"
    with pytest.raises(ArchiveError, match="not installed"):
        open_archive("gs://bucket/prefix")


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

    from archive import restore_latest
    from conftest import ScriptedJudge, reference_config
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
    from jev.apply import apply_actions, is_truncated
    from jev.transcript import analyze

    messages = reference_messages()
    cut = apply_actions(analyze(messages), {"t1": Action.TRUNCATE_RESULT}, plain(30))
    for form in ("jev", "langchain", "openai-chat", "anthropic"):
        back = formats.load(formats.dump(cut, form), form)
        results = [b for m in back for b in m.content if isinstance(b, ToolResultBlock)]
        assert [is_truncated(b) for b in results] == [True, False, False], form


def test_cli_compact_and_restore_on_s3(seaweed: SeaweedFS, tmp_path: Path) -> None:
    import os

    from jev import formats
    build, spec = _s3(seaweed)
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps(formats.dump(reference_messages())))
    replay = tmp_path / "r.json"
    replay.write_text(json.dumps({"answers": {"call_t1": 0.01, "result_t1": 0.01}, "default": 0.99}))
    env = {**os.environ, "AWS_ACCESS_KEY_ID": spec["options"]["key"], "AWS_SECRET_ACCESS_KEY": spec["options"]["secret"],
           "AWS_DEFAULT_REGION": "us-west-2"}
    where = ["--archive", spec["url"], "--archive-endpoint", seaweed.endpoint, "--user", "u", "--agent", "a",
             "--session", "s"]
    proc = subprocess.run([sys.executable, "-m", "jev.cli.main", "compact", str(transcript), "--mode", "enforce",
                           "--judge", f"replay:{replay}", "--eligible-tools", "read", "--preserve-recent", "1", *where,
                           "-q"], cwd=ROOT, capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    ref = json.loads(proc.stdout)["archive_reference"]
    proc = subprocess.run([sys.executable, "-m", "jev.cli.main", "restore", ref, *where, "--call-id", "old", "-q"],
                          cwd=ROOT, capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert [m["id"] for m in json.loads(proc.stdout)["messages"]] == ["c-old", "r-old"]
    assert "secret" not in repr(build())


def test_example_restore_archive_runs() -> None:
    proc = subprocess.run([sys.executable, "examples/restore_archive.py"], cwd=ROOT, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    assert out.count("restored 6 messages (equal: True)") == 3 and "another scope:" in out


def test_an_existing_object_is_recognised_by_status_never_by_text() -> None:
    """A path holds SHA-256 digests, so "412" in an error's text says nothing (issue 16, item 5)."""
    import errno

    from archive.object_store import _already_exists

    class ClientError(Exception):
        def __init__(self, response: dict) -> None:
            super().__init__("An error occurred")
            self.response = response

    def wrapped(cause: BaseException) -> OSError:  # as s3fs translates an unknown code: EINVAL, cause set
        exc = OSError(errno.EINVAL, "At least one of the pre-conditions you specified did not hold")
        exc.__cause__ = cause
        return exc

    digest_path = "bucket/3f4120ab/c412e9.json"
    assert not _already_exists(OSError(errno.EINVAL, f"write failed: {digest_path} (HTTP 412?)"))
    assert not _already_exists(RuntimeError(f"PreconditionFailed at {digest_path}"))
    assert not _already_exists(wrapped(ClientError({"Error": {"Code": "SlowDown"},
                                                    "ResponseMetadata": {"HTTPStatusCode": 503}})))
    assert _already_exists(FileExistsError(digest_path))
    assert _already_exists(OSError(errno.EEXIST, "exists"))
    assert _already_exists(wrapped(ClientError({"Error": {"Code": "PreconditionFailed"}})))
    assert _already_exists(wrapped(ClientError({"Error": {}, "ResponseMetadata": {"HTTPStatusCode": 412}})))
    status = RuntimeError("precondition")
    status.status = 412  # type: ignore[attr-defined]
    assert _already_exists(wrapped(status))


def test_restore_failures_say_which_without_revealing_other_scopes(kind, tmp_path: Path) -> None:
    """A wrong scope and an unknown reference read alike (no other scope's existence leaks); a typo'd
    archive folder and a snapshot over the limit say so (issue 16, item 8)."""
    _, build, _ = kind
    archive = build()
    ref = archive.save(SCOPE, reference_messages())
    for scope, wanted in ((Scope("someone-else", "agent-1", "session-1"), ref), (SCOPE, "b" * 64)):
        with pytest.raises(ArchiveError, match=r"^missing snapshot: no snapshot with this reference in this scope$"):
            archive.restore(scope, wanted)
    archive.max_bytes = 100
    with pytest.raises(ArchiveError, match="stored snapshot exceeds max_bytes 100"):
        archive.restore(SCOPE, ref)
    with pytest.raises(ArchiveError, match=f"archive root {tmp_path / 'typo'} does not exist"):
        FileArchive(tmp_path / "typo").restore(SCOPE, ref)


def test_sqlite_store_errors_are_archive_errors_with_the_right_words(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "s.db"
    archive = StoreArchive(SqliteStore(path))
    ref = archive.save(SCOPE, reference_messages())
    db = sqlite3.connect(path)
    db.execute("UPDATE jev_store SET value = ?", (b"{not json",))
    db.commit()
    with pytest.raises(ArchiveError, match="the stored row for .* is not JSON \\(corrupted\\)"):
        archive.restore(SCOPE, ref)
    db.execute("UPDATE jev_store SET value = ?", (b'{"snapshot": "{\\"messages\\": []}"}',))  # tampered, valid JSON
    db.commit()
    db.close()
    with pytest.raises(ArchiveError, match="archive checksum mismatch"):
        archive.restore(SCOPE, ref)
    with pytest.raises(ArchiveError, match="archive checksum mismatch: another document is stored"):
        archive.save(SCOPE, reference_messages())
    (tmp_path / "junk.db").write_bytes(b"this is not a database file at all" * 100)
    with pytest.raises(ArchiveError, match="sqlite store .*junk.db: file is not a database"):
        SqliteStore(tmp_path / "junk.db")


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


def test_list_and_delete_a_scopes_snapshots(kind) -> None:
    """Retention is the host's; the archive gives it the tool (issue 16, item 10)."""
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
    with pytest.raises(ArchiveError, match="invalid archive reference"):
        archive.delete(scope, "../escape")


def test_cli_lists_and_deletes_snapshots(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "a")
    refs = sorted(archive.save(SCOPE, reference_messages()[:k]) for k in (2, 4))
    where = ["--archive", str(tmp_path / "a"), "--user", SCOPE.user_id, "--agent", SCOPE.agent_id,
             "--session", SCOPE.session_id]

    def jev(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "jev.cli.main", "snapshots", *args, *where], cwd=ROOT,
                              capture_output=True, timeout=60)

    listed = jev()
    assert listed.returncode == 0 and json.loads(listed.stdout) == {"status": "LISTED", "snapshots": refs}
    deleted = jev("--delete", refs[0], "--delete", "f" * 64)
    assert deleted.returncode == 3
    assert json.loads(deleted.stdout) == {"status": "ERROR", "deleted": [refs[0]], "missing": ["f" * 64]}
    assert json.loads(jev().stdout)["snapshots"] == refs[1:]
    assert jev("--delete", "nope").returncode == 2
    missing = subprocess.run([sys.executable, "-m", "jev.cli.main", "snapshots", "--archive", str(tmp_path / "typo"),
                              *where[2:]], cwd=ROOT, capture_output=True, timeout=60)
    assert missing.returncode == 2 and b"no such archive folder" in missing.stderr
    assert not (tmp_path / "typo").exists()
