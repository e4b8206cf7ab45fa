"""Judges: one protocol, `async ask(JudgeRequest) -> Answers`.

`SystemOneJudge` (TypeSafe's Jev over HTTP), `OpenAIDecisionsJudge` (OpenAI's Decisions API through the
`openai` SDK), `LocalJudge` (embedded, offline default), `ReplayJudge` (recorded answers).
"""

from .retry import RetryPolicy
from .base import REFUSAL, Answers, Judge, JudgeRequest, Refusal, validate_answers
from .local import LocalJudge
from .openai_decisions import OpenAIDecisionsJudge
from .replay import ReplayJudge
from .systemone import SystemOneJudge

__all__ = ["REFUSAL", "Answers", "Judge", "JudgeRequest", "LocalJudge", "OpenAIDecisionsJudge", "Refusal", "ReplayJudge", "RetryPolicy",
           "SystemOneJudge", "validate_answers"]
