"""Synthetic judges of known quality, for checking that the guarantee holds: sessions of pairs with a 15 %
needed rate, scores drawn from a chosen judge, and the risks a threshold realises on fresh sessions."""

from __future__ import annotations

import numpy as np

from .thresholds import SIZE_RULE, Rows, decided

JUDGES = ("oracle-5", "beta", "overconfident", "random")


def synthetic(n_sessions: int, judge: str, rng: np.random.Generator, pairs: int = 30) -> Rows:
    """`n_sessions` sessions of `pairs` pairs scored by `judge`: "oracle-N" (the truth with N % of labels
    flipped), "beta" (AUROC ~0.85), "overconfident" (beta scores cubed) or "random"."""
    sessions = np.repeat([f"s{i}" for i in range(n_sessions)], pairs)
    needed = rng.random(len(sessions)) < 0.15
    if judge.startswith("oracle-"):
        flips = int(judge.removeprefix("oracle-")) / 100
        p = np.where(rng.random(len(needed)) < flips, ~needed, needed).astype(float) * 0.9 + 0.05
    elif judge == "beta":
        p = np.where(needed, rng.beta(4, 2, len(needed)), rng.beta(2, 4, len(needed)))
    elif judge == "overconfident":
        p = np.where(needed, rng.beta(4, 2, len(needed)), rng.beta(2, 4, len(needed))) ** 3
    elif judge == "random":
        p = rng.random(len(needed))
    else:
        raise ValueError(f"judge must be oracle-N, beta, overconfident or random (got {judge!r})")
    call = np.clip(p + rng.normal(0, 0.05, len(p)), 0, 1)
    return Rows(sessions, np.full(len(p), "bash"), call, p, rng.integers(100, 5000, len(p)), needed, needed.copy())


def realised_risks(rows: Rows, d: float, score: np.ndarray | None = None, keep: float = SIZE_RULE.keep_threshold
                   ) -> tuple[float, float]:
    """Mean per-session R_result (needed results a compactor with thresholds (d, `keep`) lets go: dropped or
    truncated, by its own decision table) and R_call (needed calls it drops). `score` defaults to the raw
    result score."""
    score = rows.keep_result if score is None else score
    dropped, truncated = decided(d, keep, rows, score)
    let_go = dropped | truncated
    _ids, inv = np.unique(rows.sessions, return_inverse=True)

    def mean_share(lost: np.ndarray, need: np.ndarray) -> float:
        n = np.bincount(inv, weights=need.astype(float))
        k = np.bincount(inv, weights=(lost & need).astype(float), minlength=len(n))
        return float(np.where(n > 0, k / np.maximum(n, 1), 0.0).mean())

    return mean_share(let_go, rows.needed_result), mean_share(dropped, rows.needed_call)
