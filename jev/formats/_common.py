"""What the converters share: where the original rides, walking a list of messages, JSON-string inputs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ..errors import FormatError

SOURCE_KEY = "jev.source"  # metadata key under which a converter keeps what the jev model has no field for


def each_message(data: Any, name: str, roles: tuple[str, ...]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(index, path for errors, message) for a JSON array of message objects with one of `roles`."""
    if not isinstance(data, list):
        raise FormatError(f"{name}: must be a JSON array (got {type(data).__name__})")
    for i, raw in enumerate(data):
        where = f"{name}[{i}]"
        if not isinstance(raw, dict) or raw.get("role") not in roles:
            raise FormatError(f"{where}: must be an object with role {', '.join(roles)}")
        yield i, where, raw


def parse_arguments(raw: Any) -> Any:
    """A call input given as a JSON string, parsed; kept as the string when it is not JSON."""
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
