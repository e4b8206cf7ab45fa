"""From labelled shadow rows to thresholds with a guarantee (SPEC §11, calibration-eval §2.7).

Two risks, per session over its decision points as SHADOW replayed them (sessions are the unit):
- R_result: the share of later-needed results let go (dropped or truncated), 0 with none needed;
- R_call: the share of later-needed calls dropped, 0 with none needed.
A setting is certified when both are <= alpha (`risk.learn_then_test`: one fixed sequence from the safest
setting, on the larger of the two p-values).

Settings certified: a discard threshold on the result score, with the keep threshold the compactor runs
(`keep_threshold`, fixed before any data is seen) and its recency window in pairs (`recent_pairs`, the
newest candidates never judged: `CompactionConfig.preserve_recent_pairs`), through the compactor's own
decision table (`jev.deciding.policy.table`): a pair counts as let go exactly when a compactor with those settings
drops or truncates it, so what is certified is what is let go. A window of N with every older candidate
let go is keep-last-N: certifying windows beside thresholds lets the judge keep what recency keeps.
With `target=True` also a budget-mode `target_reduction`, walked in the product's own order
(`jev.deciding.policy.budget_order`).

By default nothing is fitted before certifying: the threshold grid is fixed in advance, so every session
certifies (certifying at alpha with probability >= 1 - delta needs at least log delta / log(1 - alpha)
sessions, and a split would spend a third of them). `fit_share` > 0 spends that share of the sessions on
a grid at their score quantiles instead. The calibrated P(needed) reported beside a threshold is
descriptive (a monotone map fitted on the fit sessions, or all of them); it is not part of the guarantee.

`size_aware=True` thresholds the result score the compactor ranks by by default: `jev.deciding.policy.value_score`
(P(needed) per `size_reference_chars` characters of result).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from sklearn.model_selection import GroupShuffleSplit

from jev import formats
from jev.deciding.policy import (
    DEFAULT_SIZE_EXPONENT,
    CompactionConfig,
    Judged,
    budget_order,
    budget_target,
    table,
    value_score,
)
from jev.support.validate import require_in

from .fit import ScoreCalibrator
from .labels import ALT_LABEL_VERSION, CERTIFIED_LABEL, LABEL_VERSION, STRICT_LABEL_VERSION
from .risk import (
    BOUNDS,
    DEFAULT_BOUND,
    Certified,
    learn_then_test,
    pvalue,
    session_losses,
    sessions_needed,
    upper_bound,
)

SIZE_RULE = CompactionConfig(size_exponent=DEFAULT_SIZE_EXPONENT)  # what size-aware calibration applies by default
GRID = np.concatenate([[-1.0], np.geomspace(1e-5, 0.99, 300)])  # fixed before any data is seen
QUANTILE_POINTS = 200  # grid points at the fit sessions' score quantiles, when fit_share > 0
TARGETS = (0.01, 0.02, 0.03, *(round(0.05 * i, 2) for i in range(1, 20)))  # budget-mode targets, safest first
MAX_EXPONENTS = 8  # size-exponent candidates at most: each costs the guarantee a share of delta
LOSS = "R_result (later-needed results let go) and R_call (later-needed calls dropped), per session"


@dataclass(frozen=True, slots=True)
class Rows:
    """Labelled pairs as arrays (rows with a refused or missing score are left out by `rows_from`).
    `points`, `keys`, `truncate_saves` and `drop_saves` are None when the rows did not carry them."""

    sessions: np.ndarray
    tools: np.ndarray
    keep_call: np.ndarray
    keep_result: np.ndarray
    result_chars: np.ndarray
    needed_result: np.ndarray
    needed_call: np.ndarray
    points: np.ndarray | None = None  # the decision point (index of the last message judged)
    keys: np.ndarray | None = None  # the pair key ("t<n>", in history order)
    truncate_saves: np.ndarray | None = None  # characters a TRUNCATE_RESULT would remove
    drop_saves: np.ndarray | None = None  # characters a DROP_PAIR would remove
    judge: str = ""
    label_version: str = LABEL_VERSION
    # the session each row's conversation belongs to, the statistical unit, derived from `sessions` when not
    # given: `jev replay` names each stretch of a session Claude Code compacted itself apart, and a session is
    # never split
    units: np.ndarray | None = None
    # each row's place among its decision point's candidates, newest first (`recency_rank`), when the rows
    # carry decision points and `tN` keys; else None
    ranks: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.units is None:
            object.__setattr__(self, "units", _units(self.sessions))
        if self.ranks is None:
            object.__setattr__(self, "ranks", recency_rank(self.sessions, self.points, self.keys))

    @property
    def unit_ids(self) -> np.ndarray:
        """Each row's unit: its session, whichever of its conversations the row comes from."""
        assert self.units is not None  # set by __post_init__
        return self.units

    def take(self, mask: np.ndarray) -> Rows:
        """The rows where `mask` holds (or at the indices it lists)."""
        return Rows(*(v[mask] if isinstance(v, np.ndarray) else v
                      for v in (getattr(self, f.name) for f in fields(self))))


def recency_rank(sessions: np.ndarray, points: np.ndarray | None, keys: np.ndarray | None) -> np.ndarray | None:
    """Each row's place among the rows of its decision point (its session and point), newest first: 0 is
    the newest candidate, by the pair key's number (`tN`, in the order results appear). None without
    points or `tN` keys. Keep-last-N lets go of the rows ranked N and on."""
    if points is None or keys is None:
        return None
    text = keys.astype(str)
    if len(text) and not (np.char.startswith(text, "t") & np.char.isdigit(np.char.lstrip(text, "t"))).all():
        return None
    if not len(text):
        return np.zeros(0, dtype=np.int64)
    number = np.char.lstrip(text, "t").astype(np.int64)
    _points, point = np.unique(np.char.add(sessions.astype(str), np.char.add("\0", points.astype(str))),
                               return_inverse=True)
    order = np.lexsort((-number, point))
    first = np.r_[True, point[order][1:] != point[order][:-1]]
    start = np.flatnonzero(first)[np.cumsum(first) - 1]
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - start
    return rank


def _units(sessions: np.ndarray) -> np.ndarray:
    """Each conversation id's session (`jev.formats.parse_conversation_id`); the ids themselves when none names
    a stretch (one vectorised look, as most rows never do)."""
    ids = sessions.astype(str)
    if not len(ids) or (np.char.find(ids, formats.STRETCH_MARK) < 0).all():
        return sessions
    return np.asarray([formats.parse_conversation_id(i)[0] for i in ids.tolist()])


def _column(kept: list[Mapping[str, Any]], name: str) -> np.ndarray | None:
    values = [r.get(name) for r in kept]
    if not values or any(not isinstance(v, int) or isinstance(v, bool) for v in values):
        return None
    return np.asarray(values, dtype=np.int64)


def _one(kept: list[Mapping[str, Any]], name: str, default: str) -> str:
    found = sorted({str(r.get(name) or default) for r in kept})
    if len(found) > 1:
        raise ValueError(f"labelled rows come from several values of {name} ({', '.join(found)}): "
                         "calibrate one at a time")
    return found[0] if found else default


LABEL_COLUMNS = {LABEL_VERSION: "needed_result", ALT_LABEL_VERSION: "needed_result_reuse",
                 STRICT_LABEL_VERSION: "needed_result_strict"}  # a label version -> its `jev label` field


def rows_from(records: Iterable[Mapping[str, Any]], label: str | None = None) -> Rows:
    """Rows from labelled JSON objects (`jev label` output): one judge and one label version only. `label`
    picks which proxy's "needed" R_result counts (the field `LABEL_COLUMNS` names; `CERTIFIED_LABEL`, the
    strict proxy, when None); rows without it are refused by name."""
    label = CERTIFIED_LABEL if label is None else label
    if label not in LABEL_COLUMNS:
        raise ValueError(f"label must be one of {', '.join(LABEL_COLUMNS)} (got {label!r})")
    column = LABEL_COLUMNS[label]
    kept = [r for r in records if isinstance(r.get("keep_call"), (int, float)) and
            isinstance(r.get("keep_result"), (int, float)) and r.get("reason") != "PINNED"]
    if any(column not in r for r in kept):
        carried = [name for name, c in LABEL_COLUMNS.items() if kept and all(c in r for r in kept)]
        raise ValueError(f"the labelled rows carry no {column} ({label}): label them again with this version's "
                         "jev label" + (f", or count a label they carry ({', '.join(carried)})" if carried else ""))
    points = [r.get("decision_point") for r in kept]
    return Rows(np.asarray([str(r["session_id"]) for r in kept]), np.asarray([str(r.get("tool", "")) for r in kept]),
                np.asarray([float(r["keep_call"]) for r in kept]), np.asarray([float(r["keep_result"]) for r in kept]),
                np.asarray([int(r.get("result_chars") or 0) for r in kept]),
                np.asarray([bool(r[column]) for r in kept]), np.asarray([bool(r["needed_call"]) for r in kept]),
                np.asarray(points) if kept and all(isinstance(p, int) for p in points) else None,
                np.asarray([str(r.get("key", "")) for r in kept]) if kept else None,
                _column(kept, "truncate_saves"), _column(kept, "drop_saves"),
                _one(kept, "judge", ""), label if label != LABEL_VERSION else _one(kept, "label_version", LABEL_VERSION))


def size_rule(exponent: float) -> CompactionConfig:
    """The compactor's size scaling with `exponent` (its default reference size)."""
    return SIZE_RULE if exponent == SIZE_RULE.size_exponent else CompactionConfig(size_exponent=exponent)


def result_score(rows: Rows, size_aware: bool, exponent: float = DEFAULT_SIZE_EXPONENT) -> np.ndarray:
    """The score a threshold applies to: the raw result probability, or the compactor's size-scaled one
    (`jev.deciding.policy.value_score` with `size_exponent=exponent`)."""
    if not size_aware:
        return rows.keep_result
    rule = size_rule(exponent)
    return np.fromiter((value_score(float(p), int(c), rule) for p, c in zip(rows.keep_result, rows.result_chars,
                                                                             strict=True)),
                       float, len(rows.keep_result))


@dataclass(frozen=True, slots=True)
class Selection:
    """The certified threshold (or why there is none) for one group of rows: all tools, or one tool."""

    group: str
    alpha: float
    delta: float
    bound: str
    n_sessions: int
    n_rows: int
    certified: bool
    discard_threshold: float  # raw scale, what CompactionConfig applies
    keep_threshold: float
    calibrated_discard: float  # the same threshold as a calibrated probability (descriptive)
    risk_result: float  # empirical mean R_result at the selected point
    risk_call: float  # empirical mean R_call at the selected point
    pvalue: float  # the larger of the two p-values there
    upper_result: float  # the (1 - delta) upper bounds the test implies there
    upper_call: float
    pairs_discarded: float  # share of candidate pairs at or below the threshold
    chars_discarded: float  # share of candidate result characters at or below it
    uncertain_rate: float
    sessions_needed: int
    more_sessions: int | None = None  # sessions like these that would certify the next setting, when known
    recent_pairs: int = 0  # the recency window certified with the thresholds (preserve_recent_pairs)
    recency: dict[str, float] | None = None  # keep-last-N at the same realised R_result, same sessions
    curve: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""


@dataclass(frozen=True, slots=True)
class TargetSelection:
    """The largest certified budget-mode `target_reduction` (or why there is none)."""

    alpha: float
    delta: float
    bound: str
    n_sessions: int
    n_points: int
    certified: bool
    target_reduction: float
    risk_result: float
    risk_call: float
    pvalue: float
    upper_result: float
    upper_call: float
    chars_discarded: float  # share of candidate result characters removed at that target
    curve: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""


@dataclass(frozen=True, slots=True)
class Calibration:
    """Everything `jev calibrate` reports: overall selection, optional per-tool and budget-mode ones."""

    overall: Selection
    per_tool: tuple[Selection, ...]
    size_aware: bool
    result_calibrator: ScoreCalibrator
    call_calibrator: ScoreCalibrator
    fit_rows: Rows
    test_rows: Rows
    target: TargetSelection | None = None
    keep_threshold: float = SIZE_RULE.keep_threshold  # what the thresholds and budget mode were certified with
    size_exponent: float = DEFAULT_SIZE_EXPONENT  # the size scaling certified (size-aware only)
    size_exponents: tuple[float, ...] = (DEFAULT_SIZE_EXPONENT,)  # the candidates it was chosen among
    keep_thresholds: tuple[float, ...] = (SIZE_RULE.keep_threshold,)  # the keep thresholds it was chosen among
    recent_pairs: int = 0  # the recency window certified (CompactionConfig.preserve_recent_pairs)
    recent_pairs_among: tuple[int, ...] = (0,)  # the windows it was chosen among

    @property
    def delta(self) -> float:
        """The guarantee's delta: each candidate (size exponent × keep threshold × window) was certified at
        this over their number."""
        return self.overall.delta * len(self.size_exponents) * len(self.keep_thresholds) * len(self.recent_pairs_among)

    def stamp(self) -> dict[str, Any]:
        """What the thresholds were certified for: a compactor refuses them for another judge."""
        out: dict[str, Any] = {"judge": self.test_rows.judge, "ranking": "size-aware" if self.size_aware else "plain",
               "loss": LOSS, "label_version": self.test_rows.label_version, "bound": self.overall.bound,
               "alpha": self.overall.alpha, "delta": self.delta, "sessions": self.overall.n_sessions}
        if len(self.size_exponents) > 1:
            out["size_exponent_chosen_among"] = list(self.size_exponents)
        if len(self.keep_thresholds) > 1:
            out["keep_threshold_chosen_among"] = list(self.keep_thresholds)
        if len(self.recent_pairs_among) > 1:
            out["recent_pairs_chosen_among"] = list(self.recent_pairs_among)
        return out

    def config(self) -> dict[str, Any]:
        """`CompactionConfig` fields (by Python name) that apply what was certified: the threshold when one
        was, budget mode's target with the keep threshold it was certified with when asked and certified."""
        out: dict[str, Any] = {}
        if self.overall.certified:
            out.update(discard_threshold=self.overall.discard_threshold, keep_threshold=self.overall.keep_threshold,
                       preserve_recent_pairs=self.recent_pairs)
        if self.target is not None and self.target.certified:
            out["target_reduction"] = self.target.target_reduction
            out["keep_threshold"] = self.keep_threshold
            out.setdefault("discard_threshold", 0.0)
        # always said: the compactor's default is size-aware, and plain thresholds must stay plain
        out.update(size_exponent=self.size_exponent if self.size_aware else 0.0,
                   size_reference_chars=SIZE_RULE.size_reference_chars)
        tools = {s.group: [s.discard_threshold, s.keep_threshold] for s in self.per_tool if s.certified}
        if tools and self.overall.certified:
            out["tool_thresholds"] = tools
        out["calibrated_for"] = self.stamp()
        return out

    @property
    def certified(self) -> bool:
        """Whether anything was certified: the threshold, or budget mode's target when asked."""
        return self.overall.certified or (self.target is not None and self.target.certified)


def split(rows: Rows, seed: int = 0, fit_share: float = 1 / 3) -> tuple[Rows, Rows]:
    """Sessions split in two: `fit_share` of them to fit, the rest to certify. A session's pairs never fall
    into both; with `fit_share` 0 (or fewer than three sessions) every session certifies."""
    n = len(np.unique(rows.unit_ids))
    n_fit = round(n * fit_share)
    if n_fit < 1 or n < 3:
        return rows.take(np.zeros(len(rows.sessions), bool)), rows
    fit_idx, _test_idx = next(GroupShuffleSplit(1, test_size=n - n_fit, random_state=seed).split(
        rows.keep_result, groups=rows.unit_ids))
    mask = np.isin(np.arange(len(rows.sessions)), fit_idx)
    return rows.take(mask), rows.take(~mask)


def fit(rows: Rows, size_aware: bool = False, exponent: float = DEFAULT_SIZE_EXPONENT
        ) -> tuple[ScoreCalibrator, ScoreCalibrator]:
    """One calibrator per head: the result head on the score thresholds apply to."""
    return (ScoreCalibrator().fit(result_score(rows, size_aware, exponent), rows.needed_result),
            ScoreCalibrator().fit(rows.keep_call, rows.needed_call))


def _losses(rows: Rows, result_lost: np.ndarray, call_lost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-session R_result and R_call, (settings, sessions) each."""
    return (session_losses(result_lost, rows.needed_result, rows.unit_ids),
            session_losses(call_lost, rows.needed_call, rows.unit_ids))


def _bounds(r: np.ndarray, c: np.ndarray, delta: float, bound: str) -> tuple[float, float]:
    return upper_bound(r, delta, bound), upper_bound(c, delta, bound)


def _more_sessions(r: np.ndarray, c: np.ndarray, alpha: float, delta: float, bound: str) -> int | None:
    """How many sessions like these (the observed losses repeated) would certify a setting, up to 50×;
    None when its empirical risk is already above alpha (more sessions cannot help)."""
    n = len(r)
    if n == 0 or r.mean() >= alpha or c.mean() >= alpha:
        return None
    for times in range(1, 51):
        if max(pvalue(np.tile(r, times), alpha, bound), pvalue(np.tile(c, times), alpha, bound)) <= delta:
            return n * times
    return None


def _recency(rows: Rows, score_risk: float) -> dict[str, float] | None:
    """Keep-last-N on the same rows: at each decision point let go of every candidate but the newest N
    (whole results); the most it lets go of with mean R_result <= the judge's. None without keys/points."""
    rank = rows.ranks
    if rank is None or not len(rank):
        return None
    chars = rows.result_chars.astype(float)
    for n in range(int(rank.max()) + 2):
        let_go = rank >= n
        risk = float(session_losses(let_go[None], rows.needed_result, rows.unit_ids).mean())
        if risk <= score_risk + 1e-12:
            return {"keep_last": float(n), "risk_result": risk,
                    "chars_discarded": float((let_go * chars).sum() / max(chars.sum(), 1.0))}
    return None


@dataclass(frozen=True, slots=True)
class _Outcome:
    certified: Certified
    r: np.ndarray
    c: np.ndarray


def _test(rows: Rows, let_go: np.ndarray, drops: np.ndarray, alpha: float, delta: float, bound: str) -> _Outcome:
    r, c = _losses(rows, let_go, drops)
    return _Outcome(learn_then_test([r, c], alpha, delta, bound), r, c)


def _curve_point(o: _Outcome, j: int, delta: float, bound: str, with_bounds: bool) -> dict[str, Any]:
    p = o.certified.pvalue[j]
    ur, uc = _bounds(o.r[j], o.c[j], delta, bound) if with_bounds else (None, None)
    return {"risk_result": float(o.certified.risks[0, j]), "risk_call": float(o.certified.risks[1, j]),
            "pvalue": None if math.isnan(p) else float(p), "upper_result": ur, "upper_call": uc}


def _candidates(values: Any, name: str, high: float, example: str) -> tuple[float, ...]:
    """Candidate values fixed before the data (size exponents, keep thresholds) as a tuple, or `ValueError`
    naming `name` and the rule: 1 to `MAX_EXPONENTS` distinct numbers in (0, `high`]."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a sequence of numbers, e.g. {example} (got {values!r})")
    found = tuple(values)
    if not found or len(set(found)) != len(found) or len(found) > MAX_EXPONENTS:
        raise ValueError(f"{name} must be 1 to {MAX_EXPONENTS} distinct values (got {found!r})")
    for value in found:
        require_in(name, value, 0, high, open_low=True)
    return found


def _comma_numbers(text: str, name: str, example: str) -> tuple[float, ...]:
    """A command-line flag's comma-separated numbers, or `ValueError` naming the flag and its value."""
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ValueError(f"{name} {text!r}: must be comma-separated numbers, e.g. {example}") from None


def check_size_exponents(size_exponents: Any, size_aware: bool = True, name: str = "size_exponents"
                         ) -> tuple[float, ...]:
    """The candidate size exponents as a tuple, or `ValueError` naming `name` and the rule: 1 to
    `MAX_EXPONENTS` distinct values in (0, 4], several only with size-aware scoring."""
    exponents = _candidates(size_exponents, name, 4, "(0.5, 1.0, 2.0)")
    if len(exponents) > 1 and not size_aware:
        raise ValueError(f"{name}: choosing among several needs size-aware scoring")
    return exponents


def check_keep_thresholds(keep_thresholds: Any, name: str = "keep_threshold") -> tuple[float, ...]:
    """The candidate keep thresholds as a tuple (one number, or a sequence of them), or `ValueError` naming
    `name` and the rule: 1 to `MAX_EXPONENTS` distinct values in (0, 1]."""
    one = isinstance(keep_thresholds, (int, float)) and not isinstance(keep_thresholds, bool)
    return tuple(float(k) for k in _candidates((keep_thresholds,) if one else keep_thresholds, name, 1, "(0.6, 0.8)"))


def check_recent_pairs(recent_pairs: Any, name: str = "recent_pairs") -> tuple[int, ...]:
    """The candidate recency windows as a tuple (one integer, or a sequence of them), or `ValueError`
    naming `name` and the rule: 1 to `MAX_EXPONENTS` distinct integers >= 0."""
    found = (recent_pairs,) if isinstance(recent_pairs, int) else recent_pairs
    if isinstance(found, (str, bytes)) or not hasattr(found, "__iter__"):
        raise ValueError(f"{name} must be an integer or a sequence of them, e.g. (0, 4, 8) (got {recent_pairs!r})")
    found = tuple(found)
    if (not found or len(set(found)) != len(found) or len(found) > MAX_EXPONENTS
            or any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in found)):
        raise ValueError(f"{name} must be 1 to {MAX_EXPONENTS} distinct integers >= 0 (got {recent_pairs!r})")
    return found


def parse_recent_pairs(text: str, name: str = "--recent-pairs") -> tuple[int, ...]:
    """Comma-separated recency windows (`0,4,8`) checked by `check_recent_pairs`."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ValueError(f"{name} {text!r}: must be comma-separated integers, e.g. 0,4,8") from None
    return check_recent_pairs(values, f"{name} {text!r}")


def parse_keep_thresholds(text: str, name: str = "--keep-threshold") -> tuple[float, ...]:
    """Comma-separated keep thresholds (`0.6,0.8`) checked by `check_keep_thresholds`."""
    return check_keep_thresholds(_comma_numbers(text, name, "0.6,0.8"), f"{name} {text!r}")


def parse_size_exponents(text: str, size_aware: bool = True, name: str = "--size-exponents") -> tuple[float, ...]:
    """Comma-separated size exponents (a command-line flag's value: `0.5,1,2`) checked by
    `check_size_exponents`."""
    return check_size_exponents(_comma_numbers(text, name, "0.5,1,2"), size_aware, f"{name} {text!r}")


class ThresholdSelector:
    """Certifies thresholds (and, with `target=True`, a budget-mode target) from labelled rows.

    scikit-learn conventions: parameters are stored as given and validated in `fit`; learned attributes
    end in `_` (`overall_`, `per_tool_`, `target_`, `result_calibrator_`, `call_calibrator_`,
    `calibration_`, the whole outcome as one frozen value)."""

    def __init__(self, alpha: float = 0.05, delta: float = 0.1, *, per_tool: bool = False, size_aware: bool = True,
                 uncertain_rate: float | None = None, bound: str = DEFAULT_BOUND, fit_share: float = 0.0, target: bool = False,
                 keep_threshold: float | tuple[float, ...] = SIZE_RULE.keep_threshold, curve_bounds: bool = False,
                 seed: int = 0,
                 size_exponents: tuple[float, ...] = (DEFAULT_SIZE_EXPONENT,),
                 recent_pairs: int | tuple[int, ...] = 0) -> None:
        self.alpha = alpha
        self.delta = delta
        self.per_tool = per_tool
        self.size_aware = size_aware
        self.size_exponents = size_exponents
        self.uncertain_rate = uncertain_rate
        self.bound = bound
        self.fit_share = fit_share
        self.target = target
        self.keep_threshold = keep_threshold
        self.curve_bounds = curve_bounds
        self.seed = seed
        self.recent_pairs = recent_pairs

    def _validate(self, rows: Rows) -> None:
        # ConfigError is a ValueError: the rules and their wording are jev's (jev.support.validate)
        for name in ("alpha", "delta"):
            require_in(name, getattr(self, name), 0, 1, open_low=True, open_high=True)
        if self.uncertain_rate is not None:
            warnings.warn("uncertain_rate no longer chooses keep_threshold: the thresholds are certified with the "
                          "keep_threshold the compactor runs (keep_threshold=)", DeprecationWarning, stacklevel=3)
        require_in("fit_share", self.fit_share, 0, 1, open_high=True)
        check_keep_thresholds(self.keep_threshold)
        check_size_exponents(self.size_exponents, self.size_aware)
        windows = check_recent_pairs(self.recent_pairs)
        if self.bound not in BOUNDS:
            raise ValueError(f"bound must be one of {', '.join(BOUNDS)} (got {self.bound!r})")
        if len(rows.sessions) == 0:
            raise ValueError("no labelled pairs with scores: run SHADOW with records, then jev label")
        if self.target and (rows.points is None or rows.truncate_saves is None or rows.drop_saves is None):
            raise ValueError("budget mode needs decision_point, truncate_saves and drop_saves on every row: "
                             "record SHADOW with this version, then jev label")
        if windows != (0,) and self.target:
            raise ValueError("recent_pairs: budget mode (target=True) is certified without a recency window; "
                             "certify windows with the thresholds alone")
        if windows != (0,) and rows.ranks is None:
            raise ValueError("recent_pairs needs decision_point and a key tN on every row (record SHADOW with this "
                             "version, then jev label)")

    def fit(self, rows: Rows) -> ThresholdSelector:
        """Certify on `rows`; returns self. With several `size_exponents` or keep thresholds (`keep_threshold`
        may be a sequence) every combination is certified at delta / their number and the one that lets go of
        the most is kept: a union bound over the candidates, so the guarantee holds at delta for the one chosen
        — and the keep threshold chosen is the one the compactor is then configured with. Recency windows
        (`recent_pairs`) are candidates alike."""
        self._validate(rows)
        exponents = tuple(float(e) for e in self.size_exponents)
        keeps = check_keep_thresholds(self.keep_threshold)
        windows = check_recent_pairs(self.recent_pairs)
        fit_rows, test_rows = split(rows, self.seed, self.fit_share)
        share = self.delta / (len(exponents) * len(keeps) * len(windows))
        outcomes = [self._fit_one(fit_rows, test_rows, e, k, w, share, exponents, keeps, windows)
                    for e in exponents for k in keeps for w in windows]
        best = max(outcomes, key=_savings)  # the first of equals: the candidates' own order
        self.calibration_ = best
        self.overall_, self.per_tool_, self.target_ = best.overall, best.per_tool, best.target
        self.result_calibrator_, self.call_calibrator_ = best.result_calibrator, best.call_calibrator
        return self

    def _fit_one(self, fit_rows: Rows, test_rows: Rows, exponent: float, keep: float, window: int, delta: float,
                 exponents: tuple[float, ...], keeps: tuple[float, ...], windows: tuple[int, ...]) -> Calibration:
        """Everything certified with one size exponent, keep threshold and recency window, at `delta`."""
        result_calibrator, call_calibrator = fit(fit_rows if len(fit_rows.sessions) else test_rows, self.size_aware,
                                                 exponent)
        overall = self._select("all tools", fit_rows, test_rows, result_calibrator, exponent, keep, delta, window)
        per: list[Selection] = []
        if self.per_tool:
            for tool in sorted(set(test_rows.tools.tolist()) | set(fit_rows.tools.tolist())):
                f, t = fit_rows.take(fit_rows.tools == tool), test_rows.take(test_rows.tools == tool)
                cal = fit(f, self.size_aware, exponent)[0] if len(f.sessions) else result_calibrator
                per.append(self._select(tool, f, t, cal, exponent, keep, delta, window))
        target = self._select_target(test_rows, exponent, keep, delta) if self.target else None
        return Calibration(overall, tuple(per), self.size_aware, result_calibrator, call_calibrator, fit_rows, test_rows,
                           target, keep, exponent, exponents, keeps, window, windows)

    def _grid(self, fit_rows: Rows, exponent: float) -> np.ndarray:
        if not len(fit_rows.sessions):
            return GRID
        score = result_score(fit_rows, self.size_aware, exponent)
        return np.concatenate([[-1.0], np.unique(np.quantile(score, np.linspace(0, 0.98, QUANTILE_POINTS)))])

    def _select(self, group: str, fit_rows: Rows, test: Rows, calibrator: ScoreCalibrator, exponent: float,
                k: float, delta: float, window: int = 0) -> Selection:
        alpha, bound = self.alpha, self.bound
        need = sessions_needed(alpha, delta)
        n_sessions = len(np.unique(test.unit_ids))
        raw = self._grid(fit_rows, exponent)
        raw = raw[raw < k]  # a compactor refuses discard_threshold >= keep_threshold: never certify one
        calibrated = calibrator.predict(np.maximum(raw, 0.0))
        score = result_score(test, self.size_aware, exponent)
        # the compactor's own rule at every grid point (`jev.deciding.policy.table`, keep threshold and recency window
        # included), so what is certified is what a compactor with these settings lets go: (grid, rows),
        # dropped or truncated
        dropped, truncated = decided(raw, k, test, score, window)
        below = dropped | truncated
        outcome = _test(test, below, dropped, alpha, delta, bound)
        chars = np.maximum(test.result_chars, 0).astype(float)
        curve = [{"calibrated": float(calibrated[j]), "raw": float(raw[j]),
                  **_curve_point(outcome, j, delta, bound, self.curve_bounds and j % 10 == 0),
                  "pairs_discarded": float(below[j].mean()) if len(score) else 0.0,
                  "chars_discarded": float((below[j] * chars).sum() / max(chars.sum(), 1.0))}
                 for j in range(len(raw))]
        j = outcome.certified.index
        nxt = max(j + 1, 1)
        more = _more_sessions(outcome.r[nxt], outcome.c[nxt], alpha, delta, bound) if nxt < len(raw) else None
        if j <= 0 or raw[j] < 0 or not below[j].any():  # a threshold that lets nothing go certifies nothing
            first = outcome.certified.risks[:, min(nxt, len(raw) - 1)]
            above = " and ".join(n for n, v in (("R_result", first[0]), ("R_call", first[1])) if v >= alpha)
            if n_sessions < need:
                why = f"at least {need} sessions with no observed loss are needed for alpha={alpha}, delta={delta:.3g}"
                if delta < self.delta:  # the union bound's share: say what one candidate alone would need
                    why += (f" (delta {self.delta:g} shared by {round(self.delta / delta)} candidates; one candidate "
                            f"alone needs {sessions_needed(alpha, self.delta)})")
            elif more:
                why = f"about {more} sessions like these would certify the first threshold that lets go more"
            else:
                why = ("the judge's scores do not separate needed pairs well enough at this alpha"
                       + (f" ({above} above alpha at the first threshold that lets go more)" if above else ""))
            return Selection(group, alpha, delta, bound, n_sessions, len(score), False, 0.0, 1.0, 0.0,
                             float(first[0]), float(first[1]), 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, need, more, window, None,
                             curve, f"nothing certified for {group} ({n_sessions} sessions): {why}")
        d = float(raw[j])
        let_go, unsure = applied(d, k, test, score, window)  # the certified row itself: the compactor's rule
        uncertain = float(unsure.sum() / max((score <= d).sum(), 1))
        ur, uc = _bounds(outcome.r[j], outcome.c[j], delta, bound)
        curve[j].update(upper_result=ur, upper_call=uc)
        applied_risk = float(session_losses(let_go[None], test.needed_result, test.unit_ids).mean())
        recency = _recency(test, applied_risk)
        if recency is not None:
            recency["judge_risk_result"] = applied_risk
        return Selection(group, alpha, delta, bound, n_sessions, len(score), True, d, k, float(calibrated[j]),
                         float(outcome.certified.risks[0, j]), float(outcome.certified.risks[1, j]),
                         float(outcome.certified.pvalue[j]), ur, uc, float(let_go.mean()),
                         float((let_go * chars).sum() / max(chars.sum(), 1.0)), uncertain, need, more, window, recency,
                         curve, "")

    def _select_target(self, rows: Rows, exponent: float, keep: float, delta: float) -> TargetSelection:
        alpha, bound = self.alpha, self.bound
        let_go, drops, removed = budget_let_go(rows, TARGETS, self.size_aware, keep, exponent)
        outcome = _test(rows, let_go, drops, alpha, delta, bound)
        total = max(float(rows.result_chars.sum()), 1.0)
        curve = [{"target_reduction": t, **_curve_point(outcome, j, delta, bound, self.curve_bounds),
                  "chars_discarded": float(removed[j] / total)} for j, t in enumerate(TARGETS)]
        assert rows.points is not None  # budget mode's rows carry their points (`budget_let_go` groups by them)
        n_points = len(np.unique(np.char.add(rows.sessions.astype(str), rows.points.astype(str))))
        n_sessions = len(np.unique(rows.unit_ids))
        j = outcome.certified.index
        if j < 0:
            message = (f"no budget-mode target certified: at the smallest, {TARGETS[0]:.0%}, R_result is "
                       f"{outcome.certified.risks[0, 0]:.4f} and R_call {outcome.certified.risks[1, 0]:.4f} over "
                       f"{n_sessions} sessions (alpha={alpha}, delta={delta})")
            return TargetSelection(alpha, delta, bound, n_sessions, n_points, False, 0.0,
                                   float(outcome.certified.risks[0, 0]), float(outcome.certified.risks[1, 0]), 1.0,
                                   1.0, 1.0, 0.0, curve, message)
        ur, uc = _bounds(outcome.r[j], outcome.c[j], delta, bound)
        curve[j].update(upper_result=ur, upper_call=uc)
        return TargetSelection(alpha, delta, bound, n_sessions, n_points, True, TARGETS[j],
                               float(outcome.certified.risks[0, j]), float(outcome.certified.risks[1, j]),
                               float(outcome.certified.pvalue[j]), ur, uc, curve[j]["chars_discarded"], curve, "")


def budget_let_go(rows: Rows, targets: tuple[float, ...], size_aware: bool, keep_threshold: float,
                  exponent: float = DEFAULT_SIZE_EXPONENT) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What budget mode lets go of at each target, per row, replaying each decision point in the product's
    order (`budget_order`, then the cut `budget` makes): (targets, rows) let go, (targets, rows) dropped
    with the call, and the characters removed per target."""
    assert rows.points is not None and rows.truncate_saves is not None and rows.drop_saves is not None
    config = CompactionConfig(discard_threshold=0.0, keep_threshold=keep_threshold,
                              size_exponent=exponent if size_aware else 0.0,
                              size_reference_chars=SIZE_RULE.size_reference_chars)
    goal = np.asarray(targets, float)
    let_go = np.zeros((len(goal), len(rows.sessions)), bool)
    drops = np.zeros_like(let_go)
    removed = np.zeros(len(goal))
    _keys, group = np.unique(np.char.add(rows.sessions.astype(str), np.char.add("\0", rows.points.astype(str))),
                             return_inverse=True)
    for members in np.split(np.argsort(group, kind="stable"), np.flatnonzero(np.diff(np.sort(group))) + 1):
        judged = [Judged(str(i), float(rows.keep_call[i]), float(rows.keep_result[i]), str(rows.tools[i]),
                         int(rows.result_chars[i]), int(rows.truncate_saves[i]), int(rows.drop_saves[i]))
                  for i in members]
        _fixed, order = budget_order(judged, config)
        walk = [(int(j.key), action.value == "DROP_PAIR", saves) for j, action, saves in order if saves > 0]
        if not walk:
            continue
        index = np.asarray([w[0] for w in walk])
        is_drop = np.asarray([w[1] for w in walk])
        saves = np.asarray([w[2] for w in walk], float)
        before = np.cumsum(saves) - saves  # removed before each let-go: it happens while below the target
        need = np.asarray([budget_target(judged, t) for t in targets], float)
        chosen = before[None, :] < need[:, None]
        let_go[:, index] = chosen
        drops[:, index] = chosen & is_drop[None, :]
        removed += (chosen * saves[None, :]).sum(axis=1)
    return let_go, drops, removed


def _savings(c: Calibration) -> tuple[bool, float, bool, float]:
    """How a calibration ranks among size-exponent candidates: a certified threshold first, then the result
    characters it lets go, then the budget-mode target likewise."""
    t = c.target
    return (c.overall.certified, c.overall.chars_discarded if c.overall.certified else 0.0,
            t is not None and t.certified, t.chars_discarded if t is not None and t.certified else 0.0)


def judged(rows: Rows, k: float, window: int = 0) -> np.ndarray:
    """The rows a compactor with keep threshold `k` and recency window `window` may let go of: a raw result
    score below `k`, and not among the newest `window` candidates of its decision point."""
    out = rows.keep_result < k
    if window:
        if rows.ranks is None:
            raise ValueError("a recency window needs decision_point and a key tN on every row")
        out &= rows.ranks >= window
    return out


def decided(d: float | np.ndarray, k: float, rows: Rows, score: np.ndarray, window: int = 0
            ) -> tuple[np.ndarray, np.ndarray]:
    """The compactor's decision table (`jev.deciding.policy.table`) with discard threshold `d`, keep threshold `k`
    and recency window `window` on every row at once: (dropped, truncated). `d` may be an array of
    thresholds: then one row of outcomes per threshold."""
    d = np.asarray(d, dtype=float)
    d = d[:, None] if d.ndim else d
    return table((score <= d) & judged(rows, k, window), rows.keep_call <= d, rows.keep_call >= k)


def applied(d: float, k: float, rows: Rows, score: np.ndarray, window: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """What the compactor does with thresholds (d, k) and recency window `window` — `jev.deciding.policy.table`, the
    product's own rule, on every row at once: the rows let go (dropped or truncated) and the rows left
    UNCERTAIN. A raw result score >= k is always kept, and so is a row among its point's newest `window`."""
    drop, truncate = decided(d, k, rows, score, window)
    return drop | truncate, (score <= d) & judged(rows, k, window) & ~drop & ~truncate


def select_thresholds(rows: Rows, alpha: float, delta: float, **params: Any) -> Calibration:
    """`ThresholdSelector(alpha, delta, **params).fit(rows).calibration_`: the whole outcome as one value."""
    return ThresholdSelector(alpha, delta, **params).fit(rows).calibration_


