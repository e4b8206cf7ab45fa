"""What every archive shares, written once over a backend's storage primitives.

A backend supplies five: `_read(scope, ref, limit)` (the stored bytes — it may stop after `limit + 1` —
or None when absent), `_create(scope, ref, data)` (create-if-absent: True when this call created it,
False when something was already there), `_exists(scope, ref)`, and for the host's retention
`_names(scope)` and `_remove(scope, ref)`. Everything a user calls — save, the restores, listing,
delete, and the checks of scope, reference, size and hash — is here.
"""

from __future__ import annotations

from collections.abc import Sequence

from jev.applying.archived_pair import extract_pair
from jev.errors import ArchiveError
from jev.model.scope import Scope
from jev.model.transcript import Message
from jev.support.validate import require_integer

from . import snapshot
from .snapshot import check_scope

DEFAULT_MAX_BYTES = 20_000_000
REFUSED = "archive requires acknowledged create-if-absent storage"


def check_max_bytes(max_bytes: int) -> int:
    """`max_bytes` if it is a positive integer, else the `ConfigError` that says so."""
    return require_integer("max_bytes", max_bytes, 1)


class ArchiveBase:
    """The base of the archives: save, restore (messages, bytes, one pair), list and delete, verified,
    over the storage primitives a subclass supplies (see the module docstring). `max_bytes` bounds what
    is written and what is read back."""

    max_bytes: int = DEFAULT_MAX_BYTES

    def save(self, scope: Scope, messages: Sequence[Message]) -> str:
        """Archive the messages; returns the reference (SHA-256 of the snapshot's bytes). Saving the same
        snapshot again writes nothing: what is there is verified instead, never overwritten."""
        ref, data = snapshot.encode(check_scope(scope), messages)
        snapshot.check_size(len(data), self.max_bytes)
        created = self._create(scope, ref, data)
        if created is True:
            return ref
        if created is not False:  # anything but an acknowledgement of "created" or "already there"
            raise ArchiveError(f"{REFUSED}: create-if-absent returned {type(created).__name__}, not a bool")
        stored = self._read(scope, ref, self.max_bytes)
        if stored is None:  # "already there", yet nothing is
            raise ArchiveError(f"{REFUSED}: the store said the snapshot exists, but reading it finds nothing")
        if stored != data:
            raise ArchiveError("archive checksum mismatch: another document is stored under this reference")
        return ref

    def restore(self, scope: Scope, ref: str) -> list[Message]:
        """The archived messages, verified: right scope, within max_bytes, hash equal to `ref`."""
        return snapshot.decode(scope, ref, self._stored(scope, ref))

    def restore_bytes(self, scope: Scope, ref: str) -> bytes:
        """The snapshot document exactly as archived (canonical JSON), verified, not parsed."""
        return snapshot.verify(scope, ref, self._stored(scope, ref))

    def restore_pair(self, scope: Scope, ref: str, call_id: str, occurrence: int | None = None) -> list[Message]:
        """The call and result blocks of one archived pair (never re-runs the tool). A call id may be
        reused once its pair is complete: `occurrence` (1 = first) picks one, the latest by default."""
        return extract_pair(self.restore(scope, ref), call_id, occurrence)

    def snapshots(self, scope: Scope) -> list[str]:
        """The references of the scope's snapshots, sorted (retention is the host's: this is its tool)."""
        return snapshot.references(self._names(check_scope(scope)))

    def delete(self, scope: Scope, ref: str) -> bool:
        """Remove one snapshot of the scope; False when there was none. A compaction adopted with this
        reference can no longer be restored: delete only what the host's retention rule lets go."""
        snapshot.check_reference(ref)
        if not self._exists(check_scope(scope), ref):
            return False
        return self._remove(scope, ref)

    def _stored(self, scope: Scope, ref: str) -> bytes:
        """The stored bytes of a valid reference in a valid scope, within `max_bytes` (not yet verified)."""
        snapshot.check_reference(ref)
        data = self._read(check_scope(scope), ref, self.max_bytes)
        if data is None:
            raise ArchiveError(snapshot.MISSING)
        if len(data) > self.max_bytes:
            raise ArchiveError(snapshot.too_big(self.max_bytes))
        return data

    # --- the storage primitives: what a backend supplies ------------------------------------------

    def _read(self, scope: Scope, ref: str, limit: int) -> bytes | None:  # pragma: no cover - per backend
        raise NotImplementedError

    def _create(self, scope: Scope, ref: str, data: bytes) -> bool:  # pragma: no cover - per backend
        raise NotImplementedError

    def _exists(self, scope: Scope, ref: str) -> bool:  # pragma: no cover - per backend
        raise NotImplementedError

    def _names(self, scope: Scope) -> list[str]:  # pragma: no cover - per backend
        raise NotImplementedError

    def _remove(self, scope: Scope, ref: str) -> bool:  # pragma: no cover - per backend
        raise NotImplementedError
