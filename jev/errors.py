"""Exceptions, one hierarchy: every refusal names the field or item and the rule it broke."""

from __future__ import annotations


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
    """A judge call failed or returned an invalid answer set. `retryable` marks failures worth another
    attempt (429, 529, 5xx, transport errors, a per-attempt timeout); `retry_after` is the server's hint."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


class ArchiveError(JevError):
    """An archive refused to save or restore a snapshot."""
