"""`jev.model.scope.Scope` (also `archive.Scope`): who a snapshot belongs to, and the rules on its parts."""

from __future__ import annotations

import pytest

from archive import Scope
from jev import ConfigError


@pytest.mark.parametrize("field, value, message", [
    ("user_id", " ", "scope user_id must be a non-blank string"),
    ("agent_id", "a" * 513, "scope agent_id must be at most 512"),
    ("session_id", "a\x00b", "scope session_id must not contain NUL"),
])
def test_scope_rules(field: str, value: str, message: str) -> None:
    values = {"user_id": "u", "agent_id": "a", "session_id": "s", field: value}
    with pytest.raises(ConfigError, match=message):
        Scope(**values)
