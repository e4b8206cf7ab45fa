"""What the provider billed for each model call, where a transcript records it, and what that says about
the billed-cost replay (`jev.billing`).

Claude Code writes each call's Anthropic `message.usage` (tokens read from the cache, written to it, and
uncached); mini-swe-agent keeps each response's OpenAI-style `usage` (`prompt_tokens`, of them cached:
`prompt_tokens_details.cached_tokens`, or DeepSeek's `prompt_cache_hit_tokens`) in `extra.response`. Fitted
against SPEC §4's estimate of each call's history, they give what every request carried beyond its history
(a system prompt, tool definitions: the replay's `prefix`) and how the estimate's tokens compare with the
provider's; replayed with that prefix, the no-compaction bill can be held against the provider's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..deciding.cost import PROFILES, PricingProfile, pricing, tokens_each
from ..model.transcript import Message
from . import Bill, calls_of


@dataclass(frozen=True, slots=True)
class Billed:
    """One call's input as the provider counted it: tokens read from the cache, written to it (Anthropic
    bills a write above the base price), and neither (the base price)."""

    read: int
    written: int
    uncached: int
    written_for_an_hour: int = 0  # of `written`, what Anthropic cached for an hour (`anthropic-1h`'s lifetime)

    @property
    def tokens(self) -> int:
        return self.read + self.written + self.uncached

    def cost(self, profile: str | PricingProfile) -> float:
        """At the base input price under `profile`: reads and writes at its multipliers, the rest at 1."""
        return pricing(profile).billed(self.read, self.written) + self.uncached

    @property
    def as_billed(self) -> float:
        """At the base input price as the provider billed it: each write at its own lifetime's multiplier
        (Anthropic's 5-minute and 1-hour writes), reads at the read price, the rest at 1."""
        hour, minutes = PROFILES["anthropic-1h"], PROFILES["anthropic-5m"]
        return (minutes.billed(self.read, self.written - self.written_for_an_hour)
                + hour.billed(0, self.written_for_an_hour) + self.uncached)


def billed(usage: Any) -> Billed | None:
    """A usage object of either shape as `Billed`, or None when it is neither (no counts, or counts that are
    not whole numbers >= 0, or cached tokens beyond the input)."""
    if not isinstance(usage, Mapping):
        return None
    if "input_tokens" in usage:
        total = _count(usage["input_tokens"])
        details = usage.get("input_tokens_details")
        if total is None:
            return None
        if isinstance(details, Mapping):  # OpenAI's Responses: `input_tokens` counts the cached ones too
            return _split(total, details.get("cached_tokens") or 0)
        read, written = _count(usage.get("cache_read_input_tokens") or 0), _count(usage.get("cache_creation_input_tokens") or 0)
        if read is None or written is None:
            return None
        split = usage.get("cache_creation")  # Anthropic: the writes by their lifetime
        hour = _count(split.get("ephemeral_1h_input_tokens") or 0) if isinstance(split, Mapping) else 0
        return Billed(read, written, total, hour if hour is not None and hour <= written else 0)
    prompt = _count(usage.get("prompt_tokens"))
    if prompt is None:
        return None
    details = usage.get("prompt_tokens_details")  # OpenAI's chat completions; DeepSeek's own field first
    return _split(prompt, usage.get("prompt_cache_hit_tokens",
                                    details.get("cached_tokens") if isinstance(details, Mapping) else 0) or 0)


def _count(value: Any) -> int | None:
    """`value` if it is a whole number of tokens (an int >= 0, never a bool), else None."""
    return value if type(value) is int and value >= 0 else None


def _split(total: int, cached: Any) -> Billed | None:
    """`total` input tokens of which `cached` were read from the cache (no write premium: OpenAI, DeepSeek)."""
    cached = _count(cached)
    return Billed(cached, 0, total - cached) if cached is not None and cached <= total else None


def calls_billed(document: Any, messages: Sequence[Message]) -> list[Billed] | None:
    """What the provider billed for each model call the replay makes of `messages` (`jev.billing.calls_of`),
    one of the conversations `document` holds, read from the document: a Claude Code session's lines by
    `uuid` (a message's id is one of its lines'), a mini-swe-agent trajectory's messages by place (its
    messages' ids are `m<index>`, or `m<index>.<k>` for a response's items). None unless every call has one."""
    usage: dict[str, Any] = {}
    if isinstance(document, list):  # Claude Code: JSON Lines
        usage = {e["uuid"]: e["message"].get("usage") for e in document if isinstance(e, dict)
                 and e.get("type") == "assistant" and isinstance(e.get("uuid"), str)
                 and isinstance(e.get("message"), dict)}
    elif isinstance(document, dict) and isinstance(document.get("messages"), list):  # mini-swe-agent
        for i, raw in enumerate(document["messages"]):
            extra = raw.get("extra") if isinstance(raw, dict) else None
            response = extra.get("response") if isinstance(extra, dict) else None
            if isinstance(response, dict):
                usage[f"m{i}"] = response.get("usage")
    out = []
    for k in calls_of(messages):
        message_id = messages[k].id
        found = billed(usage.get(message_id, usage.get(message_id.partition(".")[0])))
        if found is None:
            return None
        out.append(found)
    return out or None


@dataclass(frozen=True, slots=True)
class Prefix:
    """A least-squares line through every call: provider input tokens = `intercept` + `scale` × SPEC's
    estimate of the history before the call. `tokens`: the intercept in the estimate's units (what the
    replay's `prefix` takes)."""

    tokens: int
    intercept: float
    scale: float
    calls: int

    def as_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "intercept": round(self.intercept, 1), "scale": round(self.scale, 4),
                "calls": self.calls}


def fitted_prefix(conversations: Iterable[tuple[Sequence[Message], Sequence[Billed]]]) -> Prefix | None:
    """The `Prefix` of conversations whose calls' usage is known, read once (None with fewer than two
    calls, or when every call's history is estimated alike)."""
    return prefix_of([point for messages, calls in conversations for point in usage_points(messages, calls)])


def usage_points(messages: Sequence[Message], calls: Sequence[Billed]) -> list[tuple[int, int]]:
    """Per model call of one conversation: the estimated tokens of the history before it and the input
    tokens its provider billed (`calls`, as `calls_billed` gives them) — what `prefix_of` fits."""
    before = list(itertools.accumulate(tokens_each(messages), initial=0))
    return [(before[k], call.tokens) for k, call in zip(calls_of(messages), calls, strict=True)]


def prefix_of(points: Sequence[tuple[int, int]]) -> Prefix | None:
    """The least-squares line of billed input tokens against the history's estimate over `points`
    (`usage_points`), as a `Prefix` (None with fewer than two points, or all at one estimate)."""
    import numpy as np

    if len(points) < 2 or len({x for x, _y in points}) < 2:
        return None
    x, y = np.asarray(points, dtype=float).T
    scale, intercept = np.polyfit(x, y, 1)
    return Prefix(max(0, round(intercept / scale)), float(intercept), float(scale), len(points))


def session_prefix(points: Sequence[tuple[int, int]], pooled: Prefix) -> Prefix:
    """The `Prefix` of one conversation, fitted from its own calls' `usage_points` (sessions differ: their
    system prompts, tools and memory files), or `pooled` where they cannot fit one: fewer than two distinct
    points, a negative intercept, or a slope more than twice or less than half the pooled one (a tokenizer
    does not change between sessions; such a slope fits noise, not a prefix)."""
    own = prefix_of(points)
    plausible = own is not None and own.intercept >= 0 and 0.5 * pooled.scale <= own.scale <= 2 * pooled.scale
    return own if plausible and own is not None else pooled


def warm_tokens(calls: Sequence[Billed], prefix: Prefix) -> int:
    """What the conversation's first request found in the cache already, in the estimate's tokens: its
    billed cache read (the system prompt and tools an earlier session wrote, a resumed session's history)."""
    return round(calls[0].read / prefix.scale) if calls and prefix.scale > 0 else 0


def recorded_profile(calls: Sequence[Billed], base: str | PricingProfile) -> PricingProfile:
    """The pricing a conversation's usage records: Anthropic's writes at their own lifetimes' mix (a write
    price between the 5-minute and the 1-hour one, a cache that lives an hour when most writes did), else
    `base` (usage with no writes: OpenAI's and DeepSeek's shape)."""
    base = pricing(base)
    written = sum(c.written for c in calls)
    if not written:
        return base
    hour_share = sum(c.written_for_an_hour for c in calls) / written
    hour, minutes = PROFILES["anthropic-1h"], PROFILES["anthropic-5m"]
    return PricingProfile(f"recorded ({hour_share:.0%} hour-long writes)", minutes.cache_read,
                          minutes.cache_write + hour_share * (hour.cache_write - minutes.cache_write),
                          hour.lifetime if hour_share > 0.5 else minutes.lifetime)


@dataclass(frozen=True, slots=True)
class Sessions:
    """The no-compaction replay against the provider's bill, conversation by conversation: how many, the
    share within ±10 % of what was billed, and those outside, with their replay-over-billed ratios (what
    the replay does not explain, session by session)."""

    count: int
    within: float
    outside: tuple[tuple[str, float], ...]

    def as_dict(self) -> dict[str, Any]:
        return {"conversations": self.count, "within_10_percent": round(self.within, 4),
                "outside": {name: round(r, 4) for name, r in self.outside}}


def sessions_check(rows: Iterable[tuple[str, Sequence[Billed], Bill, float]],
                   profile: str | PricingProfile | None = None) -> Sessions:
    """`Sessions` of conversations each given as its name, what its provider billed, its no-compaction
    `Bill` (priced with its own prefix and warm first request) and its prefix's scale; the provider's bill
    priced under `profile`, or as billed (None: each write at its own lifetime, `Billed.as_billed`)."""
    def provider_cost(call: Billed) -> float:
        return call.as_billed if profile is None else call.cost(profile)
    ratios = [(name, bill.billed * scale / provider) for name, calls, bill, scale in rows
              if (provider := sum(map(provider_cost, calls))) > 0]
    outside = tuple(sorted(((n, r) for n, r in ratios if abs(r - 1) > 0.1), key=lambda item: -abs(item[1] - 1)))
    return Sessions(len(ratios), 1 - len(outside) / len(ratios) if ratios else 0.0, outside)


@dataclass(frozen=True, slots=True)
class Check:
    """The no-compaction replay against what the provider billed, summed over conversations, under one
    profile: the provider's bill (its reads and writes at the profile's multipliers), the replay's with
    the prefix and without it (scaled to the provider's tokens), and each one's cache-read share."""

    profile: str
    billed: float
    replayed: float
    replayed_without_prefix: float
    read_share: float
    replayed_read_share: float
    hour_long_writes: float  # the share of the tokens written to the cache that were cached for an hour

    def as_dict(self) -> dict[str, Any]:
        """The figures as the JSON report gives them (the ratios None where nothing was billed)."""
        def over_billed(value: float) -> float | None:
            return round(value / self.billed, 4) if self.billed else None
        return {"profile": self.profile, "replay_over_billed": over_billed(self.replayed),
                "replay_without_prefix_over_billed": over_billed(self.replayed_without_prefix),
                "cache_read_share": round(self.read_share, 4),
                "replay_cache_read_share": round(self.replayed_read_share, 4),
                "hour_long_cache_writes": round(self.hour_long_writes, 4)}


def check(replayed: Iterable[tuple[Sequence[Billed], Bill]], prefix: Prefix, profile: str | PricingProfile,
          as_billed: bool = False) -> Check:
    """`Check` under `profile` of conversations each given as what the provider billed for its calls and
    the no-compaction `Bill` its replay with `prefix.tokens` gave (under the same profile); `as_billed`: the
    provider's bill with each write at its own lifetime's price (for replays priced as recorded)."""
    price = pricing(profile)
    billed_cost = read = tokens = written = hour = 0.0
    whole = history = replay_read = sent = 0.0
    for calls, bill in replayed:
        billed_cost += sum(call.as_billed if as_billed else call.cost(price) for call in calls)
        read += sum(call.read for call in calls)
        tokens += sum(call.tokens for call in calls)
        written += sum(call.written for call in calls)
        hour += sum(call.written_for_an_hour for call in calls)
        whole, history = whole + bill.billed, history + bill.billed - bill.prefix
        replay_read, sent = replay_read + bill.read, sent + bill.sent
    return Check(price.name, billed_cost, whole * prefix.scale, history * prefix.scale, read / max(1.0, tokens),
                 replay_read / max(1.0, sent), hour / written if written else 0.0)
