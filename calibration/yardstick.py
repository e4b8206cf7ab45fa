"""The matched-budget comparison: at each decision point the judge lets go by budget mode, and every other
policy lets go of whole results in its own order until it has removed as many characters.

Shared by the yardstick (`benchmarks/quality.py`) and the training script, which chooses the local judge's
capacity, blend and size exponent on it by grouped cross-validation: one rule for what "lost" means.
Policies: the judge (`jev.deciding.policy.budget` on its probabilities), recency (oldest first), biggest-first,
random, the size-aware oracle (unneeded first, biggest saving first) and drop-all. L = the share of
later-needed results let go, pooled over points; the gap closed = (L_recency - L_judge) / (L_recency -
L_oracle); intervals resample groups (sessions, or instances when runs of one instance are grouped).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from jev.applying.apply import SHORT_RESULT_SLACK, truncation_marker
from jev.deciding.policy import Action, CompactionConfig, Judged, action_of, budget

from .dataset import TrainingRows, group_of

POLICIES = ("judge", "recency", "biggest-first", "random", "oracle", "drop-all")
_JUDGE, _RECENCY, _ORACLE = POLICIES.index("judge"), POLICIES.index("recency"), POLICIES.index("oracle")


@dataclass(frozen=True)
class Point:
    """One decision point: its group (the bootstrap's unit) and the row indices of its candidates."""

    group: str
    rows: np.ndarray


def points(rows: TrainingRows, min_chars: int) -> list[Point]:
    """The decision points a host would trigger on: at least `min_chars` characters of candidate results."""
    by_point: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, (s, p) in enumerate(zip(rows.sessions, rows.points, strict=True)):
        by_point[(str(s), int(p))].append(i)
    return [Point(group_of(s), np.asarray(ix)) for (s, _), ix in sorted(by_point.items())
            if rows.result_chars[ix].sum() >= min_chars]


def matched(order: np.ndarray, saves: np.ndarray, target: int) -> np.ndarray:
    """The first results in `order` whose savings reach `target` (none for a target of 0)."""
    if target <= 0:
        return order[:0]
    reach = np.searchsorted(np.cumsum(saves[order]), target)
    return order[: reach + 1]


@dataclass(frozen=True)
class Pick:
    """What the judge let go at one point, and what every policy's let-go of each candidate saves: the
    part of `let_go` that does not depend on the proxy (made once per point, whatever the proxies)."""

    picked: np.ndarray  # candidate indices the judge let go
    removed: int  # the characters that removed: what the other policies are matched to
    saves: np.ndarray  # per candidate, what letting it go saves under every policy
    age: np.ndarray  # candidates oldest first
    biggest: np.ndarray  # candidates biggest saving first (ties oldest first)


def judge_pick(rows: TrainingRows, point: Point, p_result: np.ndarray, p_call: np.ndarray, share: float,
              same_form: bool = True, size_exponent: float = 1.0) -> Pick:
    """The judge's let-go at one point (budget mode at `share`, ranking by P(needed) / saves **
    `size_exponent`: `jev.deciding.policy.budget`, the product's rule) and each candidate's saving (`let_go`)."""
    ix = point.rows
    chars = rows.result_chars[ix].astype(int)
    default = CompactionConfig()
    head = default.truncate_head_chars
    assert rows.call_ids is not None, "rows built without their call ids"
    marker = np.asarray([len(truncation_marker(str(c), default)) for c in rows.call_ids[ix]])  # as the product cuts
    cut_saves = np.where(chars > head + SHORT_RESULT_SLACK, chars - (head + 1 + marker), 0)
    keys = [str(k) for k in rows.keys[ix]]
    calls, results = p_call[ix], p_result[ix]
    config = CompactionConfig(target_reduction=share, size_exponent=size_exponent)
    chosen, removed, _ = budget([Judged(k, c, r, "bash", n, t) for k, c, r, n, t in
                                 zip(keys, calls.tolist(), results.tolist(), chars.tolist(), cut_saves.tolist(),
                                     strict=True)], config)
    picked = np.asarray([j for j, k in enumerate(keys) if action_of(chosen[k]) is not Action.KEEP], dtype=int)
    saves = np.where(calls >= config.keep_threshold, cut_saves, chars) if same_form else chars
    return Pick(picked, removed, saves, np.argsort([int(k[1:]) for k in keys], kind="stable"),
                np.argsort(-saves, kind="stable"))


def matched_policies(pick: Pick, need: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Indices let go by every policy at one point, the others matched to the characters the judge removed;
    `need`: the candidates' needed flags under one proxy (the oracle's order)."""
    saves, removed = pick.saves, pick.removed
    oracle = np.lexsort((-saves, need))  # unneeded first, biggest saving first within
    return {"judge": pick.picked,
            "recency": matched(pick.age, saves, removed),
            "biggest-first": matched(pick.biggest, saves, removed),
            "random": matched(rng.permutation(len(saves)), saves, removed),
            "oracle": matched(oracle, saves, removed),
            "drop-all": np.arange(len(saves))}


def let_go(rows: TrainingRows, point: Point, p_result: np.ndarray, p_call: np.ndarray, share: float,
           rng: np.random.Generator, needed: np.ndarray, same_form: bool = True, size_exponent: float = 1.0
           ) -> dict[str, np.ndarray]:
    """Indices let go at one point by every policy, the others matched to the characters the judge removed
    (budget mode at `share`, ranking by P(needed) / saves ** `size_exponent`). `same_form`: a let-go result
    saves what the product's let-go of that pair saves under every policy (its head and marker kept when
    the judge truncates), so policies differ only in which results they pick; else the others drop whole
    results."""
    return matched_policies(judge_pick(rows, point, p_result, p_call, share, same_form, size_exponent),
                            needed[point.rows], rng)


@dataclass(frozen=True)
class Tally:
    """Later-needed results let go per policy and group, and needed results per group, for one proxy."""

    groups: list[str]
    lost: np.ndarray  # policies x groups
    total: np.ndarray  # groups

    def shares(self) -> np.ndarray:
        """L per policy, pooled over groups (NaN when nothing was needed)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.lost.sum(1) / self.total.sum()

    def gap(self) -> float:
        """The gap closed (NaN when recency does no worse than the oracle)."""
        return float(gap_closed(self.shares()))


def pooled(tallies: dict[str, Tally]) -> Tally:
    """One tally of several cells (named by the keys): their groups side by side, each group still the
    bootstrap's unit, so the pooled interval resamples sessions of every cell."""
    return Tally([f"{name}/{g}" for name, t in tallies.items() for g in t.groups],
                 np.concatenate([t.lost for t in tallies.values()], axis=1),
                 np.concatenate([t.total for t in tallies.values()]))


def gap_closed(L: np.ndarray) -> np.ndarray:
    """(L_recency - L_judge) / (L_recency - L_oracle) over the last axis of policy shares; NaN where
    recency does no worse than the oracle (there is no gap to close)."""
    width = L[..., _RECENCY] - L[..., _ORACLE]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(width > 0, (L[..., _RECENCY] - L[..., _JUDGE]) / np.where(width > 0, width, 1.0), np.nan)


def exponent_at(size_exponent: float | np.ndarray, point: Point) -> float:
    """The size exponent a point is ranked with: the one given, or its rows' own (one per row)."""
    return float(size_exponent[point.rows[0]]) if isinstance(size_exponent, np.ndarray) and size_exponent.ndim \
        else float(size_exponent)


def tally(rows: TrainingRows, p_result: np.ndarray, p_call: np.ndarray, labels: dict[str, np.ndarray], share: float,
          min_chars: int, same_form: bool = True, size_exponent: float | np.ndarray = 1.0, seed: int = 0
          ) -> dict[str, Tally]:
    """Per proxy (`labels`: its name and a needed flag per row): what every policy lets go at every point,
    ranking with `size_exponent` (or each row's own: `exponent_at`)."""
    pts = points(rows, min_chars)
    groups = sorted({p.group for p in pts})
    gi = {g: k for k, g in enumerate(groups)}
    picks = [judge_pick(rows, point, p_result, p_call, share, same_form, exponent_at(size_exponent, point))
             for point in pts]  # the judge's pick does not depend on the proxy: made once
    out = {}
    for proxy, needed in labels.items():
        rng = np.random.default_rng(seed)
        lost = np.zeros((len(POLICIES), len(groups)))
        total = np.zeros(len(groups))
        for point, pick in zip(pts, picks, strict=True):
            need = needed[point.rows]
            g = gi[point.group]
            total[g] += need.sum()
            gone = matched_policies(pick, need, rng)
            for k, name in enumerate(POLICIES):
                lost[k, g] += need[gone[name]].sum()
        out[proxy] = Tally(groups, lost, total)
    return out


BOOT = 10_000  # bootstrap resamples: at 1 000 the pooled strict gap's lower bound moved by 0.009 (SD) between seeds


def with_intervals(t: Tally, boot: int = BOOT, seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """L per policy and the gap closed, each (estimate, 2.5 %, 97.5 %) over `boot` resamples of groups."""
    n = len(t.groups)
    draws = np.random.default_rng(seed + 1).multinomial(n, np.full(n, 1 / n), size=boot)
    with np.errstate(invalid="ignore", divide="ignore"):  # a draw without needed results has no L (NaN)
        Lb = (draws @ t.lost.T) / (draws @ t.total)[:, None]  # boot x policies

    def interval(values: np.ndarray) -> list[float]:
        finite = values[np.isfinite(values)]
        return np.quantile(finite, [0.025, 0.975]).tolist() if len(finite) else [float("nan")] * 2

    L = t.shares()
    def estimate(value: float, values: np.ndarray) -> tuple[float, float, float]:
        low, high = interval(values)
        return value, low, high

    cell = {name: estimate(float(L[k]), Lb[:, k]) for k, name in enumerate(POLICIES)}
    cell["gap closed"] = estimate(t.gap(), gap_closed(Lb))
    return cell
