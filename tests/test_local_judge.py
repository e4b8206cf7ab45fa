"""The embedded local judge: JSON weights, decision-time features only, the AUROC bar on held-out sessions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import call, msg, result, text

from jev import ConfigError, JudgeError, formats
from jev.judges import JudgeRequest, LocalJudge
from jev.judges.features import FEATURE_NAMES, FeatureState, transcript_features
from jev.judges.local import load_model
from jev.questions import questions_for
from jev.transcript import analyze

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "mini-swe-agent-swebench-dev.tar.xz"
needs_data = pytest.mark.skipif(not DATA.exists(), reason=f"dev trajectories not found at {DATA}")


@pytest.fixture(scope="session")
def rows():
    from calibration.dataset import build_rows
    return build_rows(DATA)


@pytest.fixture(scope="session")
def sessions():
    from calibration.dataset import trajectories
    return list(trajectories(DATA))


def test_weights_are_json_and_match_the_features() -> None:
    path = ROOT / "jev" / "judges" / "local_model.json"
    model = json.loads(path.read_text())  # plain JSON: no pickle anywhere
    assert model["features"] == list(FEATURE_NAMES) and set(model["heads"]) == {"keep_call", "keep_result"}
    assert load_model() == model


def test_a_model_for_other_features_is_refused(tmp_path: Path) -> None:
    model = json.loads((ROOT / "jev" / "judges" / "local_model.json").read_text())
    model["features"] = model["features"][:-1]
    bad = tmp_path / "model.json"
    bad.write_text(json.dumps(model))
    with pytest.raises(ConfigError, match="features do not match"):
        LocalJudge(str(bad))


def _ask(judge: LocalJudge, messages) -> dict[str, float]:
    t = analyze(messages)
    questions = tuple(q for p in t.pairs for q in questions_for(p))
    return dict(asyncio.run(judge.ask(JudgeRequest({}, questions, t))).probabilities)


def test_scores_are_probabilities_and_deterministic() -> None:
    messages = [msg("0", "user", text("Fix src/app_main.py")),
                msg("1", "assistant", call("a", "bash", {"command": "cat src/app_main.py"})),
                msg("2", "tool", result("a", "def handler_v1(): pass", name="bash")),
                msg("3", "assistant", call("b", "bash", {"command": "cat src/app_main.py"})),
                msg("4", "tool", result("b", "def handler_v2(): pass", name="bash")),
                msg("5", "user", text("Now rename handler_v2 everywhere."))]
    first = _ask(LocalJudge(), messages)
    assert set(first) == {"call_t1", "result_t1", "call_t2", "result_t2"}
    assert all(0 <= p <= 1 for p in first.values())
    assert _ask(LocalJudge(), messages) == first
    assert first["result_t1"] < first["result_t2"]  # t1 was superseded by the identical later read


def _history(task: str, turns: int) -> list[dict]:
    out = [{"id": "u", "role": "user", "content": [{"type": "text", "text": task}]}]
    for k in range(turns):
        out.append({"id": f"a{k}", "role": "assistant", "content": [
            {"type": "tool_use", "id": f"c{k}", "name": "bash", "input": {"command": f"cat src/mod_{k}.py"}}]})
        out.append({"id": f"r{k}", "role": "tool", "content": [
            {"type": "tool_result", "id": f"c{k}", "name": "bash", "output": f"def func_{k}(): return {k}"}]})
    return out


def test_rebuilt_and_interleaved_histories_only_pay_for_new_messages(monkeypatch) -> None:
    """Integrations rebuild the messages each turn and one judge may serve several sessions in turn:
    a history equal to one seen before continues its state; scores match a fresh judge's."""
    seen: list[str] = []
    original = FeatureState.add
    monkeypatch.setattr(FeatureState, "add", lambda self, m, i: (seen.append(m.id), original(self, m, i))[1])
    judge = LocalJudge(sessions=2)
    for turns in (3, 4):
        for task in ("Fix bug one in src/", "Fix bug two in lib/"):
            seen.clear()
            transcript = analyze(formats.load(_history(task, turns), "jev"))  # new objects every time
            scores = judge.scores(transcript)
            assert seen == (["u", "a0", "r0", "a1", "r1", "a2", "r2"] if turns == 3 else ["a3", "r3"])
            assert scores == LocalJudge().scores(transcript)
    judge.scores(analyze(formats.load(_history("A third task", 1), "jev")))  # evicts the least recent
    seen.clear()
    judge.scores(analyze(formats.load(_history("Fix bug one in src/", 5), "jev")))
    assert len(seen) == 11  # evicted: read again from the first message
    with pytest.raises(ConfigError, match="sessions must be an integer >= 1"):
        LocalJudge(sessions=0)


def test_needs_the_in_process_transcript() -> None:
    with pytest.raises(JudgeError, match="needs the in-process transcript"):
        asyncio.run(LocalJudge().ask(JudgeRequest({}, ())))


@needs_data
def test_features_use_nothing_after_the_decision_point(sessions) -> None:
    from calibration.dataset import session_rows
    for session, messages in sessions[:12]:
        full = analyze(messages)
        warm = FeatureState()
        transcript_features(full, warm)  # a state that has seen the whole future
        rows = session_rows(session, messages)
        points = sorted({r[5] for r in rows})
        for s in points:
            prefix = analyze(messages[: s + 1])
            fresh = transcript_features(prefix)
            assert transcript_features(prefix, warm) == fresh
            for features, *_rest, key, point, _chars in (r for r in rows if r[5] == s):
                assert features == fresh[key]
        # appending future messages never changes what the judge said at the earlier point
        s = points[0]
        judge = LocalJudge()
        before = judge.scores(analyze(messages[: s + 1]))
        judge.scores(full)
        assert judge.scores(analyze(messages[: s + 1])) == before


@needs_data
def test_mini_swe_agent_round_trip_on_every_dev_trajectory() -> None:
    from calibration.dataset import raw_trajectories
    for _session, data in raw_trajectories(DATA):
        doc = json.loads(data)
        assert formats.dump(formats.load(doc, "auto"), "mini-swe-agent") == doc


@needs_data
def test_auroc_bar_on_held_out_sessions(rows) -> None:
    from calibration.train_local import held_out_auroc
    for seed in (0, 1, 2):
        assert held_out_auroc(rows.X, rows.needed_result, rows.sessions, seed) >= 0.85


@needs_data
def test_training_reproduces_the_shipped_weights(rows) -> None:
    from calibration.train_local import train
    shipped = load_model()
    model = train(rows)
    assert model["card"]["keep_result"]["auroc"] >= 0.85
    for head in ("keep_call", "keep_result"):
        for key in ("mean", "scale", "coef"):
            np.testing.assert_allclose(model["heads"][head][key], shipped["heads"][head][key], rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(model["heads"][head]["isotonic"]["y"], shipped["heads"][head]["isotonic"]["y"],
                                   atol=1e-6)


@needs_data
def test_example_rollout_runs(tmp_path) -> None:
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "examples/calibrate_thresholds.py", "--sessions", "60", "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    assert "1. SHADOW: 60 sessions" in out and "2. labelled" in out and "3. " in out
    assert (tmp_path / "report.md").exists()


@needs_data
def test_example_shadow_evaluation_runs(tmp_path) -> None:
    import subprocess
    import sys
    records = tmp_path / "r.jsonl"
    proc = subprocess.run([sys.executable, "examples/shadow_evaluation.py", "--sessions", "5", "--records",
                           str(records)], cwd=ROOT, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = records.read_text().splitlines()
    assert lines and all(json.loads(line)["mode"] == "SHADOW" for line in lines)
    assert b"plans over 5 sessions" in proc.stdout
