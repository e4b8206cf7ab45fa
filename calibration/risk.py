"""Risk control with sessions as the unit: per-session losses, p-values for "the expected loss exceeds
alpha", and Learn-then-Test fixed-sequence testing (Angelopoulos et al., arXiv 2110.01052).

Three bounds, all valid for losses in [0, 1] drawn independently per session:
- `wsr`: a betting test (Waudby-Smith & Ramdas, arXiv 2010.09686). Capital
  K_t = prod (1 + lambda_i (alpha - L_i)) with each bet chosen from the sessions before it (aGRAPA,
  capped below 1/(1 - alpha)) is a non-negative supermartingale when the true risk is >= alpha, so by
  Ville's inequality p = 1 / max_t K_t is a valid p-value. It adapts to the losses' variance: sessions
  with small losses count for almost as much as sessions with none, where Hoeffding–Bentkus needs zeros.
- `wsr-avg`, the default: the same bets, but the capital at the last session averaged over `ORDERS` fixed pseudo-random
  orders (an average of e-values is an e-value, so p = 1 / that average is valid by Markov's inequality). It
  does not hang on one order: `wsr` certifies as soon as its capital is high anywhere along its order, so
  under a sparse label a run of sessions that needed nothing early in the order can certify a threshold
  whose mean loss over all of them is above alpha (valid, but the luck of one order); `wsr-avg` reads every
  session in every order, at some cost in what it certifies.
- `hb`: Hoeffding–Bentkus on the mean, which depends on the mean only.

Guarantee: with probability >= 1 - delta over the calibration sessions, the expected per-session loss of
the selected point on a new session from the same distribution is <= alpha — for each of the risks
tested: a point is certified only when every risk's p-value is <= delta (an intersection–union test, so
no correction is needed), along one fixed sequence from the safest point.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

ORDERS = 16  # the orders `wsr-avg` averages the final capital over, fixed before any loss is seen
BOUND_NAMES = {"wsr": "Waudby-Smith–Ramdas betting along one order of the sessions",
               "wsr-avg": f"Waudby-Smith–Ramdas betting, the final capital averaged over {ORDERS} fixed orders",
               "hb": "Hoeffding–Bentkus"}  # what a report calls each bound
BOUNDS = tuple(BOUND_NAMES)
DEFAULT_BOUND = "wsr-avg"  # order-robust: one order's early run of clean sessions cannot certify (design.md)
BET_CAP = 0.95  # share of the largest safe bet 1/(1 - alpha): one session that loses everything keeps 5 %


def session_losses(lost: np.ndarray, needed: np.ndarray, sessions: np.ndarray) -> np.ndarray:
    """Per-session share of needed items lost: lost needed / needed (0 for a session with none needed).
    `lost` is (grid points, rows) of booleans; returns (grid points, sessions), the sessions in the order of
    a hash of their ids: fixed before any loss is seen, as the betting test needs, and not the ids' own
    order (which may follow time or instance)."""
    ids, inv = np.unique(sessions, return_inverse=True)
    rank = np.argsort(np.argsort([hashlib.sha256(str(i).encode()).digest() for i in ids.tolist()]))
    inv = rank[inv] if len(ids) else inv
    n = inv.max() + 1 if len(inv) else 0
    n_need = np.bincount(inv, weights=needed.astype(float), minlength=n)
    out = np.empty((lost.shape[0], n))
    for j in range(lost.shape[0]):
        dropped = np.bincount(inv, weights=(lost[j] & needed).astype(float), minlength=n)
        out[j] = np.where(n_need > 0, dropped / np.maximum(n_need, 1.0), 0.0)
    return out


def hb_pvalue(risk: float, n: int, alpha: float) -> float:
    """Hoeffding–Bentkus p-value for H0: true risk > alpha, from the mean of n losses in [0, 1]."""
    if n == 0:
        return 1.0
    a = min(risk, alpha)
    h = (a * math.log(a / alpha) if a > 0 else 0.0) + ((1 - a) * math.log((1 - a) / (1 - alpha)) if a < 1 else 0.0)
    return float(min(1.0, math.exp(-n * h), math.e * binom.cdf(math.ceil(n * risk), n, alpha)))


def wsr_pvalue(losses: np.ndarray, alpha: float) -> float:
    """Betting p-value for H0: true risk >= alpha, from losses in [0, 1] in a fixed order chosen before
    they were seen (the bets are predictable: each uses only the losses before it)."""
    x = np.asarray(losses, float)
    if len(x) == 0:
        return 1.0
    best = float(_log_capital(x, alpha).max())
    return 1.0 if best <= 0 else float(min(1.0, math.exp(-best)))


def wsr_avg_pvalue(losses: np.ndarray, alpha: float) -> float:
    """Betting p-value for H0: true risk >= alpha from the capital after the last session, averaged over
    `ORDERS` orders of the losses fixed in advance (seeded, independent of the losses): order-robust."""
    x = np.asarray(losses, float)
    if len(x) == 0:
        return 1.0
    finals = _log_capital(x[_orders(len(x))], alpha)[:, -1]  # every order at once, one row each
    log_e = float(np.logaddexp.reduce(finals)) - math.log(ORDERS)  # log of the mean capital, without overflow
    return 1.0 if log_e <= 0 else float(min(1.0, math.exp(-log_e)))


@functools.lru_cache(maxsize=64)
def _orders(n: int) -> np.ndarray:
    """`ORDERS` orders of n sessions, (ORDERS, n) indices, seeded: fixed before any loss is seen."""
    return np.stack([np.random.default_rng(order).permutation(n) for order in range(ORDERS)])


def _log_capital(x: np.ndarray, alpha: float) -> np.ndarray:
    """log K_t after each loss of `x` (along its last axis, each row an order of its own), in order: aGRAPA
    bets on H0 "true risk >= alpha"."""
    cap = BET_CAP / (1 - alpha)
    # running mean and variance of the losses before each session, started from a prior of alpha / 2 and
    # alpha / 4 (one pseudo-session: a guess at the scale, not at the answer; any choice stays valid)
    count = np.arange(1, x.shape[-1] + 1, dtype=float)
    before = np.zeros((*x.shape[:-1], 1))
    prev_sum = np.concatenate([before, np.cumsum(x, axis=-1)[..., :-1]], axis=-1)
    prev_sq = np.concatenate([before, np.cumsum(x * x, axis=-1)[..., :-1]], axis=-1)
    mean = (alpha / 2 + prev_sum) / count
    var = np.maximum((alpha / 4 + prev_sq) / count - mean * mean, 1e-6)
    edge = alpha - mean
    bets = np.clip(edge / (var + edge * edge), 0.0, cap)  # aGRAPA: the growth-optimal bet, estimated
    return np.cumsum(np.log1p(bets * (alpha - x)), axis=-1)


def pvalue(losses: np.ndarray, alpha: float, bound: str = DEFAULT_BOUND) -> float:
    """The p-value of one point's per-session losses under the chosen bound."""
    if bound == "wsr":
        return wsr_pvalue(losses, alpha)
    if bound == "wsr-avg":
        return wsr_avg_pvalue(losses, alpha)
    if bound == "hb":
        return hb_pvalue(float(np.mean(losses)) if len(losses) else 0.0, len(losses), alpha)
    raise ValueError(f"bound must be one of {', '.join(BOUNDS)} (got {bound!r})")


def upper_bound(losses: np.ndarray, delta: float, bound: str = DEFAULT_BOUND) -> float:
    """The (1 - delta) upper confidence bound the test implies: the smallest level it would certify
    (bisection; p-values fall as the level rises). Drawn in the report so the picture is the verdict."""
    lo, hi = 0.0, 1.0
    if pvalue(losses, 1 - 1e-9, bound) > delta:
        return 1.0
    for _ in range(24):  # to within 1e-7
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if pvalue(losses, mid, bound) <= delta else (mid, hi)
    return hi


def sessions_needed(alpha: float, delta: float) -> int:
    """The fewest sessions that could certify anything: all with zero loss, (1 - alpha)^n <= delta."""
    return math.ceil(math.log(delta) / math.log(1 - alpha))


@dataclass(frozen=True, slots=True)
class Certified:
    """The outcome of fixed-sequence testing along a grid ordered from safest to most aggressive."""

    index: int  # last certified grid index, -1 when nothing was certified
    risks: np.ndarray  # (risks tested, grid points): empirical mean session loss
    pvalues: np.ndarray  # (risks tested, grid points): NaN after the first failure (never tested)
    n_sessions: int

    @property
    def pvalue(self) -> np.ndarray:
        """The p-value of each grid point: the largest over the risks (intersection–union)."""
        return self.pvalues.max(axis=0)


def learn_then_test(losses: Sequence[np.ndarray] | np.ndarray, alpha: float, delta: float,
                    bound: str = DEFAULT_BOUND) -> Certified:
    """Reject H_j: some risk > alpha while every risk's p-value at j is <= delta, safest first; stop at
    the first failure (FWER <= delta). `losses` holds one (grid points, sessions) array per risk."""
    stack = np.asarray(losses, float)
    if stack.ndim == 2:
        stack = stack[None]
    n = stack.shape[2]
    risks = stack.mean(axis=2) if n else np.zeros(stack.shape[:2])
    pvalues = np.full(stack.shape[:2], np.nan)
    index = -1
    for j in range(stack.shape[1]):
        pvalues[:, j] = [pvalue(stack[r, j], alpha, bound) for r in range(stack.shape[0])]
        if pvalues[:, j].max() > delta:
            break
        index = j
    return Certified(index, risks, pvalues, n)
