"""Calibration: shadow decision records -> labels -> calibrated scores -> thresholds with a guarantee.

Nothing lives here yet. Shadow records already carry what calibration needs (per-pair `keep_call`,
`keep_result`, action and result size; see `jev.records`); `jev label` and `jev calibrate` arrive with
the calibration work (SPEC §11).
"""
