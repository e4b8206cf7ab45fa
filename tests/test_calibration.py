"""Threshold calibration: the guarantee holds for synthetic judges of known quality, a random judge
certifies (almost) nothing, sessions never straddle splits, and the CLI writes a usable thresholds.json."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import cli

from calibration import Rows, ScoreCalibrator, report, rows_from, select_thresholds
from calibration.risk import hb_pvalue, learn_then_test, sessions_needed, wsr_avg_pvalue, wsr_pvalue
from calibration.synthetic import realised_risks, synthetic
from calibration.thresholds import TARGETS, applied, budget_let_go, result_score, split
from jev import Action, CompactionConfig, Compactor, ConfigError
from jev.deciding.policy import Judged, action_of, budget, decide
from jev.judges.replay import ReplayJudge

ROOT = Path(__file__).resolve().parents[1]


def realised_risk(rows: Rows, d: float) -> float:
    """The larger of the two realised risks: a certified threshold must hold both."""
    return max(realised_risks(rows, d))


@pytest.mark.parametrize(("judge", "bound"), [("oracle-5", "wsr"), ("beta", "wsr"), ("overconfident", "wsr"),
                                             ("beta", "hb"), ("beta", "wsr-avg"), ("overconfident", "wsr-avg")])
def test_guarantee_holds_over_resplits(judge: str, bound: str) -> None:
    alpha, delta, trials, violations, certified = 0.1, 0.2, 40, 0, 0
    rng = np.random.default_rng(7)
    for trial in range(trials):
        rows = synthetic(150, judge, rng)
        result = select_thresholds(rows, alpha, delta, size_aware=False, bound=bound, seed=trial)
        if result.overall.certified:
            certified += 1
            fresh = synthetic(400, judge, rng)  # the population the guarantee speaks about
            violations += realised_risk(fresh, result.overall.discard_threshold) > alpha
    assert certified >= trials * 0.5  # a useful judge gets thresholds (150 sessions, alpha 0.1)
    assert violations <= delta * trials  # ... and they are safe


def test_the_betting_pvalue_is_valid_at_the_boundary_and_reaches_the_floor() -> None:
    # risk exactly alpha: a valid p-value is <= delta in at most delta of the draws
    rng = np.random.default_rng(12)
    alpha, delta = 0.1, 0.1
    rejections = sum(wsr_pvalue(np.where(rng.random(200) < 0.5, rng.random(200) * 4 * alpha, 0.0), alpha) <= delta
                     for _ in range(400))
    assert rejections <= delta * 400
    # sessions with no loss: close to the floor no method escapes (45 at alpha 0.05, delta 0.1)
    assert wsr_pvalue(np.zeros(50), 0.05) <= 0.1 < wsr_pvalue(np.zeros(44), 0.05)
    # small but non-zero losses: betting certifies where Hoeffding–Bentkus, which sees only the mean, does not
    small = np.where(np.arange(66) % 5 == 0, 0.04, 0.0)
    assert wsr_pvalue(small, 0.05) <= 0.1 < hb_pvalue(float(small.mean()), 66, 0.05)
    with pytest.raises(ValueError, match="bound must be one of"):
        select_thresholds(synthetic(10, "beta", rng), 0.1, 0.1, bound="hoeffding")


def test_the_averaged_betting_pvalue_is_valid_and_does_not_hang_on_one_order(tmp_path: Path) -> None:
    """`wsr-avg`: valid at the boundary as `wsr` is; and where sessions that lost nothing come first and the
    mean loss is above alpha (a sparse label's lucky order), `wsr` certifies — valid for a random order, but
    this one's luck — while the average over orders does not, and it reads the same whatever the order."""
    rng = np.random.default_rng(12)
    alpha, delta = 0.1, 0.1
    rejections = sum(wsr_avg_pvalue(np.where(rng.random(200) < 0.5, rng.random(200) * 4 * alpha, 0.0), alpha)
                     <= delta for _ in range(400))
    assert rejections <= delta * 400
    lucky = np.concatenate([np.zeros(60), np.where(np.arange(124) % 4 == 0, 0.8, 0.0)])  # mean 0.14 > alpha
    assert lucky.mean() > alpha
    assert wsr_pvalue(lucky, alpha) <= delta < wsr_avg_pvalue(lucky, alpha)
    assert wsr_avg_pvalue(lucky[::-1], alpha) == pytest.approx(wsr_avg_pvalue(lucky, alpha), rel=0.5)
    assert wsr_pvalue(lucky[::-1], alpha) > delta  # the same losses in another order: wsr no longer certifies
    # it still certifies what is clearly below alpha, with few sessions
    assert wsr_avg_pvalue(np.zeros(60), 0.05) <= 0.1
    labelled = _labelled_file(tmp_path / "l.jsonl", synthetic(120, "beta", np.random.default_rng(9)))
    for flags, bound, name in [([], "wsr-avg", "averaged over 16 fixed orders"), (["--bound", "wsr"], "wsr", "one order"),
                               (["--bound", "hb"], "hb", "Hoeffding–Bentkus")]:  # the default is wsr-avg
        out = labelled.parent / f"out-{bound}"
        proc = cli(["calibrate", str(labelled), "--alpha", "0.1", "--delta", "0.1", *flags, "--out", str(out)],
                   cwd=ROOT, capture_output=True, timeout=120)
        assert proc.returncode in (0, 3), proc.stderr.decode()
        assert json.loads((out / "calibration.json").read_text())["overall"]["bound"] == bound
        assert f"- bound: {bound} (" in (out / "report.md").read_text() and name in (out / "report.md").read_text()


@pytest.mark.parametrize(("bound", "why"), [("wsr", "do not separate"), ("wsr-avg", "sessions like these would certify")])
def test_an_oracle_wrong_too_often_for_alpha_certifies_nothing(bound: str, why: str) -> None:
    # 15 % of needed pairs score like unneeded ones: letting any of them go loses > alpha = 10 %. The
    # order-averaged test stops sooner on the grid, where the next threshold's risk is still below alpha
    rng = np.random.default_rng(11)
    result = select_thresholds(synthetic(150, "oracle-15", rng), 0.1, 0.1, size_aware=False, bound=bound)
    assert not result.overall.certified and why in result.overall.message


def test_too_few_sessions_for_the_candidates_says_what_one_alone_would_need() -> None:
    # 60 sessions certify at alpha 0.05, delta 0.1 (45 needed) but not at delta 0.1 / 3 (67 needed)
    rows = synthetic(60, "oracle-5", np.random.default_rng(4))
    one = select_thresholds(rows, 0.05, 0.1)
    three = select_thresholds(rows, 0.05, 0.1, keep_threshold=(0.5, 0.65, 0.8))
    assert one.overall.certified and not three.overall.certified
    assert ("at least 67 sessions with no observed loss are needed for alpha=0.05, delta=0.0333 (delta 0.1 shared "
            "by 3 candidates; one candidate alone needs 45)") in three.overall.message


def test_a_needed_call_dropped_is_a_loss_of_its_own() -> None:
    # the result head is perfect, but needed calls score like unneeded ones: R_result stays 0, R_call does not
    rng = np.random.default_rng(13)
    rows = synthetic(150, "oracle-0", rng)
    needed_call = rows.needed_result | (rng.random(len(rows.sessions)) < 0.3)
    rows = Rows(rows.sessions, rows.tools, np.minimum(rows.keep_call, 0.05), rows.keep_result, rows.result_chars,
                rows.needed_result, needed_call)
    result = select_thresholds(rows, 0.1, 0.1, size_aware=False)
    assert realised_risks(rows, 0.05)[0] == 0 and realised_risks(rows, 0.05)[1] > 0.1
    assert not result.overall.certified and "R_call above alpha" in result.overall.message
    assert "R_result" not in result.overall.message.split("(")[-1]


def test_a_random_judge_certifies_almost_nothing() -> None:
    rng = np.random.default_rng(3)
    chars = []
    for trial in range(10):
        result = select_thresholds(synthetic(150, "random", rng), 0.05, 0.1, size_aware=False, seed=trial)
        chars.append(result.overall.chars_discarded if result.overall.certified else 0.0)
    assert max(chars) < 0.1


def test_too_few_sessions_says_how_many_are_needed() -> None:
    rows = synthetic(12, "beta", np.random.default_rng(1))
    result = select_thresholds(rows, 0.02, 0.05)
    assert not result.overall.certified
    assert f"at least {sessions_needed(0.02, 0.05)} sessions" in result.overall.message
    assert sessions_needed(0.1, 0.1) == 22 and sessions_needed(0.02, 0.05) == 149
    # enough for the floor, too few for these losses: how many sessions like these would do
    some = select_thresholds(synthetic(25, "oracle-5", np.random.default_rng(2)), 0.1, 0.1, size_aware=False)
    assert not some.overall.certified and some.overall.more_sessions == 50
    assert "about 50 sessions like these would certify" in some.overall.message


def test_no_session_is_spent_on_fitting_unless_asked_and_splits_never_straddle() -> None:
    rows = synthetic(60, "beta", np.random.default_rng(2))
    result = select_thresholds(rows, 0.1, 0.1)
    assert result.overall.n_sessions == 60 and len(result.fit_rows.sessions) == 0
    for seed in range(5):
        fit_rows, test_rows = split(rows, seed)
        assert not set(fit_rows.sessions) & set(test_rows.sessions)
        assert len(fit_rows.sessions) + len(test_rows.sessions) == len(rows.sessions)
        assert len(set(fit_rows.sessions)) == 20
    assert select_thresholds(rows, 0.1, 0.1, fit_share=1 / 3).overall.n_sessions == 40


def test_ltt_stops_at_the_first_failure_on_the_larger_pvalue_and_is_monotone_in_alpha() -> None:
    losses = np.array([[0.0] * 100, [0.01] * 100, [0.2] * 100, [0.0] * 100])  # the last point is never reached
    result = learn_then_test(losses, 0.05, 0.1)
    assert result.index == 1 and np.isnan(result.pvalues[0, 3])
    calls = np.array([[0.0] * 100, [0.3] * 100, [0.0] * 100, [0.0] * 100])  # R_call fails at point 1
    both = learn_then_test([losses, calls], 0.05, 0.1)
    assert both.index == 0 and both.pvalue[1] == both.pvalues[1, 1] > 0.1
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
    for bad, message in (({"size_exponent": -1}, r"size_exponent must be a number in \[0, 4\]"),
                         ({"tool_thresholds": {"bash": [0.5, 0.4]}},
                          r"tool_thresholds\[\'bash\'\] keep must be > discard \(got 0.4 <= 0.5\)"),
                         ({"tool_thresholds": {"": [0.1, 0.4]}}, "non-blank tool names")):
        with pytest.raises(ConfigError, match=message):
            CompactionConfig(**bad)


def _labelled_file(path: Path, rows: Rows, strict: bool = False) -> Path:
    """`rows` as `jev label` writes them, the rows' own needed flags under every proxy; with `strict`, every
    result needed under labels-v1 and labels-v2-reuse and the rows' own needed flags as the strict label's."""
    with path.open("w") as f:
        for i in range(len(rows.sessions)):
            needed = bool(rows.needed_result[i])
            f.write(json.dumps({"session_id": rows.sessions[i], "tool": "bash", "key": f"t{i}",
                                "keep_call": rows.keep_call[i], "keep_result": rows.keep_result[i],
                                "result_chars": int(rows.result_chars[i]), "reason": "UNCERTAIN",
                                "needed_result": True if strict else needed,
                                "needed_result_reuse": True if strict else needed, "needed_result_strict": needed,
                                "needed_call": bool(rows.needed_call[i])}) + "\n")
    return path


def test_cli_calibrate_writes_thresholds_that_jev_compact_accepts(tmp_path: Path) -> None:
    labelled = _labelled_file(tmp_path / "labelled.jsonl", synthetic(120, "beta", np.random.default_rng(9)))
    out = tmp_path / "out"
    proc = cli(["calibrate", str(labelled), "--alpha", "0.1",
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

    chosen = tmp_path / "chosen"  # the size exponent chosen among three, each at delta / 3
    proc = cli(["calibrate", str(labelled), "--alpha", "0.1",
                           "--delta", "0.1", "--size-exponents", "0.5,1,2", "--out", str(chosen)], cwd=ROOT,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    picked = json.loads((chosen / "thresholds.json").read_text())
    assert picked["size_exponent"] in (0.5, 1.0, 2.0) and picked["calibrated_for"]["delta"] == pytest.approx(0.1)
    assert picked["calibrated_for"]["size_exponent_chosen_among"] == [0.5, 1.0, 2.0]
    assert "chosen among 0.5, 1, 2" in (chosen / "report.md").read_text()
    assert CompactionConfig.from_mapping(picked).size_exponent == picked["size_exponent"]

    few = tmp_path / "few.jsonl"
    few.write_text("".join(line + "\n" for line in labelled.read_text().splitlines()[:150]))
    proc = cli(["calibrate", str(few), "--alpha", "0.02",
                           "--delta", "0.05", "--out", str(out)], cwd=ROOT, capture_output=True, timeout=120)
    assert proc.returncode == 3 and b"sessions with no observed loss are needed" in b" ".join(proc.stderr.split())
    assert not (out / "thresholds.json").exists()  # never a silent (or stale) threshold


def test_cli_calibrate_certifies_on_the_label_named(tmp_path: Path) -> None:
    """`--label` picks the proxy whose "needed" R_result counts; without it, the strict proxy's
    (`needed_result_strict`, `CERTIFIED_LABEL`): where labels-v1 calls every result needed, certifying on the
    strict label lets go of more; the stamp names the label; a file without the column is refused by name
    and by the labels it does carry (exit 2), nothing written."""
    from calibration.labels import CERTIFIED_LABEL
    assert CERTIFIED_LABEL == "labels-v3-strict"
    labelled = _labelled_file(tmp_path / "labelled.jsonl", synthetic(120, "beta", np.random.default_rng(9)),
                              strict=True)
    v1 = cli(["calibrate", str(labelled), "--alpha", "0.1", "--delta", "0.1", "--label", "labels-v1",
              "--out", str(tmp_path / "v1")], cwd=ROOT, capture_output=True, timeout=120)
    out = tmp_path / "strict"
    strict = cli(["calibrate", str(labelled), "--alpha", "0.1", "--delta", "0.1", "--out", str(out)],
                 cwd=ROOT, capture_output=True, timeout=120)
    assert strict.returncode == 0, strict.stderr.decode()
    stamped = json.loads((out / "thresholds.json").read_text())
    assert stamped["calibrated_for"]["label_version"] == "labels-v3-strict"
    assert "labels-v3-strict (a result counts as needed when the agent later wrote" in json.loads(strict.stdout)[
        "guarantee"]
    assert v1.returncode == 0, v1.stderr.decode()
    lenient = json.loads((tmp_path / "v1" / "thresholds.json").read_text())
    assert lenient["calibrated_for"]["label_version"] == "labels-v1"
    assert stamped["discard_threshold"] > lenient["discard_threshold"]  # 0.119 against 0.039 here
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "needed_result_strict"})
                            + "\n" for line in labelled.read_text().splitlines()))
    refused = cli(["calibrate", str(bare), "--alpha", "0.1", "--delta", "0.1", "--out", str(tmp_path / "bare")],
                  cwd=ROOT, capture_output=True, timeout=120)
    assert refused.returncode == 2 and b"needed_result_strict" in refused.stderr
    assert b"labels-v1, labels-v2-reuse" in refused.stderr  # what the file can be certified on instead
    assert not (tmp_path / "bare").exists()


def budget_rows(n_sessions: int, rng: np.random.Generator, points: int = 4, pairs: int = 12) -> Rows:
    """Sessions with several decision points each, pairs carrying what a truncation and a drop remove."""
    cols: dict[str, list] = {k: [] for k in ("s", "call", "result", "chars", "nr", "nc", "point", "key", "ts", "ds")}
    for i in range(n_sessions):
        for point in range(points):
            for k in range(pairs):
                needed = rng.random() < 0.15
                p = rng.beta(4, 2) if needed else rng.beta(1, 5)
                chars = int(rng.integers(100, 8000))
                for name, value in (("s", f"s{i}"), ("call", float(np.clip(p + rng.normal(0, 0.1), 0, 1))),
                                    ("result", p), ("chars", chars), ("nr", needed), ("nc", needed or rng.random() < 0.1),
                                    ("point", 10 * point + 9), ("key", f"t{k + 1}"), ("ts", max(0, chars - 400)),
                                    ("ds", max(0, chars - 90))):
                    cols[name].append(value)
    a = {k: np.asarray(v) for k, v in cols.items()}
    return Rows(a["s"], np.full(len(a["s"]), "bash"), a["call"], a["result"], a["chars"], a["nr"], a["nc"],
                a["point"], a["key"], a["ts"], a["ds"], judge="jev-local")


def test_budget_replay_lets_go_exactly_what_the_compactor_would() -> None:
    rows = budget_rows(5, np.random.default_rng(21))
    let_go, drops, removed = budget_let_go(rows, (0.1, 0.5, 0.9), True, 0.8)
    for target_index, target in enumerate((0.1, 0.5, 0.9)):
        config = CompactionConfig(discard_threshold=0.0, keep_threshold=0.8, target_reduction=target)
        total = 0
        for session, point in {(s, p) for s, p in zip(rows.sessions.tolist(), rows.points.tolist(), strict=True)}:
            index = np.flatnonzero((rows.sessions == session) & (rows.points == point))
            chosen, cut, _goal = budget([Judged(str(i), rows.keep_call[i], rows.keep_result[i], "bash",
                                                int(rows.result_chars[i]), int(rows.truncate_saves[i]),
                                                int(rows.drop_saves[i])) for i in index], config)
            total += cut
            for i in index:
                action = action_of(chosen[str(i)])
                assert let_go[target_index, i] == (action is not Action.KEEP)
                assert drops[target_index, i] == (action is Action.DROP_PAIR)
        assert removed[target_index] == total


def test_budget_mode_certifies_the_largest_safe_target_and_writes_it() -> None:
    rows = budget_rows(80, np.random.default_rng(22))
    result = select_thresholds(rows, 0.1, 0.1, target=True)
    t = result.target
    assert t is not None and t.certified and 0 < t.target_reduction < 0.95
    curve = {c["target_reduction"]: c for c in t.curve}
    assert curve[t.target_reduction]["risk_result"] <= 0.1 and t.upper_result <= 0.1 and t.upper_call <= 0.1
    nxt = TARGETS[TARGETS.index(t.target_reduction) + 1]
    assert curve[nxt]["pvalue"] is None or curve[nxt]["pvalue"] > 0.1  # the sequence stopped at the next one
    config = result.config()
    assert config["target_reduction"] == t.target_reduction and config["keep_threshold"] == 0.8
    assert CompactionConfig.from_mapping(config).target_reduction == t.target_reduction
    stripped = Rows(*(getattr(rows, f) for f in ("sessions", "tools", "keep_call", "keep_result", "result_chars",
                                                 "needed_result", "needed_call")))
    with pytest.raises(ValueError, match="budget mode needs decision_point, truncate_saves and drop_saves"):
        select_thresholds(stripped, 0.1, 0.1, target=True)


def test_thresholds_are_stamped_and_refused_for_another_judge(tmp_path: Path) -> None:
    rows = budget_rows(80, np.random.default_rng(23))
    result = select_thresholds(rows, 0.1, 0.1, curve_bounds=True)
    assert result.overall.certified
    config = result.config()
    stamp = config["calibrated_for"]
    assert stamp["judge"] == "jev-local" and stamp["ranking"] == "size-aware" and stamp["label_version"] == "labels-v1"
    assert "R_result" in stamp["loss"] and "R_call" in stamp["loss"]
    applied = CompactionConfig.from_mapping(config)
    assert applied.calibrated_for == "jev-local"
    Compactor(ReplayJudge({}, model="jev-local"), applied)  # the judge it was certified for
    with pytest.raises(ConfigError, match="certified for judge 'jev-local', not 'other'"):
        Compactor(ReplayJudge({}, model="other"), applied)
    with pytest.raises(ValueError, match="several values of judge"):
        rows_from([{"session_id": "a", "keep_call": 0.1, "keep_result": 0.1, "needed_result_strict": False,
                    "needed_call": False, "judge": j} for j in ("x", "y")])
    # the report draws the bound that certified: at the selected point it is <= alpha, both risks named
    report(result, tmp_path)
    summary = json.loads((tmp_path / "calibration.json").read_text())
    assert summary["overall"]["upper_result"] <= 0.1 and summary["overall"]["upper_call"] <= 0.1
    assert "R_result" in summary["guarantee"] and "R_call" in summary["guarantee"]
    assert summary["overall"]["recency"] is not None  # keep-last-N at the same realised risk, same sessions
    text = (tmp_path / "report.md").read_text()
    assert "later-needed results let go" in text and "keep-last-" in text


def test_the_reported_share_let_go_is_what_the_compactor_does_with_both_thresholds() -> None:
    rows = budget_rows(60, np.random.default_rng(24))
    s = select_thresholds(rows, 0.1, 0.1).overall
    assert s.certified
    from calibration.thresholds import result_score
    let_go, _unsure = applied(s.discard_threshold, s.keep_threshold, rows, result_score(rows, True))
    config = CompactionConfig(discard_threshold=s.discard_threshold, keep_threshold=s.keep_threshold)
    decided = np.asarray([decide(c, r, config, "bash", int(n))[0] is not Action.KEEP
                          for c, r, n in zip(rows.keep_call, rows.keep_result, rows.result_chars, strict=True)])
    assert np.array_equal(let_go, decided)
    chars = rows.result_chars.astype(float)
    assert s.chars_discarded == pytest.approx((chars * decided).sum() / chars.sum())


def test_choosing_among_keep_thresholds_certifies_each_at_a_share_of_delta_and_configures_the_one_chosen() -> None:
    from calibration.thresholds import applied, result_score

    rows = synthetic(200, "beta", np.random.default_rng(3))
    keeps = (0.5, 0.65, 0.8)
    chosen = select_thresholds(rows, 0.1, 0.1, keep_threshold=keeps)
    alone = [select_thresholds(rows, 0.1, 0.1 / 3, keep_threshold=k) for k in keeps]
    best = max(alone, key=lambda c: c.overall.chars_discarded)
    assert chosen.keep_threshold == best.keep_threshold == chosen.overall.keep_threshold
    assert chosen.overall.chars_discarded == best.overall.chars_discarded and chosen.delta == pytest.approx(0.1)
    config = chosen.config()
    assert config["keep_threshold"] == chosen.keep_threshold  # the compactor runs what was certified
    assert config["calibrated_for"]["keep_threshold_chosen_among"] == list(keeps)
    # what is certified is what that compactor lets go: the selection's share is the applied rule's
    s = chosen.overall
    let_go, _unsure = applied(s.discard_threshold, s.keep_threshold, rows, result_score(rows, True))
    chars = rows.result_chars.astype(float)
    assert s.chars_discarded == pytest.approx(float(chars[let_go].sum() / chars.sum()))
    with pytest.raises(ValueError, match="keep_threshold must be 1 to 8 distinct values"):
        select_thresholds(rows, 0.1, 0.1, keep_threshold=(0.8, 0.8))
    with pytest.raises(ValueError, match="keep_threshold must be a number in"):
        select_thresholds(rows, 0.1, 0.1, keep_threshold=(0.8, 1.5))


def test_recency_rank_counts_each_decision_points_candidates_newest_first() -> None:
    from calibration.thresholds import recency_rank

    rows = budget_rows(3, np.random.default_rng(5), points=2, pairs=5)
    keep = np.random.default_rng(6).random(len(rows.sessions)) < 0.7  # points with gaps in their keys
    assert np.array_equal(rows.take(keep).ranks, rows.ranks[keep])  # a subset keeps its rows' places
    rows = dataclasses.replace(rows.take(keep), ranks=None)  # ranked again: among what is left
    for i in range(len(rows.sessions)):
        same = (rows.sessions == rows.sessions[i]) & (rows.points == rows.points[i])
        newer = same & (np.char.lstrip(rows.keys.astype(str), "t").astype(int) > int(rows.keys[i][1:]))
        assert rows.ranks[i] == newer.sum()
    assert recency_rank(rows.sessions, None, rows.keys) is None
    assert recency_rank(rows.sessions, rows.points, np.full(len(rows.keys), "call_1")) is None


def recency_rows(n_sessions: int, rng: np.random.Generator) -> Rows:
    """Rows where only recency tells: the newest candidates are the needed ones, and the scores say nothing."""
    rows = budget_rows(n_sessions, rng, points=3, pairs=12)
    needed = rows.ranks < 3
    flat = rng.uniform(0.05, 0.3, len(needed))
    return dataclasses.replace(rows, keep_result=flat, keep_call=flat, needed_result=needed, needed_call=needed)


def test_a_certified_recency_window_keeps_what_keep_last_n_keeps_and_is_what_the_compactor_runs() -> None:
    rows = recency_rows(120, np.random.default_rng(8))
    windows = (0, 2, 4, 8)
    alone = select_thresholds(rows, 0.1, 0.1)
    chosen = select_thresholds(rows, 0.1, 0.1, recent_pairs=windows)
    s = chosen.overall
    # scores that say nothing let go of little on their own; with a window, of what keep-last-N does
    assert s.certified and s.chars_discarded > alone.overall.chars_discarded + 0.3
    assert chosen.recent_pairs == s.recent_pairs >= 3 and chosen.delta == pytest.approx(0.1)
    from calibration import guarantee
    assert f"recency window {s.recent_pairs} were chosen among" in guarantee(chosen)
    assert "windows 0, 2, 4, 8, each combination certified at delta/4 = 0.025" in guarantee(chosen)
    by_window = [select_thresholds(rows, 0.1, 0.1 / len(windows), recent_pairs=w) for w in windows]
    assert s.chars_discarded == max(c.overall.chars_discarded for c in by_window)
    # what is certified is what that compactor lets go: nothing among the newest `recent_pairs` of a point
    let_go, _unsure = applied(s.discard_threshold, s.keep_threshold, rows, result_score(rows, True), s.recent_pairs)
    assert not (let_go & (rows.ranks < s.recent_pairs)).any()
    chars = rows.result_chars.astype(float)
    assert s.chars_discarded == pytest.approx(float(chars[let_go].sum() / chars.sum()))
    config = chosen.config()
    assert config["preserve_recent_pairs"] == s.recent_pairs
    assert config["calibrated_for"]["recent_pairs_chosen_among"] == list(windows)
    assert CompactionConfig.from_mapping(config).preserve_recent_pairs == s.recent_pairs
    with pytest.raises(ValueError, match="recent_pairs must be 1 to 8 distinct integers >= 0"):
        select_thresholds(rows, 0.1, 0.1, recent_pairs=(2, 2))
    with pytest.raises(ValueError, match="recent_pairs: budget mode"):
        select_thresholds(rows, 0.1, 0.1, recent_pairs=(0, 4), target=True)
    keyless = dataclasses.replace(rows, keys=None, ranks=None)
    with pytest.raises(ValueError, match="recent_pairs needs decision_point and a key tN"):
        select_thresholds(keyless, 0.1, 0.1, recent_pairs=(0, 4))


def test_choosing_among_size_exponents_certifies_each_at_a_share_of_delta_and_keeps_the_one_letting_go_most() -> None:
    from calibration import guarantee

    rows = synthetic(200, "beta", np.random.default_rng(3))
    candidates = (0.5, 1.0, 2.0)
    chosen = select_thresholds(rows, 0.1, 0.1, size_exponents=candidates)
    alone = [select_thresholds(rows, 0.1, 0.1 / 3, size_exponents=(e,)) for e in candidates]
    assert all(c.overall.certified for c in alone) and len({c.overall.chars_discarded for c in alone}) == 3
    best = max(alone, key=lambda c: c.overall.chars_discarded)
    assert chosen.size_exponent == best.size_exponent and chosen.overall == best.overall
    assert chosen.overall.delta == pytest.approx(0.1 / 3) and chosen.delta == pytest.approx(0.1)
    config = chosen.config()
    assert config["size_exponent"] == best.size_exponent
    assert config["calibrated_for"]["delta"] == pytest.approx(0.1)
    assert config["calibrated_for"]["size_exponent_chosen_among"] == [0.5, 1.0, 2.0]
    text = guarantee(chosen)
    assert text.startswith("With probability >= 90%") and "chosen among exponents 0.5, 1, 2" in text
    # one candidate, the default: what calibration did before, at the whole delta
    one = select_thresholds(rows, 0.1, 0.1)
    assert one.size_exponent == 1.0 and one.overall.delta == 0.1 and one.config() == \
        select_thresholds(rows, 0.1, 0.1, size_exponents=(1.0,)).config()
    assert "size_exponent_chosen_among" not in one.config()["calibrated_for"]
    CompactionConfig.from_mapping({k: v for k, v in config.items()})  # the compactor takes what it wrote


@pytest.mark.slow
def test_the_guarantee_holds_for_the_size_exponent_chosen() -> None:
    from calibration.thresholds import result_score

    alpha, delta, trials, violations, certified = 0.1, 0.2, 30, 0, 0
    rng = np.random.default_rng(11)
    for trial in range(trials):
        chosen = select_thresholds(synthetic(150, "beta", rng), alpha, delta, size_exponents=(0.5, 1.0, 2.0), seed=trial)
        if chosen.overall.certified:
            certified += 1
            fresh = synthetic(400, "beta", rng)
            score = result_score(fresh, True, chosen.size_exponent)
            violations += max(realised_risks(fresh, chosen.overall.discard_threshold, score)) > alpha
    assert certified >= trials * 0.5 and violations <= delta * trials


@pytest.mark.parametrize(("params", "message"), [
    ({"size_exponents": ()}, "size_exponents must be 1 to 8 distinct values"),
    ({"size_exponents": 1.0}, "size_exponents must be a sequence of numbers"),
    ({"size_exponents": (1.0, 1.0)}, "size_exponents must be 1 to 8 distinct values"),
    ({"size_exponents": (0.0,)}, "size_exponents"),
    ({"size_exponents": (0.5, 1.0), "size_aware": False}, "needs size-aware scoring"),
])
def test_size_exponents_are_refused_by_name(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        select_thresholds(synthetic(30, "beta", np.random.default_rng(0)), 0.1, 0.1, **params)
