"""One description per block type: everything the library does that depends on a block's kind, in one place.

`transcript.BlockShape` says how a block is read, written and checked in the `jev` form; a `BlockKind` here
says the rest — how many characters of it the model sees (`size`), the text a token estimate reads
(`token_text`), the mutable JSON values it holds with their paths (`values`: what the change guard
serializes and a snapshot records the key order of), its text in a restored pair (`restore_text`), and what a
remote judge's state shows of it (`judge_view`).
`kind_of(block)` finds a block's description; an unknown object is described as an `OtherBlock`'s JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from ..errors import TranscriptError
from .canonical import CANONICAL_OPTIONS, canonical_json, chars, json_default, not_json
from .transcript import OtherBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock

Path = tuple[str | int, ...]  # a value's place inside its block: field names and list indices
MEDIA_TYPES = frozenset({"image", "image_url", "input_image", "document", "file", "input_file"})  # billed as media


def path_of(where: str | int, k: int) -> str:
    """The path of block `k` of `where`: a message's index (`messages[i].content[k]`) or the path of the
    blocks holding it (`...output[k]`) — made only when an error needs it."""
    return f"messages[{where}].content[{k}]" if type(where) is int else f"{where}[{k}]"


def input_json(call: ToolUseBlock, where: str | int, k: int) -> str:
    """A call's input as canonical JSON, or `TranscriptError` naming its place (`path_of(where, k)`) if it
    has none."""
    try:
        return orjson.dumps(call.input, default=json_default, option=CANONICAL_OPTIONS).decode()
    except orjson.JSONEncodeError:
        not_json(call.input, f"{path_of(where, k)}.input", TranscriptError)


class BlockKind:
    """What the library does with a block of one type. The base describes an unknown block: its JSON object
    is what the model is sent, held whole and mutable."""

    mutable = True  # whether `values` can hold anything: a text's or thinking's never does
    # what a remote judge's state shows of it (`reading.state.history_entries`): "text" its text, in its
    # message's entry; "call" a tool call entry (its pair's key, tool, cut input, its result's state and size);
    # None nothing — thinking, media, unknown blocks, and results, which the judge sees only through their call
    judge_view: str | None = None

    def size(self, block: Any, where: str | int, k: int, json: str | None = None) -> int:
        """Characters the model sees of it (`where`, `k`: its place, for errors; `json`: a call's input JSON
        when the caller made it already)."""
        data = getattr(block, "data", block)
        try:
            return chars(canonical_json(data))
        except TypeError:
            not_json(data, path_of(where, k), TranscriptError)

    def token_text(self, block: Any) -> str:
        """The text a token estimate reads of it (a provider bills an image or document as media instead:
        `is_media`)."""
        return canonical_json(block.data).decode()

    def values(self, block: Any) -> tuple[tuple[Path, Any], ...]:
        """The mutable JSON values it holds, each with its path inside the block, in order."""
        return (((), getattr(block, "data", block)),)

    def restore_text(self, block: Any) -> str:
        """Its text in a restored pair shown to the agent."""
        return canonical_json(block).decode()


def is_media(block: Any) -> bool:
    """An image or a document: billed by its pixels or pages, not by its JSON (`MEDIA_TYPES`)."""
    return type(block) is OtherBlock and block.type in MEDIA_TYPES


class _Text(BlockKind):
    mutable = False
    judge_view = "text"

    def size(self, block: Any, where: str | int, k: int, json: str | None = None) -> int:
        return len(block.text)

    def token_text(self, block: Any) -> str:
        return block.text

    def values(self, block: Any) -> tuple[tuple[Path, Any], ...]:
        return ()

    def restore_text(self, block: Any) -> str:
        return block.text


class _Thinking(BlockKind):
    mutable = False

    def size(self, block: Any, where: str | int, k: int, json: str | None = None) -> int:
        return len(block.thinking)

    def token_text(self, block: Any) -> str:
        return block.thinking

    def values(self, block: Any) -> tuple[tuple[Path, Any], ...]:
        return ()


class _ToolUse(BlockKind):
    """A call: its tool's name and its input (a string as it is, anything else as canonical JSON)."""

    judge_view = "call"

    def size(self, block: Any, where: str | int, k: int, json: str | None = None) -> int:
        value = block.input
        if type(value) is str:
            return len(block.name) + len(value)
        return len(block.name) + len(input_json(block, where, k) if json is None else json)

    def token_text(self, block: Any) -> str:
        value = block.input
        return f"{block.name} {value if type(value) is str else canonical_json(value).decode()}"

    def values(self, block: Any) -> tuple[tuple[Path, Any], ...]:
        return () if type(block.input) is str else ((("input",), block.input),)

    def restore_text(self, block: Any) -> str:
        return canonical_json(block.input).decode()


class _ToolResult(BlockKind):
    """A result: a string output as it is, or its blocks, each described by its own kind."""

    def size(self, block: Any, where: str | int, k: int, json: str | None = None) -> int:
        output = block.output
        return len(output) if type(output) is str else visible_chars(output, f"{path_of(where, k)}.output")

    def token_text(self, block: Any) -> str:
        output = block.output
        if type(output) is str:
            return output
        return "\n".join(kind_of(b).token_text(b) for b in output if not is_media(b))

    def values(self, block: Any) -> tuple[tuple[Path, Any], ...]:
        output, metadata = block.output, block.metadata
        if type(output) is str:
            return () if metadata is None else ((("metadata",), metadata),)
        found: list[tuple[Path, Any]] = [] if metadata is None else [(("metadata",), metadata)]
        for j, inner in enumerate(output):
            found.extend((("output", j, *path), value) for path, value in kind_of(inner).values(inner))
        return tuple(found)

    def restore_text(self, block: Any) -> str:
        output = block.output
        return output if type(output) is str else "\n".join(kind_of(b).restore_text(b) for b in output)


OTHER = BlockKind()
KINDS: dict[type, BlockKind] = {TextBlock: _Text(), ThinkingBlock: _Thinking(), ToolUseBlock: _ToolUse(),
                                ToolResultBlock: _ToolResult(), OtherBlock: OTHER}


JUDGE_VIEWS: dict[type, str] = {kind: d.judge_view for kind, d in KINDS.items() if d.judge_view is not None}
"""The block types a remote judge's state shows, with how (`BlockKind.judge_view`), read once per block."""


def kind_of(block: Any) -> BlockKind:
    """The description of `block`'s type (an unknown object's: `OTHER`)."""
    return KINDS.get(type(block), OTHER)


def block_chars(block: Any, parts: list[Any] | None, where: str | int, k: int, json: str | None = None) -> int:
    """Characters of what the model sees of one block (`BlockKind.size`) — never envelopes, ids or metadata,
    so a history's size does not depend on the form it was loaded from: the one size rule, `analyze` measures
    every message with it. With `parts`, the mutable values inside the block (`BlockKind.values`) are
    appended to it. A value with no JSON form is refused naming its place, `where[k]`: `where` the path of
    the blocks holding it, or the index of the message whose content they are."""
    kind = KINDS.get(type(block), OTHER)
    size = kind.size(block, where, k, json)
    if parts is not None and kind.mutable:
        parts.extend([value for _path, value in kind.values(block)])
    return size


def visible_chars(blocks: Sequence[Any], where: str = "content") -> int:
    """Characters of what the model sees of `blocks` (`BlockKind.size` of each; `where`: their path)."""
    return sum(kind_of(block).size(block, where, k) for k, block in enumerate(blocks))
