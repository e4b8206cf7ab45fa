"""Judges: one protocol, `async ask(JudgeRequest) -> Answers`.

`SystemOneJudge` (TypeSafe's Jev over HTTP), `OpenAIDecisionsJudge` (OpenAI's Decisions API through the
`openai` SDK) — both on `RemoteJudge`, the shared HTTP steps —, `LocalJudge` (embedded, offline default),
`ReplayJudge` (recorded answers). Each judge's
module (and its HTTP or numpy stack) is imported when the judge is first named, not by `import jev`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base import REFUSAL, Answers, Judge, JudgeRequest, JudgeTraits, Refusal, traits, validate_answers

if TYPE_CHECKING:
    from .local import LocalJudge
    from .openai_decisions import OpenAIDecisionsJudge
    from .remote import RemoteJudge
    from .replay import ReplayJudge
    from .retry import RetryPolicy
    from .systemone import SystemOneJudge

_LAZY = {"LocalJudge": "local", "OpenAIDecisionsJudge": "openai_decisions", "RemoteJudge": "remote",
         "ReplayJudge": "replay", "RetryPolicy": "retry", "SystemOneJudge": "systemone"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value  # once: later lookups are plain attribute reads
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = ["REFUSAL", "Answers", "Judge", "JudgeRequest", "JudgeTraits", "LocalJudge", "OpenAIDecisionsJudge",
           "Refusal", "RemoteJudge", "ReplayJudge", "RetryPolicy", "SystemOneJudge", "traits", "validate_answers"]
