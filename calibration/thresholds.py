"""From labelled shadow rows to thresholds with a guarantee (SPEC §11, calibration-eval §2.7).

1. Split sessions: a *fit* part (a third) calibrates the raw scores; the *test* part (the rest) certifies.
2. Grid: thresholds on the raw result score at quantiles of the fit split (fixed before the certifying
   data is looked at), safest first, each reported with its calibrated P(needed); the rule a compactor
   applies ("result score <= discard_threshold") is exactly what was certified.
3. Learn-then-Test with Hoeffding–Bentkus p-values, fixed sequence from the safest point, loss = the
   per-session share of needed pairs that lost something needed: a needed result scored <= d (dropped or
   truncated) or a needed call dropped with it. Sessions are the unit.
4. `keep_threshold` is a cost setting: among results at or below d, it decides whether the call is
   confidently needed (TRUNCATE_RESULT: the call stays) or unclear (KEEP). The guarantee counts every
   result at or below d as lost, so it holds for any keep_threshold.

`size_aware=True` ranks by expected loss per character saved: the result score is scaled by
`(size_reference_chars / result_chars) ** size_exponent` before thresholding (the same rule
`CompactionConfig` applies when its `size_exponent` is set).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.model_selection import GroupShuffleSplit

from .fit import ScoreCalibrator
from .risk import learn_then_test, session_losses, sessions_needed

GRID_POINTS = 200
SIZE_EXPONENT = 1.0
SIZE_REFERENCE_CHARS = 1000


@dataclass(frozen=True, slots=True)
class Rows:
    """Labelled pairs as arrays (rows with a refused or missing score are left out by `rows_from`)."""

    sessions: np.ndarray
    tools: np.ndarray
    keep_call: np.ndarray
    keep_result: np.ndarray
    result_chars: np.ndarray
    needed_result: np.ndarray
    needed_call: np.ndarray

    def take(self, mask: np.ndarray) -> Rows:
        return Rows(*(getattr(self, f)[mask] for f in self.__dataclass_fields__))


def rows_from(records: Iterable[Mapping[str, Any]]) -> Rows:
    """Rows from labelled JSON objects (`jev label` output)."""
    kept = [r for r in records if isinstance(r.get("keep_call"), (int, float)) and
            isinstance(r.get("keep_result"), (int, float)) and r.get("reason") != "PINNED"]
    return Rows(np.asarray([str(r["session_id"]) for r in kept]), np.asarray([str(r.get("tool", "")) for r in kept]),
                np.asarray([float(r["keep_call"]) for r in kept]), np.asarray([float(r["keep_result"]) for r in kept]),
                np.asarray([int(r.get("result_chars") or 0) for r in kept]),
                np.asarray([bool(r["needed_result"]) for r in kept]), np.asarray([bool(r["needed_call"]) for r in kept]))


def result_score(rows: Rows, size_aware: bool) -> np.ndarray:
    """The score a threshold applies to: the raw result probability, size-scaled when asked."""
    if not size_aware:
        return rows.keep_result
    return rows.keep_result * (SIZE_REFERENCE_CHARS / np.maximum(rows.result_chars, 1)) ** SIZE_EXPONENT


@dataclass(frozen=True, slots=True)
class Selection:
    """The outcome for one group of rows (all tools, or one tool)."""

    group: str
    alpha: float
    delta: float
    n_sessions: int
    n_rows: int
    certified: bool
    discard_threshold: float  # raw scale, what CompactionConfig applies
    keep_threshold: float
    calibrated_discard: float  # the same threshold as a calibrated probability
    risk: float  # empirical risk at the selected point on the certifying split
    pvalue: float
    pairs_discarded: float  # share of candidate pairs at or below the threshold
    chars_discarded: float  # share of candidate result characters at or below it
    uncertain_rate: float
    sessions_needed: int
    curve: list[dict[str, float]] = field(default_factory=list)
    message: str = ""


@dataclass(frozen=True, slots=True)
class Calibration:
    """Everything `jev calibrate` reports: overall selection, optional per-tool selections, calibrators."""

    overall: Selection
    per_tool: tuple[Selection, ...]
    size_aware: bool
    result_calibrator: ScoreCalibrator
    call_calibrator: ScoreCalibrator
    fit_rows: Rows
    test_rows: Rows

    def config(self) -> dict[str, Any]:
        """`CompactionConfig` fields (by Python name) that apply what was certified."""
        out: dict[str, Any] = {"discard_threshold": self.overall.discard_threshold,
                               "keep_threshold": self.overall.keep_threshold}
        # always said: the compactor's default is size-aware, and plain thresholds must stay plain
        out.update(size_exponent=SIZE_EXPONENT if self.size_aware else 0.0, size_reference_chars=SIZE_REFERENCE_CHARS)
        tools = {s.group: [s.discard_threshold, s.keep_threshold] for s in self.per_tool if s.certified}
        if tools:
            out["tool_thresholds"] = tools
        return out


def split(rows: Rows, seed: int = 0) -> tuple[Rows, Rows]:
    """Sessions split in two: a third to fit the calibrators, the rest to certify. A session's pairs never
    fall into both."""
    if len(np.unique(rows.sessions)) < 3:
        return rows.take(np.zeros(len(rows.sessions), bool)), rows
    fit_idx, test_idx = next(GroupShuffleSplit(1, test_size=2 / 3, random_state=seed).split(
        rows.keep_result, groups=rows.sessions))
    index = np.arange(len(rows.sessions))
    return rows.take(np.isin(index, fit_idx)), rows.take(np.isin(index, test_idx))


def fit(rows: Rows, size_aware: bool = False) -> tuple[ScoreCalibrator, ScoreCalibrator]:
    """One calibrator per head: the result head on the score thresholds apply to."""
    return (ScoreCalibrator().fit(result_score(rows, size_aware), rows.needed_result),
            ScoreCalibrator().fit(rows.keep_call, rows.needed_call))


def _select(group: str, fit_rows: Rows, test: Rows, calibrator: ScoreCalibrator, alpha: float, delta: float,
            size_aware: bool, uncertain_target: float) -> Selection:
    need = sessions_needed(alpha, delta)
    n_sessions = len(np.unique(test.sessions))
    fit_score = result_score(fit_rows if len(fit_rows.sessions) else test, size_aware)
    raw = np.concatenate([[-1.0], np.unique(np.quantile(fit_score, np.linspace(0, 0.98, GRID_POINTS)))])
    calibrated = calibrator.predict(np.maximum(raw, 0.0))
    score = result_score(test, size_aware)
    below = score[None, :] <= raw[:, None]  # (grid, rows): result discarded or truncated
    call_dropped = below & (test.keep_call[None, :] <= raw[:, None])
    lost = (below & test.needed_result[None, :]) | (call_dropped & test.needed_call[None, :])
    needed = test.needed_result | test.needed_call
    certified = learn_then_test(session_losses(lost, needed, test.sessions), alpha, delta)
    chars = np.maximum(test.result_chars, 0).astype(float)
    curve = [{"calibrated": float(calibrated[j]), "raw": float(raw[j]), "risk": float(certified.risks[j]),
              "pvalue": float(certified.pvalues[j]) if not math.isnan(certified.pvalues[j]) else None,
              "pairs_discarded": float(below[j].mean()) if len(score) else 0.0,
              "chars_discarded": float((below[j] * chars).sum() / max(chars.sum(), 1.0))}
             for j in range(len(raw))]
    j = certified.index
    if j <= 0 or raw[j] < 0:
        message = (f"nothing certified for {group}: {n_sessions} sessions on the certifying split"
                   + (f"; at least {need} sessions with no observed loss are needed for alpha={alpha}, "
                      f"delta={delta}, and realistically several times that" if n_sessions < 3 * need else
                      "; the judge's scores do not separate needed pairs well enough at this alpha"))
        return Selection(group, alpha, delta, n_sessions, len(score), False, 0.0, 1.0, 0.0,
                         float(certified.risks[0]) if len(certified.risks) else 0.0, 1.0, 0.0, 0.0, 0.0, need,
                         curve, message)
    d = float(raw[j])
    k = _keep_threshold(d, test, score, uncertain_target)
    low = score <= d
    uncertain = float(((test.keep_call > d) & (test.keep_call < k) & low).sum() / max(low.sum(), 1))
    return Selection(group, alpha, delta, n_sessions, len(score), True, d, k, float(calibrated[j]),
                     float(certified.risks[j]), float(certified.pvalues[j]), curve[j]["pairs_discarded"],
                     curve[j]["chars_discarded"], uncertain, need, curve, "")


def _keep_threshold(d: float, rows: Rows, score: np.ndarray, target: float) -> float:
    """The smallest keep threshold above d whose UNCERTAIN band holds at most `target` of the results at or
    below d (lower means more truncations instead of keeping everything)."""
    low = score <= d
    candidates = np.unique(np.concatenate([np.round(np.linspace(min(d + 0.01, 1.0), 1.0, 100), 4), [1.0]]))
    for k in candidates:
        if k <= d:
            continue
        band = ((rows.keep_call > d) & (rows.keep_call < k) & low).sum() / max(low.sum(), 1)
        if band <= target:
            return float(k)
    return 1.0


def select_thresholds(rows: Rows, alpha: float, delta: float, *, per_tool: bool = False, size_aware: bool = False,
                      uncertain_rate: float = 0.1, seed: int = 0) -> Calibration:
    """Calibrate both heads, then certify the discard threshold (overall, and per tool when asked)."""
    if not 0 < alpha < 1 or not 0 < delta < 1:
        raise ValueError(f"alpha and delta must be in (0, 1) (got alpha={alpha}, delta={delta})")
    if len(rows.sessions) == 0:
        raise ValueError("no labelled pairs with scores: run SHADOW with records, then jev label")
    fit_rows, test_rows = split(rows, seed)
    result_cal, call_cal = fit(fit_rows if len(fit_rows.sessions) else test_rows, size_aware)
    overall = _select("all tools", fit_rows, test_rows, result_cal, alpha, delta, size_aware, uncertain_rate)
    per: list[Selection] = []
    if per_tool:
        for tool in sorted(set(rows.tools.tolist())):
            f, t = fit_rows.take(fit_rows.tools == tool), test_rows.take(test_rows.tools == tool)
            cal = fit(f, size_aware)[0] if len(f.sessions) else result_cal
            per.append(_select(tool, f, t, cal, alpha, delta, size_aware, uncertain_rate))
    return Calibration(overall, tuple(per), size_aware, result_cal, call_cal, fit_rows, test_rows)
