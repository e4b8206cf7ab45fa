"""Who an archived snapshot belongs to (`Scope`: user, agent and session) and what the core needs from the
archive that keeps it (`Archive`). Both live in the core, as `Judge` does: the compactor checks the scope
and types its archive; the `archive` package implements the protocol and re-exports both."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import ConfigError
from .canonical import canonical_json
from .transcript import Message

MAX_SCOPE_CHARS = 512


@dataclass(frozen=True, slots=True)
class Scope:
    """An archive scope; each value non-blank, at most 512 characters, without NUL."""

    user_id: str
    agent_id: str
    session_id: str

    def __post_init__(self) -> None:
        for name in ("user_id", "agent_id", "session_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"scope {name} must be a non-blank string (got {value!r})")
            if len(value) > MAX_SCOPE_CHARS:
                raise ConfigError(f"scope {name} must be at most {MAX_SCOPE_CHARS} characters (got {len(value)})")
            if "\x00" in value:
                raise ConfigError(f"scope {name} must not contain NUL")
            try:
                value.encode()
            except UnicodeEncodeError:  # a lone surrogate: no UTF-8 form, so no digest and no JSON
                raise ConfigError(f"scope {name} must be valid Unicode (it holds a lone surrogate)") from None

    def to_dict(self) -> dict[str, str]:
        return {"user_id": self.user_id, "agent_id": self.agent_id, "session_id": self.session_id}

    def digest(self) -> str:
        """SHA-256 hex of the canonical scope JSON: the scope's directory or key prefix."""
        return hashlib.sha256(canonical_json(self.to_dict())).hexdigest()


@runtime_checkable
class Archive(Protocol):
    """What the compactor needs from an archive: save a history before a plan is adopted, and give it
    (or one pair of it, or its verified bytes) back."""

    def save(self, scope: Scope, messages: Sequence[Message]) -> str: ...

    def restore(self, scope: Scope, ref: str) -> list[Message]: ...

    def restore_pair(self, scope: Scope, ref: str, call_id: str, occurrence: int | None = None) -> list[Message]: ...

    def restore_bytes(self, scope: Scope, ref: str) -> bytes: ...
