"""A token target ("bring the history under N tokens") turned into budget mode's `target_reduction`.

Hosts count tokens their own way; budget mode counts candidate result characters. The excess over the
target is converted to the library's token estimate (the host's count against SPEC §4's estimate of the
same history), then to characters at the candidate results' own characters per token, and taken as a
share of the characters the plan may let go of — the candidate results'. Pure: the compactor's
`for_tokens` sizes a plan with it (and keeps the excess itself, which a plan that letting go of results
cannot reach frees by dropping whole pairs: `jev.deciding.policy.deepened`), and a plan checks what it leaves in the
host's tokens — with the host's counter, or estimated here (`tokens_left`) — asking for more while over.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ConfigError, JevError, shown
from ..model.transcript import Message
from ..reading.analysis import Transcript, analyze
from ..support.validate import require_integer
from .cost import HistoryTokens, sampled_tokens, tokens_each
from .policy import CompactionConfig, candidates

MAX_REDUCTION = 0.99  # target_reduction must stay below 1: the rest is for the head of a truncation


def whole_tokens(value: object, name: str) -> int:
    """A count of tokens a host gave (`name` says whose): a whole number >= 0 — an int, or a float with no
    fraction — else `ConfigError` naming it and what it was."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and value >= 0:
        return int(value)
    raise ConfigError(f"{name} must be a whole number of tokens >= 0 (got {shown(value)})")


def called(counter: Callable[[Any], Any], history: Any, name: str = "token_counter") -> Any:
    """What a host's token counter returns for `history`, as it is (a count, or an awaitable of one); a
    counter that raises is a `ConfigError` naming it, never its own exception in the library's place."""
    try:
        return counter(history)
    except JevError:
        raise
    except Exception as exc:
        raise ConfigError(f"{name} failed ({type(exc).__name__}: {exc})") from exc


def counted(counter: Callable[[Any], Any], history: Any, name: str = "token_counter") -> int:
    """What a host's sync token counter says of `history`, checked (`called`, `whole_tokens`)."""
    return whole_tokens(called(counter, history, name), f"{name}'s answer")


def check_target_tokens(value: object) -> int | None:
    """`target_tokens` as the integrations take it: None (off) or an integer >= 1."""
    return require_integer("target_tokens", value, 1, optional=True)


def reduction_for_tokens(messages: Sequence[Message], tokens: int, target_tokens: int,
                         config: CompactionConfig) -> float | None:
    """The `target_reduction` that brings a history the host counts at `tokens` under `target_tokens`, or
    None when it is already under, has no candidate results, or is not a valid transcript (the plan then
    says why). Capped at `MAX_REDUCTION` when letting go of every candidate result would still leave the
    history over the target; a plan configured with this share alone then lets go of results only, and its
    `plan.target_met` speaks of that share (`Compactor.for_tokens` also keeps the whole excess)."""
    if tokens <= target_tokens or tokens <= 0:
        return None
    try:
        transcript = analyze(messages)
    except JevError:
        return None
    return transcript_reduction(transcript, tokens, target_tokens, config)


def transcript_reduction(transcript: Transcript, tokens: int, target_tokens: int,
                         config: CompactionConfig) -> float | None:
    """`reduction_for_tokens` for a history already analyzed (the compactor sizes a plan on the analysis
    the plan then judges, so the history is analyzed once)."""
    excess = excess_chars(transcript, tokens, target_tokens, config)
    return None if excess is None else share(*excess)


def share(chars: int, results: int) -> float:
    """`chars` as budget mode's `target_reduction`: a share of the candidate results' `results` characters,
    capped at `MAX_REDUCTION`."""
    return min(MAX_REDUCTION, max(chars / results, 1e-6))


def excess_chars(transcript: Transcript, tokens: int, target_tokens: int,
                 config: CompactionConfig) -> tuple[int, int] | None:
    """The characters a plan must let go of to bring the history under `target_tokens`, and the candidate
    results' characters (None: under the target already, or no candidate results)."""
    if tokens <= target_tokens or tokens <= 0:
        return None
    judged = candidates(transcript, config)
    results = sum(p.result_chars for p in judged)
    if not results:
        return None
    # the excess in the host's tokens, in SPEC §4 tokens (the host's count against the library's estimate of
    # the same history), then in result characters at the results' own rate: code and logs run denser than
    # prose, so the history's average rate would let go of too little
    history = HistoryTokens(transcript)
    estimated = sum(history.of_history())
    per_token = results / max(1, sampled_tokens([p.result.text for p in judged]))
    return math.ceil((tokens - target_tokens) * estimated / tokens * per_token), results


def tokens_left(tokens: int, estimated: int, before: Sequence[Message], after: Sequence[Message],
                measure: Callable[[Sequence[Message]], list[int]] = tokens_each) -> int:
    """The host's count of `after`, a compaction of `before` (the host counts `before` at `tokens`, the library
    estimates it at `estimated`): `tokens` less what the plan removed — the messages it changed or removed
    against those it made, each measured with SPEC §4's estimate (`measure`: `tokens_each`, or a
    `jev.reading.history.Remeasured` of it, which keeps what its last call measured — the refit rounds of one plan
    measure mostly the same messages) — scaled to the host's count. Only what changed is measured: the rate
    a whole history's sample gives misjudges a history that lost most of its results, which run denser or
    sparser than the text that stays."""
    kept = set(map(id, after))
    held = set(map(id, before))
    gone = [m for m in before if id(m) not in kept]
    made = [m for m in after if id(m) not in held]
    measured = measure([*gone, *made])  # one call: a memo of it holds both sides for the next round
    removed = sum(measured[:len(gone)]) - sum(measured[len(gone):])
    return math.ceil(tokens - removed * tokens / max(1, estimated))
