"""What every archive shares: restoring one pair is restoring the snapshot, then taking the pair out."""

from __future__ import annotations

from jev.restore import extract_pair
from jev.transcript import Message

from .scope import Scope


class ArchiveBase:
    """The base of the archives: subclasses provide `save`, `restore`, `restore_bytes`, `snapshots` and
    `delete`."""

    def restore(self, scope: Scope, ref: str) -> list[Message]:  # pragma: no cover - every subclass has one
        raise NotImplementedError

    def snapshots(self, scope: Scope) -> list[str]:  # pragma: no cover - every subclass has one
        """The references of the scope's snapshots, sorted (retention is the host's: this is its tool)."""
        raise NotImplementedError

    def delete(self, scope: Scope, ref: str) -> bool:  # pragma: no cover - every subclass has one
        """Remove one snapshot of the scope; False when there was none. A compaction adopted with this
        reference can no longer be restored: delete only what the host's retention rule lets go."""
        raise NotImplementedError

    def restore_pair(self, scope: Scope, ref: str, call_id: str, occurrence: int | None = None) -> list[Message]:
        """The call and result blocks of one archived pair (never re-runs the tool). A call id may be
        reused once its pair is complete: `occurrence` (1 = first) picks one, the latest by default."""
        return extract_pair(self.restore(scope, ref), call_id, occurrence)
