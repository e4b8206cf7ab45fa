"""Who an archived snapshot belongs to: `jev.scope.Scope`, re-exported where the archives use it."""

from jev.scope import MAX_SCOPE_CHARS, Scope

__all__ = ["MAX_SCOPE_CHARS", "Scope"]
