"""Snapshots in a namespaced key-value store that acknowledges create-if-absent.

Namespace `("jev", "context", sha256(user), sha256(agent), sha256(session))`, key = reference, value
`{"snapshot": <canonical JSON string>}`. A store must offer `put_if_absent(namespace, key, value) ->
bool` (True only when *this* call created the entry) and `get(namespace, key)`; a store without it —
LangGraph's `BaseStore` among them, whose `put` is an unconditional upsert — is refused, because a
write-once archive cannot be built on get-then-put. Ships `SqliteStore` (one table, WAL, `INSERT … ON
CONFLICT DO NOTHING`, safe across processes) and `MemoryStore` (one process; for tests). Listing and
deleting a scope's snapshots (retention, the host's) need `keys(namespace)` and `delete(namespace, key)`
too; both shipped stores have them.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import orjson

from jev.errors import ArchiveError, ConfigError
from jev.model.scope import Scope

from .base import DEFAULT_MAX_BYTES, REFUSED, ArchiveBase, check_max_bytes
from .snapshot import check_scope

Namespace = tuple[str, ...]


@runtime_checkable
class KeyValueStore(Protocol):
    """What `StoreArchive` needs from a store."""

    def put_if_absent(self, namespace: Namespace, key: str, value: Mapping[str, Any]) -> bool: ...

    def get(self, namespace: Namespace, key: str) -> Mapping[str, Any] | None: ...


class MemoryStore:
    """An in-process store with create-if-absent under a lock. Not durable: tests and single processes."""

    def __init__(self) -> None:
        self._data: dict[tuple[Namespace, str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def put_if_absent(self, namespace: Namespace, key: str, value: Mapping[str, Any]) -> bool:
        with self._lock:
            if (tuple(namespace), key) in self._data:
                return False
            self._data[(tuple(namespace), key)] = dict(value)
            return True

    def keys(self, namespace: Namespace) -> list[str]:
        with self._lock:
            return [k for (ns, k) in self._data if ns == tuple(namespace)]

    def delete(self, namespace: Namespace, key: str) -> bool:
        with self._lock:
            return self._data.pop((tuple(namespace), key), None) is not None

    def get(self, namespace: Namespace, key: str) -> Mapping[str, Any] | None:
        with self._lock:
            value = self._data.get((tuple(namespace), key))
            return dict(value) if value is not None else None


class SqliteStore:
    """A SQLite file as the store: one table, WAL journal, `INSERT … ON CONFLICT DO NOTHING`; several
    processes may share the file. Connections are opened per call, so the store is safe across threads."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = 30.0) -> None:
        self.path = str(path)
        self.timeout = timeout
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._call(self._setup)

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    @staticmethod
    def _setup(db: sqlite3.Connection) -> None:
        # Switching to WAL takes a lock that SQLite's busy handler does not wait for, so several processes
        # opening a new file at once can see "database is locked" here: `_call` retries. Once the file
        # is in WAL mode (it stays so), the switch is skipped.
        if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS jev_store (namespace TEXT NOT NULL, key TEXT NOT NULL, "
                   "value BLOB NOT NULL, PRIMARY KEY (namespace, key))")

    def _call(self, step: Any) -> Any:
        """Run `step(connection)` on a fresh connection, retrying "locked"/"busy" for up to `timeout`
        seconds; any other SQLite error becomes an `ArchiveError` that names the file."""
        deadline, pause = time.monotonic() + self.timeout, 0.005
        while True:
            try:
                db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
                try:
                    return step(db)
                finally:
                    db.close()
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() + pause > deadline:
                    raise ArchiveError(f"sqlite store {self.path}: {exc}") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.25)
            except sqlite3.Error as exc:  # not a database, corrupt file, read-only, …
                raise ArchiveError(f"sqlite store {self.path}: {exc}") from None

    @staticmethod
    def _ns(namespace: Namespace) -> str:
        return "/".join(namespace)

    def put_if_absent(self, namespace: Namespace, key: str, value: Mapping[str, Any]) -> bool:
        row = (self._ns(namespace), key, orjson.dumps(dict(value)))
        return self._call(lambda db: db.execute("INSERT INTO jev_store (namespace, key, value) VALUES (?, ?, ?) "
                                                "ON CONFLICT (namespace, key) DO NOTHING", row).rowcount == 1)

    def keys(self, namespace: Namespace) -> list[str]:
        rows = self._call(lambda db: db.execute("SELECT key FROM jev_store WHERE namespace = ?",
                                                (self._ns(namespace),)).fetchall())
        return [row[0] for row in rows]

    def delete(self, namespace: Namespace, key: str) -> bool:
        return self._call(lambda db: db.execute("DELETE FROM jev_store WHERE namespace = ? AND key = ?",
                                                (self._ns(namespace), key)).rowcount == 1)

    def get(self, namespace: Namespace, key: str) -> Mapping[str, Any] | None:
        row = self._call(lambda db: db.execute("SELECT value FROM jev_store WHERE namespace = ? AND key = ?",
                                               (self._ns(namespace), key)).fetchone())
        if row is None:
            return None
        try:
            value = orjson.loads(row[0])
        except orjson.JSONDecodeError:
            raise ArchiveError(f"sqlite store {self.path}: the stored row for {key} is not JSON (corrupted)") from None
        if not isinstance(value, dict):
            raise ArchiveError(f"sqlite store {self.path}: the stored row for {key} is not a JSON object (corrupted)")
        return value


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class StoreArchive(ArchiveBase):
    """Snapshots in a `KeyValueStore` with acknowledged create-if-absent."""

    def __init__(self, store: Any, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if not callable(getattr(store, "put_if_absent", None)) or not callable(getattr(store, "get", None)):
            raise ConfigError(f"{REFUSED}: {type(store).__name__} has no put_if_absent(namespace, key, value); "
                              "an unconditional put (LangGraph BaseStore) cannot make a write-once archive")
        self.store = store
        self.max_bytes = check_max_bytes(max_bytes)

    def __repr__(self) -> str:
        return f"StoreArchive({self.store!r}, max_bytes={self.max_bytes})"

    @staticmethod
    def namespace(scope: Scope) -> Namespace:
        """The scope's namespace: each part hashed, so no identifier is stored in the clear."""
        check_scope(scope)
        return ("jev", "context", _digest(scope.user_id), _digest(scope.agent_id), _digest(scope.session_id))

    # --- storage primitives (ArchiveBase) ----------------------------------------------------------

    def _read(self, scope: Scope, ref: str, limit: int) -> bytes | None:
        entry = self._call("get", self.namespace(scope), ref)
        if entry is None:
            return None
        text = entry.get("snapshot") if isinstance(entry, Mapping) else None
        if not isinstance(text, str):
            raise ArchiveError("archive snapshot unreadable: the stored entry has no snapshot text (corrupted)")
        return text.encode()

    def _create(self, scope: Scope, ref: str, data: bytes) -> bool:
        return self._call("put_if_absent", self.namespace(scope), ref, {"snapshot": data.decode()})

    def _exists(self, scope: Scope, ref: str) -> bool:
        # asked only before a delete, which needs `keys` too (module docstring): never read a snapshot for it
        return ref in self._call("keys", self.namespace(scope))

    def _names(self, scope: Scope) -> list[str]:
        return self._call("keys", self.namespace(scope))

    def _remove(self, scope: Scope, ref: str) -> bool:
        return bool(self._call("delete", self.namespace(scope), ref))

    def _call(self, name: str, *args: Any) -> Any:
        """The store's method `name`, any failure of it an `ArchiveError`. `keys` and `delete` are needed
        only to list and delete snapshots, and said so when missing."""
        method = getattr(self.store, name, None)
        if not callable(method):
            raise ArchiveError(f"{type(self.store).__name__} has no {name}(namespace{', key' if name == 'delete' else ''}): "
                               "listing and deleting snapshots need it (saving and restoring do not)")
        try:
            return method(*args)
        except ArchiveError:
            raise
        except Exception as exc:
            what = {"get": "read", "put_if_absent": "write"}.get(name, name)
            raise ArchiveError(f"archive {what} failed ({type(exc).__name__})") from None
