"""The library's own JSON form (format `jev`): a JSON array of messages as SPEC §1 shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model.transcript import Message, message_to_dict, messages_from_dicts


def load(data: Any) -> list[Message]:
    """Messages from a JSON array in the `jev` form; errors name the path."""
    return messages_from_dicts(data)


def dump(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The `jev` JSON array of the messages."""
    return [message_to_dict(m) for m in messages]
