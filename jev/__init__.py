"""jev-compaction: judged, reversible context compaction for LLM agents.

A judge answers two yes/no questions per historical tool pair (is the call still needed, is the result
still needed verbatim); the probabilities map to KEEP, TRUNCATE_RESULT or DROP_PAIR, keeping everything
when unsure. ENFORCE adopts a plan only after the full history is archived.
"""

from . import formats
from .compactor import Compactor
from .decision import Decision, ExecutionOptions, Mode, Plan, Reason, Status
from .errors import (ArchiveError, ConfigError, FormatError, JevError, JudgeError, StateBudgetError,
                     TranscriptError)
from .policy import Action, CompactionConfig, Scores
from .records import AsyncSink, JsonlSink, LoggingSink, PairRecord, Record
from .state import estimate_tokens
from .transcript import (Message, OtherBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock,
                         canonical_json)

__version__ = "0.3.0"

__all__ = [
    "Action", "ArchiveError", "AsyncSink", "CompactionConfig", "Compactor", "ConfigError", "Decision",
    "ExecutionOptions", "FormatError", "JevError", "JsonlSink", "JudgeError", "LoggingSink", "Message", "Mode",
    "OtherBlock", "PairRecord", "Plan", "Reason", "Record", "Scores", "StateBudgetError", "Status", "TextBlock",
    "ThinkingBlock", "ToolResultBlock", "ToolUseBlock", "TranscriptError", "canonical_json", "estimate_tokens",
    "formats",
]
