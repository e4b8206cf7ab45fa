"""Archives of pre-compaction snapshots: save before adopting, restore byte-exact, never re-run a tool.

Every archive has `save(scope, messages) -> ref`, `restore(scope, ref) -> messages` and
`restore_pair(scope, ref, call_id) -> messages`. `FileArchive` stores files on a local disk.
Object stores (fsspec URLs) and key-value stores arrive as `ObjectStoreArchive` and `StoreArchive`;
`open_archive` refuses their URLs until then rather than guessing. Retention and ACLs are the host's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit

from jev.errors import ArchiveError
from jev.transcript import Message

from .file import DEFAULT_MAX_BYTES, FileArchive
from .scope import Scope


@runtime_checkable
class Archive(Protocol):
    """What the compactor needs from an archive."""

    def save(self, scope: Scope, messages: Sequence[Message]) -> str: ...

    def restore(self, scope: Scope, ref: str) -> list[Message]: ...

    def restore_pair(self, scope: Scope, ref: str, call_id: str) -> list[Message]: ...


def open_archive(path_or_url: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> Archive:
    """The archive for a local path or `file://` URL."""
    target = os.fspath(path_or_url)
    parts = urlsplit(target)
    if parts.scheme == "file":
        return FileArchive(parts.path, max_bytes)
    if parts.scheme and len(parts.scheme) > 1:  # one letter would be a Windows drive
        raise ArchiveError(f"archive URL scheme {parts.scheme!r} is not supported in this version "
                           "(local paths and file:// only)")
    return FileArchive(target, max_bytes)


__all__ = ["DEFAULT_MAX_BYTES", "Archive", "FileArchive", "Scope", "open_archive"]
