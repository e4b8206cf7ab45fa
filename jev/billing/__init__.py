"""A session replayed call by call under a compaction policy, and billed under prompt-cache pricing.

Every assistant message is one model call; its request is the history before it, as the policy has left
it. A request reads from the cache the leading messages it shares with the request before it (the same
message objects, in order) and writes the rest — unless the calls' timestamps, where the history has them,
are further apart than the profile's cache lifetime, when it writes all of it. Billed input is in tokens
at the base input price (`jev.deciding.cost`). Output tokens are the same under every policy and left out.

Policies, each on the same calls:
- `NoCompaction`: the history as it grew;
- `ClearEachCall`: LangChain's `ClearToolUsesEdit` / Anthropic's `clear_tool_uses` as they run per call —
  over the trigger, every tool result but the last `keep` reads `[cleared]` in the request only (never
  persisted), so the cleared set shifts with every call;
- `ClearBatched`: the same clearing of the oldest results, persisted and batched — at each trigger event
  it clears oldest first down to the target, if that clears at least `clear_at_least` tokens;
- `JevCompaction`: the configured compactor in ENFORCE with an archive, on the same trigger events (the
  integrations' rule: after a plan, the next waits for the next multiple of the trigger above what the
  history holds), plans adopted and persisted; with a target, budget mode down to it.

Each policy also reports which results it let go of and when, so a caller can count the later-needed
ones (`calibration.labels` gives two proxies).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..deciding.cost import (
    DEFAULT_PROFILE,
    PricingProfile,
    cold_trigger,
    message_tokens,
    next_trigger,
    plans_cold,
    pricing,
)
from ..deciding.decision import Mode, Status
from ..model.transcript import Message, ToolResultBlock
from ..reading.analysis import Transcript, analyze
from ..reading.state import estimate_tokens
from ..support.validate import require_integer

CLEARED = "[cleared]"  # LangChain's ClearToolUsesEdit placeholder


class Tokens:
    """Tokens of each message, counted once (`jev.deciding.cost.message_tokens` unless a counter is given)."""

    def __init__(self, count: Callable[[Message], int] | None = None) -> None:
        self._count = count or message_tokens
        self._memo: dict[int, tuple[Message, int]] = {}  # id -> (message kept alive, tokens)

    def __call__(self, message: Message) -> int:
        hit = self._memo.get(id(message))
        if hit is None or hit[0] is not message:
            hit = self._memo[id(message)] = (message, self._count(message))
        return hit[1]

    def total(self, messages: Iterable[Message]) -> int:
        return sum(map(self, messages))


@dataclass
class Bill:
    """What one policy's requests cost over a session (or many, `add`ed)."""

    calls: int = 0
    sent: int = 0  # tokens sent over every call
    read: int = 0  # of those, read from the cache
    billed: float = 0.0  # at the base price
    prefix: float = 0.0  # of `billed`, what the requests' fixed prefix cost (`replay`'s `prefix`)
    largest: int = 0
    over_window: int = 0
    adopted: int = 0
    refused: dict[str, int] = field(default_factory=dict)  # why a planned compaction was not adopted
    events: int = 0  # trigger events (with a target: ended under it, or the plan said why not)
    over_target: int = 0  # events that ended over the target with the plan's reason (detail or refusal)
    unexplained: int = 0  # events that ended over the target and the plan gave no reason (never, if it works)
    let_go: list[tuple[str, int]] = field(default_factory=list)  # (pair key, decision point) per result let go
    thinking_stripped: int = 0  # thinking blocks adopted plans removed for a preserved-thinking model

    def add(self, other: Bill) -> None:
        self.calls += other.calls
        self.sent += other.sent
        self.read += other.read
        self.billed += other.billed
        self.prefix += other.prefix
        self.largest = max(self.largest, other.largest)
        self.over_window += other.over_window
        self.adopted += other.adopted
        self.events += other.events
        self.over_target += other.over_target
        self.unexplained += other.unexplained
        self.thinking_stripped += other.thinking_stripped
        for why, n in other.refused.items():
            self.refused[why] = self.refused.get(why, 0) + n

    @property
    def read_share(self) -> float:
        return self.read / self.sent if self.sent else 0.0


class Policy:
    """One way of shaping each request. `view(live, i, idle)` returns what call `i` (whose request is `live`,
    the persisted history so far; `idle` seconds after the call before it, when the history says) sends,
    and the history to persist."""

    name = "policy"

    def start(self, transcript: Transcript, tokens: Tokens) -> None:
        """A new session begins (its full transcript, for mapping pairs)."""
        self.tokens = tokens
        self.transcript = transcript
        self.bill = Bill()

    def view(self, live: list[Message], point: int, idle: float | None = None) -> tuple[list[Message], list[Message]]:
        raise NotImplementedError


class NoCompaction(Policy):
    name = "no compaction"

    def view(self, live: list[Message], point: int, idle: float | None = None) -> tuple[list[Message], list[Message]]:
        return live, live


class _Clearing(Policy):
    """What both clearing policies share: the results of a history, oldest first, and clearing them."""

    def __init__(self, trigger: int, keep: int = 3) -> None:
        self.trigger, self.keep = trigger, keep

    def start(self, transcript: Transcript, tokens: Tokens) -> None:
        super().start(transcript, tokens)
        self.copies: dict[tuple[int, frozenset[tuple[str, str]]], tuple[Message, Message]] = {}
        self.done: set[tuple[str, str]] = set()
        self.by_place = {(transcript.messages[p.result_message].id, p.call_id): p.key for p in transcript.pairs}
        self.sizes = {(transcript.messages[p.result_message].id, p.call_id): estimate_tokens(p.result.text)
                      for p in transcript.pairs}

    def _results(self, messages: Sequence[Message]) -> list[tuple[str, str]]:
        """(message id, call id) of every result in `messages`, oldest first."""
        return [(m.id, b.id) for m in messages for b in m.content if isinstance(b, ToolResultBlock)]

    def _clear(self, messages: Sequence[Message], keys: set[tuple[str, str]], point: int) -> list[Message]:
        """`messages` with the results `keys` names read `[cleared]`; a message cleared the same way as
        before is the same object, so it reads from the cache."""
        for key in keys - self.done:
            if key in self.by_place:
                self.bill.let_go.append((self.by_place[key], point))
        self.done |= keys
        out = []
        for m in messages:
            mine = frozenset(k for k in ((m.id, b.id) for b in m.content if isinstance(b, ToolResultBlock)) if k in keys)
            if not mine:
                out.append(m)
                continue
            hit = self.copies.get((id(m), mine))
            if hit is None or hit[0] is not m:
                content = tuple(ToolResultBlock(b.id, b.name, CLEARED, b.state, b.metadata)
                                if isinstance(b, ToolResultBlock) and (m.id, b.id) in mine else b for b in m.content)
                hit = self.copies[(id(m), mine)] = (m, m.replace(content=content))
            out.append(hit[1])
        return out


class ClearEachCall(_Clearing):
    """Per call, request only: over the trigger every result but the last `keep` is `[cleared]`."""

    name = "clear each call (keep 3)"

    def view(self, live: list[Message], point: int, idle: float | None = None) -> tuple[list[Message], list[Message]]:
        if self.tokens.total(live) < self.trigger:
            return live, live
        results = self._results(live)
        older = set(results[:-self.keep] if self.keep else results)
        return (self._clear(live, older, point) if older else live), live  # never persisted


class ClearBatched(_Clearing):
    """At each trigger event, clear the oldest results (never the last `keep`) down to `target` tokens if
    that clears at least `clear_at_least`; persisted, so later calls read the cleared history from cache."""

    def __init__(self, trigger: int, target: int, keep: int = 3, clear_at_least: int = 0) -> None:
        super().__init__(trigger, keep)
        self.target, self.clear_at_least = target, clear_at_least
        self.name = f"clear batched (to {target:,}, keep {keep})"

    def start(self, transcript: Transcript, tokens: Tokens) -> None:
        super().start(transcript, tokens)
        self.next_at = self.trigger

    def view(self, live: list[Message], point: int, idle: float | None = None) -> tuple[list[Message], list[Message]]:
        total = self.tokens.total(live)
        if total < self.next_at:
            return live, live
        results = [k for k in self._results(live) if k not in self.done]
        keys: set[tuple[str, str]] = set()
        cleared = 0
        for key in results[:-self.keep] if self.keep else results:
            if total - cleared <= self.target:
                break
            keys.add(key)
            cleared += max(0, self.sizes.get(key, 0) - 3)  # the placeholder stays
        if keys and cleared >= self.clear_at_least:
            live = self._clear(live, keys, point)
            total = self.tokens.total(live)
        self.next_at = next_trigger(total, self.trigger)
        return live, live


TRIGGER_UNITS = ("tokens", "messages", "tool_results")  # what a trigger counts: as the integrations count


class JevCompaction(Policy):
    """The compactor in the loop (ENFORCE with an archive), on the integrations' trigger rule — the trigger
    in `unit`s: tokens (the mini-swe-agent hook's and LangChain's token trigger), messages (LangChain's
    and the Agents SDK's item count) or tool results (AgentScope's) — and budget mode toward `target`
    tokens when given; `cold` (as hosts do): at a cold cache, from a fifth of the trigger on."""

    def __init__(self, compactor: Any, trigger: int, target: int | None = None, name: str = "jev",
                 horizon: Callable[[Transcript, int], int | None] | None = None, unit: str = "tokens",
                 cold: bool = True) -> None:
        if compactor.options.mode is not Mode.ENFORCE:
            raise ValueError("the replay runs the compactor in ENFORCE (with an archive)")
        if unit not in TRIGGER_UNITS:
            raise ValueError(f"unit must be one of {', '.join(TRIGGER_UNITS)} (got {unit!r})")
        self.compactor, self.trigger, self.target, self.name, self.unit = compactor, trigger, target, name, unit
        self.horizon = horizon  # (full transcript, decision point) -> later calls; None: the library's estimate
        # at a cold cache (idle past the gate's pricing lifetime) the next call re-writes the history anyway:
        # plan from a fifth of the trigger on, as hosts do (`jev.integrations.core.HostCompaction.due`)
        self.cold_trigger = cold_trigger(trigger) if cold else None

    def _count(self, live: list[Message], tokens: int) -> int:
        if self.unit == "tokens":
            return tokens
        if self.unit == "messages":
            return len(live)
        return sum(1 for m in live for b in m.content if type(b) is ToolResultBlock)

    def start(self, transcript: Transcript, tokens: Tokens) -> None:
        super().start(transcript, tokens)
        self.next_at = self.trigger
        self.by_place = {(transcript.messages[p.result_message].id, p.call_id): p.key for p in transcript.pairs}
        from archive import Scope  # the replay's scope: one per session

        self.scope = Scope("replay", "replay", f"session-{id(transcript)}")

    def view(self, live: list[Message], point: int, idle: float | None = None) -> tuple[list[Message], list[Message]]:
        total = self.tokens.total(live)
        count = self._count(live, total)
        cold = plans_cold(idle, self.compactor.config.profile)
        if count < self.next_at and not (cold and self.cold_trigger is not None and count >= self.cold_trigger):
            return live, live
        compactor = self.compactor.for_tokens(live, total, self.target, self.tokens.total) if self.target \
            else self.compactor
        horizon = self.horizon(self.transcript, point) if self.horizon else None
        decision = compactor.plan_sync(live, scope=self.scope, horizon=horizon, idle_seconds=idle)
        self.bill.events += 1
        if decision.status is Status.DECIDED and decision.plan is not None:
            self.bill.adopted += 1
            self.bill.thinking_stripped += decision.plan.thinking_stripped
            before = {(m.id, b.id) for m in live for b in m.content if isinstance(b, ToolResultBlock)}
            kept = {(m.id, b.id): b for m in decision.plan.messages for b in m.content if isinstance(b, ToolResultBlock)}
            for m in live:
                for b in m.content:
                    if isinstance(b, ToolResultBlock) and (m.id, b.id) in before:
                        now = kept.get((m.id, b.id))
                        if (now is None or now is not b) and (m.id, b.id) in self.by_place:
                            self.bill.let_go.append((self.by_place[(m.id, b.id)], point))
            live = list(decision.plan.messages)
            total = self.tokens.total(live)
        elif decision.status is not Status.SKIPPED:
            why = decision.reason.value
            self.bill.refused[why] = self.bill.refused.get(why, 0) + 1
        if self.target is not None and total > self.target:
            explained = decision.status is not Status.DECIDED or bool(decision.detail)
            self.bill.over_target += explained
            self.bill.unexplained += not explained
        count = self._count(live, total)
        self.next_at = next_trigger(count, self.trigger)
        return live, live


def _when(message: Message) -> float | None:
    stamp = message.timestamp
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def calls_of(messages: Sequence[Message]) -> list[int]:
    """The model calls a history records: each assistant message after the first message (the call that
    wrote it, its request the messages before it)."""
    return [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]


def replay(messages: Sequence[Message], policies: Sequence[Policy], profile: str | PricingProfile = DEFAULT_PROFILE,
           window: int | None = None, count: Callable[[Message], int] | None = None, prefix: int = 0
           ) -> dict[str, Bill]:
    """Every policy over one session: each assistant message is a model call whose request is the
    history before it as the policy shapes it. Returns each policy's bill, by name. `prefix`: the tokens
    every request carries before the history and a transcript does not hold (a host's system prompt, tool
    definitions, memory files: ~28 000 estimated tokens for Claude Code, `jev.billing.usage.fitted_prefix`),
    written on the first call and after the cache went cold, read from the cache on every other; the same
    for every policy, so it narrows every ratio to no compaction toward 1 (`Bill.prefix` is its part).
    `replayed` then `Replayed.priced`, for a caller that knows its prefix before it replays."""
    require_integer("prefix", prefix, 0)
    return {name: run.priced(prefix, window) for name, run in replayed(messages, policies, profile, count).items()}


@dataclass(frozen=True, slots=True)
class Replayed:
    """One policy's calls over a session, before they are priced: the bill its policy kept (events,
    adoptions, refusals, the results let go) and, per call, the history tokens it sent, those of them read
    from the cache, and whether it wrote the cache afresh (the first call, or one after the cache went
    cold under `profile`'s lifetime). What a prefix adds depends on nothing else, so a prefix fitted
    after the replay (`jev cost --prefix-tokens auto`) is priced in without replaying again."""

    profile: PricingProfile
    bill: Bill
    sent: array[int]  # 8 bytes a call (a `jev cost` run holds every conversation's until the prefix is fitted)
    read: array[int]
    fresh: bytes  # 1 where the call wrote the cache afresh

    def priced(self, prefix: int = 0, window: int | None = None, warm: int = 0) -> Bill:
        """The bill with every call priced under the profile, each request carrying `prefix` tokens before
        its history (written on a fresh call, read on every other), and those over `window` counted. `warm`:
        the tokens the session's first request found in the cache already — the system prompt and tools an
        earlier session wrote, a resumed session's history (`jev.billing.usage.warm_tokens` reads it from the usage)."""
        require_integer("prefix", prefix, 0)
        require_integer("warm", warm, 0)
        price, kept = self.profile, self.bill
        bill = replace(kept, refused=dict(kept.refused), let_go=list(kept.let_go))
        for k, (history, history_read, fresh) in enumerate(zip(self.sent, self.read, self.fresh, strict=True)):
            prefix_read = 0 if fresh else prefix
            size, read = history + prefix, history_read + prefix_read
            if k == 0 and warm:  # found, not written: the same for every policy (nothing is compacted yet)
                read = min(size, warm)
                prefix_read = min(prefix, read)
            bill.calls += 1
            bill.sent += size
            bill.read += read
            bill.billed += price.billed(read, size - read)
            bill.prefix += price.billed(prefix_read, prefix - prefix_read)
            bill.largest = max(bill.largest, size)
            bill.over_window += window is not None and size > window
        return bill


def replayed(messages: Sequence[Message], policies: Sequence[Policy], profile: str | PricingProfile = DEFAULT_PROFILE,
             count: Callable[[Message], int] | None = None) -> dict[str, Replayed]:
    """Every policy over one session (see `replay`), its calls not yet priced: by policy name."""
    price = pricing(profile)
    transcript = analyze(messages)
    tokens = Tokens(count)
    calls = calls_of(messages)
    out: dict[str, Replayed] = {}
    for policy in policies:
        policy.start(transcript, tokens)
        live: list[Message] = []
        upto = 0
        previous: list[Message] = []
        last_time: float | None = None
        sizes, reads, fresh = array("q"), array("q"), bytearray()
        for i in calls:
            live.extend(messages[upto:i])
            upto = i
            now = _when(messages[i])
            idle = now - last_time if now is not None and last_time is not None else None
            sent, live = policy.view(live, i - 1, idle)
            shared = 0
            for old, new in zip(previous, sent, strict=False):  # the shared prefix
                if old is not new:
                    break
                shared += 1
            cold = idle is not None and idle > price.lifetime
            sizes.append(tokens.total(sent))
            reads.append(0 if cold else tokens.total(sent[:shared]))
            fresh.append(cold or len(fresh) == 0)  # the first call writes the prefix too
            previous, last_time = list(sent), now if now is not None else last_time  # `sent` may be `live`, which grows
        out[policy.name] = Replayed(price, policy.bill, sizes, reads, bytes(fresh))
    return out


def ratio(bill: Bill, base: Bill) -> float:
    """`bill`'s billed input over `base`'s (nan when the base billed nothing)."""
    return bill.billed / base.billed if base.billed else math.nan


def calls_after(transcript: Transcript, point: int) -> int:
    """The model calls a session really made after decision point `point` (the replay's oracle horizon:
    for measuring the library's estimate, never available to a live host)."""
    return max(1, sum(1 for m in transcript.messages[point + 1:] if m.role == "assistant"))
