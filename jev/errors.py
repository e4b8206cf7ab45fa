"""Exceptions, one hierarchy: every refusal names the field or item and the rule it broke."""

from __future__ import annotations

import reprlib


class JevError(Exception):
    """Base of every error this library raises on purpose."""


class ConfigError(JevError, ValueError):
    """A configuration value breaks a rule (the message names the field)."""


class FormatError(JevError, ValueError):
    """Input data cannot be read as the requested transcript format (the message names where)."""


class TranscriptError(JevError):
    """The transcript breaks a validation rule of SPEC §2; the plan ends as ERROR."""


class StateBudgetError(JevError):
    """The judge state or the questions do not fit the configured token budgets."""


class JudgeError(JevError):
    """A judge call failed or returned an invalid answer set; the subclasses say which kind. `retryable`
    marks failures worth another attempt, `status` and `retry_after` are set for HTTP status failures."""

    retryable: bool = False
    status: int | None = None
    retry_after: float | None = None


class JudgeTimeoutError(JudgeError):
    """One attempt took longer than the judge's per-attempt `timeout` (retried)."""

    retryable = True


class JudgeConnectionError(JudgeError):
    """The transport failed: the connection was refused, reset or broken before a reply came (retried)."""

    retryable = True


class JudgeStatusError(JudgeError):
    """The server answered with a failing HTTP status; 429, 529 and 5xx are retried (after `retry_after`
    seconds when the server says), any other status is final."""

    def __init__(self, message: str, status: int, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class JudgeProtocolError(JudgeError):
    """The reply (or the request about to be sent) breaks the judge's protocol: not JSON, answers that do
    not match the questions, a probability outside [0, 1], bad usage counts. Never retried."""


class ArchiveError(JevError):
    """An archive refused to save or restore a snapshot."""


_SHOWN = reprlib.Repr()  # Python 3.11 takes no settings in the constructor
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlist, _SHOWN.maxdict = 3, 60, 60, 4, 4


def shown(value: object) -> str:
    """A value as an error message shows it: a short repr, bounded in length and depth, that never fails
    (a value nested past the recursion limit, or one whose repr raises, reads as its type)."""
    try:
        return _SHOWN.repr(value)
    except Exception:  # RecursionError, or a repr that raises
        return f"<{type(value).__name__}>"
