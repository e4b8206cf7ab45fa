"""Risk control with sessions as the unit: per-session losses, Hoeffding–Bentkus p-values and
Learn-then-Test fixed-sequence testing (Angelopoulos et al., arXiv 2110.01052).

Guarantee: with probability >= 1 - delta over the calibration sessions, the expected per-session loss of
the selected threshold on a new session from the same distribution is <= alpha.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom


def session_losses(lost: np.ndarray, needed: np.ndarray, sessions: np.ndarray) -> np.ndarray:
    """Per-session needed-pair-drop rate: lost needed pairs / needed pairs (0 for a session with none).
    `lost` is (grid points, rows) of booleans; returns (grid points, sessions)."""
    _ids, inv = np.unique(sessions, return_inverse=True)
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


def sessions_needed(alpha: float, delta: float) -> int:
    """The fewest sessions that could certify anything: all with zero loss, (1 - alpha)^n <= delta."""
    return math.ceil(math.log(delta) / math.log(1 - alpha))


@dataclass(frozen=True, slots=True)
class Certified:
    """The outcome of fixed-sequence testing along a grid ordered from safest to most aggressive."""

    index: int  # last certified grid index, -1 when nothing was certified
    risks: np.ndarray  # empirical mean session loss per grid point
    pvalues: np.ndarray  # p-value per grid point (NaN after the first failure: never tested)
    n_sessions: int


def learn_then_test(losses: np.ndarray, alpha: float, delta: float) -> Certified:
    """Reject H_j: risk > alpha while p_j <= delta, safest first; stop at the first failure (FWER <= delta)."""
    n = losses.shape[1]
    risks = losses.mean(axis=1) if n else np.zeros(losses.shape[0])
    pvalues = np.full(losses.shape[0], np.nan)
    index = -1
    for j in range(losses.shape[0]):
        pvalues[j] = hb_pvalue(float(risks[j]), n, alpha)
        if pvalues[j] > delta:
            break
        index = j
    return Certified(index, risks, pvalues, n)
