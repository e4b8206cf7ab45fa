"""Snapshots as files: `<root>/<sha256(scope)>/<ref>.json`, published atomically, read back verified."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from jev.errors import ArchiveError
from jev.model.scope import Scope

from .base import DEFAULT_MAX_BYTES, ArchiveBase, check_max_bytes

__all__ = ["DEFAULT_MAX_BYTES", "FileArchive", "check_max_bytes", "write_pending"]


class FileArchive(ArchiveBase):
    """A local directory of snapshots. Scope directories are 0700, files 0600 from creation; the root
    and scope directories must not be symlinks; a reader sees a whole snapshot or none, even if the
    writer is killed mid-write (temp file in the same directory, fsync, `os.replace`)."""

    def __init__(self, root: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = Path(os.path.abspath(os.fspath(root)))
        self.max_bytes = check_max_bytes(max_bytes)

    def __repr__(self) -> str:
        return f"FileArchive({str(self.root)!r}, max_bytes={self.max_bytes})"

    def _scope_dir(self, scope: Scope, create: bool) -> Path | None:
        try:
            return self._checked_dir(scope, create)
        except OSError as exc:
            raise ArchiveError(f"archive folder {self.root / scope.digest()} cannot be used ({_why(exc)})") from None

    def _checked_dir(self, scope: Scope, create: bool) -> Path | None:
        """The scope's folder, checked (never a symlink, always a directory, 0700 once written to); None
        when it does not exist and `create` is false. A missing root is an error of its own."""
        if create:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        directory = self.root / scope.digest()
        for path, what in ((self.root, "root"), (directory, "scope")):
            if path is directory and create:
                try:
                    os.mkdir(path, 0o700)
                except FileExistsError:
                    pass
            try:
                st = os.lstat(path)
            except FileNotFoundError:  # a wrong scope reads as a missing snapshot: no other scope is revealed
                if path is self.root:
                    raise ArchiveError(f"archive root {self.root} does not exist") from None
                return None
            if stat.S_ISLNK(st.st_mode):
                raise ArchiveError(f"archive {what} is a symlink: {path}")
            if not stat.S_ISDIR(st.st_mode):
                raise ArchiveError(f"archive {what} is not a directory: {path}")
        if create and stat.S_IMODE(os.lstat(directory).st_mode) != 0o700:
            os.chmod(directory, 0o700)
        return directory

    # --- storage primitives (ArchiveBase) ----------------------------------------------------------

    def _read(self, scope: Scope, ref: str, limit: int) -> bytes | None:
        directory = self._scope_dir(scope, create=False)
        if directory is None:
            return None
        path = directory / f"{ref}.json"
        try:  # O_NONBLOCK: a FIFO in a snapshot's place must not block the open (it is refused below)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return None
            if exc.errno == errno.ELOOP:
                raise ArchiveError(f"archive snapshot is a symlink (refused): {path}") from None
            raise ArchiveError(f"archive read of {path} failed ({_why(exc)})") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a folder, a FIFO, a device: never read
                raise ArchiveError(f"archive snapshot is not a regular file (refused): {path}")
            with os.fdopen(fd, "rb") as f:
                fd = -1
                return f.read(limit + 1)
        except OSError as exc:
            raise ArchiveError(f"archive read of {path} failed ({_why(exc)})") from None
        finally:
            if fd >= 0:
                os.close(fd)

    def _create(self, scope: Scope, ref: str, data: bytes) -> bool:
        directory = self._scope_dir(scope, create=True)
        assert directory is not None  # created above
        target = directory / f"{ref}.json"
        if os.path.lexists(target):
            return False
        try:
            tmp = write_pending(directory, data)
            try:  # content-addressed: a writer racing on this reference publishes the same bytes
                os.replace(tmp, target)
                _fsync_dir(directory)
            finally:
                if os.path.lexists(tmp):
                    os.unlink(tmp)
        except OSError as exc:
            raise ArchiveError(f"archive write of {target} failed ({_why(exc)})") from None
        return True

    def _existing(self, scope: Scope) -> Path | None:
        """The scope's folder, checked, or None when nothing was saved in it yet (or there is no root)."""
        return self._scope_dir(scope, create=False) if os.path.lexists(self.root / scope.digest()) else None

    def _exists(self, scope: Scope, ref: str) -> bool:
        directory = self._existing(scope)
        return directory is not None and _lstat(directory / f"{ref}.json") is not None

    def _names(self, scope: Scope) -> list[str]:
        directory = self._existing(scope)
        if directory is None:
            return []
        try:
            return [e.name for e in os.scandir(directory)
                    if e.is_file(follow_symlinks=False) and e.name.endswith(".json")]
        except OSError as exc:
            raise ArchiveError(f"archive scope folder {directory} cannot be listed ({_why(exc)})") from None

    def _remove(self, scope: Scope, ref: str) -> bool:
        directory = self._existing(scope)
        if directory is None:
            return False
        target = directory / f"{ref}.json"
        st = _lstat(target)
        if st is None:
            return False
        if not stat.S_ISREG(st.st_mode):  # a symlink in its place is refused, not followed
            raise ArchiveError(f"archive snapshot is a symlink or not a regular file (refused): {target}")
        try:
            os.unlink(target)
        except OSError as exc:
            raise ArchiveError(f"archive snapshot {target} cannot be deleted ({_why(exc)})") from None
        _fsync_dir(directory)
        return True


def _lstat(path: Path) -> os.stat_result | None:
    """`path`'s own status, or None when there is nothing there; any other failure (a folder it may not
    read) is an `ArchiveError` naming it, never taken for "no such snapshot"."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ArchiveError(f"archive snapshot {path} cannot be read ({_why(exc)})") from None


def _why(exc: OSError) -> str:
    """An OS error in a message: its errno name and words (`EACCES: Permission denied`)."""
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return f"{name}: {exc.strerror}" if exc.strerror else name


def write_pending(directory: str | os.PathLike[str], data: bytes) -> str:
    """A temp file `.pending-*.json` in `directory`, mode 0600 from creation, fully written and fsynced;
    the caller publishes it (rename or link) and removes it. Removed here if writing fails."""
    fd, tmp = tempfile.mkstemp(prefix=".pending-", suffix=".json", dir=directory)  # created 0600
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
