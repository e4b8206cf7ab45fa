"""Who an archived snapshot belongs to: user, agent and session. Lives in `jev` (the compactor checks it,
the integrations pass it); `archive.Scope` is the same class."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .errors import ConfigError
from .transcript import canonical_json

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
