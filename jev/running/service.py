"""The tenant-facing service config: `{"jev": {"compaction": {...}}}` in a session's overrides JSON (SPEC §8).

Only the listed keys are accepted, so a tenant can never set a key, an endpoint or an archive path.
Absent, blank or OFF builds nothing: no judge client, no archive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ..deciding.cost import PROFILES
from ..deciding.decision import DEFAULT_BUDGET, ExecutionOptions, Mode, Observer
from ..deciding.policy import CompactionConfig
from ..errors import ConfigError, shown
from ..judges.base import Judge
from ..support.validate import integer_rule, led_by, require_in, require_integer, require_number, require_text
from .compactor import Compactor

SETTINGS = ("mode", "version", "budgetMillis", "threshold", "rejectionThreshold", "eligibleTools",
            "preserveRecentMessages", "maxStateTokens", "maxRequestTokens", "maxQuestions", "truncateHeadChars",
            "minimumReduction", "targetReduction", "pricing", "costGate")
_INTEGERS = {  # JSON key -> CompactionConfig field (its default is the setting's)
    "preserveRecentMessages": "preserve_recent_messages",
    "maxStateTokens": "max_state_tokens",
    "maxRequestTokens": "max_request_tokens",
    "maxQuestions": "max_questions",
    "truncateHeadChars": "truncate_head_chars",
}


def _default(name: str) -> Any:
    """A `CompactionConfig` field's default: the service states none of its own."""
    return CompactionConfig.__dataclass_fields__[name].default


MAX_BUDGET_MILLIS = 30_000  # SPEC §8: a tenant's plan may take up to 30 s
# SPEC §8: a tenant may lower the judge's input caps, never raise them past the library's defaults
MAX_STATE_TOKENS: int = _default("max_state_tokens")
MAX_REQUEST_TOKENS: int = _default("max_request_tokens")
SERVICE_MAX_TRANSCRIPT_CHARS: int = _default("max_transcript_chars")  # not a tenant setting: the default, pinned


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """A parsed, enabled tenant config. Hashable and compared by value: part of an agent's build identity."""

    mode: Mode
    version: str
    budget_millis: int
    config: CompactionConfig

    def options(self, observer: Observer | None = None) -> ExecutionOptions:
        return ExecutionOptions(self.mode, self.budget_millis / 1000, self.version, observer)


def _integer(obj: dict[str, Any], key: str, default: int) -> int:
    return require_integer(f"compaction setting {key}", obj.get(key, default))


def _threshold(obj: dict[str, Any], key: str) -> float:
    return led_by("explicit compaction thresholds required", require_number, key, obj.get(key))  # no default


def _section(overrides_json: str | bytes | None) -> dict[str, Any] | None:
    """The `jev.compaction` object of overrides JSON, or None where the JSON, `jev` or `compaction` is absent
    or blank; a `ConfigError` where one of them is not what it must be."""
    if overrides_json is not None and not isinstance(overrides_json, (str, bytes)):
        raise ConfigError(f"Invalid compaction configuration: overrides must be JSON text, str or bytes (got "
                          f"{type(overrides_json).__name__}; pass orjson.dumps(value) for a parsed object)")
    if overrides_json is None or not overrides_json.strip():
        return None
    try:
        root = orjson.loads(overrides_json)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"Invalid compaction configuration: not JSON ({exc})") from None
    if not isinstance(root, dict):
        raise ConfigError("Invalid compaction configuration: overrides must be a JSON object")
    jev = root.get("jev")
    if jev is None:
        return None
    if not isinstance(jev, dict):
        raise ConfigError("Invalid compaction configuration: jev must be an object")
    compaction = jev.get("compaction")
    if compaction is None:
        return None
    if not isinstance(compaction, dict):
        raise ConfigError("compaction must be an object")
    return compaction


def parse(overrides_json: str | bytes | None) -> ServiceConfig | None:
    """The enabled config from overrides JSON, or None when absent, blank or OFF."""
    compaction = _section(overrides_json)
    if compaction is None:
        return None
    for key in compaction:
        if key not in SETTINGS:
            raise ConfigError(f"Unknown compaction setting {key!r}")
    mode_name = compaction.get("mode", "OFF")
    if not isinstance(mode_name, str) or mode_name not in Mode.__members__:
        raise ConfigError(f"compaction setting mode must be one of OFF, SHADOW, ENFORCE (got {mode_name!r})")
    mode = Mode(mode_name)
    if mode is Mode.OFF:
        return None
    version = require_text("compaction setting version", compaction.get("version", "v1"))
    budget = _integer(compaction, "budgetMillis", round(DEFAULT_BUDGET * 1000))
    if not 1 <= budget <= MAX_BUDGET_MILLIS:
        raise ConfigError(f"compaction budget exceeds service limits: budgetMillis must be "
                          f"{integer_rule(1, MAX_BUDGET_MILLIS)} (got {budget})")
    keep, discard = _threshold(compaction, "threshold"), _threshold(compaction, "rejectionThreshold")
    tools = compaction.get("eligibleTools")
    if not isinstance(tools, list) or not all(isinstance(t, str) and t.strip() for t in tools):
        raise ConfigError("compaction setting eligibleTools must be a list of non-blank tool names "
                          "(the tools whose history is safe to forget)")
    ints: dict[str, Any] = {field: _integer(compaction, key, _default(field)) for key, field in _INTEGERS.items()}
    for key, limit in (("maxStateTokens", MAX_STATE_TOKENS), ("maxRequestTokens", MAX_REQUEST_TOKENS)):
        if ints[_INTEGERS[key]] > limit:
            raise ConfigError(f"compaction budget exceeds service limits: {key} must be "
                              f"{integer_rule(None, limit)} (got {ints[_INTEGERS[key]]})")
    reduction = require_in("compaction setting minimumReduction",
                           compaction.get("minimumReduction", _default("minimum_reduction")), 0, 1, open_high=True)
    target = compaction.get("targetReduction")
    if target is not None:
        target = require_in("compaction setting targetReduction", target, 0, 1, open_low=True, open_high=True)
    pricing = compaction.get("pricing", _default("pricing"))
    if pricing not in PROFILES:  # a tenant names a profile; its own prices are the host's to set in Python
        raise ConfigError(f"compaction setting pricing must be one of {', '.join(PROFILES)} (got {shown(pricing)})")
    gate = compaction.get("costGate", _default("cost_gate"))
    if not isinstance(gate, bool):
        raise ConfigError(f"compaction setting costGate must be true or false (got {shown(gate)})")
    try:
        config = CompactionConfig(discard_threshold=discard, keep_threshold=keep, minimum_reduction=float(reduction),
                                  max_transcript_chars=SERVICE_MAX_TRANSCRIPT_CHARS, eligible_tools=frozenset(tools),
                                  target_reduction=None if target is None else float(target), pricing=pricing,
                                  cost_gate=gate, **ints)
    except ConfigError as exc:
        raise ConfigError(f"invalid compaction config: {exc}") from None
    return ServiceConfig(mode, version, budget, config)


def load(overrides_json: str | bytes | None, *, archive: Any = None, judge: Judge | None = None,
         observer: Observer | None = None) -> Compactor | None:
    """A compactor for the tenant's config, or None (nothing built) when compaction is off.

    The judge defaults to `SystemOneJudge()` with its key from the environment; ENFORCE needs an archive
    supplied by the host (never chosen by the tenant)."""
    settings = parse(overrides_json)
    if settings is None:
        return None
    if settings.mode is Mode.ENFORCE and archive is None:
        raise ConfigError("ENFORCE requires durable archive")
    if judge is None:
        from ..judges.systemone import SystemOneJudge
        judge = SystemOneJudge()
    return Compactor(judge, settings.config, settings.options(observer), archive)
