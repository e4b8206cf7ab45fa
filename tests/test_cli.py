"""The `jev` command as a user runs it (a real subprocess): JSON on stdout, one-line errors, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SCOPE, Ran, cli, reference_messages, run_main, s3_archive

from archive import FileArchive
from jev import formats

ROOT = Path(__file__).resolve().parents[1]


def jev(*args: str, stdin: bytes | None = None, env: dict | None = None) -> Ran:
    """`jev ARGS` in process (see `conftest.cli`)."""
    return cli([*args], input=stdin, cwd=ROOT, env={**os.environ, **(env or {})})


def entry_point(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m jev.cli.main ARGS` in a process of its own: for what depends on a fresh interpreter (the
    temporary folder a new process picks from TMPDIR, what importing the command loads)."""
    return subprocess.run([sys.executable, "-m", "jev.cli.main", *args], capture_output=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=60)


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps(formats.dump(reference_messages())).encode())
    return path


@pytest.fixture
def replay(tmp_path: Path) -> Path:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"model": "replay", "answers": {"call_t1": 0.01, "result_t1": 0.01,
                                                              "result_t2": 0.01}, "default": 0.99}))
    return path


def test_demo(tmp_path: Path) -> None:
    proc = jev("demo", "--workdir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout)
    ref = out["reference_run"]
    assert ref["status"] == "DECIDED" and ref["judge_calls"] == 1 and ref["restored_messages"] == 6
    assert ref["restore_equals_original"] and "recorded answers" in ref["judge"]
    assert [m["id"] for m in ref["compacted_history"]] == ["m1", "m4", "m5", "m6"]
    assert set(out["local_judge_shadow"]["pairs"]) == {"t1", "t2"}
    assert b"demo ok" in proc.stderr


def test_demo_without_workdir_leaves_nothing_behind_and_its_table_does_not_wrap(tmp_path: Path) -> None:
    """Off a terminal (here a pipe) the summary is 160 columns wide, so table rows stay whole (issue 16,
    item 10); the temporary archive is removed at the end."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = entry_point("demo", env={"TMPDIR": str(temp), "COLUMNS": ""})
    assert proc.returncode == 0, proc.stderr.decode()
    assert list(temp.iterdir()) == []
    rows = [line for line in proc.stderr.decode().splitlines() if line.startswith("│ t")]
    assert len(rows) == 2 and all(line.rstrip().endswith("│") for line in rows)
    reasons = {"UNCERTAIN", "NEEDED_RESULT", "DROP_PAIR", "TRUNCATE_RESULT"}  # at 80 columns rich wraps them
    assert all(row.rstrip().rstrip("│").split("│")[-1].strip() in reasons for row in rows)  # the judge's, whole
    assert "(temporary, removed at the end; --workdir DIR keeps it)" in proc.stderr.decode()


def test_compact_shadow_then_enforce_then_restore(transcript: Path, replay: Path, tmp_path: Path) -> None:
    common = [str(transcript), "--judge", f"replay:{replay}", "--eligible-tools", "read", "--preserve-recent", "1",
              "--horizon", "50"]  # the host expects 50 more calls: the plan pays for its cache re-write
    shadow = jev("compact", *common, "-q")
    assert shadow.returncode == 0 and shadow.stderr == b""
    out = json.loads(shadow.stdout)
    assert (out["status"], out["reason"], out["mode"]) == ("DECIDED", "SHADOW_PROPOSAL", "SHADOW")
    assert out["messages"] == json.loads(transcript.read_bytes())  # SHADOW: the input as it was
    assert out["decisions"] == {"t1": "DROP_PAIR", "t2": "TRUNCATE_RESULT", "t3": "KEEP"}
    assert out["pairs"]["t1"] == {"call_id": "old", "tool": "read"}
    assert out["scores"]["t1"] == {"keep_call": 0.01, "keep_result": 0.01, "reason": "DROP_PAIR"}

    archive, records = tmp_path / "archive", tmp_path / "records" / "r.jsonl"
    records.parent.mkdir()  # --records names a file in an existing folder (never created silently)
    enforce = jev("compact", *common, "--mode", "enforce", "--archive", str(archive), "--user", "u", "--agent", "a",
                  "--session", "s", "--records", str(records))
    assert enforce.returncode == 0, enforce.stderr.decode()
    out = json.loads(enforce.stdout)
    assert out["reason"] == "ARCHIVED_PROPOSAL" and len(out["messages"]) == 7 and out["reduction"] > 0.3
    stone = out["messages"][1]  # the dropped pair's two messages gave way to one line naming it
    assert stone["id"] == "c-old~dropped~old" and stone["content"][0]["text"].startswith('[JEV dropped call "old" (read')
    record = json.loads(records.read_text().splitlines()[0])
    assert record["recommendation"]["archive_reference"] == out["archive_reference"]

    ref = out["archive_reference"]
    restored = jev("restore", ref, "--archive", str(archive), "--user", "u", "--agent", "a", "--session", "s")
    assert restored.returncode == 0
    assert json.loads(restored.stdout)["messages"] == json.loads(transcript.read_bytes())
    pair = jev("restore", ref, "--archive", str(archive), "--user", "u", "--agent", "a", "--session", "s",
               "--call-id", "old", "-q")
    assert [m["id"] for m in json.loads(pair.stdout)["messages"]] == ["c-old", "r-old"]
    other = jev("restore", ref, "--archive", str(archive), "--user", "x", "--agent", "a", "--session", "s")
    assert other.returncode == 3 and json.loads(other.stdout)["status"] == "ERROR"


def test_compact_openai_chat_from_stdin_keeps_the_format(replay: Path) -> None:
    chat = formats.dump(reference_messages(), "openai-chat")
    proc = jev("compact", "-", "--format", "openai-chat", "--judge", f"replay:{replay}", "--eligible-tools", "read",
               "--preserve-recent", "1", stdin=json.dumps(chat).encode())
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["messages"] == chat


def test_config_file_and_flags(transcript: Path, replay: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"eligible_tools": ["read"], "preserve_recent_messages": 1,
                                  "truncate_head_chars": 100}))
    proc = jev("compact", str(transcript), "--config", str(config), "--judge", f"replay:{replay}", "--horizon", "50",
               "-q")
    assert json.loads(proc.stdout)["decisions"]["t1"] == "DROP_PAIR"
    proc = jev("compact", str(transcript), "--config", str(config), "--eligible-tools", "search", "-q")
    assert json.loads(proc.stdout)["reason"] == "NO_CANDIDATES" and proc.returncode == 0


def test_the_summary_says_why_a_plan_that_raises_the_bill_was_adopted(transcript: Path, replay: Path,
                                                                      tmp_path: Path) -> None:
    """A plan that does not pay is DECIDED only with the cost gate off or in budget mode: the summary names
    which (it used to blame budget mode for both)."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"eligible_tools": ["read"], "preserve_recent_messages": 1, "cost_gate": False,
                                  "truncate_head_chars": 100}))
    args = ("compact", str(transcript), "--config", str(config), "--judge", f"replay:{replay}", "--horizon", "1")
    summary = " ".join(jev(*args).stderr.decode().split())  # the console wraps long lines
    assert "DECIDED" in summary and "raises the bill" in summary
    assert "(the cost gate is off: cost_gate is false)" in summary
    budget = " ".join(jev(*args, "--target-reduction", "0.5").stderr.decode().split())
    assert "raises the bill" in budget and "(budget mode is the host's need: never refused for cost)" in budget


def test_judge_errors_exit_3(transcript: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"answers": {"call_t1": 1.5}, "default": 0.5}))
    proc = jev("compact", str(transcript), "--judge", f"replay:{bad}", "--eligible-tools", "read",
               "--preserve-recent", "1")
    assert proc.returncode == 3
    out = json.loads(proc.stdout)
    assert out["status"] == "ERROR" and "invalid probability" in out["detail"]


@pytest.mark.parametrize("make, args, message", [
    (lambda d: d.write_text("[{"), [], "not valid JSON"),
    (lambda d: d.write_text('[{"id": "a", "role": "user", "content": [], "x": 1}]'), [], "unknown field 'x'"),
    (lambda d: d.write_text(""), [], "is empty"),
    (lambda d: d.write_text("[]"), ["--format", "yaml"], "argument --format: invalid choice: 'yaml'"),
    (lambda d: d.write_text("[]"), ["--keep-threshold", "0.1"], "keep_threshold must be > discard_threshold"),
    (lambda d: d.write_text("[]"), ["--judge", "openai"], "OPENAI_API_KEY"),
    (lambda d: d.write_text("[]"), ["--judge", "oracle"], "--judge must be"),
    (lambda d: d.write_text("[]"), ["--mode", "enforce"], "--mode enforce needs --archive"),
    (lambda d: d.write_text("[]"), ["--mode", "sideways"], "invalid choice"),
    (lambda d: d.write_text("[]"), ["--judge", "systemone"], "TYPESAFE_API_KEY"),
    (lambda d: d.write_text("[]"), ["--judge", "replay:/nonexistent.json"], "cannot read"),
    (lambda d: d.write_text("[]"), ["--judge", "local:/nonexistent.json"], "local judge model: cannot read"),
    (lambda d: None, [], "cannot read INPUT"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, make, args: list, message: str) -> None:
    path = tmp_path / "in.json"
    make(path)
    proc = jev("compact", str(path), *args, env={"TYPESAFE_API_KEY": "", "JEV_API_KEY": "", "OPENAI_API_KEY": ""})
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b""
    assert err.count("\n") == 1 and err.startswith("jev: error:") and message in err and "Traceback" not in err


def test_a_retrained_local_model_judges_from_the_command_line(transcript: Path, tmp_path: Path) -> None:
    """`--judge local:FILE` plans with that file's weights (here the shipped ones with the result head's
    link pushed toward "needed", read at 600 characters an end) instead of the shipped judge's."""
    model = json.loads((Path(__file__).resolve().parents[1] / "jev" / "judges" / "local_model.json").read_text())
    model["scan_chars"] = 600
    model["heads"]["keep_result"]["mixture"]["link"]["intercept"] += 8
    retrained = tmp_path / "retrained.json"
    retrained.write_text(json.dumps(model))
    args = [str(transcript), "--eligible-tools", "read", "--preserve-recent", "1"]
    shipped, mine = (jev("compact", *args, "--judge", judge) for judge in ("local", f"local:{retrained}"))
    assert shipped.returncode == mine.returncode == 0, mine.stderr
    a, b = json.loads(shipped.stdout)["scores"], json.loads(mine.stdout)["scores"]
    judged = [k for k, s in a.items() if s["reason"] != "PINNED"]
    assert judged and all(b[k]["keep_result"] > a[k]["keep_result"] for k in judged)


def test_unknown_config_key_and_bad_restore_usage(tmp_path: Path, transcript: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"keep": 0.9}))
    proc = jev("compact", str(transcript), "--config", str(config))
    assert proc.returncode == 2 and b"unknown CompactionConfig field 'keep'" in proc.stderr
    proc = jev("restore", "../escape", "--archive", str(tmp_path), "--user", "u", "--agent", "a", "--session", "s")
    assert proc.returncode == 2 and b"invalid archive reference" in proc.stderr and proc.stdout == b""
    proc = jev("restore", "a" * 64, "--archive", str(tmp_path))
    assert proc.returncode == 2 and b"required" in proc.stderr


def test_restore_prints_a_langchain_agents_snapshot_as_json(tmp_path: Path) -> None:
    """The LangChain middleware archives messages loaded from objects; restoring them prints their dict form."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from archive import FileArchive, Scope
    from jev import formats
    held = [HumanMessage("hi", id="h"), AIMessage("", id="a", tool_calls=[{"name": "read", "args": {}, "id": "c",
                                                                             "type": "tool_call"}]),
            ToolMessage("out", tool_call_id="c", id="t")]
    ref = FileArchive(tmp_path, 10**7).save(Scope("u", "a", "s"), formats.load(held, "langchain"))
    proc = jev("restore", ref, "--archive", str(tmp_path), "--user", "u", "--agent", "a", "--session", "s",
               "--format", "langchain", "-q")
    assert proc.returncode == 0, proc.stderr.decode()
    printed = json.loads(proc.stdout)["messages"]
    assert [m["type"] for m in printed] == ["human", "ai", "tool"]
    assert formats.dump(formats.load(printed, "langchain"), "langchain") == printed


def test_out_file(transcript: Path, tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    proc = jev("compact", str(transcript), "--out", str(target), "-q")
    assert proc.returncode == 0 and proc.stdout == b"" and json.loads(target.read_text())["reason"] == "NO_CANDIDATES"


def test_example_fix_login_runs(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "examples/fix_login.py", str(tmp_path)], cwd=ROOT, capture_output=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"restored 6 messages" in proc.stdout and b"count 3" in proc.stdout


def test_compact_with_the_openai_judge(transcript: Path) -> None:
    from decisions_server import DecisionsServer
    with DecisionsServer(probability=lambda n: 0.01 if n.endswith("t1") else 0.99) as server:
        proc = jev("compact", str(transcript), "--horizon", "50", "--judge", "openai", "--judge-url", server.base_url,
                   "--judge-model",
                   "gw-luna", "--eligible-tools", "read", "--preserve-recent", "1", "-q",
                   env={"OPENAI_API_KEY": "sk-x"})
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["decisions"]["t1"] == "DROP_PAIR" and server.requests[0]["model"] == "gw-luna"


def test_the_quick_start_proposes_something_and_says_why_when_nothing_is_judged() -> None:
    example = str(ROOT / "examples" / "data" / "django__django-11163.traj.json")
    proc = jev("compact", example, "--eligible-tools", "bash")  # a finished session: few calls would follow
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and (out["status"], out["reason"]) == ("INCONCLUSIVE", "UNPROFITABLE")
    assert out["cost"]["net"] > 0 and out["cost"]["horizon"] == 4 and "raise the bill" in out["detail"]
    assert "later calls; the horizon is 4" in " ".join(proc.stderr.decode().split())
    proc = jev("compact", example, "--eligible-tools", "bash", "--horizon", "40")  # the host expects 40 more
    out = json.loads(proc.stdout)
    assert out["status"] == "DECIDED" and out["reduction"] > 0.1 and "TRUNCATE_RESULT" in out["decisions"].values()
    assert out["cost"]["net"] < 0 and out["cost"]["break_even_calls"] < 40
    for flags, hint in (((), "no tool is eligible (eligible_tools is empty); the history holds bash"),
                        (("--eligible-tools", "bsh"), "none of the eligible tools (bsh) occurs in the history, "
                                                       "which holds bash")):
        proc = jev("compact", example, *flags)
        out = json.loads(proc.stdout)
        assert (out["status"], out["reason"], out["detail"]) == ("SKIPPED", "NO_CANDIDATES", hint)
        assert hint.encode() in b" ".join(proc.stderr.split())  # the summary says it too


def test_compact_in_budget_mode() -> None:
    example = str(ROOT / "examples" / "data" / "django__django-11163.traj.json")
    proc = jev("compact", example, "--eligible-tools", "bash", "--target-reduction", "0.5")
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["target_met"] in (True, False)
    assert out["result_share"] >= 0.5 or out["target_met"] is False
    bad = jev("compact", example, "--target-reduction", "2")
    assert bad.returncode == 2 and b"target_reduction must be a number in (0, 1)" in bad.stderr


def test_inspect_shows_the_form_the_tools_and_what_could_be_eligible(tmp_path) -> None:
    doc = [{"role": "user", "content": "Fix it."},
           {"role": "assistant", "content": None, "tool_calls": [
               {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
           {"role": "tool", "tool_call_id": "c1", "content": "x" * 900},
           *({"role": r, "content": f"turn {n}"} for n in range(4) for r in ("user", "assistant")),
           {"role": "assistant", "content": None, "tool_calls": [
               {"id": "c2", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]},
           {"role": "tool", "tool_call_id": "c2", "content": "done"},
           {"role": "assistant", "content": None, "tool_calls": [
               {"id": "c3", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]}]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in doc))
    proc = cli(["inspect", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["format"] == "openai-chat" and out["pairs"] == 2 and out["pending_calls"] == ["c3"]
    assert out["tools"]["read_file"] == {"pairs": 1, "result_chars": 900, "largest_result": 900, "judgeable": 1}
    # the shell pair sits among the newest messages, which are never judged: shell could not be eligible yet
    assert out["tools"]["shell"]["judgeable"] == 0 and out["could_be_eligible"] == ["read_file"]
    assert "--eligible-tools read_file" in proc.stderr
    bad = cli(["inspect", str(tmp_path / "none.json")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cannot read INPUT" in bad.stderr


def test_compact_show_lists_every_pair_as_json_and_a_table() -> None:
    proc = cli(["compact",
                           "examples/data/django__django-11163.traj.json", "--eligible-tools", "bash", "--show"],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[1],
                          env={**__import__("os").environ, "COLUMNS": "160"})
    assert proc.returncode == 0, proc.stderr
    table = json.loads(proc.stdout)["table"]
    assert len(table) == 13 and [row["key"] for row in table] == [f"t{k}" for k in range(1, 14)]
    pinned = [row for row in table if row["pinned"]]
    assert pinned and all(row["reason"] == "PINNED" and row["pinned"] == "in the recent window" for row in pinned)
    assert "input_head" in table[0] and "PINNED: in the recent window" in proc.stderr


def test_version_and_help_start_without_numpy_rich_or_the_judges() -> None:
    """Issue 37: `jev --version` loaded 389 modules (numpy, rich, httpx, asyncio) because every command and
    judge was imported up front; commands now load when they run."""
    probe = ("import sys, runpy; sys.argv = ['jev', '{flag}']\n"
             "try: runpy.run_module('jev.cli.main', run_name='__main__')\n"
             "except SystemExit: pass\n"
             "print(sorted(m for m in ('numpy', 'rich', 'httpx2', 'httpx', 'asyncio') if m in sys.modules))")
    for flag in ("--version", "--help"):
        ran = subprocess.run([sys.executable, "-c", probe.format(flag=flag)], capture_output=True, text=True,
                             timeout=60, check=False)
        assert ran.returncode == 0 and ran.stdout.strip().endswith("[]"), (flag, ran.stdout, ran.stderr)


@pytest.mark.slow
def test_help_states_defaults_and_version_and_benchmarks_only_print_help(monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    version = subprocess.run([sys.executable, "-m", "jev.cli.main", "--version"], capture_output=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith(b"jev-compaction ")
    compact_help = cli(["compact", "--help"], capture_output=True,
                                  timeout=60).stdout.decode()
    flat = " ".join(compact_help.split())
    assert "(default: shadow)" in flat and "(default: local)" in flat and "archive scope: the user" in flat
    assert "(default: None)" not in flat
    for bench in ("plan_speed", "archive", "judge_latency", "quality", "equal_risk", "calibration_validity"):
        started = time.monotonic()
        ran = run_main(monkeypatch, capsys, bench, "--help")
        assert ran.returncode == 0 and ran.stdout.startswith("usage:"), bench
        assert time.monotonic() - started < 30, bench  # printed help, ran nothing


def test_records_go_only_where_they_can_and_a_lost_record_is_an_error(tmp_path: Path) -> None:
    history = tmp_path / "h.json"
    history.write_bytes(json.dumps(formats.dump(reference_messages(), "openai-chat")).encode())
    for target, words in ((tmp_path / "missing" / "r.jsonl", b"no such folder"), (tmp_path, b"is a folder")):
        proc = cli(["compact", str(history), "--records", str(target)],
                              capture_output=True, timeout=60)
        assert proc.returncode == 2 and words in proc.stderr and proc.stdout == b""
    assert not (tmp_path / "missing").exists()  # never created silently
    if Path("/dev/full").exists():  # every write fails with ENOSPC: SHADOW's whole output lost
        proc = cli(["compact", str(history), "--records", "/dev/full",
                               "--eligible-tools", "read"], capture_output=True, timeout=60)
        assert proc.returncode == 3 and b"could not be written" in proc.stderr and b"Traceback" not in proc.stderr


def test_restore_is_read_only_and_names_a_missing_archive(tmp_path: Path) -> None:
    ref = "a" * 64
    for archive, words in ((f"sqlite:///{tmp_path}/nope.db", b"no such SQLite archive"),
                           (str(tmp_path / "noarch"), b"no such archive folder")):
        proc = cli(["restore", ref, "--archive", archive, "--user", "u",
                               "--agent", "a", "--session", "s"], capture_output=True, timeout=60)
        assert proc.returncode == 2 and words in proc.stderr
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_output_mistakes_are_usage_errors_before_any_work(tmp_path: Path) -> None:
    """--out on a folder or in a missing folder, and --records on an unreachable store, are exit 2 with the
    flag named and no traceback, for every command that writes (issue 16, item 8)."""
    history = tmp_path / "h.json"
    history.write_bytes(json.dumps(formats.dump(reference_messages(), "openai-chat")).encode())
    (tmp_path / "labelled.jsonl").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))
    missing = str(tmp_path / "missing" / "out.json")
    cases = [
        (["compact", str(history), "--out", str(tmp_path)], b"--out '" + str(tmp_path).encode() + b"': is a folder"),
        (["compact", str(history), "--out", missing], b"no such folder"),
        (["inspect", str(history), "--out", missing], b"no such folder"),
        (["restore", "a" * 64, "--archive", str(tmp_path), "--user", "u", "--agent", "a", "--session", "s",
          "--out", str(tmp_path)], b"is a folder"),
        (["label", str(tmp_path / "labelled.jsonl"), "--transcripts", str(tmp_path), "--out", missing],
         b"no such folder"),
        (["calibrate", str(tmp_path / "labelled.jsonl"), "--alpha", "0.1", "--delta", "0.1", "--out", str(history)],
         b"is a file; name a folder"),
        (["calibrate", str(tmp_path / "labelled.jsonl"), "--alpha", "0.1", "--delta", "0.1", "--out",
          str(tmp_path / "missing" / "calib")], b"no such folder"),
        (["compact", str(history), "--records", "s3://jev-no-such-bucket/r.jsonl"], b"cannot be opened"),
    ]
    for args, words in cases:
        proc = cli([*args], capture_output=True, timeout=60, env=env)
        assert proc.returncode == 2 and words in proc.stderr and b"Traceback" not in proc.stderr, (args, proc.stderr)
        assert proc.stdout == b""
    assert not (tmp_path / "missing").exists()


def test_cli_compact_and_restore_on_s3(seaweed, tmp_path: Path) -> None:
    build, spec = s3_archive(seaweed)
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps(formats.dump(reference_messages())))
    replay = tmp_path / "r.json"
    replay.write_text(json.dumps({"answers": {"call_t1": 0.01, "result_t1": 0.01}, "default": 0.99}))
    env = {**os.environ, "AWS_ACCESS_KEY_ID": spec["options"]["key"], "AWS_SECRET_ACCESS_KEY": spec["options"]["secret"],
           "AWS_DEFAULT_REGION": "us-west-2"}
    where = ["--archive", spec["url"], "--archive-endpoint", seaweed.endpoint, "--user", "u", "--agent", "a",
             "--session", "s"]
    proc = cli(["compact", str(transcript), "--mode", "enforce", "--horizon", "50",
                           "--judge", f"replay:{replay}", "--eligible-tools", "read", "--preserve-recent", "1", *where,
                           "-q"], cwd=ROOT, capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    ref = json.loads(proc.stdout)["archive_reference"]
    proc = cli(["restore", ref, *where, "--call-id", "old", "-q"],
                          cwd=ROOT, capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert [m["id"] for m in json.loads(proc.stdout)["messages"]] == ["c-old", "r-old"]
    assert "secret" not in repr(build())


def test_cli_lists_and_deletes_snapshots(tmp_path: Path) -> None:
    archive = FileArchive(tmp_path / "a")
    refs = sorted(archive.save(SCOPE, reference_messages()[:k]) for k in (2, 4))
    where = ["--archive", str(tmp_path / "a"), "--user", SCOPE.user_id, "--agent", SCOPE.agent_id,
             "--session", SCOPE.session_id]

    def jev(*args: str) -> Ran:
        return cli(["snapshots", *args, *where], cwd=ROOT,
                              capture_output=True, timeout=60)

    listed = jev()
    assert listed.returncode == 0 and json.loads(listed.stdout) == {"status": "LISTED", "snapshots": refs}
    deleted = jev("--delete", refs[0], "--delete", "f" * 64)
    assert deleted.returncode == 3
    assert json.loads(deleted.stdout) == {"status": "ERROR", "deleted": [refs[0]], "missing": ["f" * 64]}
    assert json.loads(jev().stdout)["snapshots"] == refs[1:]
    assert jev("--delete", "nope").returncode == 2
    missing = cli(["snapshots", "--archive", str(tmp_path / "typo"),
                              *where[2:]], cwd=ROOT, capture_output=True, timeout=60)
    assert missing.returncode == 2 and b"no such archive folder" in missing.stderr
    assert not (tmp_path / "typo").exists()


def _as_user(*args: str, cwd: Path) -> Ran:
    """`jev ARGS` as a user who is not root (root writes anywhere, which hid the missing check): as
    `nobody` through setpriv when the tests run as root."""
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, sys.executable, "-m", "jev.cli.main", *args], capture_output=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(cwd)}, timeout=120)


@pytest.mark.skipif(os.geteuid() == 0 and not Path("/usr/bin/setpriv").exists(), reason="needs setpriv to drop root")
def test_an_unwritable_output_folder_is_a_usage_error_before_any_work() -> None:
    """Issue 35 item 7: five commands tracebacked with PermissionError (`compact` after all its work, the
    ENFORCE snapshot written); each now says so in one line, exit 2, before anything is done or written."""
    import shutil
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="jev-nobody-"))
    try:
        base.chmod(0o755)
        locked = base / "locked"
        locked.mkdir(mode=0o555)
        locked.chmod(0o555)
        archive = base / "archive"
        archive.mkdir()
        sessions = base / "sessions"
        sessions.mkdir()
        doc = json.dumps(formats.dump(reference_messages(), "openai-chat"))
        (sessions / "s1.json").write_text(doc)
        (base / "records.jsonl").write_text("")
        (base / "labelled.jsonl").write_text("")
        if os.geteuid() == 0:
            for path in (base, archive, sessions, sessions / "s1.json", base / "records.jsonl", base / "labelled.jsonl"):
                os.chown(path, 65534, 65534)
        ref = "0" * 64
        scope = ["--user", "u", "--agent", "a", "--session", "s"]
        commands = {
            "compact": ["compact", "sessions/s1.json", "--mode", "enforce", "--eligible-tools", "read",
                        "--preserve-recent", "2", "--archive", "archive", *scope, "--out", "locked/plan.json"],
            "inspect": ["inspect", "sessions/s1.json", "--out", "locked/facts.json"],
            "restore": ["restore", ref, "--archive", "archive", *scope, "--out", "locked/restored.json"],
            "replay": ["replay", "sessions", "--records", "locked/records.jsonl", "--eligible-tools", "read"],
            "label": ["label", "records.jsonl", "--transcripts", "sessions", "--out", "locked/labelled.jsonl"],
            "calibrate": ["calibrate", "labelled.jsonl", "--alpha", "0.1", "--delta", "0.1", "--out", "locked/calib"],
        }
        for name, args in commands.items():
            proc = _as_user(*args, cwd=base)
            err = proc.stderr.decode()
            assert proc.returncode == 2, (name, err)
            assert err.startswith("jev: error: ") and err.count("\n") == 1 and "cannot write in" in err, (name, err)
            assert "Permission denied" in err and proc.stdout == b"", (name, err)
        assert not any(archive.rglob("*.json")) and not any(locked.iterdir())  # nothing archived, nothing written
    finally:
        locked.chmod(0o755)
        shutil.rmtree(base)


def test_compact_writes_back_a_langchain_system_message_with_odd_tool_calls(tmp_path: Path, capsys) -> None:
    """Issue 35 item 3: LangChain's dump raised AttributeError on `tool_calls: "s"` of a system message —
    in the CLI after the ENFORCE snapshot was written (exit 1, a traceback, an orphan snapshot)."""
    from jev.cli.main import main
    doc = [{"type": "system", "data": {"content": "s", "tool_calls": "s"}}, *formats.dump(reference_messages(),
                                                                                          "langchain")]
    path = tmp_path / "lc.json"
    path.write_text(json.dumps(doc))
    (tmp_path / "answers.json").write_text(json.dumps({"model": "replay", "answers": {}, "default": 0.01}))
    code = main(["compact", str(path), "--format", "langchain", "--mode", "enforce", "--eligible-tools", "read",
                 "--preserve-recent", "2", "--judge", f"replay:{tmp_path / 'answers.json'}", "--horizon", "50",
                 "--archive", str(tmp_path / "archive"), "--user", "u", "--agent", "a", "--session", "s", "-q"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "DECIDED"
    assert out["messages"][0] == doc[0]
