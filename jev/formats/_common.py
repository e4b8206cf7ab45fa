"""What the converters share: where the original rides, walking a list of messages, JSON-string inputs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ..errors import FormatError
from ..transcript import FORMAT_KEY, SOURCE_KEY, Message


def loaded(name: str, source: Any) -> dict[str, Any]:
    """The metadata of a message converter `name` loaded: what it kept, and whose it is."""
    return {SOURCE_KEY: source, FORMAT_KEY: name}


def source_of(message: Message, name: str) -> Any:
    """What converter `name` kept of `message` when it loaded it, or None for a message made in Python or
    loaded by another converter (whose source has another shape: it is written afresh). A source with no
    name predates the name and is taken as the asking converter's."""
    metadata = message.metadata
    if not metadata or metadata.get(SOURCE_KEY) is None:
        return None
    return metadata[SOURCE_KEY] if metadata.get(FORMAT_KEY, name) == name else None


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


def dump_arguments(value: Any) -> str:
    """A call input as a JSON-string `arguments`, the inverse of `parse_arguments`: a string input is
    written as a JSON string, so it reads back as the same string whether or not it looks like JSON."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError as exc:
        raise FormatError(f"a call input cannot be written as JSON arguments ({exc})") from None
