"""`jev.support.validate`: each value rule and its one wording, as every caller (config, service config, retry
policy, judges, integrations, archives, the CLI's flags) now reports it."""

from __future__ import annotations

import math

import pytest

from jev import CompactionConfig, ConfigError, ExecutionOptions
from jev.judges.retry import RetryPolicy
from jev.support.validate import (
    integer_rule,
    require_in,
    require_integer,
    require_number,
    require_positive,
    require_text,
)

OPEN_HIGH, OPEN = {"open_high": True}, {"open_low": True, "open_high": True}


@pytest.mark.parametrize("rule, args, kwargs, ok, message", [
    (require_number, (1,), {}, 1.0, None),
    (require_number, (math.nan,), {}, None, "x must be a finite number (got nan)"),
    (require_number, (True,), {}, None, "x must be a finite number (got True)"),
    (require_positive, (0.5,), {}, 0.5, None),
    (require_positive, (0,), {}, None, "x must be positive (got 0)"),
    (require_positive, (math.inf,), {}, None, "x must be positive (got inf)"),
    (require_integer, (3, 1), {}, 3, None),
    (require_integer, (0, 1), {}, None, "x must be an integer >= 1 (got 0)"),
    (require_integer, (1.0, 1), {}, None, "x must be an integer >= 1 (got 1.0)"),
    (require_integer, (False, 0), {}, None, "x must be an integer >= 0 (got False)"),
    (require_integer, (513, 2, 512), {}, None, "x must be an integer in 2..512 (got 513)"),
    (require_integer, (9, None, 8), {}, None, "x must be an integer <= 8 (got 9)"),
    (require_in, (0.0, 0, 1), OPEN_HIGH, 0.0, None),
    (require_in, (1.0, 0, 1), OPEN_HIGH, None, "x must be a number in [0, 1) (got 1.0)"),
    (require_in, (0, 0, 1), OPEN, None, "x must be a number in (0, 1) (got 0)"),
    (require_in, ("half", 0, 1), OPEN, None, "x must be a number in (0, 1) (got 'half')"),
    (require_in, (0.5, 1, None), {}, None, "x must be a number >= 1 (got 0.5)"),
    (require_text, ("v1",), {}, "v1", None),
    (require_text, (" ",), {}, None, "x must be a non-blank string (got ' ')"),
])
def test_each_rule_returns_the_value_or_says_the_field_and_the_rule(rule, args, kwargs, ok, message) -> None:
    if message is None:
        assert rule("x", *args, **kwargs) == ok
    else:
        with pytest.raises(ConfigError) as caught:
            rule("x", *args, **kwargs)
        assert str(caught.value) == message


def test_optional_values_say_or_none() -> None:
    assert require_integer("n", None, 1, optional=True) is None and require_text("t", None, optional=True) is None
    with pytest.raises(ConfigError, match=r"^n must be an integer >= 1 or None \(got 0\)$"):
        require_integer("n", 0, 1, optional=True)
    assert integer_rule() == "an integer"


def test_callers_use_the_same_words_for_the_same_rule() -> None:
    """One rule, one wording, whoever checks it (a caller may put its reference's words first)."""
    cases = [(lambda: CompactionConfig(max_questions=1), "max_questions must be an integer in 2..512 (got 1)"),
             (lambda: ExecutionOptions(budget=0), "budget must be positive (got 0)"),
             (lambda: ExecutionOptions(version=" "), "version must be a non-blank string (got ' ')"),
             (lambda: RetryPolicy(max_retries=-1),
              "maxRetries must not be negative: max_retries must be an integer >= 0 (got -1)"),
             (lambda: RetryPolicy(jitter=1.0), "jitter must be a number in [0, 1) (got 1.0)"),
             (lambda: CompactionConfig(target_reduction=1), "target_reduction must be a number in (0, 1) (got 1)")]
    for build, message in cases:
        with pytest.raises(ConfigError) as caught:
            build()
        assert str(caught.value) == message
