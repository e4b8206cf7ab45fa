"""The rollout without writing Python, end to end on real dev sessions: `jev replay` (SHADOW) → `jev label`
→ `jev calibrate` → `jev compact --mode enforce` with the certified thresholds, then `jev restore`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SWEBENCH, needs_data

from calibration.dataset import raw_trajectories
from jev.judges.local import MODEL

DATA = SWEBENCH
ROOT = Path(__file__).resolve().parents[1]


def jev(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "jev.cli.main", *args], cwd=cwd, capture_output=True, timeout=600)


@pytest.mark.slow
@needs_data(DATA)
def test_four_commands_from_recorded_sessions_to_enforce(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    held_out = None
    for n, (session, data) in enumerate(raw_trajectories(DATA)):
        if n == 150:
            held_out = (session, data)
            break
        (sessions / f"{session}.json").write_bytes(data)
    assert held_out is not None

    # 1. SHADOW over the recorded sessions
    replay = jev("replay", str(sessions), "--records", "records.jsonl", "--eligible-tools", "bash", cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr.decode()
    summary = json.loads(replay.stdout)
    assert summary["sessions"] == 150 and summary["plans"] > 300 and summary["let_go_by_tool"]["bash"]["truncated"]
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert len(records) == summary["plans"] and {r["mode"] for r in records} == {"SHADOW"}
    assert {r["judge"] for r in records} == {MODEL}
    again = jev("replay", str(sessions), "--records", "records.jsonl", cwd=tmp_path)
    assert again.returncode == 2 and b"exists" in again.stderr  # never mixed with older records

    # 2. label, 3. calibrate
    label = jev("label", "records.jsonl", "--transcripts", str(sessions), "--out", "labelled.jsonl", cwd=tmp_path)
    assert label.returncode == 0, label.stderr.decode()
    calibrate = jev("calibrate", "labelled.jsonl", "--alpha", "0.1", "--delta", "0.1", "--out", "cal", cwd=tmp_path)
    assert calibrate.returncode == 0, calibrate.stderr.decode()
    result = json.loads(calibrate.stdout)
    assert result["certified"] and "R_result" in result["guarantee"] and "R_call" in result["guarantee"]
    thresholds = json.loads((tmp_path / "cal" / "thresholds.json").read_text())
    assert thresholds["calibrated_for"]["judge"] == MODEL

    # 4. ENFORCE on a session none of the above saw, with the certified thresholds
    session, data = held_out
    (tmp_path / "new.json").write_bytes(data)
    enforce = jev("compact", "new.json", "--mode", "enforce", "--config", "cal/thresholds.json", "--eligible-tools",
                  "bash", "--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "mini-swe-agent",
                  "--session", session.replace("/", "_"), cwd=tmp_path)
    assert enforce.returncode == 0, enforce.stderr.decode()
    out = json.loads(enforce.stdout)
    assert out["status"] in ("DECIDED", "INCONCLUSIVE")
    if out["status"] == "DECIDED":
        restore = jev("restore", out["archive_reference"], "--archive", str(tmp_path / "archive"), "--user", "u",
                      "--agent", "mini-swe-agent", "--session", session.replace("/", "_"), cwd=tmp_path)
        assert restore.returncode == 0, restore.stderr.decode()
    # thresholds certified for this judge are refused for another
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"model": "someone-else", "answers": {}, "default": 0.5}))
    refused = jev("compact", "new.json", "--config", "cal/thresholds.json", "--judge", f"replay:{other}", cwd=tmp_path)
    assert refused.returncode == 2 and f"certified for judge '{MODEL}'".encode() in refused.stderr
