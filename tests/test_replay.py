"""`jev replay`: sessions from a folder, glob or URL in any form, decision points every k pairs or at a
token trigger, one record per plan written whole sessions at a time, and clear refusals."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from conftest import Ran, cli, long_history

from jev import formats
from jev.cli.replay import decision_points

ROOT = Path(__file__).resolve().parents[1]


def jev(*args: str, cwd: Path) -> Ran:
    return cli([*args], cwd=cwd, capture_output=True, timeout=120)


def write_sessions(folder: Path) -> None:
    """Two sessions in two forms, one in a sub-folder (a run folder, as mini-swe-agent writes them)."""
    (folder / "run2").mkdir(parents=True)
    (folder / "a.json").write_bytes(orjson.dumps(formats.dump(long_history(24), "openai-chat")))
    lines = b"".join(orjson.dumps(m) + b"\n" for m in formats.dump(long_history(17), "anthropic"))
    (folder / "run2" / "b.jsonl").write_bytes(lines)
    (folder / "notes.txt").write_text("not a transcript")


def test_decision_points_every_k_pairs_or_where_a_token_trigger_fires() -> None:
    history = long_history(24)
    every = decision_points(history, 8, None)
    assert len(every) == 3 and every == sorted(every)
    fired = decision_points(history, None, 2000)
    assert fired and fired == sorted(set(fired)) and len(decision_points(history, None, 500)) > len(fired)


def test_replay_writes_one_record_per_plan_named_by_session(tmp_path: Path) -> None:
    write_sessions(tmp_path / "s")
    proc = jev("replay", "s", "--records", "r.jsonl", "--every", "4", "--eligible-tools", "read", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    summary = json.loads(proc.stdout)
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert summary["sessions"] == 2 and summary["plans"] == len(records) == 24 // 4 + 17 // 4
    assert {r["session_id"] for r in records} == {"a", "run2/b"}  # what jev label looks up below s/
    assert {r["mode"] for r in records} == {"SHADOW"} and all(r["history_messages"] > 0 for r in records)
    assert b"replayed 2 sessions" in proc.stderr
    globbed = jev("replay", "s/*.json", "--records", "g.jsonl", cwd=tmp_path)
    assert globbed.returncode == 0 and json.loads(globbed.stdout)["sessions"] == 1
    label = jev("label", "r.jsonl", "--transcripts", "s", "--out", "l.jsonl", cwd=tmp_path)
    assert label.returncode == 0, label.stderr.decode()  # sessions in sub-folders join too


def test_replay_refuses_what_it_cannot_do_with_one_line(tmp_path: Path) -> None:
    write_sessions(tmp_path / "s")
    (tmp_path / "old.jsonl").write_text("{}\n")
    for args, words in ((("s", "--records", "old.jsonl"), b"exists"),
                        (("empty", "--records", "r.jsonl"), b"no transcript"),
                        (("s", "--records", "nowhere/r.jsonl"), b"no such folder"),
                        (("s", "--records", "r.jsonl", "--every", "0"), b"--every must be an integer >= 1 (got 0)"),
                        (("s", "--records", "r.jsonl", "--trigger-tokens", "0"),
                         b"--trigger-tokens must be an integer >= 1 (got 0)"),
                        (("s", "--records", "r.jsonl", "--judge", "nope"), b"--judge must be")):
        (tmp_path / "empty").mkdir(exist_ok=True)
        proc = jev("replay", *args, cwd=tmp_path)
        assert proc.returncode == 2 and words in proc.stderr and proc.stderr.count(b"\n") == 1, (args, proc.stderr)
        assert not (tmp_path / "r.jsonl").exists()
    assert (tmp_path / "old.jsonl").read_text() == "{}\n"


def test_replay_names_what_it_could_not_read_and_why_plans_proposed_nothing(tmp_path: Path, capsys) -> None:
    """Issue 35 item 7/8: "skipped 1: unreadable transcript (FormatError)" named no file; without
    --eligible-tools "SKIPPED 137" gave no reason. Both are said, with the file and the plan's own words."""
    from jev.cli.main import main
    write_sessions(tmp_path / "s")
    (tmp_path / "s" / "broken.json").write_text('[{"role": "function", "content": "x"}]')
    code = main(["replay", str(tmp_path / "s"), "--records", str(tmp_path / "r.jsonl")])
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert code == 0
    broken = str(tmp_path / "s" / "broken.json")
    assert summary["unreadable"] == {broken: "messages[0].role: unsupported chat role 'function'"}
    assert f"unreadable: {broken}: messages[0].role: unsupported chat role 'function'" in " ".join(err.split())
    (reason, count), = summary["not_decided"].items()
    assert reason.startswith("SKIPPED / NO_CANDIDATES: no tool is eligible (eligible_tools is empty)") and count >= 4
    assert "no tool is eligible" in err
