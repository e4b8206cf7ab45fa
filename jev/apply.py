"""Actions to a new message list (SPEC §6): drop pairs together, cut long results, touch nothing else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .policy import Action
from .state import cut
from .transcript import Block, Message, Pair, TextBlock, ToolResultBlock, ToolUseBlock, Transcript

TRUNCATION_MARKER = ("[JEV archived the full result. Ask the host to restore the scoped snapshot; "
                     "do not re-execute this tool for recovery.]")
SHORT_RESULT_SLACK = 160


def truncated_output(text: str, head_chars: int) -> tuple[TextBlock, ...] | None:
    """The replacement output for a TRUNCATE_RESULT, or None when the result is short enough to keep."""
    if len(text) <= head_chars + SHORT_RESULT_SLACK:
        return None
    return (TextBlock(cut(text, head_chars) + "\n" + TRUNCATION_MARKER),)


def removed_chars(pair: Pair, action: Action, head_chars: int) -> int:
    """Characters of the pair's result text that `action` removes, net of a kept head and the marker."""
    if action is Action.DROP_PAIR:
        return len(pair.result.text)
    if action is Action.TRUNCATE_RESULT:
        output = truncated_output(pair.result.text, head_chars)
        return 0 if output is None else len(pair.result.text) - len(output[0].text)
    return 0


def is_truncated(result: ToolResultBlock) -> bool:
    """The result is what TRUNCATE_RESULT left (a head and the marker), not an original: after a host's
    format round trip too, where the one text block may have become a string."""
    return result.text_only and result.text.endswith("\n" + TRUNCATION_MARKER)


def apply_actions(transcript: Transcript, decisions: Mapping[str, Action], truncate_head_chars: int) -> list[Message]:
    """The compacted history. Unchanged messages are the same objects; changed ones keep every field
    but their content; a message left with no blocks is removed."""
    # blocks by place (is result, message index, id): a call id may be reused once its pair is complete
    dropped: set[tuple[bool, int, str]] = set()
    replaced: dict[tuple[bool, int, str], ToolResultBlock] = {}
    touched: set[int] = set()
    for pair in transcript.pairs:
        action = decisions.get(pair.key, Action.KEEP)
        if action is Action.DROP_PAIR:
            dropped.update(((False, pair.call_message, pair.call_id), (True, pair.result_message, pair.call_id)))
            touched.update((pair.call_message, pair.result_message))
        elif action is Action.TRUNCATE_RESULT:
            output = truncated_output(pair.result.text, truncate_head_chars)
            if output is not None:
                r = pair.result
                replaced[(True, pair.result_message, pair.call_id)] = ToolResultBlock(r.id, r.name, output, r.state,
                                                                                      r.metadata)
                touched.add(pair.result_message)
    out: list[Message] = []
    for i, message in enumerate(transcript.messages):
        if i not in touched:
            out.append(message)
            continue
        blocks: list[Block] = []
        for block in message.content:
            if isinstance(block, (ToolUseBlock, ToolResultBlock)):
                place = (isinstance(block, ToolResultBlock), i, block.id)
                if place in dropped:
                    continue
                block = replaced.get(place, block)
            blocks.append(block)
        if blocks:
            out.append(Message(message.id, message.role, tuple(blocks), message.name, message.metadata,
                               message.timestamp) if type(message) is Message  # 3x cheaper than replace()
                       else message.replace(content=tuple(blocks)))
    _assert_results_have_calls(out)
    return out


def _assert_results_have_calls(messages: Sequence[Message]) -> None:
    calls: set[str] = set()
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                calls.add(block.id)
            elif isinstance(block, ToolResultBlock) and block.id not in calls:
                raise RuntimeError(f"internal error: result {block.id!r} would survive without its call")
