"""A token target ("bring the history under N tokens") turned into budget mode's `target_reduction`.

Hosts count tokens their own way; budget mode counts candidate result characters. The excess over the
target is converted to characters at the history's own characters per token (as the host counted them),
then taken as a share of the characters the plan may let go of — the candidate results'. Pure: the
integrations call it, the compactor never sees tokens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .errors import JevError
from .policy import CompactionConfig, candidates
from .transcript import Message, Transcript, analyze
from .validate import require_integer

MAX_REDUCTION = 0.99  # target_reduction must stay below 1: the rest is for the head of a truncation


def check_target_tokens(value: object) -> int | None:
    """`target_tokens` as the integrations take it: None (off) or an integer >= 1."""
    return require_integer("target_tokens", value, 1, optional=True)


def reduction_for_tokens(messages: Sequence[Message], tokens: int, target_tokens: int,
                         config: CompactionConfig) -> float | None:
    """The `target_reduction` that brings a history the host counts at `tokens` under `target_tokens`, or
    None when it is already under, has no candidate results, or is not a valid transcript (the plan then
    says why). Capped at `MAX_REDUCTION` when letting go of every candidate result would still leave the
    history over the target; `plan.target_met` then speaks of that share, and says False when pinned or
    confidently needed results stop even that."""
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
    if tokens <= target_tokens or tokens <= 0:
        return None
    results = sum(p.result_chars for p in candidates(transcript, config))
    if not results:
        return None
    chars_per_token = transcript.chars / tokens
    excess = math.ceil((tokens - target_tokens) * chars_per_token)
    return min(MAX_REDUCTION, max(excess / results, 1e-6))
