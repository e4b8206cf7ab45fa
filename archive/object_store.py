"""Snapshots on any fsspec URL (`s3://`, `gs://`, `az://`, `memory://`, `file://`): the same layout as the
file archive, published create-if-absent, read back verified.

Create-if-absent is fsspec's `pipe_file(mode="create")` (S3: `If-None-Match: *`). A rejected create
surfaces as `FileExistsError`, or (SeaweedFS answers 412 without the condition name, which s3fs reports
as `OSError` EINVAL) as an error whose cause carries HTTP status 412 / `PreconditionFailed`: both mean
"already exists", and the existing object is then verified — never overwritten. Any other error, EINVAL
without a 412 behind it included, is a failed write. A local path (`file://`, or a URL fsspec resolves to
its local filesystem) is refused: it is `FileArchive`'s (`open_archive` sends it there), whose writes are
atomic and which follows no symlink. Snapshots are content-addressed, so two writers racing on one
reference write identical bytes.
"""

from __future__ import annotations

import errno
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from jev.errors import ArchiveError
from jev.model.scope import Scope

from . import snapshot
from .base import DEFAULT_MAX_BYTES, ArchiveBase, check_max_bytes
from .file import FileArchive
from .snapshot import check_scope


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


def _why(exc: BaseException) -> str:
    """A storage error in a message: its kind and its first line (stores' messages can run long)."""
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _resolved(url: str, storage_options: dict[str, Any]) -> tuple[Any, str]:
    """fsspec's filesystem and path for `url`, or the `ArchiveError` saying why there is none."""
    try:
        return fsspec.core.url_to_fs(url, **storage_options)
    except ImportError as exc:
        raise ArchiveError(f"archive URL {url!r} needs an fsspec backend that is not installed ({exc})") from None
    except (ValueError, TypeError) as exc:
        raise ArchiveError(f"archive URL {url!r} cannot be opened ({exc})") from None


def open_url(url: str, max_bytes: int = DEFAULT_MAX_BYTES, **storage_options: Any) -> FileArchive | ObjectStoreArchive:
    """The archive for an fsspec URL: `FileArchive` where fsspec resolves it to the local filesystem, else
    an `ObjectStoreArchive`."""
    fs, root = _resolved(url, storage_options)
    if isinstance(fs, LocalFileSystem):
        return FileArchive(root, max_bytes)
    return ObjectStoreArchive(url, max_bytes, **storage_options)


class ObjectStoreArchive(ArchiveBase):
    """Snapshots under an fsspec URL; `storage_options` go to the filesystem (credentials, endpoint, …)."""

    def __init__(self, url: str, max_bytes: int = DEFAULT_MAX_BYTES, **storage_options: Any) -> None:
        self.max_bytes = check_max_bytes(max_bytes)
        self.fs, root = _resolved(url, storage_options)
        if isinstance(self.fs, LocalFileSystem):  # fsspec's would follow symlinks and write in two steps
            raise ArchiveError(f"archive URL {url!r} is a local path: use FileArchive (open_archive picks it), "
                               "which writes atomically and follows no symlink")
        self.url = url
        self.root = root.rstrip("/")

    def __repr__(self) -> str:  # storage options (credentials) are never shown
        return f"ObjectStoreArchive({self.url!r}, max_bytes={self.max_bytes})"

    def path(self, scope: Scope, ref: str) -> str:
        """Where the scope's snapshot `ref` is stored, on `self.fs`."""
        return f"{self.root}/{check_scope(scope).digest()}/{snapshot.check_reference(ref)}.json"

    # --- storage primitives (ArchiveBase) ----------------------------------------------------------

    def _read(self, scope: Scope, ref: str, limit: int) -> bytes | None:
        path = self.path(scope, ref)
        try:  # a ranged read: a stored object over the limit is never fetched whole
            return self.fs.cat_file(path, start=0, end=limit + 1)
        except FileNotFoundError:
            return None
        except Exception as exc:
            if self._empty(path):  # a range of an empty object is refused (HTTP 416): it holds no snapshot
                return b""
            raise ArchiveError(f"archive read of {self._url(path)} failed ({_why(exc)})") from None

    def _empty(self, path: str) -> bool:
        try:
            return self.fs.size(path) == 0
        except Exception:
            return False

    def _url(self, path: str) -> str:
        """A stored object's URL, as errors name it (never with credentials: those are storage options)."""
        return self.fs.unstrip_protocol(path)

    def _create(self, scope: Scope, ref: str, data: bytes) -> bool:
        path = self.path(scope, ref)
        try:
            self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            self.fs.pipe_file(path, data, mode="create")
        except Exception as exc:
            if not _already_exists(exc):
                raise ArchiveError(f"archive write of {self._url(path)} failed ({_why(exc)})") from None
            return False
        return True

    def _exists(self, scope: Scope, ref: str) -> bool:
        path = self.path(scope, ref)
        try:
            self.fs.invalidate_cache(path)
            return bool(self.fs.exists(path))
        except Exception as exc:
            raise ArchiveError(f"archive read of {self._url(path)} failed ({_why(exc)})") from None

    def _names(self, scope: Scope) -> list[str]:
        folder = f"{self.root}/{scope.digest()}"
        try:
            self.fs.invalidate_cache(folder)
            return self.fs.ls(folder, detail=False)
        except FileNotFoundError:
            return []
        except Exception as exc:
            raise ArchiveError(f"archive listing of {self._url(folder)} failed ({_why(exc)})") from None

    def _remove(self, scope: Scope, ref: str) -> bool:
        path = self.path(scope, ref)
        try:  # S3 answers a delete of a missing key with success: the base asked `_exists` first
            self.fs.rm_file(path)
        except FileNotFoundError:
            return False
        except Exception as exc:
            raise ArchiveError(f"archive delete of {self._url(path)} failed ({_why(exc)})") from None
        return True
