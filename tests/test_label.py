"""Labels from later history (labels-v1) and `jev label` joining shadow records with transcripts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import Ran, cli, msg, text

from calibration.labels import later_reuse, pair_uses
from jev import CompactionConfig, Compactor, ExecutionOptions, JsonlSink, Mode, ToolResultBlock, ToolUseBlock, formats
from jev.judges import ReplayJudge
from jev.reading.analysis import analyze

ROOT = Path(__file__).resolve().parents[1]


def bash(i: int, command: str, output: str) -> list:
    return [msg(f"a{i}", "assistant", text(f"step {i}"), ToolUseBlock(f"c{i}", "bash", {"command": command})),
            msg(f"r{i}", "tool", ToolResultBlock(f"c{i}", "bash", output))]


def session() -> list:
    return [msg("task", "user", text("Fix the parser in pkg/parse.py")),
            *bash(1, "grep -rn parse_token pkg/", "pkg/lexer_impl.py:12: def parse_token(x)"),  # provides lexer_impl.py
            *bash(2, "cat README.md", "A library. Version 2.7.1 released."),                   # never used again
            *bash(3, "python -m pytest tests/test_parse.py", "1 failed: test_roundtrip_unicode"),
            *bash(4, "ls docs", "index.rst"),
            msg("think", "assistant", text("The failure is test_roundtrip_unicode; look at pkg/lexer_impl.py")),
            *bash(5, "python -m pytest tests/test_parse.py", "1 failed"),                       # re-run of t3
            *bash(6, "sed -i s/a/b/ pkg/lexer_impl.py", "")]


def test_labels_follow_the_definition() -> None:
    t = analyze(session())
    uses = pair_uses(t)
    s = t.pairs[3].result_message  # decision point after pair t4
    assert uses["t1"].needed_result(s)  # its identifier lexer_impl.py is used later, and it was the latest source
    assert not uses["t2"].needed_result(s) and not uses["t2"].needed_call(s)  # README never matters again
    assert uses["t3"].needed_result(s)  # test_roundtrip_unicode used later, and the same test command re-run
    assert uses["t3"].rerun > s
    assert not uses["t4"].needed_result(s)
    assert uses["t6"].needed_call(s) and uses["t6"].edit  # state changes keep their calls by rule
    last = len(t.messages) - 1
    assert not any(u.needed_result(last) for u in uses.values())  # nothing is needed after the end


def test_jev_label_joins_records_with_transcripts(tmp_path: Path) -> None:
    messages = session()
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    (transcripts / "s1.json").write_text(json.dumps(formats.dump(messages)))
    records = tmp_path / "records.jsonl"
    config = CompactionConfig(preserve_recent_messages=2, eligible_tools=frozenset({"bash"}), minimum_reduction=0.0)
    compactor = Compactor(ReplayJudge({}, default=0.5), config,
                          ExecutionOptions(Mode.SHADOW, 2.0, "v-test", JsonlSink(str(records))))
    cut = analyze(messages).pairs[3].result_message + 1
    decision = compactor.plan_sync(messages[:cut], context={"session_id": "s1"})
    assert decision.plan is not None
    compactor.plan_sync(messages[:cut], context={})  # no session: skipped, and said so
    record = json.loads(records.read_text().splitlines()[0])
    assert record["session_id"] == "s1" and record["history_messages"] == cut

    out = tmp_path / "labels.jsonl"
    proc = cli(["label", str(records), "--transcripts",
                           str(transcripts), "--out", str(out)], cwd=ROOT, capture_output=True, timeout=60,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr.decode()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    by_key = {r["key"]: r for r in rows}
    assert by_key["t1"]["needed_result"] is True and by_key["t2"]["needed_result"] is False
    assert by_key["t1"]["decision_point"] == cut - 1 and by_key["t1"]["keep_result"] == 0.5
    assert rows[0]["label_version"] == "labels-v1" and rows[0]["version"] == "v-test"
    assert b"skipped 1: no session_id" in proc.stderr
    # the second proxy rides along for the yardstick, as the transcript says at that point
    reuse = later_reuse(analyze(messages))
    assert {r["key"]: r["needed_result_reuse"] for r in rows} == {k: reuse[k] > cut - 1 for k in by_key}
    assert any(r["needed_result_reuse"] for r in rows) and not all(r["needed_result_reuse"] for r in rows)
    # and the strict proxy, its rarity cut the shipped table's (never these sessions')
    from calibration.labels import strict_uses
    from calibration.rarity import Rarity
    strict = strict_uses(analyze(messages), Rarity.shipped().tokens)
    assert {r["key"]: r["needed_result_strict"] for r in rows} == {k: strict[k] > cut - 1 for k in by_key}


def test_jev_label_missing_records_file_is_a_usage_error(tmp_path: Path) -> None:
    proc = cli(["label", str(tmp_path / "nope.jsonl"),
                           "--transcripts", str(tmp_path)], cwd=ROOT, capture_output=True, timeout=60)
    assert proc.returncode == 2 and b"cannot read" in proc.stderr and proc.stdout == b""
    proc = cli(["label", str(tmp_path / "records-*.jsonl"),
                           "--transcripts", str(tmp_path)], cwd=ROOT, capture_output=True, timeout=60)
    assert proc.returncode == 2 and b"no decision records match" in proc.stderr and proc.stdout == b""


def test_records_of_a_fleet_are_read_through_a_glob(tmp_path: Path) -> None:
    """Each writer its own file (an append on an object store rewrites the object); a glob reads them all."""
    from calibration.join import read_records
    for host in ("b", "a"):
        (tmp_path / f"records-{host}.jsonl").write_text(f'{{"host": "{host}", "n": 1}}\n\n{{"host": "{host}", "n": 2}}\n')
    (tmp_path / "other.jsonl").write_text('{"host": "x"}\n')
    assert [(r["host"], r["n"]) for r in read_records(str(tmp_path / "records-*.jsonl"))] == \
        [("a", 1), ("a", 2), ("b", 1), ("b", 2)]
    assert len(list(read_records(str(tmp_path / "records-a.jsonl")))) == 2


def test_labels_v2_reuse_credits_copied_lines_reruns_and_edits_of_files_read() -> None:
    from conftest import call, msg, result, text

    from calibration.labels import later_reuse
    from jev.reading.analysis import analyze
    line = "def count_items(self, values): return len(values)"
    messages = [msg("u", "user", text("Fix count_items.")),
                msg("a1", "assistant", call("c1", "bash", {"command": "cat src/count.py"})),
                msg("r1", "tool", result("c1", f"import os\n{line}\n", name="bash")),
                msg("a2", "assistant", call("c2", "bash", {"command": "ls tests"})),
                msg("r2", "tool", result("c2", "test_count.py\n", name="bash")),
                msg("a3", "assistant", call("c3", "bash", {"command": "grep -rn thing docs"})),
                msg("r3", "tool", result("c3", "nothing here that anybody copies later\n", name="bash")),
                msg("a4", "assistant", text(f"The bug:\n{line}"), call("c4", "bash", {"command": "ls tests"})),
                msg("r4", "tool", result("c4", "test_count.py\n", name="bash")),
                msg("a5", "assistant", call("c5", "bash", {"command": "sed -i 's/len/sum/' src/count.py"})),
                msg("r5", "tool", result("c5", "", name="bash"))]
    used = later_reuse(analyze(messages))
    assert used == {"t1": 9, "t2": 7, "t3": -1, "t4": -1, "t5": -1}  # t1: copied line (7), then edited (9)


def test_labels_read_other_tools_by_their_whole_input() -> None:
    """Claude Code's and SWE-agent's tools (`other_tools_history`): a re-run is the same input, not the same
    verb; `Edit` changes state; an edit of an absolute `file_path` credits the call that read it."""
    from conftest import other_tools_history

    from calibration.labels import later_reuse
    t = analyze(other_tools_history())
    uses = pair_uses(t)
    assert uses["t2"].rerun == -1 and uses["t3"].rerun == 13  # beta.py viewed again at message 13; alpha.py never
    assert uses["t4"].rerun == 11  # `pytest -q` again, with another description
    assert uses["t5"].edit and not uses["t1"].edit and not uses["t2"].edit
    assert later_reuse(t)["t1"] == 9  # the Edit at message 9 names the file t1 read


def test_the_log_of_uses_says_what_made_each_result_needed() -> None:
    """`pair_uses(t, log)` records each use that makes a result needed, in message order — (message, the
    word first written) or (message, None) for a re-run — and the labels are the same with or without it."""
    from conftest import call, msg, result, text
    messages = [msg("0", "user", text("Fix it.")),
                msg("1", "assistant", call("a", "read", {"path": "src/module_alpha.py"})),
                msg("2", "tool", result("a", "def handler_alpha_1(): pass  # computes thoroughly")),
                msg("3", "assistant", call("b", "grep", {"pattern": "handler_alpha_1"})),
                msg("4", "tool", result("b", "src/module_alpha.py:1", name="grep")),
                msg("5", "assistant", text("It works thoroughly, now"), call("c", "read", {"path": "src/module_alpha.py"})),
                msg("6", "tool", result("c", "def handler_alpha_1(): pass"))]
    t = analyze(messages)
    log: dict[str, list[tuple[int, str | None]]] = {}
    assert pair_uses(t, log) == pair_uses(t)
    assert log == {"t1": [(3, "handler_alpha_1"), (5, None), (5, "thoroughly")]}  # the re-run's at message 5


def test_labels_ignore_tombstones_the_library_wrote() -> None:
    from conftest import call, msg, result, text

    from calibration.labels import pair_uses
    from jev import CompactionConfig
    from jev.applying.apply import apply_actions
    from jev.deciding.policy import Action
    from jev.model.markers import is_tombstone
    from jev.reading.analysis import analyze
    messages = [msg("0", "user", text("Fix it.")),
                msg("1", "assistant", call("a", "read", {"path": "src/module_alpha.py"})),
                msg("2", "tool", result("a", "def handler_alpha_1(): pass")),
                msg("3", "assistant", call("b", "grep", {"pattern": "handler_alpha_1"})),
                msg("4", "tool", result("b", "src/module_alpha.py:1", name="grep")),
                msg("5", "user", text("go on"))]
    assert pair_uses(analyze(messages))["t1"].result_used == 3  # the grep used what t1 showed
    compacted = apply_actions(analyze(messages), {"t2": Action.DROP_PAIR}, CompactionConfig())
    stone = next(m for m in compacted if m.id == "3~dropped~b")
    assert is_tombstone(stone.text) and "handler_alpha_1" in stone.text  # the tombstone names the input ...
    assert pair_uses(analyze(compacted))["t1"].result_used == -1  # ... but is not the agent using t1's words


def _label(*args: str) -> Ran:
    return cli(["label", *args], cwd=ROOT, capture_output=True,
                          timeout=60)


def test_jev_label_refuses_what_it_cannot_join_and_never_leaves_a_partial_out(tmp_path: Path) -> None:
    transcripts = tmp_path / "t"
    transcripts.mkdir()
    good = {"session_id": "s1", "history_messages": 3, "pairs": [{"key": "t1", "call_id": "a", "tool": "read"}]}
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps(good) + "\n")
    proc = _label(str(records), "--transcripts", str(tmp_path / "missing"))
    assert proc.returncode == 2 and b"--transcripts" in proc.stderr and b"no such directory" in proc.stderr
    proc = _label(str(records), "--transcripts", str(transcripts))
    assert proc.returncode == 2 and b"holds no transcript file" in proc.stderr
    (transcripts / "other.json").write_text("[]")
    out = tmp_path / "labels.jsonl"
    proc = _label(str(records), "--transcripts", str(transcripts), "--out", str(out))
    assert proc.returncode == 3 and b"nothing labelled" in proc.stderr  # a run that joined nothing is no success
    out.unlink()
    records.write_text(json.dumps(good) + "\n" + json.dumps([1, 2]) + "\n")  # a wrong-shaped record mid-file
    proc = _label(str(records), "--transcripts", str(transcripts), "--out", str(out))
    assert proc.returncode == 2 and b"record 2 is not a decision record" in proc.stderr
    assert not out.exists() and not list(tmp_path.glob(".labels.jsonl*"))  # whole or not at all
    proc = _label("-", "--transcripts", str(transcripts))
    assert proc.returncode == 2 and b"RECORDS must be a file or URL" in proc.stderr


def test_the_old_uncertain_rate_flag_warns_and_changes_nothing(tmp_path: Path) -> None:
    labelled = tmp_path / "l.jsonl"
    labelled.write_text("")
    proc = cli(["calibrate", str(labelled), "--uncertain-rate", "0.2", "--out", str(tmp_path / "o")], cwd=ROOT,
               capture_output=True, timeout=60)
    assert b"--uncertain-rate is deprecated and has no effect" in proc.stderr
    assert proc.returncode == 2 and b"no labelled pairs" in proc.stderr  # the run goes on, as without it


@pytest.mark.parametrize("flags, message", [
    (["--keep-threshold", "0"], "--keep-threshold '0' must be a number in (0, 1]"),
    (["--keep-threshold", "0.6,x"], "--keep-threshold '0.6,x': must be comma-separated numbers"),
    (["--alpha", "-1"], "--alpha must be a number in (0, 1)"),
    (["--delta", "1"], "--delta must be a number in (0, 1)"),
    (["--size-exponents", "a,b"], "--size-exponents 'a,b': must be comma-separated numbers"),
    (["--size-exponents", "0.5,0"], "--size-exponents '0.5,0' must be a number in (0, 4]"),
    (["--size-exponents", "0.5,1", "--no-size-aware"], "--size-exponents '0.5,1': choosing among several needs size-aware"),
    (["--size-exponents", "1,1"], "--size-exponents '1,1' must be 1 to 8 distinct values"),  # before the file is read
    (["--recent-pairs", "4,x"], "--recent-pairs '4,x': must be comma-separated integers"),
    (["--recent-pairs", "0,-2"], "--recent-pairs '0,-2' must be 1 to 8 distinct integers >= 0"),
    (["--recent-pairs", "0,4", "--target"], "--recent-pairs 0,4: not with --target"),
])
def test_jev_calibrate_blames_the_flag_not_the_file(tmp_path: Path, flags: list, message: str) -> None:
    labelled = tmp_path / "l.jsonl"
    labelled.write_text("")
    proc = cli(["calibrate", str(labelled), *flags, "--out",
                           str(tmp_path / "o")], cwd=ROOT, capture_output=True, timeout=60)
    assert proc.returncode == 2 and message.encode() in proc.stderr and b"LABELLED" not in proc.stderr


def test_jev_label_says_once_that_transcripts_are_missing(tmp_path: Path, capsys) -> None:
    """Issue 35 item 7: a folder without the sessions' transcripts printed a line per session (40), then
    exit 3; now one line with the count and the first names."""
    from jev.cli.main import main
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps({"session_id": f"s{k}", "history_messages": 4, "pairs": [
        {"key": "t1", "call_id": "c", "tool": "read"}]}) + "\n" for k in range(40)))
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "other.json").write_text("[]")
    code = main(["label", str(records), "--transcripts", str(tmp_path / "t")])
    _, err = capsys.readouterr()
    assert code == 3
    said = " ".join(err.split())
    assert f"skipped 40: no transcript for 40 session(s) in {tmp_path / 't'}" in said and "'s0', 's1', 's2', …" in said
    assert said.count("no transcript") == 1  # one line for the 40 sessions


def _strict_history(result_texts: list[str], later: list[tuple[str, str]], task: str = "Fix the failing test."):
    """A task, one bash read per `result_texts` entry, then `later` assistant steps: ("text", words) or
    ("run", command) (a run is answered with "ok")."""
    from conftest import call, msg, result, text
    messages = [msg("task", "user", text(task))]
    for k, output in enumerate(result_texts):
        messages += [msg(f"c{k}", "assistant", call(f"r{k}", "bash", {"command": f"cat f{k}"})),
                     msg(f"o{k}", "tool", result(f"r{k}", output=output, name="bash"))]
    for k, (kind, body) in enumerate(later):
        if kind == "text":
            messages.append(msg(f"say{k}", "assistant", text(body)))
        else:
            messages += [msg(f"run{k}", "assistant", call(f"x{k}", "bash", {"command": body})),
                         msg(f"ran{k}", "tool", result(f"x{k}", output="ok", name="bash"))]
    return messages


@pytest.mark.parametrize("results, later, common, task, needed", [
    # the definition met: shown first by t1, first written after the point, run in a command
    (["see src/util/helper_fn.py line 3"], [("run", "sed -n 1p src/util/helper_fn.py")], (), "Fix it.", {"t1"}),
    # shape: a prose word, however long, is no token
    (["the function returned nothing"], [("run", "grep function *.py")], (), "Fix it.", set()),
    # rare: a token in more than 2 % of the dev sessions is no token
    (["see setup.py"], [("run", "cat setup.py")], ("setup.py",), "Fix it.", set()),
    # not from the task: the task named it already
    (["see src/util/helper_fn.py"], [("run", "cat src/util/helper_fn.py")], (), "Look at src/util/helper_fn.py", set()),
    # shown first by this result: two results showed it before the agent wrote it
    (["a/mod_x.py", "again a/mod_x.py"], [("run", "cat a/mod_x.py")], (), "Fix it.", set()),
    # written later, and run: only said, never run in a command at or after that point
    (["see pkg/mod_y.py"], [("text", "I will look at pkg/mod_y.py")], (), "Fix it.", set()),
    # said first, run later: needed until it was first written (the text)
    (["see pkg/mod_y.py"], [("text", "pkg/mod_y.py looks wrong"), ("run", "cat pkg/mod_y.py")], (), "Fix it.",
     {"t1"}),
    # a leading checkout folder is stripped: /testbed/pkg/mod_z.py is pkg/mod_z.py
    (["/testbed/pkg/mod_z.py:12: error"], [("run", "vim pkg/mod_z.py")], (), "Fix it.", {"t1"}),
])
def test_labels_v3_strict_follows_each_clause(results, later, common, task, needed) -> None:
    from calibration.labels import strict_uses
    from jev.reading.analysis import analyze
    transcript = analyze(_strict_history(results, later, task))
    until = strict_uses(transcript, frozenset(common))
    point = transcript.pairs[len(results) - 1].result_message  # just after the reads
    assert {key for key, last in until.items() if last > point} == needed
    if needed:  # not needed once it has been written: the agent has it from its own words then
        first = min(k for k, m in enumerate(transcript.messages) if k > point and m.role == "assistant")
        assert all(last <= first for last in until.values())


def test_the_common_tables_count_instances_not_runs_or_occurrences() -> None:
    """A token is common when more than 2 % of the instances show it: a session repeating it counts once,
    and so do the runs of one instance (they share its files) — `pkg/own.py`, shown by every run of one
    instance, stays rare. The judge's word table follows the same cut (`portable` hashes)."""
    from calibration.rarity import rarity_table, session_words
    from jev.judges.words import Buffer, find_words, portable

    def ran(i: int, output: str):
        return "inst-0" if i < 10 else f"inst-{i}", analyze([msg("u", "user", text("go")), *bash(1, "ls", output)])

    sessions = [ran(i, "setup.py pkg/own.py pkg/own.py" if i < 10 else "setup.py" if i < 60 else "x") for i in range(100)]
    table = rarity_table(sessions)  # 91 instances: inst-0 (10 runs) and 90 others
    assert table["instances"] == 91 and table["common"] == ["setup.py"]  # pkg/own.py: 1 instance of 91
    setup = portable(find_words(Buffer.of(["setup.py"]))).tolist()
    assert table["common_words"] == setup and session_words(sessions[0][1]).size == 2
    assert rarity_table(sessions, share=0.005)["common"] == ["pkg/own.py", "setup.py"]


def test_one_file_has_one_session_id_in_every_command(tmp_path: Path) -> None:
    """A run's file below `trajectories/` gets the same id from `jev compact`, `jev replay` (of any folder
    above it), `jev label` and calibration's datasets (folder or archive), so records, labels and training
    rows join; two files that would give one id are refused by name."""
    import tarfile

    from calibration.dataset import raw_trajectories
    unpacked = tmp_path / "unpacked"
    run = unpacked / "trajectories" / "run1"
    run.mkdir(parents=True)
    doc = json.dumps(formats.dump(session()))
    (run / "inst.traj.json").write_text(doc)
    (run / "inst.json").write_text(doc)  # the same session under a second suffix: the .traj.json is it
    flags = ["--eligible-tools", "bash", "--preserve-recent", "2"]

    proc = cli(["compact", run / "inst.traj.json", "--records", tmp_path / "c.jsonl", *flags])
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads((tmp_path / "c.jsonl").read_text())["session_id"] == "run1/inst"
    for source in (unpacked, unpacked / "trajectories", run):
        records = tmp_path / f"r-{source.name}.jsonl"
        proc = cli(["replay", source, "--records", records, "--every", "2", *flags])
        assert proc.returncode == 0, proc.stderr.decode()
        assert {json.loads(line)["session_id"] for line in records.read_text().splitlines()} == {"run1/inst"}
    out = tmp_path / "labels.jsonl"
    proc = cli(["label", tmp_path / "r-unpacked.jsonl", "--transcripts", unpacked, "--out", out])
    assert proc.returncode == 0 and b"no transcript" not in proc.stderr, proc.stderr.decode()
    assert {json.loads(line)["session_id"] for line in out.read_text().splitlines()} == {"run1/inst"}
    with tarfile.open(tmp_path / "runs.tar", "w") as tar:
        tar.add(unpacked, arcname="somewhere")
    for source in (unpacked, tmp_path / "runs.tar"):
        assert [session for session, _data in raw_trajectories(source)] == ["run1/inst"]

    elsewhere = unpacked / "copy" / "trajectories" / "run1"
    elsewhere.mkdir(parents=True)
    (elsewhere / "inst.jsonl").write_text(doc)
    proc = cli(["replay", unpacked, "--records", tmp_path / "r2.jsonl", *flags])
    assert proc.returncode == 2 and b"both hold session 'run1/inst'" in proc.stderr, proc.stderr.decode()
    assert formats.session_id("/a/b/c.jsonl") == "c" and formats.session_id("/a/b/c.jsonl", "/a") == "b/c"
    assert formats.session_id("b/c.json", "") == "b/c" and formats.session_id("/q/c.json", "/a") == "c"
