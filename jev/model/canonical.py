"""Canonical JSON (SPEC §1): orjson with sorted keys, messages and blocks in their `jev` form; and what
has no JSON form (`unwritable`), named by its path before anything is written."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NoReturn

import orjson

from .transcript import (
    Message,
    OtherBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_to_dict,
    message_to_dict,
)


def json_default(value: Any) -> Any:
    """orjson's `default`: messages and blocks in their `jev` form, sets sorted, mappings as dicts."""
    if isinstance(value, Message):
        return message_to_dict(value)
    if isinstance(value, (TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, OtherBlock)):
        return block_to_dict(value)
    if isinstance(value, (frozenset, set)):
        return sorted(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


CANONICAL_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS  # with `json_default`: canonical JSON


def canonical_json(value: Any) -> bytes:
    """Canonical JSON (SPEC §1): orjson with sorted keys, UTF-8; messages and blocks in their `jev` form."""
    return orjson.dumps(value, default=json_default, option=CANONICAL_OPTIONS)


_MAX_DEPTH = 254  # orjson refuses values nested deeper than 255 levels (the outermost array included)


def unwritable(value: Any, path: str = "") -> tuple[str, str] | None:
    """Where and why a JSON-like value (messages and blocks in their `jev` form) has no exact JSON form, or
    None: a NaN or an infinity (orjson would write `null`, so two different histories would encode alike),
    a string with a lone surrogate (no UTF-8 form), a key that is not a string, an integer past 64 bits,
    nesting past JSON's 255 levels, or a value that is not JSON at all. Iterative: any depth is reported."""
    stack: list[tuple[str, Any, int]] = [(path, value, 0)]
    while stack:
        at, item, depth = stack.pop()
        where = at or "value"
        kind = type(item)
        if kind is str:
            if not item.isascii():
                try:
                    item.encode()
                except UnicodeEncodeError as exc:
                    return where, f"a lone surrogate (U+{ord(item[exc.start]):04X} at character {exc.start}) has no UTF-8 form"
            continue
        if kind is bool or item is None:
            continue
        if kind is int:
            if not -(2 ** 63) <= item < 2 ** 64:
                return where, "integers past 64 bits have no JSON form here"
            continue
        if kind is float:
            if not math.isfinite(item):
                return where, "NaN and infinities have no JSON form (they would be written as null, a different history)"
            continue
        if depth > _MAX_DEPTH:
            return where, "nested deeper than JSON's 255 levels"
        if isinstance(item, Mapping):
            children = []
            for key, child in item.items():
                if not isinstance(key, str):
                    return where, f"keys must be strings (got {type(key).__name__})"
                if not key.isascii() and unwritable(key) is not None:
                    return where, "a key holds a lone surrogate, which has no UTF-8 form"
                children.append((f"{at}.{key}" if at else key, child, depth + 1))
        elif isinstance(item, (list, tuple)):
            children = [(f"{at}[{i}]", child, depth + 1) for i, child in enumerate(item)]
        elif isinstance(item, (Message, TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, OtherBlock,
                               frozenset, set)):
            try:
                children = [(at, json_default(item), depth)]
            except TypeError:  # a set of values that do not sort
                return where, f"not a JSON value (got {type(item).__name__})"
        elif isinstance(item, (int, float, str)):  # subclasses: orjson writes some, not others
            continue
        else:
            return where, f"not a JSON value (got {type(item).__name__})"
        stack.extend(reversed(children))
    return None


def not_json(value: Any, where: str, error: type[Exception]) -> NoReturn:
    """Raise `error` saying where and why `value` (which failed to serialize) has no JSON form."""
    found = unwritable(value, where)
    raise error(f"{found[0]}: {found[1]}" if found else f"{where}: has no JSON form") from None


def canonical_chars(value: Any) -> int:
    """Size in the spec's unit: characters of the canonical JSON."""
    return len(canonical_json(value).decode())


def chars(data: bytes) -> int:
    """Characters of UTF-8 bytes (the spec's size unit) without decoding when they are ASCII."""
    return len(data) if data.isascii() else len(data.decode())
