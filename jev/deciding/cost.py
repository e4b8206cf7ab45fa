"""What a compaction costs under prompt caching, and whether it pays.

Providers bill the part of a request that repeats the previous request's prefix at a cache-read price
(Anthropic ~0.1× the base input price, OpenAI 0.1–0.5×) and the rest at a write price (Anthropic 1.25×
for a 5-minute cache, 2× for an hour; OpenAI the base price). A compaction changes the history from its
first changed message on, so the next call writes everything after that point again instead of reading
it, and every later call reads fewer tokens. It pays once what it frees, read on each later call,
outweighs what it re-bills once:

    extra  = rebilled × write − replaced × read          (the next call; `replaced` = what it re-bills held)
    saving = freed × read                                 (each call after it)
    net(H) = extra − (H − 1) × saving                     (H = later model calls, the next one included)

All figures are in tokens at the base input price; a profile's multipliers turn tokens into that unit.
With `no-cache` pricing (read = write = 1) `extra` is −freed and net(H) = −H × freed: any reduction pays,
and the compactor's gate reduces to `minimum_reduction`. A cache already cold (idle past the profile's
lifetime) re-bills nothing that was not to be written anyway: the next call writes either history whole.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..model.blocks import is_media, kind_of
from ..model.transcript import Message, TextBlock, ToolResultBlock
from ..reading.analysis import Transcript
from ..reading.state import estimate_tenths, estimate_tenths_each, estimate_tokens, whole_tokens
from ..support.validate import require_in, require_integer, require_text

MESSAGE_TOKENS = 4  # what a provider adds per message (role, separators): an approximation, the same for all
MEDIA_TOKENS = 1_600  # an image or document block: billed by its pixels (~w×h/750, about 1 600 at most), not its base64


@dataclass(frozen=True, slots=True)
class PricingProfile:
    """A provider's input pricing relative to its base input price: a cached prefix token costs
    `cache_read`, a token written to the cache (or sent uncached) `cache_write`; an unused cache entry
    lives `lifetime` seconds."""

    name: str
    cache_read: float
    cache_write: float
    lifetime: float

    def __post_init__(self) -> None:
        require_text("name", self.name)
        require_in("cache_read", self.cache_read, 0, None)
        require_in("cache_write", self.cache_write, 0, None, open_low=True)
        require_in("lifetime", self.lifetime, 0, None)
        if self.cache_read > self.cache_write:
            raise ConfigError(f"cache_read must be <= cache_write (got {self.cache_read} > {self.cache_write})")

    def billed(self, read: int, written: int) -> float:
        """A request's input at the base price: `read` tokens from the cache, `written` not."""
        return read * self.cache_read + written * self.cache_write


PROFILES = {p.name: p for p in (
    PricingProfile("anthropic-5m", cache_read=0.1, cache_write=1.25, lifetime=300.0),
    PricingProfile("anthropic-1h", cache_read=0.1, cache_write=2.0, lifetime=3600.0),
    PricingProfile("openai", cache_read=0.1, cache_write=1.0, lifetime=600.0),
    PricingProfile("no-cache", cache_read=1.0, cache_write=1.0, lifetime=0.0),
)}
DEFAULT_PROFILE = "anthropic-5m"  # a write costs 12.5 reads (anthropic-1h, Claude Code's own: 20)


def pricing(profile: str | PricingProfile) -> PricingProfile:
    """A profile by name (`anthropic-5m`, `anthropic-1h`, `openai`, `no-cache`) or one of your own."""
    if isinstance(profile, PricingProfile):
        return profile
    if isinstance(profile, str) and profile in PROFILES:
        return PROFILES[profile]
    raise ConfigError(f"pricing must be one of {', '.join(PROFILES)} or a jev.deciding.cost.PricingProfile (got {profile!r})")


def tokens_of(messages: Sequence[Message]) -> int:
    """Estimated tokens of what the model is sent of `messages`: SPEC §4's estimate over their text,
    thinking, calls and results — never ids or metadata — plus `MESSAGE_TOKENS` each, and `MEDIA_TOKENS`
    for an image or document (a provider bills its pixels, not its base64). One estimate over the joined
    text (the estimate is additive across newlines), so a long history costs one vectorised pass."""
    text, media = _billed([b for m in messages for b in m.content])
    return MESSAGE_TOKENS * len(messages) + _content_tokens(estimate_tenths(text), media)


def _billed(blocks: Sequence[Any]) -> tuple[str, int]:
    """What the estimate reads of these blocks: their visible text, joined by newlines, and how many
    images or documents they hold (a result's included). One pass; a text block, the usual one, inline."""
    texts: list[str] = []
    media = 0
    for b in blocks:
        if type(b) is TextBlock:
            texts.append(b.text)
        elif is_media(b):
            media += 1
        else:
            texts.append(kind_of(b).token_text(b))
            if type(b) is ToolResultBlock and type(b.output) is tuple and any(is_media(x) for x in b.output):
                media += 1
    return "\n".join(texts), media


def _content_tokens(tenths: int, media: int) -> int:
    """What text of `tenths` tenths of a token and `media` images or documents cost: the text rounded up,
    each medium `MEDIA_TOKENS`."""
    return MEDIA_TOKENS * media + whole_tokens(tenths)


def tokens_each(messages: Sequence[Message]) -> list[int]:
    """`tokens_of((m,))` for each message, estimated in one pass over all their text."""
    texts, media = [], []
    for m in messages:
        text, n = _billed(m.content)
        texts.append(text.encode())
        media.append(n)
    return [MESSAGE_TOKENS + _content_tokens(tenths, n)
            for n, tenths in zip(media, estimate_tenths_each(texts), strict=True)]


Counter = Callable[[Message], int]  # one message's tokens: `message_tokens` or a host's tokenizer


def message_tokens(message: Message) -> int:
    """`tokens_of` one message."""
    return tokens_of((message,))


SAMPLE_CHARS = 200_000  # text a history's characters-per-token ratio is estimated on


class HistoryTokens:
    """Per-message token counts for a history already analyzed, without estimating every message: SPEC §4's
    estimate over an evenly spaced sample of each role's messages (about `SAMPLE_CHARS` of text in all)
    gives that role's tokens per model-visible character, and each message counts `MESSAGE_TOKENS` plus its
    characters (known from the analysis; a message made since, such as a tombstone, is measured) at its
    role's rate, but a sampled message keeps its own count (so under twice `SAMPLE_CHARS` every message
    does). A message holding media is measured whole and kept out of the rates. Sampled by role, a history
    whose roles alternate (a call, its result, the next call) is not sampled on one role alone when the
    stride is even: within 1 % of measuring every message on every dev history, at a fraction of its cost
    on long histories (`tests/test_dev_data.py`)."""

    sampled: dict[int, tuple[int, int]]  # each sampled message's (tenths, media), by index
    per_char: float
    _roles: list[str]
    _by_role: dict[str, list[int]]  # each role's messages, those measured whole left out
    _lineage: object  # the transcript's these counts are
    _messages: Sequence[Message]
    _sizes: Sequence[int]
    _rates: list[float]
    _at: dict[int, int]
    _exact: dict[int, int]

    def __init__(self, transcript: Transcript, before: HistoryTokens | None = None,
                 made: Callable[[Sequence[Message]], list[int]] | None = None) -> None:
        """`before`: the counts of a history this one grew from (`transcript.extends` its transcript's):
        what it measured, grouped and indexed of the earlier messages is taken, not done again."""
        messages, sizes = transcript.messages, transcript.sizes
        exact = exact_indices(transcript)  # measured whole: those holding media (pixels, not characters)
        total = sum(sizes) - sum(sizes[k] for k in exact)
        step = max(1, total // SAMPLE_CHARS)
        if before is None or before._lineage not in (transcript.lineage, transcript.extends):
            before = None
        held = len(before._messages) if before is not None else 0
        roles = (before._roles if before is not None else []) + [m.role for m in messages[held:]]
        by_role = {role: list(indices) for role, indices in before._by_role.items()} if before is not None else {}
        for k in range(held, len(messages)):
            indices = by_role.setdefault(roles[k], [])  # a role all of whose messages are measured whole: none
            if k not in exact:
                indices.append(k)
        picked = {role: indices[::step] for role, indices in by_role.items()}
        # each sampled message's (tenths, media) — the estimate is additive across messages (their texts
        # join at newlines, which cost nothing), so one measured before, in a history this one grew from,
        # is not measured again
        known = before.sampled if before is not None else {}
        missing = [k for indices in picked.values() for k in indices if k not in known]
        billed = [_billed(messages[k].content) for k in missing]
        measured = dict(zip(missing, zip(estimate_tenths_each([text.encode() for text, _n in billed]),
                                         [n for _text, n in billed], strict=True), strict=True))
        self.sampled = {k: known[k] if k in known else measured[k] for indices in picked.values() for k in indices}
        # each role's rate from its own sample (a role whose sample holds no characters: the pooled rate);
        # the history's rate (`per_char`) weighs them by their roles' characters
        tokens, chars = {}, {}
        for role, indices in picked.items():
            tenths, media = map(sum, zip(*map(self.sampled.__getitem__, indices), strict=True)) if indices else (0, 0)
            tokens[role] = _content_tokens(tenths, media)
            chars[role] = sum(map(sizes.__getitem__, indices))
        pooled = sum(tokens.values()) / sum(chars.values()) if any(chars.values()) else 0.0
        rates = {role: tokens[role] / chars[role] if chars[role] else pooled for role in picked}
        self.per_char = sum(rates[role] * sum(map(sizes.__getitem__, indices))
                            for role, indices in by_role.items()) / total if total else 0.0
        self._rates = list(map(rates.__getitem__, roles))  # per message
        self._roles, self._by_role, self._lineage = roles, by_role, transcript.lineage
        # by identity: a message's position, checked against the list itself (ints only: nothing for the
        # garbage collector to track per message)
        self._messages, self._sizes = messages, sizes
        self._at = dict(before._at) if before is not None else {}
        self._at.update(zip(map(id, messages[held:]), range(held, len(messages)), strict=True))
        earlier = before._exact if before is not None else {}
        self._exact = {k: earlier[k] if k in earlier else tokens_of((messages[k],)) for k in exact}
        self._known: list[int] | None = None
        self._made = tokens_each if made is None else made  # how `total` measures messages not in the history

    def __call__(self, message: Message) -> int:
        k = self._at.get(id(message))
        if k is not None and self._messages[k] is message:
            return self.of_history()[k]
        return tokens_of((message,))  # a message the plan made (a tombstone, a cut result): measured

    def of_history(self) -> list[int]:
        """Every message of the history's tokens, in order (computed once)."""
        known = self._known
        if known is None:
            known = self._known = [MESSAGE_TOKENS + round(n * rate) for n, rate in zip(self._sizes, self._rates,
                                                                                          strict=True)]
            for k, (tenths, media) in self.sampled.items():  # measured: their own counts (every message of
                known[k] = MESSAGE_TOKENS + _content_tokens(tenths, media)  # a history under the sample's size)
            for k, tokens in self._exact.items():  # measured whole
                known[k] = tokens
        return known

    def split(self, messages: Sequence[Message], k: int) -> tuple[int, int] | None:
        """The tokens of `messages[:k]` and `messages[k:]` when `messages` is this history (the very
        sequence it was made with), from the known counts; else None."""
        if messages is not self._messages:
            return None
        known = self.of_history()
        return sum(known[:k]), sum(known[k:])

    def total(self, messages: Sequence[Message]) -> int:
        """The tokens of `messages`: `sum(map(self, messages))`, the plan's new messages measured together."""
        at, held, known, total, new = self._at, self._messages, self.of_history(), 0, []
        for m in messages:
            k = at.get(id(m))
            if k is not None and held[k] is m:
                total += known[k]
            else:
                new.append(m)
        return total + sum(self._made(new))


def sampled_tokens(texts: Sequence[str]) -> int:
    """SPEC §4's estimate of `texts` together, from an evenly spaced sample of them (about `SAMPLE_CHARS`)
    scaled to their length: one pass over the sample, whatever their number."""
    total = sum(map(len, texts))
    if total <= SAMPLE_CHARS:
        return estimate_tokens("\n".join(texts))
    step = max(1, int(total // SAMPLE_CHARS))
    sample = texts[::step]
    chars = sum(map(len, sample))
    return round(estimate_tokens("\n".join(sample)) * total / chars) if chars else 0


def exact_indices(transcript: Transcript) -> frozenset[int]:
    """The messages `HistoryTokens` measures whole: those holding media (billed by pixels, not characters),
    outside results or inside them."""
    return transcript.opaque | transcript.mixed_results


def first_change(before: Sequence[Message], after: Sequence[Message]) -> int:
    """The index of the first message `after` does not share with `before` (the same object, or an equal
    one); `len(after)` when `after` is a prefix of `before`."""
    for i, (old, new) in enumerate(zip(before, after, strict=False)):  # the shared length
        if old is not new and old != new:
            return i
    return min(len(before), len(after))


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """What adopting a compaction does to the bill (module docstring), in tokens at the base price."""

    profile: str
    horizon: int  # later model calls the figures cover, the next one included
    first_change: int  # index of the first message the compaction changes
    tokens_before: int
    tokens_after: int
    rebilled: int  # tokens from the first change on, written again by the next call
    replaced: int  # tokens the original held from that point on (what the next call would have read)
    extra: float  # the next call's added cost
    saving: float  # each later call's saving
    break_even: float  # later calls (after the next) until the savings repay `extra`; inf when nothing is freed
    net: float  # billed change over the horizon: negative when the compaction pays

    @property
    def freed(self) -> int:
        """Tokens fewer on every later call."""
        return self.tokens_before - self.tokens_after

    @property
    def pays(self) -> bool:
        return self.net < 0

    def as_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "horizon": self.horizon, "first_change": self.first_change,
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after, "freed": self.freed,
                "rebilled": self.rebilled, "replaced": self.replaced, "extra": round(self.extra, 1),
                "saving_per_call": round(self.saving, 1),
                "break_even_calls": None if math.isinf(self.break_even) else round(self.break_even, 2),
                "net": round(self.net, 1), "pays": self.pays}


def estimate(before: Sequence[Message], after: Sequence[Message], horizon: int,
             profile: str | PricingProfile = DEFAULT_PROFILE, count: Counter | None = None,
             cold: bool = False) -> CostEstimate:
    """The billed effect of replacing the history `before` (as last sent) by `after`, over `horizon`
    later model calls. `count` counts one message's tokens (default `message_tokens`; a host may pass its
    tokenizer's); `cold`: the cache has expired, so the next call writes whatever it sends."""
    price = pricing(profile)
    require_integer("horizon", horizon, 1)
    tokens = (tokens_of if count is None else count.total if isinstance(count, HistoryTokens)
              else (lambda ms: sum(count(m) for m in ms)))
    k = first_change(before, after)
    known = count.split(before, k) if isinstance(count, HistoryTokens) else None
    head, replaced = known if known is not None else (tokens(before[:k]), tokens(before[k:]))
    rebilled = tokens(after[k:])
    read = price.cache_write if cold else price.cache_read  # a cold cache rewrites the original too
    extra = rebilled * price.cache_write - replaced * read
    freed = replaced - rebilled
    saving = freed * price.cache_read
    if extra <= 0:
        break_even = 0.0
    elif saving > 0:
        break_even = extra / saving
    else:
        break_even = math.inf
    return CostEstimate(price.name, horizon, k, head + replaced, head + rebilled, rebilled, replaced, extra, saving,
                        break_even, extra - (horizon - 1) * saving)


_ROLE = operator.attrgetter("role")


COLD_TRIGGER_DIVISOR = 5  # at a cold cache, plan from a fifth of the trigger on (chosen by replay: docs/concepts/cost.md)


def cold_trigger(trigger: int) -> int:
    """The count (in the trigger's unit) from which a host plans when its cache has gone cold anyway (idle past
    the pricing's lifetime): the next call re-writes the whole history whatever happens, so a compaction then
    costs no extra write. A fifth of the trigger, at least 1: on the dev Claude Code sessions (the ones whose
    timestamps show the gaps) it lowered the defaults' bill at every trigger and profile replayed, a fifth and
    two fifths alike, three fifths a little less."""
    return max(1, trigger // COLD_TRIGGER_DIVISOR)


def next_trigger(count: int, trigger: int) -> int:
    """The count (in the trigger's unit) a history must reach before the next plan, once one was made at
    `count`: the next multiple of `trigger` above it, never below the trigger itself. Deep, rare compactions:
    prompt caching re-bills everything after a change, so a plan is not retried on every call."""
    return max(trigger, (count // trigger + 1) * trigger)


def plans_cold(idle: float | None, profile: PricingProfile) -> bool:
    """Whether a host plans at a cold cache now (from `cold_trigger` on): the cache outlived its lifetime since
    the last call. Never under a profile with no cache lifetime (`no-cache`): there every call is "cold", and
    planning at each would ask the judge at every call for nothing a trigger would not give."""
    return idle is not None and profile.lifetime > 0 and idle > profile.lifetime


HORIZON_DIVISOR = 3  # the later calls a history can expect: the calls made so far, divided by this ...
HORIZON_CAP = 10  # ... and at most this many: a plan must repay its re-write within ten calls
HORIZON_RULE = "a third of the model calls made so far, at least 1 and at most 10"  # for help texts and docs


def horizon_from_history(messages: Sequence[Message], calls_left: int | None = None) -> int:
    """The later model calls a history can expect when its host does not say (`HORIZON_RULE`): a third of
    the model calls made so far (its assistant messages), at least 1 and at most `HORIZON_CAP`, and no more than
    `calls_left` (the host's own limit, such as mini-swe-agent's step limit, where it has one).

    Chosen by replay on the dev sets (`benchmarks/horizon.md`): at the points where a trigger fires, the calls
    still to come are a median 0.33× (SWE-bench), 0.54× (DeepSeek) and 0.69× (Claude Code) of those made, but a
    long session near its end is where the estimate runs past the truth, and a plan that needs many calls to
    repay its re-write is the one that then loses. A third alone held on dev but not on sessions outside it
    (50 k trigger, up to 1.002×); capped at 6 to 12 calls it held in every dev cell (both mini-swe-agent
    models, Claude Code, 20 k and 50 k, anthropic-5m and openai), at 15 and 20 it did not. An estimate too high
    adopts plans that do not pay; too low refuses some that do (the cap gives up the small savings at a
    50 k trigger on the mini-swe-agent sets)."""
    estimate = min(HORIZON_CAP, max(1, list(map(_ROLE, messages)).count("assistant") // HORIZON_DIVISOR))
    return estimate if calls_left is None else max(1, min(estimate, calls_left))


def check_horizon(horizon: int | None, idle_seconds: float | None) -> None:
    """A plan's `horizon` (None or an integer >= 1) and `idle_seconds` (None or a number >= 0), or the
    `ConfigError` naming the one that is not."""
    require_integer("horizon", horizon, 1, optional=True)
    if idle_seconds is not None:
        require_in("idle_seconds", idle_seconds, 0, None)


def unprofitable(cost: CostEstimate) -> str:
    """Why a plan was not adopted for cost, in words with its figures."""
    return (f"adopting it would raise the bill under {cost.profile} pricing: it re-bills {cost.rebilled:,} tokens "
            f"from message {cost.first_change} on at the write price and frees {cost.freed:,} tokens a call, "
            f"which repays that after {cost.break_even:.1f} later calls; the horizon is {cost.horizon}")


def cheapest_start(tokens: Sequence[int], lets: Sequence[tuple[int, float]], horizon: int,
                   profile: str | PricingProfile = DEFAULT_PROFILE, cold: bool = False) -> tuple[int, float]:
    """Where a plan's edits should begin to bill the least: `tokens` are the history's messages' tokens,
    `lets` each let-go's (first message it changes, tokens it frees). Starting at position p keeps every
    let-go before p (its message stays, and so does the cached prefix up to p) and applies those at or
    after it; returns the start with the lowest net over the horizon and that net (module docstring).
    An early let-go pays only when it frees enough to repay re-billing everything after it."""
    price = pricing(profile)
    read = price.cache_write if cold else price.cache_read
    suffix = list(itertools.accumulate(reversed(tokens)))[::-1]  # the tokens from each position on
    suffix.append(0)
    best = (len(tokens), 0.0)
    freed = 0.0
    for position, frees in sorted(lets, reverse=True):
        freed += frees
        replaced = suffix[position]
        net = (replaced - freed) * price.cache_write - replaced * read - (horizon - 1) * freed * price.cache_read
        if net < best[1]:
            best = (position, net)
    return best
