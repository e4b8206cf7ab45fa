"""Policy: the config, which pairs may be judged (SPEC §3), and scores to actions (SPEC §6).

Rules beat scores: a pinned pair is never a candidate, and uncertainty is never permission to delete.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, TypeVar, cast

from ..errors import ConfigError, shown
from ..model.markers import is_truncated
from ..providers import DEFAULT_THINKING_POLICY, ThinkingPolicy, calls_that_stay, frozen_until, resolve, thinking_policy
from ..reading.analysis import CARRIED_OVER, Pair, Transcript
from ..support.quick import quick_init
from ..support.validate import require_in, require_integer, require_text
from .cost import DEFAULT_PROFILE, PricingProfile, pricing

SUSPENDED_METADATA_KEYS = ("suspended", "pending", "jev.suspended")


class Action(str, Enum):
    """What happens to one pair."""

    KEEP = "KEEP"
    TRUNCATE_RESULT = "TRUNCATE_RESULT"
    DROP_PAIR = "DROP_PAIR"


class PairReason(StrEnum):
    """Why a plan does what it does to one pair (`Scores.reason`, records' `reason`). A let-go's reason is
    its action's name; every other reason keeps the pair (`action_of`). A `StrEnum`, so records, tables and
    f-strings show the bare name, as they did when reasons were strings."""

    DROP_PAIR = "DROP_PAIR"  # the table (or a budget, or a token target) drops the call and its result
    TRUNCATE_RESULT = "TRUNCATE_RESULT"  # the result is cut to its head and a marker; the call stays
    NEEDED_RESULT = "NEEDED_RESULT"  # the result's score is at or above the keep threshold
    UNCERTAIN = "UNCERTAIN"  # between the thresholds: keep when unsure
    REFUSED = "REFUSED"  # the judge gave no score for the pair
    SHORT_RESULT = "SHORT_RESULT"  # a truncation would remove nothing: the result is no longer than its head
    WITHIN_BUDGET = "WITHIN_BUDGET"  # budget mode reached its target before this pair
    CACHED_PREFIX = "CACHED_PREFIX"  # letting it go would re-bill more of the cached prefix than it saves
    PINNED = "PINNED"  # a rule (SPEC §3) keeps it unjudged; `Pins.why` says which


@quick_init
@dataclass(frozen=True, slots=True)
class Scores:
    """The judge's two probabilities for a pair (None when refused or pinned-by-rule) and why."""

    keep_call: float | None
    keep_result: float | None
    reason: PairReason


PINNED_SCORES = Scores(1.0, 1.0, PairReason.PINNED)


def _names(name: str, values: Iterable[str]) -> frozenset[str]:
    if isinstance(values, str):
        raise ConfigError(f"{name} must be a collection of strings, not one string (got {shown(values)})")
    try:
        out = frozenset(values)
    except TypeError:  # not iterable, or holds unhashable values
        raise ConfigError(f"{name} must be a collection of strings (got {type(values).__name__})") from None
    for v in out:
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(f"{name} must contain non-blank strings (got {shown(v)})")
    return out


DEFAULT_SIZE_EXPONENT = 1.0  # size-aware ranking for a judge that names no exponent of its own


@dataclass(frozen=True, slots=True)
class CompactionConfig:
    """Limits and thresholds of one compactor. The default thresholds are for demonstration: calibrate."""

    discard_threshold: float = 0.2
    keep_threshold: float = 0.8
    preserve_recent_messages: int = 6
    # the newest candidate pairs kept out of judgment (a recency window counted in pairs, after every other
    # pin): calibration may certify one together with the thresholds (`jev calibrate --recent-pairs`)
    preserve_recent_pairs: int = 0
    max_state_tokens: int = 25_000
    max_request_tokens: int = 30_000
    max_questions: int = 128
    max_concurrent_requests: int = 4
    truncate_head_chars: int = 300
    minimum_reduction: float = 0.1
    max_transcript_chars: int = 5_000_000
    eligible_tools: frozenset[str] = field(default_factory=frozenset)
    pinned_message_ids: frozenset[str] = field(default_factory=frozenset)
    size_exponent: float | None = None  # None: the judge's own (`jev.judges.base.traits`); 0.0 is SPEC §6's plain table
    size_reference_chars: int = 1000
    tool_thresholds: tuple[tuple[str, float, float], ...] = ()
    target_reduction: float | None = None  # budget mode: let go of this share of candidate result characters
    tombstones: bool = True  # a dropped pair leaves one short line naming it and how to bring it back
    restore_tool: str | None = None  # the restore tool's name, when the host installed it: markers name it
    calibrated_for: str | None = None  # the judge these thresholds were certified for: another is refused
    pricing: str | PricingProfile = DEFAULT_PROFILE  # the prompt-cache pricing the cost gate bills under
    cost_gate: bool = True  # adopt only plans whose billed change over the horizon is negative (jev.deciding.cost)
    model: str | None = None  # the model the history goes to next: selects the provider's rules (jev.providers)
    thinking_policy: ThinkingPolicy | str = DEFAULT_THINKING_POLICY  # thinking a preserved-thinking model binds

    @property
    def profile(self) -> PricingProfile:
        """`pricing` as the profile it names: the field holds the profile itself once the config is built."""
        return cast(PricingProfile, self.pricing)

    @property
    def thinking(self) -> ThinkingPolicy:
        """`thinking_policy` as the policy it names: the field holds the policy itself once the config is built."""
        return cast(ThinkingPolicy, self.thinking_policy)

    def __post_init__(self) -> None:
        d = require_in("discard_threshold", self.discard_threshold, 0, 1)
        k = require_in("keep_threshold", self.keep_threshold, 0, 1)
        if not d < k:
            raise ConfigError(f"keep_threshold must be > discard_threshold (got {k} <= {d})")
        require_integer("preserve_recent_messages", self.preserve_recent_messages, 0)
        require_integer("preserve_recent_pairs", self.preserve_recent_pairs, 0)
        require_integer("max_state_tokens", self.max_state_tokens, 1)
        require_integer("max_request_tokens", self.max_request_tokens, 2)
        if self.max_request_tokens <= self.max_state_tokens:
            raise ConfigError(f"max_request_tokens must be > max_state_tokens "
                              f"(got {self.max_request_tokens} <= {self.max_state_tokens})")
        require_integer("max_questions", self.max_questions, 2, 512)
        require_integer("max_concurrent_requests", self.max_concurrent_requests, 1, 16)
        require_integer("truncate_head_chars", self.truncate_head_chars, 0)
        require_in("minimum_reduction", self.minimum_reduction, 0, 1, open_high=True)
        require_integer("max_transcript_chars", self.max_transcript_chars, 1)
        object.__setattr__(self, "eligible_tools", _names("eligible_tools", self.eligible_tools))
        object.__setattr__(self, "pinned_message_ids", _names("pinned_message_ids", self.pinned_message_ids))
        if self.size_exponent is not None:
            require_in("size_exponent", self.size_exponent, 0, 4)
        require_integer("size_reference_chars", self.size_reference_chars, 1)
        object.__setattr__(self, "tool_thresholds", _tool_thresholds(self.tool_thresholds))
        if self.target_reduction is not None:
            t = require_in("target_reduction", self.target_reduction, 0, 1, open_low=True, open_high=True)
            object.__setattr__(self, "target_reduction", t)
        if not isinstance(self.tombstones, bool):
            raise ConfigError(f"tombstones must be true or false (got {shown(self.tombstones)})")
        if (tool := require_text("restore_tool", self.restore_tool, optional=True)) and not tool.isprintable():
            raise ConfigError(f"restore_tool must be a printable tool name (got {shown(self.restore_tool)})")
        require_text("calibrated_for", self.calibrated_for, optional=True)
        object.__setattr__(self, "pricing", pricing(self.pricing))
        if not isinstance(self.cost_gate, bool):
            raise ConfigError(f"cost_gate must be true or false (got {shown(self.cost_gate)})")
        require_text("model", self.model, optional=True)
        object.__setattr__(self, "thinking_policy", thinking_policy(self.thinking_policy))

    def thresholds(self, tool: str) -> tuple[float, float]:
        """(discard, keep) for a tool: its own pair from `tool_thresholds`, else the global ones."""
        for name, d, k in self.tool_thresholds:
            if name == tool:
                return d, k
        return self.discard_threshold, self.keep_threshold

    @classmethod
    def from_mapping(cls, values: dict[str, Any], where: str = "config") -> CompactionConfig:
        """A config from a JSON object of field names (as `jev compact --config` reads it)."""
        if not isinstance(values, dict):
            raise ConfigError(f"{where}: must be a JSON object of CompactionConfig fields")
        known = set(cls.__dataclass_fields__)
        for key in values:
            if key not in known:
                raise ConfigError(f"{where}: unknown CompactionConfig field {shown(key)}")
        values = dict(values)
        stamp = values.get("calibrated_for")
        if isinstance(stamp, dict):  # `jev calibrate` stamps thresholds.json with what it certified for
            judge = stamp.get("judge")
            if judge is not None and not isinstance(judge, str):
                raise ConfigError(f"{where}: calibrated_for.judge must be a judge name (got {shown(judge)})")
            values["calibrated_for"] = judge or None
        for key in ("eligible_tools", "pinned_message_ids"):
            if isinstance(values.get(key), list):
                values[key] = frozenset(values[key])
        return cls(**values)


def _tool_thresholds(value: Any) -> tuple[tuple[str, float, float], ...]:
    """`{tool: [discard, keep]}` (or already-normalised triples) as a sorted, hashable tuple."""
    items = value.items() if isinstance(value, dict) else ((t[0], t[1:]) for t in value)
    out = []
    for tool, pair in items:
        if not isinstance(tool, str) or not tool.strip():
            raise ConfigError(f"tool_thresholds keys must be non-blank tool names (got {shown(tool)})")
        pair = tuple(pair)
        if len(pair) != 2:
            raise ConfigError(f"tool_thresholds[{tool!r}] must be [discard_threshold, keep_threshold]")
        d = require_in(f"tool_thresholds[{tool!r}] discard", pair[0], 0, 1)
        k = require_in(f"tool_thresholds[{tool!r}] keep", pair[1], 0, 1)
        if not d < k:
            raise ConfigError(f"tool_thresholds[{tool!r}] keep must be > discard (got {k} <= {d})")
        out.append((tool, d, k))
    return tuple(sorted(out))


@dataclass(frozen=True, slots=True)
class Pins:
    """Which pairs a plan may judge (SPEC §3): the reason each other pair is pinned, and the candidates
    that may only be truncated — their call's message carries thinking, which pins that message (and so
    the call in it) but not the result's own message (issue 36: a result is not the message that carries
    the thinking; DROP_PAIR stays forbidden)."""

    why: dict[str, str]  # key -> the first rule that pins the pair, in words
    truncate_only: frozenset[str]  # candidate keys whose call sits in a message that carries thinking

    def candidates(self, transcript: Transcript) -> list[Pair]:
        """The pairs that may be judged, in key order."""
        return [p for p in transcript.pairs if p.key not in self.why]


def _message_pins(transcript: Transcript, config: CompactionConfig) -> dict[int, str]:
    """The messages pinned by a rule other than thinking, each with the first rule that pins it, in words:
    the first message, the recent window, the last message, a system message, a pinned id, its metadata,
    content jev does not read (said as thinking when the message holds thinking too). System messages and
    `jev_pinned` metadata are found by the analysis (`Transcript.self_pinned`)."""
    messages, n = transcript.messages, len(transcript.messages)
    why: dict[int, str] = {}
    if n:
        why[0] = "the first message"
    for i in range(max(0, n - config.preserve_recent_messages), n):
        why.setdefault(i, "in the recent window")
    if n:
        why.setdefault(n - 1, "the last message (a history ends as it ended)")
    for i in sorted(transcript.self_pinned):
        if messages[i].role == "system":
            why.setdefault(i, "a system message")
    if config.pinned_message_ids:
        for i, message in enumerate(messages):
            if message.id in config.pinned_message_ids:
                why.setdefault(i, "a pinned message id")
    for i in sorted(transcript.self_pinned):
        why.setdefault(i, "pinned by its metadata")
    for i in sorted(transcript.opaque):
        why.setdefault(i, "its message holds thinking" if i in transcript.thinking
                       else "its message holds content other than text (an image, a file)")
    return why


def pinned_message_indices(transcript: Transcript, config: CompactionConfig) -> set[int]:
    """Indices of the messages no judgment may change (SPEC §3): the rules', and those carrying thinking."""
    return set(_message_pins(transcript, config)) | transcript.thinking


def _pair_rule(pair: Pair, config: CompactionConfig) -> str | None:
    """The rule on the pair itself that pins it, in words, or None."""
    result, meta = pair.result, pair.result.metadata
    if pair.call_message == CARRIED_OVER:  # first: no other rule speaks of a call that is not here
        return "its call is not in this history (carried over from an earlier session)"
    if pair.tool not in config.eligible_tools:
        return "its tool is not eligible"
    if result.state != "success":
        return f"its result state is {result.state}"
    if meta and any(meta.get(k) is True for k in SUSPENDED_METADATA_KEYS):
        return "its result is suspended or pending"
    if not result.text_only:
        return "its result holds a non-text block"
    if is_truncated(result):  # an earlier plan's marker: its bytes stay as they are (the cache holds them)
        return "already cut by an earlier plan"
    return None


def pins(transcript: Transcript, config: CompactionConfig) -> Pins:
    """The one place pinning is decided (SPEC §3, amended: a call in a message carrying thinking leaves its
    result truncatable)."""
    ruled = _message_pins(transcript, config)
    thinking = transcript.thinking
    model, rules = resolve(transcript.messages, config.model)
    held = frozen_until(transcript.messages, rules, config.thinking) if thinking else -1
    staying = calls_that_stay(transcript.messages, rules, bool(thinking))
    why: dict[str, str] = {}
    truncate_only: set[str] = set()
    for pair in transcript.pairs:
        rule = _pair_rule(pair, config) if pair.call_message == CARRIED_OVER else None
        if rule is None and min(pair.call_message, pair.result_message) <= held and pair.call_message != CARRIED_OVER:
            rule = (f"at or before the thinking that {model or 'the default model'} binds to its prefix "
                    f"(thinking policy {config.thinking.value})")
        if rule is None:
            pinned_at = (pair.call_message if pair.call_message in ruled
                         else pair.result_message if pair.result_message in ruled else None)
            rule = (ruled[pinned_at] if pinned_at is not None
                    else "its message holds thinking" if pair.result_message in thinking
                    else _pair_rule(pair, config))
        if rule is not None:
            why[pair.key] = rule
        elif pair.call_message in thinking or pair.call_id in staying:
            truncate_only.add(pair.key)
    if config.preserve_recent_pairs:  # the newest candidates, in the order results appear
        newest = [pair.key for pair in transcript.pairs if pair.key not in why][-config.preserve_recent_pairs:]
        for key in newest:
            why[key] = f"among the newest {config.preserve_recent_pairs} candidate pairs (preserve_recent_pairs)"
        truncate_only.difference_update(newest)
    return Pins(why, frozenset(truncate_only))


def why_pinned(transcript: Transcript, config: CompactionConfig) -> dict[str, str]:
    """For every pair that is not a candidate, the first rule that pins it (SPEC §3), in words."""
    return pins(transcript, config).why


def candidates(transcript: Transcript, config: CompactionConfig) -> list[Pair]:
    """Pairs that may be judged, in key order (see `pins`)."""
    return pins(transcript, config).candidates(transcript)


def no_candidates_detail(transcript: Transcript, config: CompactionConfig) -> str:
    """Why nothing could be judged, with the tools the history holds and the eligible names it lacks."""
    held = sorted({p.tool for p in transcript.pairs})
    if not held:
        return "the history holds no completed tool call"
    eligible = sorted(config.eligible_tools)
    missing = [name for name in eligible if name not in held]
    if not eligible:
        return f"no tool is eligible (eligible_tools is empty); the history holds {', '.join(held)}"
    if len(missing) == len(eligible):
        return (f"none of the eligible tools ({', '.join(eligible)}) occurs in the history, which holds "
                f"{', '.join(held)}")
    lacking = f"; not in the history: {', '.join(missing)}" if missing else ""
    return ("every pair of an eligible tool is pinned (recent, first, system, thinking, not a plain successful "
            f"text result){lacking}; the history holds {', '.join(held)}")


def value_score(keep_result: float, result_chars: int, config: CompactionConfig) -> float:
    """The result score the policy ranks by: P(needed), per `size_reference_chars` characters when
    size-aware (`size_exponent` > 0; None, a config no compactor has resolved, reads as 1.0), so that big
    results are cheaper to let go."""
    exponent = DEFAULT_SIZE_EXPONENT if config.size_exponent is None else config.size_exponent
    if not exponent:
        return keep_result
    return keep_result * (config.size_reference_chars / max(result_chars, 1)) ** exponent


@quick_init
@dataclass(frozen=True, slots=True)
class Judged:
    """A judged candidate as budget mode sees it: its scores, tool, its result's characters, and what a
    TRUNCATE_RESULT (net of the kept head and the marker) or a DROP_PAIR (net of its tombstone; the whole
    result when None) would remove."""

    key: str
    keep_call: float | None
    keep_result: float | None
    tool: str
    result_chars: int
    truncate_saves: int
    drop_saves: int | None = None
    truncate_only: bool = False  # its call's message carries thinking: the call stays, the result may be cut


def budget_order(judged: Sequence[Judged], config: CompactionConfig
                 ) -> tuple[dict[str, PairReason], list[tuple[Judged, Action, int]]]:
    """Budget mode's ranking, before any cut: the pairs it never lets go (a refusal, a raw `keep_result` ≥
    `keep_threshold`) with their reasons, and the others lowest value first — P(needed) per character the
    let-go would remove — each with its action (TRUNCATE_RESULT when `keep_call` ≥ `keep_threshold`, else
    DROP_PAIR) and what it removes. Calibration certifies targets along this same order."""
    fixed: dict[str, PairReason] = {}
    order: list[tuple[float, int, Judged, Action, int]] = []
    for position, j in enumerate(judged):
        if j.keep_call is None or j.keep_result is None:
            fixed[j.key] = PairReason.REFUSED
        elif j.keep_result >= config.thresholds(j.tool)[1]:
            fixed[j.key] = PairReason.NEEDED_RESULT
        else:
            truncate = j.truncate_only or j.keep_call >= config.thresholds(j.tool)[1]
            action = Action.TRUNCATE_RESULT if truncate else Action.DROP_PAIR
            saves = j.truncate_saves if truncate else j.result_chars if j.drop_saves is None else j.drop_saves
            order.append((value_score(j.keep_result, saves, config), position, j, action, saves))
    return fixed, [(j, action, saves) for _v, _p, j, action, saves in sorted(order, key=lambda item: item[:2])]


def budget_target(judged: Sequence[Judged], target_reduction: float) -> int:
    """The characters budget mode must remove: R × the candidates' result characters, rounded up."""
    return math.ceil(target_reduction * sum(j.result_chars for j in judged))


def budget(judged: Sequence[Judged], config: CompactionConfig) -> tuple[dict[str, PairReason], int, int]:
    """Budget mode (`target_reduction` = R): walk `budget_order` and let go until the result characters
    removed reach R × the candidates' result characters (a let-go that would remove nothing is not one).
    Returns each pair's reason (as `verdict` gives the table's: its action is `action_of` it), the
    characters removed and the target."""
    assert config.target_reduction is not None
    target = budget_target(judged, config.target_reduction)
    out, order = budget_order(judged, config)
    removed = 0
    for j, action, saves in order:
        if removed >= target or saves <= 0:
            out[j.key] = PairReason.WITHIN_BUDGET
            continue
        removed += saves
        out[j.key] = PairReason(action.value)
    return out, removed, target


def deepened(judged: Sequence[Judged], reasons: dict[str, PairReason], removed: int, target: int,
             call_chars: Sequence[int]) -> tuple[dict[str, PairReason], int]:
    """A host's token target that letting go of results did not reach (`removed` < `target`, characters):
    whole pairs whose call the threshold table keeps are dropped too, least needed first — the higher of
    the pair's two scores per character the drop removes beyond its result's let-go, its call's input
    (`call_chars`, per judged pair) counted — until the target is met. A call whose message carries
    thinking stays (that message is pinned whole), and so do a pair the judge refused and one whose
    result it is confident is needed (NEEDED_RESULT). Returns the reasons and the characters removed."""
    if removed >= target:
        return reasons, removed
    order: list[tuple[float, int, str, int]] = []
    for position, (j, call) in enumerate(zip(judged, call_chars, strict=True)):
        reason = reasons[j.key]
        if reason in (PairReason.DROP_PAIR, PairReason.NEEDED_RESULT) or j.truncate_only or j.drop_saves is None \
                or j.keep_call is None or j.keep_result is None:
            continue
        adds = j.drop_saves + call - (j.truncate_saves if reason == PairReason.TRUNCATE_RESULT else 0)
        if adds > 0:
            order.append((max(j.keep_call, j.keep_result) / adds, position, j.key, adds))
    out = dict(reasons)
    for _value, _position, key, adds in sorted(order):
        if removed >= target:
            break
        out[key] = PairReason.DROP_PAIR
        removed += adds
    return out, removed


B = TypeVar("B")  # a bool, or a numpy bool array


def table(result_low: B, call_low: B, call_high: B, truncate_only: B | bool = False) -> tuple[B, B]:
    """SPEC §6's table on comparisons already made — the result score at or below the discard threshold
    (and the raw one under the keep threshold), the call's at or below discard, at or above keep — as
    (drop, truncate). Python bools for one pair (`decide`) or numpy bool arrays for many (calibration's
    `applied`), so the rule calibration certifies is the product's. A call whose message carries thinking
    (`truncate_only`) stays: its result is truncated, never dropped."""
    return (result_low & call_low & (truncate_only ^ True),  # type: ignore[operator]
            result_low & (call_high | truncate_only))  # type: ignore[operator]


def decide(keep_call: float | None, keep_result: float | None, config: CompactionConfig, tool: str = "",
           result_chars: int = 0, truncate_saves: int | None = None, truncate_only: bool = False
           ) -> tuple[Action, Scores]:
    """The SPEC §6 table (inclusive comparisons); a refusal (None) keeps the pair with reason REFUSED.

    With `size_exponent` > 0 (by default the judge's own: 1.0, or what the local judge's weights were
    tuned at) the result score is first scaled by
    `(size_reference_chars / result_chars) ** size_exponent` (expected loss per character saved: big
    results become cheaper to let go, small ones are kept), except that a raw score ≥ `keep_threshold`
    always keeps the result; the scores reported stay the judge's own.
    `size_exponent=0` applies the plain table. Per-tool thresholds apply when the tool has some. A
    TRUNCATE_RESULT that would remove nothing (`truncate_saves` ≤ 0: the result is no longer than its
    kept head and marker) is no truncation: KEEP, reason SHORT_RESULT (SPEC §6 counted it as one). With
    `truncate_only` (the call's message carries thinking, so the call stays) a result let go is always
    TRUNCATE_RESULT, never DROP_PAIR, whatever the call's score."""
    reason = verdict(keep_call, keep_result, config, tool, result_chars, truncate_saves, truncate_only)
    return action_of(reason), Scores(keep_call, keep_result, reason)


def verdict(keep_call: float | None, keep_result: float | None, config: CompactionConfig, tool: str = "",
            result_chars: int = 0, truncate_saves: int | None = None, truncate_only: bool = False) -> PairReason:
    """`decide`'s reason alone (its action is `action_of` the reason): what a plan keeps per pair, a shared
    member the garbage collector does not track."""
    return verdicts((keep_call,), (keep_result,), (tool,), (result_chars,), (truncate_saves,), (truncate_only,),
                    config)[0][0]


def verdicts(keep_calls: Sequence[float | None], keep_results: Sequence[float | None], tools: Sequence[str],
             result_chars: Sequence[int], truncate_saves: Sequence[int | None], truncate_only: Sequence[bool],
             config: CompactionConfig) -> tuple[list[PairReason], list[float | None]]:
    """`verdict` of many pairs (the columns of their arguments), and each one's `value_score` (None for a
    refused result): the rule for a whole plan, its per-tool thresholds looked up once per tool."""
    limits = {tool: config.thresholds(tool) for tool in set(tools)}
    reasons: list[PairReason] = []
    scaled: list[float | None] = []
    for c, r, tool, chars, saves, only in zip(keep_calls, keep_results, tools, result_chars, truncate_saves,
                                              truncate_only, strict=True):
        v = None if r is None else value_score(r, chars, config)
        scaled.append(v)
        if c is None or r is None or v is None:
            reasons.append(PairReason.REFUSED)
            continue
        d, k = limits[tool]
        if r >= k:  # a result the judge is sure is needed is kept, however large
            reasons.append(PairReason.NEEDED_RESULT)
            continue
        drop, truncate = table(v <= d, c <= d, c >= k, only)
        reasons.append(PairReason.DROP_PAIR if drop
                       else (PairReason.SHORT_RESULT if saves is not None and saves <= 0
                             else PairReason.TRUNCATE_RESULT) if truncate
                       else PairReason.NEEDED_RESULT if v >= k else PairReason.UNCERTAIN)
    return reasons, scaled


_LET_GO: dict[str, Action] = {PairReason.DROP_PAIR: Action.DROP_PAIR, PairReason.TRUNCATE_RESULT: Action.TRUNCATE_RESULT}


def action_of(reason: PairReason | str) -> Action:
    """The action a pair's reason stands for: a let-go's reason is its action's name; every other reason
    (REFUSED, NEEDED_RESULT, SHORT_RESULT, UNCERTAIN, WITHIN_BUDGET, CACHED_PREFIX, PINNED) keeps it."""
    return _LET_GO.get(reason, Action.KEEP)
