"""The value rules config, service config, retry policy, integrations and judges share, each written once
with one wording: a finite number, a positive number, an integer in range, a number in an interval, a
non-blank string. The `require_*` functions return the value or raise `ConfigError` naming the field and
the rule — "max_questions must be an integer in 2..512 (got 1)"; a caller that must also say more (the
reference's own words, a service limit) puts that before it."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, TypeVar, overload

from ..errors import ConfigError, shown

T = TypeVar("T")


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


def integer_rule(low: int | None = None, high: int | None = None) -> str:
    """How the integer rule reads: "an integer", "an integer >= 1", "an integer in 2..512"."""
    if low is not None and high is not None:
        return f"an integer in {low}..{high}"
    if low is not None:
        return f"an integer >= {low}"
    return "an integer" if high is None else f"an integer <= {high}"


def require_number(name: str, value: Any) -> float:
    """A finite number, as a float."""
    if not is_finite_number(value):
        raise ConfigError(f"{name} must be a finite number (got {shown(value)})")
    return float(value)


def require_positive(name: str, value: Any) -> float:
    """A finite number above 0, as a float."""
    if not is_positive(value):
        raise ConfigError(f"{name} must be positive (got {shown(value)})")
    return float(value)


@overload
def require_integer(name: str, value: Any, low: int | None = None, high: int | None = None, *,
                    optional: Literal[False] = False) -> int: ...
@overload
def require_integer(name: str, value: Any, low: int | None = None, high: int | None = None, *,
                    optional: bool) -> int | None: ...
def require_integer(name: str, value: Any, low: int | None = None, high: int | None = None, *,
                    optional: bool = False) -> int | None:
    """An int (never a bool) in [low, high] where they are given (or None, when `optional`)."""
    if value is None and optional:
        return None
    if not is_integer(value, low, high):
        raise ConfigError(f"{name} must be {integer_rule(low, high)}{' or None' if optional else ''} (got {shown(value)})")
    return value


def require_in(name: str, value: Any, low: float, high: float | None, *, open_low: bool = False,
               open_high: bool = False) -> float:
    """A finite number in the interval from `low` to `high` (None: no upper end), closed unless said
    open, as a float. Whatever is wrong — not a number, NaN, out of range — it says the interval."""
    number = float(value) if is_finite_number(value) else math.nan  # NaN fails both comparisons
    above = number > low if open_low else number >= low
    below = high is None or (number < high if open_high else number <= high)
    if not (above and below):
        if high is None:
            rule = f"a number {'>' if open_low else '>='} {low:g}"
        else:
            rule = f"a number in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
        raise ConfigError(f"{name} must be {rule} (got {shown(value)})")
    return number


@overload
def require_text(name: str, value: Any, *, optional: Literal[False] = False) -> str: ...
@overload
def require_text(name: str, value: Any, *, optional: bool) -> str | None: ...
def require_text(name: str, value: Any, *, optional: bool = False) -> str | None:
    """A string that is not blank (or None, when `optional`)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name} must be a non-blank string{' or None' if optional else ''} (got {shown(value)})")
    return value


def led_by(words: str, rule: Callable[..., T], name: str, value: Any, *args: Any, **kwargs: Any) -> T:
    """`rule(name, value, ...)` whose error starts with words a reference or SPEC fixes:
    "maxRetries must not be negative: max_retries must be an integer >= 0 (got -1)"."""
    try:
        return rule(name, value, *args, **kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{words}: {exc}") from None
