"""The outcome of one plan: modes, statuses, reasons, the `Plan` value and the `Decision` around it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

from ..errors import ConfigError
from ..model.transcript import Message
from ..support.quick import quick_init
from ..support.validate import require_positive, require_text
from .cost import CostEstimate
from .policy import Action, PairReason, Scores


class Mode(str, Enum):
    """OFF: nothing runs. SHADOW: judge and record, change nothing. ENFORCE: adopt after archiving."""

    OFF = "OFF"
    SHADOW = "SHADOW"
    ENFORCE = "ENFORCE"


class Status(str, Enum):
    DECIDED = "DECIDED"
    INCONCLUSIVE = "INCONCLUSIVE"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"
    SKIPPED = "SKIPPED"


class Reason(str, Enum):
    DISABLED = "DISABLED"
    NO_CANDIDATES = "NO_CANDIDATES"
    TIMEOUT = "TIMEOUT"
    CALL_OR_RESPONSE_ERROR = "CALL_OR_RESPONSE_ERROR"
    STATE_BUDGET_EXCEEDED = "STATE_BUDGET_EXCEEDED"
    TRANSCRIPT_CHANGED = "TRANSCRIPT_CHANGED"
    INSUFFICIENT_REDUCTION = "INSUFFICIENT_REDUCTION"
    UNPROFITABLE = "UNPROFITABLE"  # adopting it would raise the bill under prompt caching (jev.deciding.cost)
    PROVIDER_REFUSES = "PROVIDER_REFUSES"  # the model's provider would refuse the history it leaves (jev.providers)
    ARCHIVED_PROPOSAL = "ARCHIVED_PROPOSAL"
    SHADOW_PROPOSAL = "SHADOW_PROPOSAL"
    CANCELLED = "CANCELLED"
    INTERNAL_ERROR = "INTERNAL_ERROR"  # an unexpected exception: a bug, never a judge's failure


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Plan:
    """A judged proposal: the candidate history and its pairs (`rows`, the one per-pair source: `views`,
    `decisions`, `scores` and `pairs` are read from it). `state_stage` is the deepest input cap any request used
    (`not-sent` for an in-process judge), `windows` how many windows a long history was judged in (0: the whole
    state in every request), and `request_tokens` the estimated tokens sent to the judge over all requests.
    `result_share` is the share of the candidates' result characters the plan lets go of (net of kept heads and
    markers); in budget mode `target_met` says whether it reached `target_reduction` (False: pinned, refused or
    confidently needed results stopped it short; sized for a host's token target, whether the history it leaves
    is under that target as the host counts it, estimated), else None. `cost` is what adopting it does to the bill under
    prompt caching (`jev.deciding.cost`), over the horizon the plan assumed."""

    messages: tuple[Message, ...] = field(repr=False)  # a repr of a whole history helps nobody
    rows: PairRows = field(repr=False)
    requests: int
    input_tokens: int
    output_tokens: int
    state_stage: str
    reduction: float
    archive_reference: str = ""
    windows: int = 0
    request_tokens: int = 0
    result_share: float = 0.0
    target_met: bool | None = None
    cost: CostEstimate | None = None
    thinking_stripped: int = 0  # thinking blocks after the first change removed for a preserved-thinking model

    @property
    def views(self) -> tuple[PairView, ...]:
        """One `PairView` per pair, in key order (made when read)."""
        return self.rows.views()

    @property
    def decisions(self) -> Mapping[str, Action]:
        """Each pair's action, by key."""
        return dict(zip(self.rows.key, self.rows.action, strict=True))

    @property
    def scores(self) -> Mapping[str, Scores]:
        """Each pair's scores and reason, by key."""
        rows = self.rows
        return {key: Scores(call, result, reason)
                for key, call, result, reason in zip(rows.key, rows.keep_call, rows.keep_result, rows.reason,
                                                     strict=True)}

    @property
    def pairs(self) -> Mapping[str, tuple[str, str]]:
        """Each pair's (call id, tool), by key."""
        return dict(zip(self.rows.key, zip(self.rows.call_id, self.rows.tool, strict=True), strict=True))

    def count(self, action: Action) -> int:
        return self.rows.action.count(action)

    def figures(self) -> dict[str, Any]:
        """The plan's figures by name, in one order: what a record's recommendation states as text and
        `jev compact` writes as JSON."""
        return {"requests": self.requests, "state_stage": self.state_stage, "windows": self.windows,
                "request_tokens": self.request_tokens, "result_share": self.result_share,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "reduction": self.reduction,
                "target_met": self.target_met, "archive_reference": self.archive_reference,
                "cost": self.cost.as_dict() if self.cost is not None else None}

    def pairs_table(self) -> tuple[PairView, ...]:
        """Every pair of the judged history, in key order, with its facts, scores, action and reason."""
        return self.views


@quick_init
@dataclass(frozen=True, slots=True)
class PairView:
    """One pair of a plan, all its facts in one place: what it was (tool, the head of its input, result
    size), what the judge said, what the plan does and why — for a pinned pair, the rule that pinned it."""

    key: str
    call_id: str
    tool: str
    input_head: str
    result_chars: int
    keep_call: float | None
    keep_result: float | None
    action: Action
    reason: PairReason
    pinned: str = ""  # why the pair was never judged ("" for a judged one)
    scaled_result: float | None = None  # the result score the threshold table compared (size-aware: per 1000 chars)
    truncate_saves: int = 0  # characters a TRUNCATE_RESULT of this pair would remove (0 for a pinned pair)
    drop_saves: int = 0  # characters a DROP_PAIR would remove, net of its tombstone

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "call_id": self.call_id, "tool": self.tool, "input_head": self.input_head,
                "result_chars": self.result_chars, "keep_call": self.keep_call, "keep_result": self.keep_result,
                "scaled_result": self.scaled_result, "action": self.action.value, "reason": self.reason,
                "pinned": self.pinned}


@dataclass(frozen=True, slots=True)
class PairRows:
    """A plan's pairs as columns, one tuple per `PairView` field, in key order: a plan over thousands of
    pairs holds a dozen tuples rather than an object per pair (objects the garbage collector would walk
    for as long as the plan lives), and makes a pair's view only when someone reads it."""

    key: tuple[str, ...] = ()
    call_id: tuple[str, ...] = ()
    tool: tuple[str, ...] = ()
    input_head: tuple[str, ...] = ()
    result_chars: tuple[int, ...] = ()
    keep_call: tuple[float | None, ...] = ()
    keep_result: tuple[float | None, ...] = ()
    action: tuple[Action, ...] = ()
    reason: tuple[PairReason, ...] = ()
    pinned: tuple[str, ...] = ()
    scaled_result: tuple[float | None, ...] = ()
    truncate_saves: tuple[int, ...] = ()
    drop_saves: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if len({len(getattr(self, name)) for name in _ROW_FIELDS}) > 1:
            raise ValueError("PairRows: every column must hold one value per pair")

    def __len__(self) -> int:
        return len(self.key)

    def views(self) -> tuple[PairView, ...]:
        """Each pair's `PairView`."""
        return tuple(map(PairView, *(getattr(self, name) for name in _ROW_FIELDS)))


_ROW_FIELDS = tuple(f.name for f in fields(PairRows))
if tuple(f.name for f in fields(PairView)) != _ROW_FIELDS:
    raise AssertionError("PairRows must hold PairView's fields, in its order")  # a view is made from a row


@dataclass(frozen=True, slots=True)
class Decision:
    """What `Compactor.plan` returns. `detail` explains an ERROR for humans; records carry only
    `error_kind`, never the text."""

    status: Status
    reason: Reason
    plan: Plan | None = None
    recommendation: Mapping[str, str] = field(default_factory=dict)
    detail: str = ""
    error_kind: str = ""


Observer = Callable[[Any, Any], None]


DEFAULT_BUDGET = 10.0  # seconds per plan, the one default of every entry point (Python, service, CLI)


@dataclass(frozen=True, slots=True)
class ExecutionOptions:
    """How plans run: the mode, one wall-clock budget in seconds per plan, a version tag for records,
    and an observer `(context, record)` that receives one decision record per plan."""

    mode: Mode = Mode.OFF
    budget: float = DEFAULT_BUDGET
    version: str = "v1"
    observer: Observer | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "mode", Mode(self.mode))
        except ValueError:
            raise ConfigError(f"mode must be one of OFF, SHADOW, ENFORCE (got {self.mode!r})") from None
        require_positive("budget", self.budget)  # seconds
        require_text("version", self.version)
        if self.observer is not None and not callable(self.observer):
            raise ConfigError("observer must be callable as observer(context, record)")
