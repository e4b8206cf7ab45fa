"""Snapshots as files: `<root>/<sha256(scope)>/<ref>.json`, published atomically, read back verified."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jev.errors import ArchiveError, ConfigError
from jev.transcript import Message

from . import snapshot
from .base import ArchiveBase
from .scope import Scope

DEFAULT_MAX_BYTES = 20_000_000
MISSING = snapshot.MISSING


def check_max_bytes(max_bytes: int) -> int:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ConfigError(f"max_bytes must be a positive integer (got {max_bytes!r})")
    return max_bytes


class FileArchive(ArchiveBase):
    """A local directory of snapshots. Scope directories are 0700, files 0600 from creation; the root
    and scope directories must not be symlinks; a reader sees a whole snapshot or none, even if the
    writer is killed mid-write (temp file in the same directory, fsync, `os.replace`)."""

    def __init__(self, root: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = Path(os.path.abspath(os.fspath(root)))
        self.max_bytes = check_max_bytes(max_bytes)

    def __repr__(self) -> str:
        return f"FileArchive({str(self.root)!r}, max_bytes={self.max_bytes})"

    def _scope_dir(self, scope: Scope, create: bool) -> Path:
        if not isinstance(scope, Scope):
            raise ArchiveError("archive needs an archive.Scope")
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
                raise ArchiveError(f"archive root {self.root} does not exist" if path is self.root
                                   else MISSING) from None
            if stat.S_ISLNK(st.st_mode):
                raise ArchiveError(f"archive {what} is a symlink")
            if not stat.S_ISDIR(st.st_mode):
                raise ArchiveError(f"archive {what} is not a directory")
        if create and stat.S_IMODE(os.lstat(directory).st_mode) != 0o700:
            os.chmod(directory, 0o700)
        return directory

    def save(self, scope: Scope, messages: Sequence[Message]) -> str:
        """Archive the messages; returns the reference. Saving the same snapshot again writes nothing."""
        ref, data = snapshot.encode(scope, messages)
        snapshot.check_size(len(data), self.max_bytes)
        directory = self._scope_dir(scope, create=True)
        target = directory / f"{ref}.json"
        if os.path.lexists(target):
            self._read(directory, scope, ref)  # verify what is there; raises if it is not this snapshot
            return ref
        tmp = write_pending(directory, data)
        try:
            os.replace(tmp, target)
            _fsync_dir(directory)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        return ref

    def restore(self, scope: Scope, ref: str) -> list[Message]:
        """The archived messages, verified: right scope, within max_bytes, hash equal to `ref`."""
        snapshot.check_reference(ref)
        return self._read(self._scope_dir(scope, create=False), scope, ref)

    def restore_bytes(self, scope: Scope, ref: str) -> bytes:
        """The snapshot document exactly as archived (canonical JSON), verified, not parsed."""
        snapshot.check_reference(ref)
        return snapshot.verify(scope, ref, self._read_bytes(self._scope_dir(scope, create=False), ref))


    def snapshots(self, scope: Scope) -> list[str]:
        """The references of the scope's snapshots, sorted (none when the scope has no folder yet)."""
        directory = self._existing_scope_dir(scope)
        if directory is None:
            return []
        return snapshot.references([e.name for e in os.scandir(directory) if e.is_file(follow_symlinks=False)
                                    and e.name.endswith(".json")])

    def delete(self, scope: Scope, ref: str) -> bool:
        """Remove one snapshot (see `ArchiveBase.delete`); a symlink in its place is refused, not followed."""
        snapshot.check_reference(ref)
        directory = self._existing_scope_dir(scope)
        if directory is None:
            return False
        target = directory / f"{ref}.json"
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            return False
        if not stat.S_ISREG(st.st_mode):
            raise ArchiveError("archive snapshot is a symlink or not a regular file (refused)")
        os.unlink(target)
        _fsync_dir(directory)
        return True

    def _existing_scope_dir(self, scope: Scope) -> Path | None:
        """The scope's folder, checked as `_scope_dir` checks it, or None when nothing was saved in it yet."""
        if not isinstance(scope, Scope):
            raise ArchiveError("archive needs an archive.Scope")
        if not os.path.lexists(self.root / scope.digest()):
            return None
        return self._scope_dir(scope, create=False)

    def _read(self, directory: Path, scope: Scope, ref: str) -> list[Message]:
        return snapshot.decode(scope, ref, self._read_bytes(directory, ref))

    def _read_bytes(self, directory: Path, ref: str) -> bytes:
        try:
            fd = os.open(directory / f"{ref}.json", os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise ArchiveError(MISSING) from None
            if exc.errno == errno.ELOOP:
                raise ArchiveError("archive snapshot is a symlink (refused)") from None
            raise ArchiveError(f"archive read failed ({errno.errorcode.get(exc.errno or 0, 'OSError')})") from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ArchiveError("archive snapshot is not a regular file (refused)")
            data = f.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            raise ArchiveError(snapshot.too_big(self.max_bytes))
        return data


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
