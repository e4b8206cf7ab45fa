"""The key order of what a host's messages hold, recorded in the snapshot and put back on restore.

A snapshot is canonical JSON, which sorts keys; a host's objects — a call's input, a provider's fields in a
message's metadata, an unknown block — keep the order they were written in, and a history written back
with another order differs byte for byte (a tool call's `arguments` string among them, and every
prompt-cache entry after it). So `record` lists every object inside the messages whose keys are not in
sorted order — each as its path and its keys, each distinct key list once — and `restore` puts those
orders back into a parsed snapshot before its messages are built. A history whose objects are all
sorted records nothing, and its snapshot is what it was before orders were recorded.

The library's own objects (a message's and a block's fields) are not recorded: they are rebuilt by the
reader. Only values the host owns are: `metadata`, a call's `input`, a result's `metadata`, an unknown
block's object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from jev.errors import ArchiveError
from jev.model.blocks import kind_of
from jev.model.transcript import Message


class _Orders:
    """The orders found so far: distinct key lists, and (path, index of its key list) per object."""

    def __init__(self) -> None:
        self.keys: list[list[str]] = []
        self.index: dict[tuple[str, ...], int] = {}
        self.at: list[list[Any]] = []

    def value(self, value: Any, path: list[int | str]) -> None:
        """Record the unsorted objects inside one value the host owns."""
        if isinstance(value, (Mapping, list, tuple)) and not _sorted_throughout(value):  # one check in C
            self._walk(value, path)  # depth first, parents before children: `restore` reorders in this order

    def _walk(self, value: Any, path: list[int | str]) -> None:
        # recursion is bounded: `_sorted_throughout` refused values nested past JSON's 255 levels
        if type(value) is dict or (type(value) not in _SEQUENCES and isinstance(value, Mapping)):
            keys = list(value)
            if keys != sorted(keys):
                key = tuple(keys)
                slot = self.index.get(key)
                if slot is None:
                    slot = self.index[key] = len(self.keys)
                    self.keys.append(keys)
                self.at.append([*path, slot])
            items: Any = value.items()
        else:
            items = enumerate(value)
        for k, v in items:
            kind = type(v)
            if kind is dict or kind is list or (kind not in _SCALARS and isinstance(v, (Mapping, tuple))):
                path.append(k)
                self._walk(v, path)
                path.pop()


_SEQUENCES = (list, tuple)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _sorted_throughout(value: Any) -> bool:
    """Whether every object inside `value` has its keys in sorted order (orjson writes both alike)."""
    try:
        return orjson.dumps(value, default=_as_json) == orjson.dumps(value, default=_as_json,
                                                                    option=orjson.OPT_SORT_KEYS)
    except TypeError:  # not JSON (or nested past its 255 levels): the snapshot's encoder refuses it
        return True


def _as_json(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(type(value).__name__)


def record(messages: Sequence[Message]) -> dict[str, Any] | None:
    """The orders to keep in a snapshot of `messages` (`{"keys": [...], "at": [[path..., n], ...]}`), or
    None when every object the host owns has its keys sorted."""
    orders = _Orders()
    for i, message in enumerate(messages):
        if not isinstance(message, Message):
            continue  # refused by the snapshot's checks
        metadata = message.written_metadata  # the host's, and the converter's bookkeeping as the form writes it
        if metadata is not None:
            orders.value(metadata, [i, "metadata"])
        for j, block in enumerate(message.content):
            for path, value in kind_of(block).values(block):  # the mutable values each block's kind names
                orders.value(value, [i, "content", j, *path])
    return {"keys": orders.keys, "at": orders.at} if orders.at else None


def restore(messages: list[Any], orders: Any) -> None:
    """Put the recorded orders back into a parsed snapshot's `messages` (its own fresh objects, changed in
    place). A record that does not fit the messages is refused: the snapshot's writer was not this one."""
    try:
        keys, at = orders["keys"], orders["at"]
        for entry in at:
            *path, slot = entry
            parent: Any = None
            node: Any = messages
            for step in path:
                parent, node = node, node[step]
            wanted = keys[slot]
            if not isinstance(node, dict) or len(wanted) != len(node) or not all(k in node for k in wanted):
                raise ArchiveError("archive snapshot unreadable: a recorded key order does not fit its object")
            parent[path[-1]] = {k: node[k] for k in wanted}
    except ArchiveError:
        raise
    except (KeyError, IndexError, TypeError, ValueError):
        raise ArchiveError("archive snapshot unreadable: malformed key orders") from None
