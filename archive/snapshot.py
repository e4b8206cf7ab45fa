"""The snapshot document (SPEC §9): encoding, its reference, verification on restore, and pair extraction."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import orjson

from jev.errors import ArchiveError, FormatError
from jev.model.canonical import canonical_json, unwritable
from jev.model.scope import Scope
from jev.model.transcript import Message, messages_from_dicts
from jev.providers.checks import message_problem

from . import key_order

VERSION = 1
MISSING = "missing snapshot: no snapshot with this reference in this scope"  # never says whether another scope has it
_REFERENCE = re.compile(r"[a-f0-9]{64}")


def _check_readable(messages: Sequence[Message]) -> None:
    """Refuse what the snapshot's reader would refuse, before anything is acknowledged (a field of the
    wrong type, an `OtherBlock` such as a `tool_use` object with an extra field). The typed blocks cost an
    `isinstance` each; only `OtherBlock`s are read back."""
    for i, message in enumerate(messages):
        if (problem := message_problem(message, f"messages[{i}]")) is not None:
            raise ArchiveError(f"cannot archive: the snapshot's reader would refuse it ({problem})")


def encode(scope: Scope, messages: Sequence[Message]) -> tuple[str, bytes]:
    """The snapshot's reference (SHA-256 hex of its bytes) and its canonical JSON bytes. Refuses (with
    `ArchiveError`) what could not be restored exactly: blocks the reader refuses, strings that are not
    valid Unicode (a lone surrogate has no UTF-8 form), NaN and infinities."""
    check_scope(scope)
    if messages is None or isinstance(messages, (str, bytes, Mapping)):
        raise ArchiveError(f"cannot archive: messages must be a sequence of jev Messages (got "
                           f"{type(messages).__name__})")
    _check_readable(messages)
    document: dict[str, Any] = {"version": VERSION, "scope": scope.to_dict(), "messages": list(messages)}
    orders = key_order.record(messages)
    if orders is not None:  # sorted between "messages" and "scope": `verify`'s fixed head and tail still hold
        document["orders"] = orders
    try:
        data = canonical_json(document)
    except TypeError:  # orjson.JSONEncodeError is a TypeError: surrogates, unserializable values
        _refuse(messages)
    # NaN and infinities become `null` in JSON: refuse them rather than archive a different history. Only a
    # document holding a null can hide one, so the walk runs only then.
    if b"null" in data and unwritable(list(messages), "messages") is not None:
        _refuse(messages)
    return hashlib.sha256(data).hexdigest(), data


def _refuse(messages: Sequence[Message]) -> NoReturn:
    """Raise the `ArchiveError` naming where and why the messages have no exact JSON form."""
    found = unwritable(list(messages), "messages")
    where, why = found if found is not None else ("messages", "not JSON")
    raise ArchiveError(f"cannot archive {where}: {why}")


def check_scope(scope: Any) -> Scope:
    """`scope` if it is an `archive.Scope`: a wrong one is refused before any storage is touched."""
    if not isinstance(scope, Scope):
        raise ArchiveError(f"archive needs an archive.Scope (got {type(scope).__name__})")
    return scope


def check_reference(ref: Any) -> str:
    """`ref` if it is 64 lowercase hex characters, else "invalid archive reference" (no path ever built)."""
    if not isinstance(ref, str) or not _REFERENCE.fullmatch(ref):
        raise ArchiveError("invalid archive reference")
    return ref


def references(names: Sequence[str]) -> list[str]:
    """The snapshot references among file or key names (`<ref>.json` or `<ref>`), sorted; others ignored."""
    refs = (name.rsplit("/", 1)[-1].removesuffix(".json") for name in names)
    return sorted(ref for ref in refs if _REFERENCE.fullmatch(ref))


def check_size(size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise ArchiveError(f"archive limit: snapshot of {size} bytes exceeds max_bytes {max_bytes}")


def too_big(max_bytes: int) -> str:
    """What a restore says of a stored snapshot larger than the archive's limit."""
    return f"archive limit: the stored snapshot exceeds max_bytes {max_bytes} (raise max_bytes to read it)"


def verify(scope: Scope, ref: str, data: bytes) -> bytes:
    """Check bytes read back without parsing them: the hash, then version and scope. The document is
    canonical JSON with sorted keys, so it must end with exactly this scope and version."""
    if hashlib.sha256(data).hexdigest() != ref:
        raise ArchiveError("archive checksum mismatch")
    tail = b',"scope":' + canonical_json(scope.to_dict()) + b',"version":' + str(VERSION).encode() + b"}"
    if not data.startswith(b'{"messages":[') or not data.endswith(tail):
        raise ArchiveError("archive scope or version mismatch")
    return data


def decode(scope: Scope, ref: str, data: bytes) -> list[Message]:
    """Verify bytes read back (hash, version, scope) and return the messages."""
    verify(scope, ref, data)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise ArchiveError("archive snapshot unreadable: not JSON") from None
    if not isinstance(doc, dict) or doc.get("version") != VERSION or doc.get("scope") != scope.to_dict():
        raise ArchiveError("archive scope or version mismatch")
    raw = doc.get("messages")
    if "orders" in doc and isinstance(raw, list):
        key_order.restore(raw, doc["orders"])
    try:
        return messages_from_dicts(raw, "snapshot.messages")
    except FormatError as exc:
        raise ArchiveError(f"archive snapshot unreadable: {exc}") from None


