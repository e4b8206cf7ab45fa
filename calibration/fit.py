"""Calibrated scores: a monotone map from a judge's raw probability to P(needed), fitted per head.

scikit-learn conventions: no work in `__init__`, `fit` returns self, learned attributes end in `_`.
Isotonic regression when there are enough labels of both kinds, Platt scaling (a logistic fit on the
logit) when data are few. Splits are always by session.
"""

from __future__ import annotations

import numpy as np
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

MIN_ISOTONIC = 200  # rows; and at least 20 of each label


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


class ScoreCalibrator:
    """Maps raw judge probabilities to calibrated ones; monotone non-decreasing."""

    def __init__(self, method: str = "auto") -> None:
        self.method = method

    def fit(self, scores: np.ndarray, labels: np.ndarray) -> ScoreCalibrator:
        scores, labels = np.asarray(scores, float), np.asarray(labels, bool)
        positives = int(labels.sum())
        method = self.method
        if method == "auto":
            enough = len(labels) >= MIN_ISOTONIC and min(positives, len(labels) - positives) >= 20
            method = "isotonic" if enough else "platt"
        self.method_ = method
        if len(set(labels.tolist())) < 2:  # one class only: a constant map at the observed rate
            self.constant_: float | None = float(labels.mean()) if len(labels) else 0.5
            return self
        self.constant_ = None
        if method == "isotonic":
            self.iso_ = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(scores, labels)
        else:
            self.platt_ = LogisticRegression(C=1e6, max_iter=1000).fit(_logit(scores)[:, None], labels)
        return self

    def predict(self, scores: np.ndarray) -> np.ndarray:
        scores = np.asarray(scores, float)
        if self.constant_ is not None:
            return np.full(len(scores), self.constant_)
        if self.method_ == "isotonic":
            return self.iso_.predict(scores)
        return self.platt_.predict_proba(_logit(scores)[:, None])[:, 1]
