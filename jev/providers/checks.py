"""The checks of a message or block already built (a host may build them by hand): each names the
field and the rule it breaks, or None. `plain_message` is the fast path every plan runs first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import FormatError
from ..model.canonical import unwritable
from ..model.transcript import STRING_FIELDS, Message, OtherBlock, TextBlock, ToolResultBlock, block_from_dict


def string_problem(value: Any, where: str) -> str | None:
    """Why a field that must be a string is not one the reader takes back: not a string, or one with a lone
    surrogate (as `errors="surrogateescape"` makes), which has no UTF-8 form. Free for ASCII strings."""
    if type(value) is not str:
        return f"{where}: must be a string (got {type(value).__name__})"
    if value.isascii():
        return None
    found = unwritable(value, where)
    return None if found is None else f"{found[0]}: {found[1]}"


def block_problem(block: Any, where: str) -> str | None:
    """Why the `jev` reader would refuse this block once written (a field of the wrong type, a string with
    no UTF-8 form, an `OtherBlock` the reader would not take back, or would take back as a typed block),
    or None. Cheap for the typed blocks,
    whose string fields their shape names; an `OtherBlock` is read back."""
    strings = STRING_FIELDS.get(type(block))
    if strings is not None:
        for name in strings:
            if (problem := string_problem(getattr(block, name), f"{where}.{name}")) is not None:
                return problem
        if type(block) is not ToolResultBlock:
            return None
        if type(block.output) is str:
            return string_problem(block.output, f"{where}.output") or _metadata_problem(block.metadata, where)
        return _metadata_problem(block.metadata, where) or _blocks_problem(block.output, f"{where}.output",
                                                                          "a string or a list of blocks")
    if type(block) is OtherBlock:
        data = block.data
        if not isinstance(data, Mapping):
            return f"{where}: an other block's data must be a JSON object (got {type(data).__name__})"
        try:
            back = block_from_dict(dict(data), where)
        except FormatError as exc:
            return str(exc)
        if type(back) is not OtherBlock:  # the jev form cannot tell it from a typed block: it would come back as one
            return f"{where}: an other block with the fields of a {back.type} block would be read back as one"
        return None
    return f"{where}: not a jev block (got {type(block).__name__})"


def message_problem(message: Any, where: str) -> str | None:
    """Why the `jev` reader would refuse this message once written, or None (see `block_problem`). Runs on
    every plan, so the common case — typed blocks with ASCII string fields — is checked inline."""
    if not isinstance(message, Message):
        return f"{where}: not a jev Message (got {type(message).__name__})"
    if plain_message(message):
        return None
    for name in ("id", "name", "timestamp"):
        value = getattr(message, name)
        if (value is not None or name == "id") and (problem := string_problem(value, f"{where}.{name}")) is not None:
            return problem
    return _metadata_problem(message.metadata, where) or _blocks_problem(message.content, f"{where}.content",
                                                                         "a list of blocks")


def plain_message(message: Message) -> bool:
    """The fast path of `message_problem`: optional fields of the right type, typed blocks whose string
    fields (as their shapes name them) are strings, every string ASCII (so none can hold a lone surrogate:
    `isascii` reads a flag). Runs for every message of every plan (no call per block)."""
    if not ((message.name is None or (type(message.name) is str and message.name.isascii()))
            and (message.timestamp is None or (type(message.timestamp) is str and message.timestamp.isascii()))
            and (message.metadata is None or type(message.metadata) is dict or isinstance(message.metadata, Mapping))
            and type(message.content) is tuple and type(message.id) is str and message.id.isascii()):
        return False
    for block in message.content:
        strings = STRING_FIELDS.get(type(block))
        if strings is None:  # an OtherBlock: the slow path reads it back
            return False
        for name in strings:
            value = getattr(block, name)
            if type(value) is not str or not value.isascii():
                return False
        if type(block) is ToolResultBlock:
            output = block.output
            if block.metadata is not None:
                return False
            if type(output) is str:
                if not output.isascii():
                    return False
            elif type(output) is not tuple or not all(  # a result of text parts (Anthropic, LangChain lists)
                    type(part) is TextBlock and type(part.text) is str and part.text.isascii() for part in output):
                return False
    return True


def _metadata_problem(metadata: Any, where: str) -> str | None:
    if metadata is not None and not isinstance(metadata, Mapping):
        return f"{where}.metadata: must be a JSON object (got {type(metadata).__name__})"
    return None


def _blocks_problem(blocks: Any, where: str, rule: str) -> str | None:
    if not isinstance(blocks, tuple):
        return f"{where}: must be {rule} (got {type(blocks).__name__})"
    for k, block in enumerate(blocks):
        if (problem := block_problem(block, f"{where}[{k}]")) is not None:
            return problem
    return None
