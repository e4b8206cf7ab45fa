"""jev-compaction: judged, reversible context compaction for LLM agents.

A judge answers two yes/no questions per historical tool pair (is the call still needed, is the result
still needed verbatim); the probabilities map to KEEP, TRUNCATE_RESULT or DROP_PAIR, keeping everything
when unsure. ENFORCE adopts a plan only after the full history is archived.

`import jev` stays light: the compactor (and asyncio), each judge, each transcript form and each archive
load when first used.
"""

from typing import TYPE_CHECKING, Any

from . import formats, old_paths
from .deciding.cost import CostEstimate, PricingProfile
from .deciding.decision import Decision, ExecutionOptions, Mode, PairRows, PairView, Plan, Reason, Status
from .deciding.policy import Action, CompactionConfig, PairReason, Scores
from .errors import (
    ArchiveError,
    ConfigError,
    FormatError,
    JevError,
    JudgeConnectionError,
    JudgeError,
    JudgeProtocolError,
    JudgeStatusError,
    JudgeTimeoutError,
    StateBudgetError,
    TranscriptError,
)
from .model.canonical import canonical_json
from .model.scope import Archive, Scope
from .model.transcript import Message, Origin, OtherBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from .providers import ThinkingPolicy
from .reading.state import estimate_tokens
from .running.records import AsyncSink, JsonlSink, LoggingSink, PairRecord, Record

if TYPE_CHECKING:
    from .running.compactor import Compactor, CompactorSetup

__version__ = "0.3.0"
old_paths.install()  # `import jev.compactor` and the other paths from before the stages: warned, for one release


def __getattr__(name: str) -> Any:
    if name in ("Compactor", "CompactorSetup"):  # with them asyncio, the judges' base and the plan's steps
        from .running import compactor

        globals().update(Compactor=compactor.Compactor, CompactorSetup=compactor.CompactorSetup)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Action", "Archive", "ArchiveError", "AsyncSink", "CompactionConfig", "Compactor", "CompactorSetup",
    "ConfigError", "CostEstimate", "Decision", "ExecutionOptions", "FormatError", "JevError", "JsonlSink",
    "JudgeConnectionError", "JudgeError", "JudgeProtocolError", "JudgeStatusError", "JudgeTimeoutError",
    "LoggingSink", "Message", "Mode", "Origin", "OtherBlock", "PairReason", "PairRecord", "PairRows", "PairView",
    "Plan", "PricingProfile", "Reason", "Record", "Scope", "Scores", "StateBudgetError", "Status", "TextBlock",
    "ThinkingBlock", "ThinkingPolicy", "ToolResultBlock", "ToolUseBlock", "TranscriptError", "canonical_json",
    "estimate_tokens", "formats",
]
