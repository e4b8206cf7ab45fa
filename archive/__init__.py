"""Archives of pre-compaction snapshots: save before adopting, restore byte-exact, never re-run a tool.

Every archive has `save(scope, messages) -> ref`, `restore(scope, ref) -> messages` and
`restore_pair(scope, ref, call_id, occurrence=None) -> messages` (and `restore_bytes(scope, ref)`, the
verified document; `snapshots(scope)` and `delete(scope, ref)` for the host's retention): `FileArchive` (a
local directory), `ObjectStoreArchive`
(any fsspec URL: S3, GCS, Azure, memory, file) and `StoreArchive` (a key-value store with acknowledged
create-if-absent: `SqliteStore`, `MemoryStore`). `open_archive` picks one from a path or URL, and
`restore_tool` hands an agent a read-only way back to one archived pair. Retention and ACLs are the host's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, urlsplit

from jev.errors import ArchiveError
from jev.model.scope import Archive, Scope

from .base import DEFAULT_MAX_BYTES, ArchiveBase
from .file import FileArchive
from .snapshot import check_reference
from .store import KeyValueStore, MemoryStore, SqliteStore, StoreArchive
from .tool import ToolDefinition, restore_latest, restore_tool

if TYPE_CHECKING:
    from .object_store import ObjectStoreArchive


def __getattr__(name: str) -> Any:
    if name == "ObjectStoreArchive":  # fsspec is imported when an object store is first named
        from .object_store import ObjectStoreArchive

        return ObjectStoreArchive
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_archive(path_or_url: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES,
                 **storage_options: Any) -> Archive:
    """The archive for a location: a local path or `file://` -> `FileArchive`; `sqlite:///path.db` ->
    `StoreArchive(SqliteStore)` (`sqlite:////abs/path.db` for an absolute path); any other fsspec URL
    (`s3://bucket/prefix`, `gs://`, `az://`, `memory://`) -> `ObjectStoreArchive` with `storage_options`."""
    target = os.fspath(path_or_url)
    parts = urlsplit(target)
    scheme = parts.scheme if len(parts.scheme) > 1 else ""  # one letter would be a Windows drive
    return _OPENERS.get(scheme, _object_store)(target, parts, max_bytes, storage_options)


def _file(target: str, parts: SplitResult, max_bytes: int, _options: dict[str, Any]) -> Archive:
    return FileArchive(parts.path if parts.scheme == "file" else target, max_bytes)


def _sqlite(_target: str, parts: SplitResult, max_bytes: int, _options: dict[str, Any]) -> Archive:
    path = parts.path[1:] if not parts.netloc else ""  # SQLAlchemy style: sqlite:///rel.db, sqlite:////abs.db
    if not path:
        raise ArchiveError("sqlite archive URL needs a file path: sqlite:///relative.db or sqlite:////abs.db")
    return StoreArchive(SqliteStore(path), max_bytes)


def _object_store(target: str, _parts: SplitResult, max_bytes: int, options: dict[str, Any]) -> Archive:
    from .object_store import open_url  # fsspec is imported when an object store is first named

    return open_url(target, max_bytes, **options)


# scheme -> opener, as fsspec's registry maps protocols to filesystems; any other scheme is an fsspec URL
_OPENERS: dict[str, Callable[[str, SplitResult, int, dict[str, Any]], Archive]] = {
    "": _file, "file": _file, "sqlite": _sqlite}


__all__ = ["DEFAULT_MAX_BYTES", "Archive", "ArchiveBase", "FileArchive", "KeyValueStore", "MemoryStore",
           "ObjectStoreArchive", "Scope", "SqliteStore", "StoreArchive", "ToolDefinition", "check_reference",
           "open_archive", "restore_latest", "restore_tool"]
