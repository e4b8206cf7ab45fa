"""Threshold calibration: the guarantee holds for synthetic judges of known quality, a random judge
certifies (almost) nothing, sessions never straddle splits, and the CLI writes a usable thresholds.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calibration import Rows, ScoreCalibrator, select_thresholds
from calibration.risk import hb_pvalue, learn_then_test, sessions_needed
from calibration.thresholds import split
from jev import Action, CompactionConfig, ConfigError
from jev.policy import decide

ROOT = Path(__file__).resolve().parents[1]


def synthetic(n_sessions: int, judge: str, rng: np.random.Generator, pairs: int = 30) -> Rows:
    """Sessions of pairs with a 15 % needed rate and a judge of known quality."""
    sessions = np.repeat([f"s{i}" for i in range(n_sessions)], pairs)
    needed = rng.random(len(sessions)) < 0.15
    if judge.startswith("oracle-"):  # the truth, with a share of labels flipped
        flips = int(judge.removeprefix("oracle-")) / 100
        p = np.where(rng.random(len(needed)) < flips, ~needed, needed).astype(float) * 0.9 + 0.05
    elif judge == "beta":  # AUROC ~0.85
        p = np.where(needed, rng.beta(4, 2, len(needed)), rng.beta(2, 4, len(needed)))
    elif judge == "overconfident":  # beta scores pushed to the extremes (p ** 3 style miscalibration)
        base = np.where(needed, rng.beta(4, 2, len(needed)), rng.beta(2, 4, len(needed)))
        p = base ** 3
    else:  # random
        p = rng.random(len(needed))
    call = np.clip(p + rng.normal(0, 0.05, len(p)), 0, 1)
    return Rows(sessions, np.full(len(p), "bash"), call, p, rng.integers(100, 5000, len(p)), needed, needed.copy())


def realised_risk(rows: Rows, d: float) -> float:
    """Mean per-session share of needed pairs whose result would be let go at threshold d."""
    risks = []
    for s in np.unique(rows.sessions):
        m = rows.sessions == s
        need = rows.needed_result[m] | rows.needed_call[m]
        lost = (rows.keep_result[m] <= d) & need
        risks.append(lost.sum() / need.sum() if need.sum() else 0.0)
    return float(np.mean(risks))


@pytest.mark.parametrize("judge", ["oracle-5", "beta", "overconfident"])
def test_guarantee_holds_over_resplits(judge: str) -> None:
    alpha, delta, trials, violations, certified = 0.1, 0.2, 40, 0, 0
    rng = np.random.default_rng(7)
    for trial in range(trials):
        rows = synthetic(150, judge, rng)
        result = select_thresholds(rows, alpha, delta, seed=trial)
        if result.overall.certified:
            certified += 1
            fresh = synthetic(400, judge, rng)  # the population the guarantee speaks about
            violations += realised_risk(fresh, result.overall.discard_threshold) > alpha
    assert certified >= trials * 0.5  # a useful judge gets thresholds (150 sessions, alpha 0.1)
    assert violations <= delta * trials  # ... and they are safe


def test_an_oracle_wrong_too_often_for_alpha_certifies_nothing() -> None:
    # 15 % of needed pairs score like unneeded ones: letting any of them go loses > alpha = 10 %
    rng = np.random.default_rng(11)
    result = select_thresholds(synthetic(150, "oracle-15", rng), 0.1, 0.1)
    assert not result.overall.certified and "do not separate" in result.overall.message


def test_a_random_judge_certifies_almost_nothing() -> None:
    rng = np.random.default_rng(3)
    chars = []
    for trial in range(10):
        result = select_thresholds(synthetic(150, "random", rng), 0.05, 0.1, seed=trial)
        chars.append(result.overall.chars_discarded if result.overall.certified else 0.0)
    assert max(chars) < 0.1


def test_too_few_sessions_says_how_many_are_needed() -> None:
    rows = synthetic(12, "beta", np.random.default_rng(1))
    result = select_thresholds(rows, 0.02, 0.05)
    assert not result.overall.certified
    assert f"at least {sessions_needed(0.02, 0.05)} sessions" in result.overall.message
    assert sessions_needed(0.1, 0.1) == 22 and sessions_needed(0.02, 0.05) == 149


def test_sessions_never_fall_into_two_splits() -> None:
    rows = synthetic(60, "beta", np.random.default_rng(2))
    for seed in range(5):
        fit_rows, test_rows = split(rows, seed)
        assert not set(fit_rows.sessions) & set(test_rows.sessions)
        assert len(fit_rows.sessions) + len(test_rows.sessions) == len(rows.sessions)


def test_ltt_stops_at_the_first_failure_and_is_monotone_in_alpha() -> None:
    losses = np.array([[0.0] * 100, [0.01] * 100, [0.2] * 100, [0.0] * 100])  # the last point is never reached
    result = learn_then_test(losses, 0.05, 0.1)
    assert result.index == 1 and np.isnan(result.pvalues[3])
    assert hb_pvalue(0.0, 50, 0.1) < hb_pvalue(0.05, 50, 0.1) <= 1.0
    rows = synthetic(150, "beta", np.random.default_rng(4))
    d = [select_thresholds(rows, a, 0.1).overall.discard_threshold for a in (0.02, 0.05, 0.1, 0.2)]
    assert d == sorted(d)


def test_calibrator_isotonic_and_platt() -> None:
    rng = np.random.default_rng(5)
    p = rng.random(2000)
    y = rng.random(2000) < p ** 2  # miscalibrated: the true rate is p^2
    iso = ScoreCalibrator().fit(p, y)
    assert iso.method_ == "isotonic" and abs(iso.predict(np.array([0.5]))[0] - 0.25) < 0.08
    platt = ScoreCalibrator().fit(p[:50], y[:50])
    assert platt.method_ == "platt" and np.all(np.diff(platt.predict(np.linspace(0.01, 0.99, 20))) >= 0)


def test_size_aware_and_per_tool_rules_in_the_config() -> None:
    config = CompactionConfig(size_exponent=1.0, tool_thresholds={"bash": [0.05, 0.6]})
    assert decide(0.1, 0.5, config, "other", 10_000)[0] is Action.DROP_PAIR  # scaled 0.05 <= 0.2 and 0.1 <= 0.2
    assert decide(0.1, 0.5, config, "bash", 10_000)[0] is Action.KEEP  # bash: 0.05 <= 0.05 but call 0.1 > 0.05
    assert decide(0.7, 0.5, config, "bash", 10_000)[0] is Action.TRUNCATE_RESULT
    assert decide(0.1, 0.5, CompactionConfig(), "x", 10_000)[0] is Action.DROP_PAIR  # size-aware by default
    assert decide(0.1, 0.5, CompactionConfig(), "x", 1_000)[0] is Action.KEEP  # 1 000 chars: the plain score
    assert decide(0.1, 0.5, CompactionConfig(size_exponent=0.0), "x", 10_000)[0] is Action.KEEP  # plain table
    for bad, message in (({"size_exponent": -1}, "size_exponent must be in"),
                         ({"tool_thresholds": {"bash": [0.5, 0.4]}}, "discard < keep"),
                         ({"tool_thresholds": {"": [0.1, 0.4]}}, "non-blank tool names")):
        with pytest.raises(ConfigError, match=message):
            CompactionConfig(**bad)


def test_cli_calibrate_writes_thresholds_that_jev_compact_accepts(tmp_path: Path) -> None:
    rows = synthetic(120, "beta", np.random.default_rng(9))
    labelled = tmp_path / "labelled.jsonl"
    with labelled.open("w") as f:
        for i in range(len(rows.sessions)):
            f.write(json.dumps({"session_id": rows.sessions[i], "tool": "bash", "key": f"t{i}",
                                "keep_call": rows.keep_call[i], "keep_result": rows.keep_result[i],
                                "result_chars": int(rows.result_chars[i]), "reason": "UNCERTAIN",
                                "needed_result": bool(rows.needed_result[i]),
                                "needed_call": bool(rows.needed_call[i])}) + "\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "jev.cli.main", "calibrate", str(labelled), "--alpha", "0.1",
                           "--delta", "0.1", "--per-tool", "--size-aware", "--out", str(out)], cwd=ROOT,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    summary = json.loads(proc.stdout)
    assert summary["certified"] and "With probability >= 90%" in summary["guarantee"]
    thresholds = json.loads((out / "thresholds.json").read_text())
    assert thresholds["size_exponent"] == 1.0 and "bash" in thresholds["tool_thresholds"]
    assert {"report.md", "reliability.png", "risk_coverage.png", "calibration.json"} <= {p.name for p in out.iterdir()}
    config = CompactionConfig.from_mapping(thresholds)
    assert config.thresholds("bash")[0] == thresholds["tool_thresholds"]["bash"][0]

    few = tmp_path / "few.jsonl"
    few.write_text("".join(line + "\n" for line in labelled.read_text().splitlines()[:150]))
    proc = subprocess.run([sys.executable, "-m", "jev.cli.main", "calibrate", str(few), "--alpha", "0.02",
                           "--delta", "0.05", "--out", str(out)], cwd=ROOT, capture_output=True, timeout=120)
    assert proc.returncode == 3 and b"sessions with no observed loss are needed" in proc.stderr
    assert not (out / "thresholds.json").exists()  # never a silent (or stale) threshold
