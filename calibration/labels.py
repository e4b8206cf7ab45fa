"""Labels from later history (SPEC §11, `labels-v1`): was a pair still needed after a decision point?

A pair is **needed** after decision point `s` (the index of the last message the judge saw) when, later:
- the agent re-ran the same tool with the same input (it needed the information again; the credit goes
  to the most recent earlier run, which is the one a compactor would still hold), or
- the agent used an identifier that this pair's result was the most recent source of, and that was not
  already available from the task or the agent's own earlier messages (last-provider attribution);
for the call, also when the agent mentioned the call's own paths or identifiers, or the call changed
state (an edit). Labels are proxies — lexical, blind to influence on reasoning — and are data: a JSONL
the user can inspect and edit.
"""

from __future__ import annotations

from dataclasses import dataclass

from jev.judges.features import _distinctive, category, command_text, words
from jev.transcript import TextBlock, ToolResultBlock, ToolUseBlock, Transcript

LABEL_VERSION = "labels-v1"


@dataclass(frozen=True, slots=True)
class PairUse:
    """The last message index at which each kind of later use of a pair happened (-1: never)."""

    result_used: int
    call_used: int
    rerun: int
    edit: bool

    def needed_result(self, s: int) -> bool:
        return self.result_used > s or self.rerun > s

    def needed_call(self, s: int) -> bool:
        return self.edit or self.call_used > s or self.needed_result(s)


def pair_uses(transcript: Transcript) -> dict[str, PairUse]:
    """One pass over the full transcript: the later uses of every pair."""
    keys = {p.call_id: p.key for p in transcript.pairs}
    task: set[str] = set()
    for message in transcript.messages:  # the task: system prompt and first user request
        if message.role in ("system", "user"):
            task |= {w for w in words(message.text) if _distinctive(w)}
            if message.role == "user":
                break
    provider: dict[str, str] = {}  # word -> key of the most recent result containing it
    agent_said: set[str] = set()
    result_used = dict.fromkeys(keys.values(), -1)
    call_used = dict.fromkeys(keys.values(), -1)
    rerun = dict.fromkeys(keys.values(), -1)
    call_words: dict[str, set[str]] = {}
    latest_run: dict[tuple[str, str], str] = {}  # (tool, command) -> key of its most recent run
    word_calls: dict[str, set[str]] = {}
    edits: set[str] = set()
    for k, message in enumerate(transcript.messages):
        said: set[str] = set()
        for block in message.content:
            if isinstance(block, ToolResultBlock) and block.id in keys:
                for w in words(block.text):
                    if _distinctive(w):
                        provider[w] = keys[block.id]
            elif isinstance(block, ToolUseBlock):
                command = command_text(block.input)
                said |= {w for w in words(command) if _distinctive(w)}
                signature = (block.name, command)
                if signature in latest_run:  # credit goes to the latest run, as with last-provider words
                    rerun[latest_run[signature]] = k
                if block.id in keys:
                    latest_run[signature] = keys[block.id]
                    own = {w for w in words(command) if _distinctive(w)}
                    call_words[keys[block.id]] = own
                    if category(block.name, command) == "edit":
                        edits.add(keys[block.id])
            elif isinstance(block, TextBlock) and message.role == "assistant":
                said |= {w for w in words(block.text) if _distinctive(w)}
        if message.role != "assistant":
            continue
        for w in said - task - agent_said:
            key = provider.get(w)
            if key is not None:
                result_used[key] = k
        for w in said:
            for key in word_calls.get(w, ()):
                call_used[key] = k
        agent_said |= said
        for key, own in call_words.items():  # register calls after their own message, so self-mention is not use
            for w in own:
                word_calls.setdefault(w, set()).add(key)
        call_words.clear()
    return {key: PairUse(result_used[key], call_used[key], rerun[key], key in edits) for key in keys.values()}

