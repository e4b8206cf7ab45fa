"""Snapshots on any fsspec URL (`s3://`, `gs://`, `az://`, `memory://`, `file://`): the same layout as the
file archive, published create-if-absent, read back verified.

Create-if-absent is fsspec's `pipe_file(mode="create")` (S3: `If-None-Match: *`). A rejected create
surfaces as `FileExistsError`, or (SeaweedFS answers 412 without the condition name, which s3fs reports
as `OSError` EINVAL) as an error whose cause carries HTTP status 412 / `PreconditionFailed`: both mean
"already exists", and the existing object is then verified — never overwritten. Any other error, EINVAL
without a 412 behind it included, is a failed write. A local path (`file://`, or a URL fsspec resolves to
its local filesystem) is handed to `FileArchive`, so it gets the same protection: temp file + fsync +
atomic rename, 0700/0600 modes, and no symlinked root, scope directory or snapshot followed. Snapshots
are content-addressed, so two writers racing on one reference write identical bytes.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from jev.errors import ArchiveError
from jev.transcript import Message

from . import snapshot
from .file import DEFAULT_MAX_BYTES, FileArchive, check_max_bytes
from .base import ArchiveBase
from .scope import Scope


def _already_exists(exc: BaseException) -> bool:
    """Whether a failed create-if-absent says "the object exists", judged by the error's kind or the
    store's status code, never by its text (a path holds SHA-256 digests, which contain "412" often enough):
    `FileExistsError` / EEXIST, or anywhere in the cause chain an HTTP 412 — botocore's
    `response` (`Error.Code` PreconditionFailed or 412, or `HTTPStatusCode` 412), or a `status`, `status_code`
    or `code` attribute equal to 412 (gcsfs, aiohttp)."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, FileExistsError) or (isinstance(error, OSError) and error.errno == errno.EEXIST):
            return True
        response = getattr(error, "response", None)
        if isinstance(response, dict):
            code = (response.get("Error") or {}).get("Code")
            status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            if code in ("PreconditionFailed", "412") or status == 412:
                return True
        if any(getattr(error, name, None) == 412 for name in ("status", "status_code", "code")):
            return True
        error = error.__cause__ or error.__context__
    return False


class ObjectStoreArchive(ArchiveBase):
    """Snapshots under an fsspec URL; `storage_options` go to the filesystem (credentials, endpoint, …)."""

    def __init__(self, url: str, max_bytes: int = DEFAULT_MAX_BYTES, **storage_options: Any) -> None:
        self.max_bytes = check_max_bytes(max_bytes)
        try:
            self.fs, root = fsspec.core.url_to_fs(url, **storage_options)
        except ImportError as exc:
            raise ArchiveError(f"archive URL {url!r} needs an fsspec backend that is not installed ({exc})") from None
        except (ValueError, TypeError) as exc:
            raise ArchiveError(f"archive URL {url!r} cannot be opened ({exc})") from None
        self.url = url
        self.root = root.rstrip("/")
        # fsspec's local filesystem follows symlinks and writes in two steps: the file archive does neither
        self._local = FileArchive(root, max_bytes) if isinstance(self.fs, LocalFileSystem) else None

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int) -> None:
        self._max_bytes = check_max_bytes(value)
        if getattr(self, "_local", None) is not None:
            self._local.max_bytes = self._max_bytes

    def __repr__(self) -> str:  # storage options (credentials) are never shown
        return f"ObjectStoreArchive({self.url!r}, max_bytes={self.max_bytes})"

    def _path(self, scope: Scope, ref: str) -> str:
        if not isinstance(scope, Scope):
            raise ArchiveError("archive needs an archive.Scope")
        return f"{self.root}/{scope.digest()}/{ref}.json"

    def save(self, scope: Scope, messages: Sequence[Message]) -> str:
        """Archive the messages; returns the reference. An existing snapshot is verified, not rewritten."""
        if self._local is not None:
            return self._local.save(scope, messages)
        ref, data = snapshot.encode(scope, messages)
        snapshot.check_size(len(data), self.max_bytes)
        path = self._path(scope, ref)
        try:
            self.fs.makedirs(self.fs._parent(path), exist_ok=True)
            self.fs.pipe_file(path, data, mode="create")
        except Exception as exc:  # noqa: BLE001 - classified below
            if not _already_exists(exc):
                raise ArchiveError(f"archive write failed ({type(exc).__name__}: {exc})") from None
            self._read(scope, ref)  # verify what is there; raises if it is not this snapshot
        return ref

    def restore(self, scope: Scope, ref: str) -> list[Message]:
        """The archived messages, verified: right scope, within max_bytes, hash equal to `ref`."""
        if self._local is not None:
            return self._local.restore(scope, ref)
        snapshot.check_reference(ref)
        return self._read(scope, ref)

    def restore_bytes(self, scope: Scope, ref: str) -> bytes:
        """The snapshot document exactly as archived (canonical JSON), verified, not parsed."""
        if self._local is not None:
            return self._local.restore_bytes(scope, ref)
        snapshot.check_reference(ref)
        return snapshot.verify(scope, ref, self._read_bytes(scope, ref))


    def snapshots(self, scope: Scope) -> list[str]:
        """The references of the scope's snapshots, sorted."""
        if self._local is not None:
            return self._local.snapshots(scope)
        folder = self._path(scope, "x").rsplit("/", 1)[0]
        try:
            self.fs.invalidate_cache(folder)
            names = self.fs.ls(folder, detail=False)
        except FileNotFoundError:
            return []
        except Exception as exc:  # noqa: BLE001 - storage errors become archive errors
            raise ArchiveError(f"archive listing failed ({type(exc).__name__})") from None
        return snapshot.references(names)

    def delete(self, scope: Scope, ref: str) -> bool:
        """Remove one snapshot (see `ArchiveBase.delete`)."""
        if self._local is not None:
            return self._local.delete(scope, ref)
        snapshot.check_reference(ref)
        path = self._path(scope, ref)
        try:
            self.fs.invalidate_cache(path)
            if not self.fs.exists(path):  # S3 answers a delete of a missing key with success
                return False
            self.fs.rm_file(path)
        except FileNotFoundError:
            return False
        except Exception as exc:  # noqa: BLE001 - storage errors become archive errors
            raise ArchiveError(f"archive delete failed ({type(exc).__name__})") from None
        return True

    def _read(self, scope: Scope, ref: str) -> list[Message]:
        return snapshot.decode(scope, ref, self._read_bytes(scope, ref))

    def _read_bytes(self, scope: Scope, ref: str) -> bytes:
        path = self._path(scope, ref)
        try:
            size = self.fs.size(path)
            if size is not None and size > self.max_bytes:
                raise ArchiveError(snapshot.too_big(self.max_bytes))
            data = self.fs.cat_file(path)
        except FileNotFoundError:
            raise ArchiveError(snapshot.MISSING) from None
        except ArchiveError:
            raise
        except Exception as exc:  # noqa: BLE001 - storage errors become archive errors
            raise ArchiveError(f"archive read failed ({type(exc).__name__})") from None
        if len(data) > self.max_bytes:
            raise ArchiveError(snapshot.too_big(self.max_bytes))
        return data
