"""The value rules config, service config, retry policy and judges share, written once: what a finite
number, a probability and an integer in range are. Each caller words its own error (SPEC fixes several
of those texts); the rule behind it is this one."""

from __future__ import annotations

import math
from typing import Any


def is_finite_number(value: Any) -> bool:
    """An int or float (never a bool) that is neither NaN nor an infinity."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def is_probability(value: Any) -> bool:
    """A finite number in [0, 1]."""
    return is_finite_number(value) and 0 <= value <= 1


def is_positive(value: Any) -> bool:
    """A finite number above 0 (a budget, a backoff)."""
    return is_finite_number(value) and value > 0


def is_integer(value: Any, low: int | None = None, high: int | None = None) -> bool:
    """An int (never a bool), within [low, high] where they are given."""
    return (not isinstance(value, bool) and isinstance(value, int) and (low is None or value >= low)
            and (high is None or value <= high))
