"""The yardstick on held-out sessions: `quality.py`/`equal_risk.py --held-out` score weights as the local
judge scores them, on real trajectories, and refuse bad flags by name before reading anything."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import cli, run_main

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from decisions_server import DecisionsServer  # noqa: E402
from quality import held_out_cells, labelled_cell  # noqa: E402

from calibration.train_local import READ_DEPTH, scores_of  # noqa: E402
from jev import formats  # noqa: E402
from jev.judges.local import MODEL, LocalJudge, load_model  # noqa: E402
from jev.reading.analysis import analyze  # noqa: E402

REAL = [ROOT / "examples" / "data" / "django__django-11163.traj.json",
        *sorted((ROOT / "tests" / "data").glob("*.traj.json"))]
OLD_WEIGHTS = ROOT / "tests" / "data" / "local_model-0.3.0.json"


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    """A mini-swe-agent run folder of real trajectories (Gemini's dev format, 2.x Responses and text modes)."""
    folder = tmp_path / "run" / "trajectories" / "model-x"
    folder.mkdir(parents=True)
    for path in REAL:
        shutil.copy(path, folder / path.name)
    (tmp_path / "run" / "preds.json").write_text("{}")
    return tmp_path / "run"


@pytest.mark.parametrize("weights", [None, OLD_WEIGHTS], ids=["shipped", "0.3.0"])
def test_held_out_scores_are_the_local_judges_at_every_decision_point(run_folder: Path, weights: Path | None
                                                                      ) -> None:
    model_path = None if weights is None else str(weights)
    [cell] = held_out_cells([str(run_folder)], model_path, workers=1)
    rows, p_result, p_call = cell.rows, cell.p_result, cell.p_call
    assert cell.title.startswith(f"{MODEL} → " if weights is None else "local_model-0.3.0.json → ")
    assert cell.size_exponent == load_model(model_path).get("size_exponent", 1.0)
    judge = LocalJudge(model_path)
    messages = {path.name.removesuffix(".traj.json"): formats.load(orjson.loads(path.read_bytes()), "mini-swe-agent")
                for path in REAL}
    checked = 0
    for session in set(rows.sessions.tolist()):
        for point in set(rows.points[rows.sessions == session].tolist()):
            at = np.flatnonzero((rows.sessions == session) & (rows.points == point))
            said = judge.scores(analyze(messages[session.rsplit("/", 1)[-1]][: point + 1]))
            for i in at:
                assert said[rows.keys[i]] == pytest.approx((p_call[i], p_result[i]), abs=5e-5)
                checked += 1
    assert checked >= 20 and len(set(rows.sessions.tolist())) == len(REAL)
    # the two weights score differently: the check above compared something
    other = scores_of(load_model(None if weights else str(OLD_WEIGHTS)), rows.X)
    assert not np.allclose(other[0], p_result)


def _bench(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


def _refusal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, *args: str) -> str:
    """What a benchmark's `main` says on stderr refusing `args` (it must exit 2), run in process: the same
    checks as the script, without a start-up per refusal."""
    ran = run_main(monkeypatch, capsys, name, *args)
    assert ran.returncode == 2, (name, args)
    return ran.stderr


@pytest.mark.slow
def test_quality_and_equal_risk_run_on_held_out_sessions_and_refuse_bad_flags_by_name(
        run_folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    proc = run_main(monkeypatch, capsys, "quality", "--held-out", str(run_folder), "--min-chars", "0", "--boot", "20")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith(f"| {MODEL} → run (held out) |")]
    assert [row.split(" | ")[1] for row in rows] == ["labels-v3-strict", "labels-v1", "labels-v2-reuse"] * 2
    assert " 5 (5) " in rows[0]  # one decision point (8 pairs) in each of the five sessions, each its own instance
    assert rows[0].endswith("| 1.000 | — |")  # every policy lets go of the one needed result: no gap, not a ratio of 1e-12
    big = run_main(monkeypatch, capsys, "quality", "--held-out", str(run_folder), "--boot", "20")  # no point reaches 30 000
    assert big.returncode == 0 and "no decision point with ≥ 30,000 characters" in big.stdout
    risk = run_main(monkeypatch, capsys, "equal_risk", "--held-out", str(run_folder), "--model", str(OLD_WEIGHTS),
                    "--splits", "2")
    assert risk.returncode == 0, risk.stderr
    assert risk.stdout.count("| local_model-0.3.0.json → run (held out) |") == 3  # a row per proxy
    refused = _bench("quality", "--held-out", str(run_folder / "nowhere"))  # one refusal through the script
    assert refused.returncode == 2 and "--held-out: " in refused.stderr, refused.stderr
    for name, args, says in [  # the others in process: the same `main`, without a second start-up each
            ("quality", ["--model", str(OLD_WEIGHTS)], "--model goes with --held-out"),
            ("quality", ["--held-out", str(run_folder), "--model", str(run_folder / "preds.json")], "--model: "),
            ("quality", ["--held-out", str(run_folder), "--in-sample"], "--held-out scores weights as they are"),
            ("equal_risk", ["--size-exponents", "1,x"], "--size-exponents '1,x': must be comma-separated numbers"),
            ("equal_risk", ["--size-exponents", "5"], "--size-exponents '5' must be a number in (0, 4]"),
            ("equal_risk", ["--recent-pairs", "3,3"], "--recent-pairs '3,3' must be 1 to 8 distinct integers"),
            ("equal_risk", ["--keep-thresholds", "0.8,1.5"], "--keep-thresholds '0.8,1.5' must be a number in (0, 1]"),
            ("equal_risk", ["--scan-chars", "0"], "--scan-chars must be an integer >= 1 (got 0)"),
            ("equal_risk", ["--held-out", str(run_folder), "--scan-chars", str(READ_DEPTH // 2)],
             "--scan-chars retrains the dev-set")]:
        assert says in _refusal(monkeypatch, capsys, name, *args), (name, args)


def test_judge_frontier_refuses_bad_flags_by_name(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before any data is read: the flag and its rule named."""
    for args, says in [(["--scan-chars", "0"], "--scan-chars must be an integer >= 1 (got 0)"),
                       (["--boot", "0"], "--boot must be an integer >= 1 (got 0)"),
                       (["--boot", "x"], "--boot: invalid int value: 'x'")]:
        assert says in _refusal(monkeypatch, capsys, "judge_frontier", *args), args


def test_judge_reading_refuses_bad_flags_by_name(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before anything is timed or read: the flag and its rule named."""
    for args, says in [(["--latency-runs", "0"], "--latency-runs must be an integer >= 1 (got 0)"),
                       (["--depths", "600,x"], "--depths '600,x': must be comma-separated integers"),
                       (["--depths", "600,0"], "--depths must be an integer >= 1 (got 0)"),
                       (["--features", "none,words"], "--features 'none,words': each set is none or names among")]:
        assert says in _refusal(monkeypatch, capsys, "judge_reading", *args), args


def test_proxy_precision_verdicts_are_the_samples_one_each() -> None:
    """The shipped reading covers the shipped sample: a verdict, with its reason, for every case drawn and
    for nothing else (a re-drawn sample must be read again before its table is quoted)."""
    from proxy_precision import SAMPLE, VERDICTS, wilson

    drawn = re.findall(r"^## (\S+)$", SAMPLE.read_text(), re.M)
    verdicts = orjson.loads(VERDICTS.read_bytes())
    assert len(drawn) == len(set(drawn)) == 144 and set(drawn) == set(verdicts)
    assert all(isinstance(v["genuine"], bool) and v["why"].strip() for v in verdicts.values())
    lo, hi = wilson(18, 24)
    assert (round(lo, 2), round(hi, 2)) == (0.55, 0.88)  # the README's strict SWE cell


def _rollout(sessions: Path, out: Path, *judge: str, env: dict[str, str] | None = None) -> Path:
    """The rollout's first two steps over `sessions`: SHADOW records from `jev replay`, then `jev label`."""
    records, labelled = out / "records.jsonl", out / "labelled.jsonl"
    for args in (("replay", str(sessions), "--records", str(records), "--eligible-tools", "bash", *judge, "-q"),
                 ("label", str(records), "--transcripts", str(sessions), "--out", str(labelled), "-q")):
        proc = cli([*args], capture_output=True, timeout=120,
                              cwd=ROOT, env={**os.environ, **(env or {})})
        assert proc.returncode == 0, proc.stderr.decode()
    return labelled


def test_the_rollouts_labelled_rows_score_as_the_held_out_rows_do(run_folder: Path, tmp_path: Path) -> None:
    """`--labelled` reads what `jev replay` recorded and `jev label` labelled; with the local judge those are
    the very rows `--held-out` builds from the trajectories: the same points and candidates, both proxies,
    the same scores (records keep them to 4 decimals)."""
    labelled = _rollout(run_folder / "trajectories", tmp_path)
    cell = labelled_cell(str(labelled))
    title, rows, p_result, p_call = cell.title, cell.rows, cell.p_result, cell.p_call
    [held_cell] = held_out_cells([str(run_folder)], None, workers=1)
    held, h_result, h_call = held_cell.rows, held_cell.p_result, held_cell.p_call
    mine = {(str(s), str(k), int(p)): i for i, (s, k, p) in enumerate(zip(rows.sessions, rows.keys, rows.points,
                                                                            strict=True))}
    theirs = {(str(s), str(k), int(p)): i for i, (s, k, p) in enumerate(zip(held.sessions, held.keys, held.points,
                                                                              strict=True))}
    assert title == f"{MODEL} → labelled.jsonl (labelled)" and mine.keys() == theirs.keys() and len(mine) >= 20
    for key, i in mine.items():
        j = theirs[key]
        assert (rows.needed_result[i], rows.needed_result_alt[i], rows.needed_strict[i], rows.result_chars[i],
                rows.call_ids[i]) == (held.needed_result[j], held.needed_result_alt[j], held.needed_strict[j],
                                      held.result_chars[j], held.call_ids[j])
        assert (p_result[i], p_call[i]) == pytest.approx((h_result[j], h_call[j]), abs=1e-4)


def _probability(name: str) -> float:
    """A served judge's answer: fixed per question, spread over [0, 1)."""
    return (zlib.crc32(name.encode()) % 1000) / 1000


@pytest.mark.slow
def test_the_yardstick_scores_a_remote_judge_from_its_shadow_records(
        run_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A judge behind the real `openai` client (the local /v1/decisions server answers) is scored on the
    yardstick from the rollout's files alone; a refused pair reads as one never let go; bad input is refused
    by name."""
    with DecisionsServer(["refuse:result_t2"], probability=_probability) as server:
        labelled = _rollout(run_folder / "trajectories", tmp_path, "--judge", "openai", "--judge-url",
                            server.base_url, "--judge-model", "gw-luna", env={"OPENAI_API_KEY": "sk-x"})
    cell = labelled_cell(str(labelled))
    title, rows, p_result, p_call = cell.title, cell.rows, cell.p_result, cell.p_call
    assert title.startswith("gw-luna → ")
    refused = [i for i, s in enumerate(rows.sessions) if s.endswith("django__django-11163") and rows.keys[i] == "t2"]
    assert len(refused) == 1 and p_result[refused[0]] == 1.0  # the first request's refusal
    for i, key in enumerate(rows.keys):
        if i not in refused:
            assert (p_result[i], p_call[i]) == pytest.approx((_probability(f"result_{key}"),
                                                              _probability(f"call_{key}")), abs=1e-4)
    proc = _bench("quality", "--labelled", str(labelled), "--min-chars", "0", "--boot", "20")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("| gw-luna → labelled.jsonl (labelled) |")]
    assert [line.split(" | ")[1] for line in lines] == ["labels-v3-strict", "labels-v1", "labels-v2-reuse"] * 2
    assert " 5 (5) " in lines[0]
    risk = _bench("equal_risk", "--labelled", str(labelled), "--splits", "2")
    assert risk.returncode == 0, risk.stderr
    assert risk.stdout.count("| gw-luna → labelled.jsonl (labelled) | labels-") == 3  # every proxy
    records = tmp_path / "records.jsonl"
    two = tmp_path / "two.jsonl"
    two.write_text(labelled.read_text() + labelled.read_text().replace('"judge":"gw-luna"', '"judge":"other"'))
    for args, says in [(["--labelled", str(labelled), "--held-out", str(run_folder)], "--labelled scores recorded"),
                       (["--labelled", str(tmp_path / "none.jsonl")], "--labelled: no such file"),
                       (["--labelled", str(records)], "not labelled rows from jev label (no decision_point"),
                       (["--labelled", str(two)], "labelled rows of several judges (gw-luna, other)")]:
        for name in ("quality", "equal_risk"):  # the same flag, the same checks
            assert says in _refusal(monkeypatch, capsys, name, *args), (name, args)


def test_calibration_validity_names_a_bound_other_than_the_default(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`--bound wsr` certifies the synthetic trials with the one-order test, and its table says so; the
    default's (wsr-avg's) heading names no bound; a bound it does not know is refused by name."""
    one_order = run_main(monkeypatch, capsys, "calibration_validity", "--skip-real", "--trials", "2", "--sessions", "80",
                         "--bound", "wsr")
    assert one_order.returncode == 0, one_order.stderr
    assert "## Synthetic judges, bound wsr\n" in one_order.stdout and "| beta | 100% |" in one_order.stdout
    default = run_main(monkeypatch, capsys, "calibration_validity", "--skip-real", "--trials", "2", "--sessions", "80")
    assert "## Synthetic judges\n" in default.stdout
    refused = run_main(monkeypatch, capsys, "calibration_validity", "--skip-real", "--bound", "clopper")
    assert refused.returncode == 2 and "--bound: invalid choice: 'clopper'" in refused.stderr
