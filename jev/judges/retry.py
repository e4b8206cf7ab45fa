"""Bounded retries with exponential backoff and jitter, inside whatever budget the caller imposes."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import JudgeError
from ..support.validate import led_by, require_in, require_integer, require_positive

T = TypeVar("T")
RETRYABLE_STATUS = frozenset({429, 529})


def retryable_status(status: int) -> bool:
    """429, 529 and every 5xx are worth another attempt; other 4xx never are."""
    return status in RETRYABLE_STATUS or status >= 500


def retry_after_seconds(headers: Any) -> float | None:
    """A numeric `Retry-After` header in seconds, or None."""
    try:
        value = float(headers.get("retry-after", ""))
    except (ValueError, AttributeError, TypeError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`max_retries` more attempts after the first; backoff `initial_backoff * 2**n`, capped at
    `max_backoff_factor * initial_backoff`, each varied by ±`jitter`."""

    max_retries: int = 2
    initial_backoff: float = 0.5
    max_backoff_factor: float = 8.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        led_by("maxRetries must not be negative", require_integer, "max_retries", self.max_retries, 0)
        led_by("initialBackoff must be positive", require_positive, "initial_backoff", self.initial_backoff)
        require_in("max_backoff_factor", self.max_backoff_factor, 1, None)
        require_in("jitter", self.jitter, 0, 1, open_high=True)

    def delay(self, retry: int, rng: random.Random) -> float:
        """Seconds to wait before retry number `retry` (0-based)."""
        base = min(self.initial_backoff * 2 ** retry, self.initial_backoff * self.max_backoff_factor)
        return base * (1 + self.jitter * (2 * rng.random() - 1))


NO_RETRIES = RetryPolicy(max_retries=0)


async def with_retries(attempt: Callable[[], Awaitable[T]], policy: RetryPolicy,
                       rng: random.Random | None = None) -> T:
    """Run `attempt` until it succeeds, fails for good, or retries run out (the last failure is raised)."""
    rng = rng or random.Random()
    for retry in range(policy.max_retries + 1):
        try:
            return await attempt()
        except JudgeError as exc:
            if not exc.retryable or retry == policy.max_retries:
                raise
            wait = policy.delay(retry, rng)
            if exc.retry_after is not None:
                wait = max(wait, exc.retry_after)
            await asyncio.sleep(wait)
    raise AssertionError("unreachable")
