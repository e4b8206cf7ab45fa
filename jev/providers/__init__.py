"""What a provider accepts in a history sent back (issue 61), in one place: the rules per model family, the
check of a proposed history against the one last sent, and the thinking policy for models that bind
thinking to its prefix.

The providers' documents are the spec:

- Anthropic, preserved thinking (from Claude Fable 5.1 on): a `thinking` / `redacted_thinking` block sent
  back is bound to its prefix — the system prompt, the tools and every message before it. A change there
  invalidates that block and every later one; omitting or moving a block between others fails too. The
  API answers 400 ("The block is bound to a different conversation"), or, with
  `thinking.block_binding.prefix_mismatch_behavior: "drop_block"` and the beta header
  `thinking-binding-controls-2026-08-01`, drops the invalid blocks. The models that run the check are the
  `supportedModels` of https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks
  (`PRESERVED_THINKING_MODELS`); see also
  https://platform.claude.com/docs/en/build-with-claude/preserved-thinking and the fix page
  https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/fix-bound-to-a-different-conversation.
- Anthropic, every thinking model: "when you return a tool result, the thinking blocks from the assistant
  message must come back with it", complete and unmodified
  (https://platform.claude.com/docs/en/build-with-claude/thinking-tool-workflows). Thinking from earlier,
  finished turns may be left out on models without the prefix check.
- OpenAI Responses: a `reasoning` item must be followed by the item it preceded ("Item 'rs_…' of type
  'reasoning' was provided without its required following item"; the Responses compaction guide,
  https://platform.openai.com/docs/guides/conversation-state).
- Gemini: a `functionCall` part's `thought_signature` goes back with it; the current turn's are validated
  ("missing thought_signature", https://ai.google.dev/gemini-api/docs/thought-signatures).
- Every provider: a tool result follows its call, and a call is answered (OpenAI Chat: the `tool` messages
  right after the assistant message with the `tool_calls`; https://platform.openai.com/docs/guides/function-calling).

A model name selects the rules (`rules_for`): the table first, then the family by prefix, then `DEFAULT`
— every rule at its strictest, so that a name the table does not know never yields a plan its provider
refuses. The host names the model (`CompactionConfig.model`); else the history's own (`model_of`: a request
body's `model`, or the newest assistant message that names one, as Claude Code lines and Anthropic
responses do).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..errors import ConfigError, shown
from ..model.transcript import (
    Message,
    ToolResultBlock,
    ToolUseBlock,
    is_thinking,
)

PRESERVED_THINKING_MODELS = ("claude-fable-5-2", "claude-mythos-5-2", "claude-fable-5-1", "claude-mythos-5-1",
                             "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5")
DROP_BLOCK_BETA = "thinking-binding-controls-2026-08-01"  # the beta header `drop_block` needs
DROP_BLOCK = {"block_binding": {"prefix_mismatch_behavior": "drop_block"}}  # merged into a request's `thinking`
SIGNATURE_KEYS = ("thought_signature", "thoughtSignature")


class ThinkingPolicy(str, Enum):
    """What a plan does with thinking that a preserved-thinking model binds to its prefix."""

    STRIP = "strip"  # edit, then remove the thinking after the first changed message (what drop_block does, client-side)
    DROP_BLOCK = "drop-block"  # keep it; the request carries drop_block, and the API drops what the edit invalidated
    APPEND_ONLY = "append-only"  # change nothing at or before the last thinking block


DEFAULT_THINKING_POLICY = ThinkingPolicy.STRIP  # chosen by replay (docs/guide/providers.md)


def thinking_policy(value: Any) -> ThinkingPolicy:
    """A thinking policy from its name, or a `ConfigError` that names the field and the choices."""
    try:
        return ThinkingPolicy(value)
    except ValueError:
        choices = ", ".join(p.value for p in ThinkingPolicy)
        raise ConfigError(f"thinking_policy must be one of {choices} (got {shown(value)})") from None


@dataclass(frozen=True, slots=True)
class Rules:
    """What one model's provider requires of a history sent back (beyond whole pairs, which every one does)."""

    family: str  # anthropic, openai, gemini, default
    preserved_thinking: bool = False  # Anthropic's prefix check on thinking blocks
    thinking_in_progress: bool = False  # the tool loop's latest thinking goes back, complete and unmodified
    reasoning_follows: bool = False  # a Responses reasoning item is followed by its item
    signatures_stay: bool = False  # a Gemini call's thought signature goes back with it (current turn)
    results_follow_calls: bool = False  # OpenAI Chat: only results between a call's message and its last result


ANTHROPIC = Rules("anthropic", thinking_in_progress=True)
ANTHROPIC_PRESERVED = Rules("anthropic", preserved_thinking=True, thinking_in_progress=True)
OPENAI = Rules("openai", reasoning_follows=True, results_follow_calls=True)
GEMINI = Rules("gemini", signatures_stay=True)
DEFAULT = Rules("default", preserved_thinking=True, thinking_in_progress=True, reasoning_follows=True,
                signatures_stay=True, results_follow_calls=True)

# the Claude families and the first version of each that runs the prefix check (the docs' list, as a rule for
# names newer than it: "from Claude Fable 5.1 on")
_PRESERVED_FROM = {"fable": (5, 1), "mythos": (5, 1), "opus": (5, 5), "sonnet": (5, 5), "haiku": (5, 5)}
_CLAUDE = re.compile(r"claude-(?:(?P<family>[a-z]+)-(?P<major>\d+)(?:-(?P<minor>\d{1,2}))?"
                     r"|(?P<major_old>\d+)(?:-(?P<minor_old>\d{1,2}))?-(?P<family_old>[a-z]+))(?![\d.])")


def _normal(model: str) -> str:
    """A model id as the table spells it: lower case, without a cloud's prefix (`us.anthropic.`, `models/`) or
    suffix (`@20260101`, `-v1:0`, `[1m]`)."""
    name = model.strip().lower()
    name = name.rsplit("/", 1)[-1]
    name = re.sub(r"^(?:[a-z]{2}\.)?anthropic\.", "", name)
    name = re.sub(r"(@.*|-v\d+(:\d+)?|\[.*\])$", "", name)
    return name


def rules_for(model: str | None) -> Rules:
    """The rules a history sent to `model` must satisfy: the table (`PRESERVED_THINKING_MODELS`), then the
    family (`claude-*` by family and version, `gpt-*` / `o<N>` / `codex*` OpenAI, `gemini*`), then `DEFAULT`
    (every rule at its strictest) for None and names it does not know."""
    if model is None or not model.strip():
        return DEFAULT
    name = _normal(model)
    if name.startswith("claude"):
        if any(name.startswith(known) for known in PRESERVED_THINKING_MODELS):
            return ANTHROPIC_PRESERVED
        match = _CLAUDE.match(name)
        if match is None:
            return ANTHROPIC_PRESERVED  # a Claude name of no known shape: the strict rules
        family = match["family"] or match["family_old"]
        version = (int(match["major"] or match["major_old"]), int(match["minor"] or match["minor_old"] or 0))
        first = _PRESERVED_FROM.get(family)
        if first is None:
            return ANTHROPIC_PRESERVED if version >= (5, 1) else ANTHROPIC
        return ANTHROPIC_PRESERVED if version >= first else ANTHROPIC
    if re.match(r"(gpt-|o\d|codex|chatgpt)", name):
        return OPENAI
    if name.startswith("gemini"):
        return GEMINI
    return DEFAULT


def model_of(messages: Sequence[Message]) -> str | None:
    """The model a history names: its request body's `model` (the request form keeps the body), else the
    newest assistant message's own `model` (Claude Code lines, Anthropic and Chat responses); None when none
    names one."""
    if messages and messages[0].origin is not None:
        envelope = messages[0].origin.envelope
        rest = envelope.get("rest") if isinstance(envelope, dict) else None
        if isinstance(rest, dict) and isinstance(rest.get("model"), str) and rest["model"].strip():
            return str(rest["model"])
    for message in reversed(messages):
        origin = message.origin
        if message.role != "assistant" or origin is None:
            continue
        # the newest assistant message a form loaded speaks for the history: one that names no model means
        # its form records none (a plan runs this every time: no walk through every message's bookkeeping)
        named = origin.model
        if isinstance(named, str) and named.strip():
            return named
        return _named(origin.source)
    return None


def _named(source: Any, depth: int = 0) -> str | None:
    """The model a converter's kept message names: its `model` (Anthropic and Chat responses), or LangChain's
    `response_metadata.model_name`, wherever the form nests the message (`item`, `data`): three named keys
    down at most, never the whole of it."""
    if not isinstance(source, dict) or depth > 3:
        return None
    for key in ("model", "model_name"):
        value = source.get(key)
        if isinstance(value, str) and value.strip():
            return value
    for key in ("item", "data", "response_metadata"):
        found = _named(source.get(key), depth + 1)
        if found is not None:
            return found
    return None


def resolve(messages: Sequence[Message], model: str | None) -> tuple[str | None, Rules]:
    """The model a plan is made for (the host's, else the history's) and its rules."""
    name = model if model is not None else model_of(messages)
    return name, rules_for(name)


def has_thinking(message: Message) -> bool:
    return any(is_thinking(b) for b in message.content)


def in_progress(messages: Sequence[Message]) -> int | None:
    """The index of the turn in progress: the newest assistant message when every message after it carries
    results (a tool loop waiting on the model), else None (the history ends at a finished turn or a prompt)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.role == "assistant":
            return i if any(type(b) is ToolUseBlock for b in message.content) else None
        if not any(type(b) is ToolResultBlock for b in message.content):
            return None
    return None


def _prompt(message: Message) -> bool:
    """A user's own message: user role, and no tool result in it."""
    return message.role == "user" and not any(type(b) is ToolResultBlock for b in message.content)


def current_turn(messages: Sequence[Message]) -> int:
    """Where the current turn begins: just after the newest user prompt (0 when there is none)."""
    for i in range(len(messages) - 1, -1, -1):
        if _prompt(messages[i]):
            return i + 1
    return 0


def frozen_until(messages: Sequence[Message], rules: Rules, policy: ThinkingPolicy) -> int:
    """The last message index no plan may change (-1: none is held), so that the plan passes `check`:
    append-only holds everything up to the last thinking block; strip and drop-block hold everything up to
    the turn in progress when its message carries thinking (that thinking must go back, and valid)."""
    if not rules.preserved_thinking:
        return -1
    if policy is ThinkingPolicy.APPEND_ONLY:
        return max((i for i, m in enumerate(messages) if has_thinking(m)), default=-1)
    at = in_progress(messages)
    return at if at is not None and has_thinking(messages[at]) else -1


def _signed(message: Message) -> set[str]:
    """The call ids of a message whose calls carry a Gemini thought signature, where its form keeps one: on
    a kept call object (Gemini's OpenAI-compatible calls, under `extra_content`: openai-chat keeps each call's
    other fields by its id) or in LangChain's `additional_kwargs` map of call id -> signature. Only there: a
    plan runs this, and a message's bookkeeping can be large."""
    calls = {b.id for b in message.content if type(b) is ToolUseBlock}
    source = message.origin.source if calls and message.origin is not None else None
    if not isinstance(source, dict):
        return set()
    out: set[str] = set()
    extras = source.get("tool_calls")
    if isinstance(extras, dict):
        for call_id, extra in extras.items():
            call = extra.get("call") if isinstance(extra, dict) else None
            if call_id in calls and isinstance(call, dict) and _has_signature(call):
                out.add(call_id)
    item = source.get("item")
    holder = item.get("data", item) if isinstance(item, dict) else None
    kwargs = holder.get("additional_kwargs") if isinstance(holder, dict) else None
    if isinstance(kwargs, dict):
        for key, value in kwargs.items():
            if "thought_signature" in key and isinstance(value, dict):
                out.update(k for k in value if k in calls)
    return out


def _has_signature(value: Any, depth: int = 0) -> bool:
    """A thought signature somewhere in one call's object (a few levels deep: `extra_content.google`)."""
    if not isinstance(value, dict) or depth > 3:
        return False
    return any((key in SIGNATURE_KEYS and bool(item)) or _has_signature(item, depth + 1) for key, item in value.items())


def _reasoning_item(message: Message) -> bool:
    """A Responses `reasoning` item, as the openai-responses form loads one: an assistant message of thinking only."""
    return (message.role == "assistant" and message.origin is not None
            and message.origin.format == "openai-responses" and bool(message.content)
            and all(is_thinking(b) for b in message.content))


def calls_that_stay(messages: Sequence[Message], rules: Rules, thinking: bool = True) -> set[str]:
    """Call ids a plan must keep (their results may still be cut): a call right after a Responses reasoning
    item (the item must be followed by its call), and a signed Gemini call of the current turn. `thinking`
    False: the history holds no reasoning item (its analysis says so), so none is looked for."""
    out: set[str] = set()
    if rules.reasoning_follows and thinking:
        for i in range(len(messages) - 1):
            if _reasoning_item(messages[i]):
                out.update(b.id for b in messages[i + 1].content if type(b) is ToolUseBlock)
    if rules.signatures_stay:
        for message in messages[current_turn(messages):]:
            out |= _signed(message)
    return out


def first_change(sent: Sequence[Message], proposed: Sequence[Message]) -> int:
    """The index of the first message of `proposed` that is not the message `sent` has there (len of the
    shorter when one is a prefix of the other)."""
    for i, (a, b) in enumerate(zip(sent, proposed, strict=False)):
        if a is not b and a != b:
            return i
    return min(len(sent), len(proposed))


def strip_thinking(sent: Sequence[Message], proposed: Sequence[Message]) -> tuple[list[Message], int]:
    """`proposed` without the thinking blocks after its first change (a message left empty is left out),
    and how many were removed: the blocks the prefix check would invalidate, removed client-side — what
    `drop_block` does server-side, with neither a 400 nor a beta header. What the turn in progress needs is
    never here: `frozen_until` keeps every change after its thinking."""
    start = first_change(sent, proposed)
    out = list(proposed[:start])
    removed = 0
    for message in proposed[start:]:
        if has_thinking(message):
            kept = tuple(b for b in message.content if not is_thinking(b))
            removed += len(message.content) - len(kept)
            if kept:
                out.append(message.replace(content=kept))
            continue
        out.append(message)
    return out, removed


@dataclass(frozen=True, slots=True)
class Violation:
    """One block the provider would refuse (`refused`) or drop: the rule, the path in the proposed history
    (`messages[12].content[0]`), the message's id and what is wrong."""

    rule: str
    path: str
    message_id: str
    detail: str
    refused: bool = True

    def __str__(self) -> str:
        return f"{self.rule} at {self.path} ({self.message_id}): {self.detail}" + ("" if self.refused else " [dropped]")


@dataclass(frozen=True, slots=True)
class Check:
    """The check of one proposed history: the model and rules it was checked for, and what fails."""

    model: str | None
    rules: Rules
    policy: ThinkingPolicy
    violations: tuple[Violation, ...]

    @property
    def refused(self) -> tuple[Violation, ...]:
        """What makes the provider refuse the request (a 400)."""
        return tuple(v for v in self.violations if v.refused)

    @property
    def passes(self) -> bool:
        return not self.refused

    def summary(self, limit: int = 3) -> str:
        shown_ = "; ".join(str(v) for v in self.refused[:limit])
        more = len(self.refused) - limit
        return shown_ + (f"; and {more} more" if more > 0 else "")


def _thinking_blocks(messages: Sequence[Message]) -> Iterator[tuple[int, int, Message, Any]]:
    for i, message in enumerate(messages):
        for j, block in enumerate(message.content):
            if is_thinking(block):
                yield i, j, message, block


def _orphans(messages: Sequence[Message]) -> set[tuple[str, str, int]]:
    """The broken pairs of a history: ("result", id, n) for a result with no open call before it, ("call", id,
    n) for a call answered by no result, where n counts the id's uses (ids may be reused once answered)."""
    open_calls: dict[str, int] = {}
    uses: dict[str, int] = {}
    out: set[tuple[str, str, int]] = set()
    for message in messages:
        for block in message.content:
            if type(block) is ToolUseBlock:
                n = uses[block.id] = uses.get(block.id, 0) + 1
                if block.id in open_calls:
                    out.add(("call", block.id, open_calls[block.id]))
                open_calls[block.id] = n
            elif type(block) is ToolResultBlock:
                if block.id in open_calls:
                    del open_calls[block.id]
                else:
                    out.add(("result", block.id, uses.get(block.id, 0)))
    out.update(("call", cid, n) for cid, n in open_calls.items())
    return out


def _where(messages: Sequence[Message], kind: str, call_id: str) -> tuple[str, str]:
    for i, message in enumerate(messages):
        for j, block in enumerate(message.content):
            if block.type == ("tool_use" if kind == "call" else "tool_result") and getattr(block, "id", None) == call_id:
                return f"messages[{i}].content[{j}]", message.id
    return "messages", ""


def _pair_violations(sent: Sequence[Message], proposed: Sequence[Message]) -> list[Violation]:
    """Pairs the proposal broke (those already broken in what was sent, the provider took as they are)."""
    before, after = _orphans(sent), _orphans(proposed)
    at = in_progress(proposed)
    waiting = {b.id for b in proposed[at].content if type(b) is ToolUseBlock} if at is not None else set()
    out = []
    for kind, call_id, _n in sorted(after - before):
        if kind == "call" and call_id in waiting:
            continue  # the turn in progress: its results are still to come
        path, mid = _where(proposed, kind, call_id)
        out.append(Violation("pairs-whole", path, mid, f"a {kind} of id {call_id!r} without its "
                             + ("result" if kind == "call" else "call")))
    return out


def _follow_violations(sent: Sequence[Message], proposed: Sequence[Message], change: int) -> list[Violation]:
    """OpenAI Chat: between an assistant message's calls and its last result, only results. What precedes the
    first change was sent as it is: the scan starts at the call message whose run of results reaches it."""
    start = change
    while start > 0 and any(type(b) is ToolResultBlock for b in proposed[min(start, len(proposed)) - 1].content):
        start -= 1
    start = max(0, start - 1)

    def breaks(messages: Sequence[Message]) -> dict[str, tuple[int, str]]:
        found: dict[str, tuple[int, str]] = {}
        for i in range(start, len(messages)):
            message = messages[i]
            calls = {b.id for b in message.content if type(b) is ToolUseBlock}
            k = i + 1
            while calls and k < len(messages):
                answered = {b.id for b in messages[k].content if type(b) is ToolResultBlock}
                if not answered:
                    found.setdefault(messages[k].id, (k, message.id))
                    break
                calls -= answered
                k += 1
        return found

    known = breaks(sent)
    return [Violation("results-follow-calls", f"messages[{k}]", mid,
                      f"a message comes between the calls of {owner!r} and their results")
            for mid, (k, owner) in breaks(proposed).items() if mid not in known]


def _thinking_violations(sent: Sequence[Message], proposed: Sequence[Message], rules: Rules,
                         policy: ThinkingPolicy, change: int) -> list[Violation]:
    """Anthropic's thinking rules on what follows the first change (what precedes it was sent as it is: its
    blocks are the first `before` of the sent ones, in order, and valid)."""
    out: list[Violation] = []
    before = sum(1 for m in sent[:change] for b in m.content if is_thinking(b))
    sent_blocks = [(m.id, b) for _i, _j, m, b in _thinking_blocks(sent[change:])]
    sent_index = {(mid, id(b)): before + k for k, (mid, b) in enumerate(sent_blocks)}
    progress = in_progress(sent)
    progress_id = sent[progress].id if progress is not None else None
    seen_progress = sum(1 for b in sent[progress].content if is_thinking(b)) \
        if progress is not None and progress < change else 0
    expected = before  # the next of the sent blocks, in order
    for i, j, message, block in _thinking_blocks(proposed[change:]):
        i += change
        path = f"messages[{i}].content[{j}]"
        k = sent_index.get((message.id, id(block)))
        if k is None:  # not the very block: the same one, equal, in the same message?
            k = next((before + n for n in range(expected - before, len(sent_blocks))
                      if sent_blocks[n][0] == message.id and sent_blocks[n][1] == block), None)
        if k is None:
            out.append(Violation("thinking-unmodified", path, message.id,
                                 "a thinking block that was not sent back as the API returned it"))
            continue
        if message.id == progress_id:
            seen_progress += 1
        if rules.preserved_thinking and k != expected:
            out.append(Violation("preserved-thinking", path, message.id,
                                 "a thinking block between others was left out or moved"))
        expected = k + 1
        if rules.preserved_thinking and i > change:  # its own message's earlier blocks: the identity check above
            drops = policy is ThinkingPolicy.DROP_BLOCK and message.id != progress_id
            out.append(Violation("preserved-thinking", path, message.id,
                                 f"its prefix changed at messages[{change}] after the block was produced"
                                 + ("; drop_block drops it" if drops else ""), refused=not drops))
    if rules.thinking_in_progress and progress is not None:
        wanted = sum(1 for b in sent[progress].content if is_thinking(b))
        if seen_progress < wanted:
            out.append(Violation("thinking-in-progress", f"messages[{progress}]", sent[progress].id,
                                 "the tool loop's latest thinking must go back with its results"))
    return out


def _reasoning_violations(sent: Sequence[Message], proposed: Sequence[Message], change: int) -> list[Violation]:
    """Responses: a reasoning item followed by what followed it when sent, or another output item (from the
    item before the first change on: what precedes it was sent as it is)."""
    start = max(0, change - 1)
    follower = {sent[i].id: sent[i + 1].id for i in range(start, len(sent) - 1) if _reasoning_item(sent[i])}
    out = []
    for i, message in enumerate(proposed[start:], start):
        if not _reasoning_item(message) or (i + 1 == len(proposed) and message.id not in follower):
            continue
        nxt = proposed[i + 1] if i + 1 < len(proposed) else None
        output = nxt is not None and nxt.role == "assistant" and not _reasoning_item(nxt) and (
            nxt.id == follower.get(message.id) or any(type(b) is ToolUseBlock for b in nxt.content))
        if not output:
            out.append(Violation("reasoning-follows", f"messages[{i}]", message.id,
                                 "a reasoning item without its required following item"))
    return out


def _signature_violations(sent: Sequence[Message], proposed: Sequence[Message]) -> list[Violation]:
    """Gemini: the current turn's signed calls go back, in their messages as sent."""
    kept = {m.id: m for m in proposed}
    out = []
    start = current_turn(sent)
    for i, message in enumerate(sent[start:], start):
        signed = _signed(message)
        if (signed and message.id not in kept) or (signed and kept[message.id] != message):
            out.append(Violation("thought-signature", f"messages[{i}]", message.id,
                                 f"calls {sorted(signed)} of the current turn must go back with their signatures"))
    return out


def check(sent: Sequence[Message], proposed: Sequence[Message], model: str | None = None,
          policy: ThinkingPolicy | str = DEFAULT_THINKING_POLICY, *, thinking: bool = True) -> Check:
    """Every block of `proposed` that the provider of `model` (else the model `sent` names, else `DEFAULT`)
    would refuse or drop, sent after `sent` — the history as last sent, which the provider accepted: what
    was broken there already is not the proposal's doing. Public, so a host can check its own edits.
    `thinking=False`: the caller knows `sent` holds no thinking block or reasoning item (a compactor's
    analysis does), and a plan adds none — the rules about them are then not walked."""
    policy = thinking_policy(policy)
    name, rules = resolve(sent, model)
    change = first_change(sent, proposed)
    violations = _pair_violations(sent, proposed)
    if rules.results_follow_calls:
        violations += _follow_violations(sent, proposed, change)
    if thinking and (rules.thinking_in_progress or rules.preserved_thinking):
        violations += _thinking_violations(sent, proposed, rules, policy, change)
    if thinking and rules.reasoning_follows:
        violations += _reasoning_violations(sent, proposed, change)
    if rules.signatures_stay:
        violations += _signature_violations(sent, proposed)
    return Check(name, rules, policy, tuple(violations))


def with_drop_block(body: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic request body that asks the API to drop thinking blocks whose prefix changed instead of
    refusing the request (send it with the `anthropic-beta: thinking-binding-controls-2026-08-01` header);
    a body with thinking switched off, or none, is left as it is."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") == "disabled":
        return body
    found = thinking.get("block_binding")
    binding: dict[str, Any] = found if isinstance(found, dict) else {}
    return {**body, "thinking": {**thinking, "block_binding": {**binding, **DROP_BLOCK["block_binding"]}}}
