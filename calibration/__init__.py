"""Calibration: shadow decision records -> labels -> calibrated scores -> thresholds with a guarantee.

`labels` (what was needed later), `join` (`jev label`: records + transcripts), `fit` / `ScoreCalibrator`
(isotonic or Platt, per head), `risk` (session losses, betting and Hoeffding–Bentkus p-values,
Learn-then-Test), `thresholds` (`ThresholdSelector`, `select_thresholds`), `report` (guarantee, figures,
Markdown); `dataset` and `train_local` train the embedded local judge.
"""

from .fit import ScoreCalibrator
from .report import guarantee, report
from .thresholds import (
                         Calibration,
                         Rows,
                         Selection,
                         TargetSelection,
                         ThresholdSelector,
                         fit,
                         rows_from,
                         select_thresholds,
)

__all__ = ["Calibration", "Rows", "ScoreCalibrator", "Selection", "TargetSelection", "ThresholdSelector", "fit",
           "guarantee", "report", "rows_from", "select_thresholds"]
