"""Judges: one protocol, `async ask(JudgeRequest) -> Answers`.

`SystemOneJudge` (TypeSafe's Jev over HTTP), `LocalJudge` (embedded, offline default), `ReplayJudge`
(recorded answers). OpenAI's Decisions API arrives as `OpenAIDecisionsJudge` with the judges work.
"""

from .base import REFUSAL, Answers, Judge, JudgeRequest, Refusal, validate_answers
from .local import LocalJudge
from .replay import ReplayJudge
from .systemone import SystemOneJudge

__all__ = ["REFUSAL", "Answers", "Judge", "JudgeRequest", "LocalJudge", "Refusal", "ReplayJudge",
           "SystemOneJudge", "validate_answers"]
