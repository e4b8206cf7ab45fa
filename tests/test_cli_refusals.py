"""The command line refuses what it cannot use before it writes or judges anything, never leaves a file that
blocks the next run, says what to try next, and stays readable at 80 columns (issue 62)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import cli

from jev.deciding.cost import HORIZON_RULE

ROOT = Path(__file__).resolve().parents[1]
TRAJ = ROOT / "examples" / "data" / "django__django-11163.traj.json"


def sessions(tmp_path: Path, n: int = 2) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for k in range(n):
        shutil.copy(TRAJ, folder / f"s{k}.traj.json")
    return folder


@pytest.mark.parametrize("argv", [
    ["compact", str(TRAJ)], ["inspect", str(TRAJ)], ["check", str(TRAJ), str(TRAJ)], ["cost", str(TRAJ)],
    ["replay", str(TRAJ), "--records", "{records}"], ["label", "{records}", "--transcripts", "."]])
def test_an_unknown_format_is_a_usage_error_before_any_file_is_written(tmp_path, argv) -> None:
    records = tmp_path / "r.jsonl"
    ran = cli([a.replace("{records}", str(records)) for a in argv] + ["--format", "foo"], text=True)
    assert ran.returncode == 2 and "argument --format: invalid choice: 'foo'" in ran.stderr
    assert "Traceback" not in ran.stderr and not records.exists()


def test_a_replay_that_records_nothing_leaves_no_file_to_block_the_next(tmp_path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "a.json").write_text("{not json")
    records = tmp_path / "r.jsonl"
    ran = cli(["replay", str(folder), "--records", str(records)], text=True)
    assert ran.returncode == 3 and not records.exists()
    assert cli(["replay", str(sessions(tmp_path)), "--records", str(records), "-q"]).returncode == 0  # runs again


def test_an_interrupted_replay_says_what_its_records_file_holds(tmp_path, monkeypatch) -> None:
    import jev.cli.replay as replay
    real, calls = replay._replay, []

    def stopped(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)
    monkeypatch.setattr(replay, "_replay", stopped)
    records = tmp_path / "r.jsonl"
    ran = cli(["replay", str(sessions(tmp_path)), "--records", str(records), "--eligible-tools", "bash"], text=True)
    assert ran.returncode == 130
    written = records.read_text().splitlines()
    assert written and f"interrupted after 1 of 2 sessions: --records {str(records)!r} holds their {len(written)} " \
        "records" in ran.stderr


@pytest.mark.parametrize("content, words", [("[1, 2]\n", "record 1 is not a decision record (a record is a JSON "
                                                           "object, got list)"),
                                            ("7\n", "a record is a JSON object, got int")])
def test_calibrate_names_rows_that_are_not_objects(tmp_path, content, words) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(content)
    ran = cli(["calibrate", str(rows), "--out", str(tmp_path / "out")], text=True)
    assert ran.returncode == 2 and words in ran.stderr and "Traceback" not in ran.stderr


def test_label_and_calibrate_name_a_folder_given_for_a_file(tmp_path) -> None:
    folder = tmp_path / "records"
    folder.mkdir()
    for argv in (["label", str(folder), "--transcripts", str(tmp_path)], ["calibrate", str(folder), "--out",
                                                                         str(tmp_path / "o")]):
        ran = cli(argv, text=True)
        assert ran.returncode == 2 and "is a folder: name the records file" in ran.stderr, ran.stderr


def test_an_archive_that_cannot_take_snapshots_is_refused_before_judging(tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    records = tmp_path / "records.jsonl"
    ran = cli(["compact", str(TRAJ), "--mode", "enforce", "--eligible-tools", "bash", "--archive", str(blocker / "x"),
               "--user", "u", "--agent", "a", "--session", "s", "--records", str(records)], text=True)
    assert ran.returncode == 2 and "is not a folder" in ran.stderr
    assert not records.exists()  # nothing judged, nothing recorded


def test_an_unreadable_scope_folder_is_an_archive_error_not_an_empty_scope(tmp_path, monkeypatch) -> None:
    from archive import FileArchive, Scope
    from jev.errors import ArchiveError
    from jev.model.transcript import Message, TextBlock
    archive, scope = FileArchive(tmp_path / "snapshots"), Scope("u", "a", "s")
    ref = archive.save(scope, [Message("m", "user", (TextBlock("hi"),))])

    def denied(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(os, "scandir", denied)
    with pytest.raises(ArchiveError, match=r"cannot be listed \(EACCES: Permission denied"):
        archive.snapshots(scope)
    monkeypatch.undo()
    real_lstat = os.lstat
    monkeypatch.setattr(os, "lstat", lambda path, *a, **k: denied() if str(path).endswith(".json")
                        else real_lstat(path, *a, **k))  # the scope folder may be entered, not read
    with pytest.raises(ArchiveError, match=r"cannot be read \(EACCES"):
        archive.delete(scope, ref)
    monkeypatch.undo()
    ran = cli(["snapshots", "--archive", str(tmp_path / "snapshots"), "--user", "u", "--agent", "a", "--session", "s",
               "--delete", ref], text=True)
    assert ran.returncode == 0 and json.loads(ran.stdout)["deleted"] == [ref]


def test_help_texts_take_their_defaults_from_the_code() -> None:
    from jev import CompactionConfig
    from jev.deciding.cost import DEFAULT_PROFILE
    text = " ".join(cli(["compact", "--help"], text=True, env={**os.environ, "COLUMNS": "400"}).stdout.split())
    defaults = CompactionConfig()
    for said in (f"(default: {HORIZON_RULE})", f"(default {defaults.keep_threshold})",
                 f"(default {defaults.discard_threshold})", f"(default {defaults.preserve_recent_messages})",
                 f"(default: {DEFAULT_PROFILE})"):
        assert said in text, said
    cost = " ".join(cli(["cost", "--help"], text=True, env={**os.environ, "COLUMNS": "400"}).stdout.split())
    assert "(default: True)" not in cost and "(default: they are counted)" in cost


def test_a_replay_summary_counts_every_plan_by_its_reason_and_says_what_next(tmp_path) -> None:
    records = tmp_path / "r.jsonl"
    ran = cli(["replay", str(sessions(tmp_path, 3)), "--records", str(records), "--eligible-tools", "bash",
               "--every", "1"], text=True, env={**os.environ, "COLUMNS": "400"})
    result = json.loads(ran.stdout)
    by_reason = result["not_decided_by_reason"]
    assert sum(by_reason.values()) == sum(result["not_decided"].values())
    for reason, count in by_reason.items():
        assert f"{count} plan(s) {reason}" in ran.stderr
    assert "UNPROFITABLE" in " ".join(by_reason) and "next: re-writing the cache would cost more" in ran.stderr


def test_a_compact_that_adopts_nothing_says_what_to_try_next() -> None:
    ran = cli(["compact", str(TRAJ), "--eligible-tools", "bash"], text=True)
    said = " ".join(ran.stderr.split())
    assert json.loads(ran.stdout)["reason"] == "UNPROFITABLE" and "next: re-writing the cache" in said
    ran = cli(["compact", str(TRAJ)], text=True)
    assert "next: name the tools whose history may be judged" in " ".join(ran.stderr.split())


def test_cost_says_when_no_session_reached_the_trigger_and_its_table_fits_80_columns(tmp_path) -> None:
    folder = sessions(tmp_path, 1)
    ran = cli(["cost", str(folder), "--eligible-tools", "bash"], text=True, env={**os.environ, "COLUMNS": "80"})
    assert "no session reached the trigger of 50,000 tokens" in ran.stderr
    ran = cli(["cost", str(folder), "--eligible-tools", "bash", "--trigger-tokens", "4000"], text=True,
              env={**os.environ, "COLUMNS": "80"})
    lines = ran.stderr.splitlines()
    assert max(map(len, lines)) <= 80
    report = json.loads(ran.stdout)
    for row in report["policies"].values():  # every figure shown whole
        assert f"{row['tokens_sent']:,}" in ran.stderr and f"{row['largest_request']:,}" in ran.stderr
    assert not any("…" in line for line in lines)


def test_compact_show_keeps_every_score_whole_at_80_columns() -> None:
    ran = cli(["compact", str(TRAJ), "--eligible-tools", "bash", "--show"], text=True, env={**os.environ, "COLUMNS": "80"})
    table = json.loads(ran.stdout)["table"]
    lines = ran.stderr.splitlines()
    assert max(map(len, lines)) <= 80 and not any("0.…" in line for line in lines)
    for row in table:
        if row["keep_result"] is not None and not row["pinned"]:
            assert f"{row['keep_result']:.3f}" in ran.stderr
