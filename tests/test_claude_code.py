"""Claude Code session transcripts, read-only (issue 15, item 2). The entries below follow the shapes of real
`~/.claude/projects/*/*.jsonl` files as public write-ups of the format show them (Claude Code 1.0–2.1):
typed entries with uuid/parentUuid/sessionId, an assistant turn written one content block per line under
one `message.id`, tool results in user entries with the structured `toolUseResult` beside them, sub-agent
(`isSidechain`) entries, summaries, snapshots and queue operations."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import orjson
import pytest
from conftest import CLAUDE_CODE, Ran, cli, needs_data

from jev import FormatError, TextBlock, ThinkingBlock, ToolUseBlock, formats
from jev.reading.analysis import analyze

ROOT = Path(__file__).resolve().parents[1]
SESSION = "4f35e220-c435-4cf7-b9b9-f40426042847"
READ = "     1→def count(items):\n     2→    return len(items) - 1\n" * 40


def entry(kind: str, uuid: str, parent: str | None, message: dict, **extra) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/app",
            "sessionId": SESSION, "version": "2.1.12", "gitBranch": "main", "type": kind, "message": message,
            "uuid": uuid, "timestamp": f"2026-01-20T11:57:{len(uuid):02d}.000Z", **extra}


def assistant(uuid: str, parent: str, msg_id: str, block: dict) -> dict:
    return entry("assistant", uuid, parent, {"model": "claude-opus-4-5-20251101", "id": msg_id, "type": "message",
                                             "role": "assistant", "content": [block], "stop_reason": None,
                                             "usage": {"input_tokens": 1, "output_tokens": 25}},
                 requestId="req_011CXJb8F3Bb3xDrKBeYga4T")


def tool_result(uuid: str, parent: str, call_id: str, text: str, structured: dict, **extra) -> dict:
    return entry("user", uuid, parent, {"role": "user", "content": [
        {"tool_use_id": call_id, "type": "tool_result", "content": text, **extra}]}, toolUseResult=structured)


def session() -> list[dict]:
    return [
        {"type": "queue-operation", "operation": "dequeue", "timestamp": "2026-01-20T11:57:17.716Z",
         "sessionId": SESSION},
        {"type": "summary", "summary": "Fix the count bug", "leafUuid": "u9"},
        entry("user", "u1", None, {"role": "user", "content": "Fix the off-by-one in count(); keep tests green."}),
        assistant("a1", "u1", "msg_1", {"type": "text", "text": "Reading the module and its test."}),
        assistant("a3", "a2", "msg_1", {"type": "tool_use", "id": "toolu_01A", "name": "Read",
                                        "input": {"file_path": "/home/dev/app/count.py"}}),
        assistant("a4", "a3", "msg_1", {"type": "tool_use", "id": "toolu_01B", "name": "Read",
                                        "input": {"file_path": "/home/dev/app/test_count.py"}}),
        tool_result("u2", "a4", "toolu_01A", READ, {"type": "text", "file": {
            "filePath": "/home/dev/app/count.py", "content": "STRUCTURED-ONLY " * 50, "numLines": 80}},
            sourceToolAssistantUUID="a3"),
        tool_result("u3", "a4", "toolu_01B", "     1→assert count([1, 2, 3]) == 3\n", {"type": "text", "file": {
            "filePath": "/home/dev/app/test_count.py", "content": "STRUCTURED-ONLY", "numLines": 1}},
            sourceToolAssistantUUID="a4"),
        {**assistant("s1", "a4", "msg_side", {"type": "tool_use", "id": "toolu_side", "name": "Grep",
                                              "input": {"pattern": "count"}}), "isSidechain": True},
        {**tool_result("s2", "s1", "toolu_side", "count.py:1", {"mode": "content"}), "isSidechain": True},
        {"type": "file-history-snapshot", "messageId": "u3", "snapshot": {"trackedFileBackups": {}}},
        assistant("a5", "u3", "msg_2", {"type": "tool_use", "id": "toolu_01C", "name": "Bash",
                                        "input": {"command": "pytest -q", "description": "Run the tests"}}),
        tool_result("u4", "a5", "toolu_01C", "1 failed", {"stdout": "1 failed", "stderr": "", "interrupted": False,
                                                          "isImage": False}, is_error=True),
        entry("system", "y1", "u4", {"role": "system", "content": "compact boundary"}),
        entry("user", "u5", "u4", {"role": "user", "content": "Stop hook feedback:\n[hook]: ok"}, isMeta=True),
        entry("user", "u5", "u4", {"role": "user", "content": "Stop hook feedback:\n[hook]: ok"}, isMeta=True),
        assistant("a6", "u5", "msg_3", {"type": "thinking", "thinking": "The test expects 3.",
                                        "signature": "EqQBCkgIARABGAIiQL"}),
        assistant("a7", "a6", "msg_3", {"type": "text", "text": "Fixed: count() returns len(items)."}),
    ]


def test_the_main_thread_in_order_with_turns_joined_and_structured_results_left_out() -> None:
    messages = formats.load(session(), "claude-code")
    assert [m.id for m in messages] == ["u1", "a1", "u2", "u3", "a5", "u4", "u5", "a6"]
    assert [m.role for m in messages] == ["user", "assistant", "user", "user", "assistant", "user", "user",
                                          "assistant"]
    assert [type(b) for b in messages[1].content] == [TextBlock, ToolUseBlock, ToolUseBlock]  # 3 lines, 1 turn
    assert [type(b) for b in messages[-1].content] == [ThinkingBlock, TextBlock]
    assert messages[0].timestamp == "2026-01-20T11:57:02.000Z"
    t = analyze(messages)
    assert [(p.call_id, p.tool) for p in t.pairs] == [("toolu_01A", "Read"), ("toolu_01B", "Read"),
                                                      ("toolu_01C", "Bash")]
    assert t.pairs[0].result.output == READ and t.pairs[2].result.state == "error"
    text = orjson.dumps([formats.dump(messages, "jev")]).decode()
    assert "STRUCTURED-ONLY" not in text and "toolu_side" not in text and "compact boundary" not in text


def test_detected_from_json_lines_and_refused_on_write() -> None:
    lines = "\n".join(json.dumps(e) for e in session()).encode()
    data = formats.parse(lines)
    assert formats.detect(data) == "claude-code"
    messages = formats.load(data)
    with pytest.raises(FormatError, match="claude-code transcripts are read-only"):
        formats.dump(messages, "claude-code")
    again = formats.load(formats.dump(messages, "anthropic"), "anthropic")  # written out in another form
    assert [m.content for m in again] == [m.content for m in messages]


@pytest.mark.parametrize("mutate, words", [
    (lambda s: s.__setitem__(2, {**s[2], "uuid": 5}), "line 3.uuid: must be a non-blank string"),
    (lambda s: s.__setitem__(2, {**s[2], "message": "hi"}), "line 3.message: must be a JSON object"),
    (lambda s: s.append({**s[2], "message": {"role": "user", "content": "other"}}), "uuid 'u1' appears twice"),
    (lambda s: s.__setitem__(2, {**s[2], "message": {"role": "assistant", "content": "x"}}), "in a 'user' entry"),
    (lambda s: s.__setitem__(11, assistant("a5", "u3", "msg_2", {"type": "tool_use", "id": 7, "name": "Bash"})),
     r"the turn at line 12.content\[0\]: tool_use needs string .id. and .name."),
])
def test_malformed_entries_name_the_line(mutate, words: str) -> None:
    doc = session()
    mutate(doc)
    with pytest.raises(FormatError, match=words):
        formats.load(doc, "claude-code")


def test_shadow_replay_and_label_on_a_folder_of_sessions(tmp_path: Path) -> None:
    """The read-only form is enough for the rollout's first steps: inspect, SHADOW, replay, label."""
    sessions = tmp_path / "projects" / "-home-dev-app"
    sessions.mkdir(parents=True)
    (sessions / f"{SESSION}.jsonl").write_text("\n".join(json.dumps(e) for e in session()) + "\n")

    def jev(*args: str) -> Ran:
        return cli([*args], cwd=ROOT, capture_output=True,
                              timeout=120)

    inspected = jev("inspect", str(sessions / f"{SESSION}.jsonl"))
    assert inspected.returncode == 0, inspected.stderr
    info = json.loads(inspected.stdout)
    assert info["format"] == "claude-code" and info["tools"]["Read"]["pairs"] == 2
    shadow = jev("compact", str(sessions / f"{SESSION}.jsonl"), "--eligible-tools", "Read,Bash",
                 "--preserve-recent", "1")
    assert shadow.returncode == 0, shadow.stderr
    plan = json.loads(shadow.stdout)
    assert plan["status"] in ("DECIDED", "INCONCLUSIVE") and set(plan["scores"]) >= {"t1"}, plan
    assert formats.detect(plan["messages"]) == "anthropic"  # written back as the Anthropic messages it holds
    records = tmp_path / "records.jsonl"
    replayed = jev("replay", str(tmp_path / "projects"), "--records", str(records), "--every", "1",
                   "--eligible-tools", "Read,Bash", "--preserve-recent", "1")
    assert replayed.returncode == 0, replayed.stderr
    labelled = jev("label", str(records), "--transcripts", str(tmp_path / "projects"), "--out",
                   str(tmp_path / "labelled.jsonl"))
    assert labelled.returncode == 0, labelled.stderr
    rows = [json.loads(line) for line in (tmp_path / "labelled.jsonl").read_text().splitlines()]
    assert rows and {r["session_id"] for r in rows} == {f"-home-dev-app/{SESSION}"}


def continued_session() -> list[dict]:
    """A session resumed in a new file, in the shape public Claude Code 2.1 checkpoints show: hook
    `progress` entries and a snapshot first, the first user entry answering a call made in the earlier
    file, `caller` on tool_use blocks (2.1.6x), an image the user pasted, one turn's parallel calls on two
    lines under one message.id."""
    return [
        {"type": "file-history-snapshot", "messageId": "u0", "snapshot": {"trackedFileBackups": {}}},
        {"parentUuid": None, "isSidechain": False, "type": "progress", "sessionId": SESSION, "uuid": "p0",
         "data": {"type": "hook_progress", "hookEvent": "SessionStart"}, "timestamp": "2026-03-25T02:06:20.974Z"},
        tool_result("u0", None, "toolu_EARLIER", READ, {"stdout": READ, "stderr": ""}),
        entry("user", "u1", "u0", {"role": "user", "content": [
            {"type": "text", "text": "this screenshot shows the failure"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}),
        assistant("a1", "u1", "msg_2", {"type": "tool_use", "id": "toolu_C", "name": "Bash", "caller": {"type": "direct"},
                                        "input": {"command": "pytest -q", "description": "Run the tests"}}),
        assistant("a2", "u1", "msg_2", {"type": "tool_use", "id": "toolu_D", "name": "Read", "caller": {"type": "direct"},
                                        "input": {"file_path": "/home/dev/app/count.py"}}),
        tool_result("u2", "a1", "toolu_C", "1 failed", {"stdout": "1 failed"}, is_error=False),
        tool_result("u3", "a1", "toolu_D", READ, {"type": "text"}),
        *[entry("user" if k % 2 == 0 else "assistant", f"z{k}", f"u{k}", {"role": "user", "content": f"step {k}"}
                if k % 2 == 0 else {"id": f"msg_z{k}", "role": "assistant", "content": [{"type": "text", "text": "ok"}]})
          for k in range(8)],
    ]


def test_a_continued_session_with_an_image_plans_and_says_why_it_kept_what_it_kept() -> None:
    """Issue 35 item 6: no ERROR for a session that starts with results of an earlier file, or that holds a
    pasted image; the carried-over result is a pinned pair with its reason; the calls' `caller` survives."""
    from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, Status
    from jev.judges import ReplayJudge
    messages = formats.load(continued_session())
    assert formats.detect(continued_session()) == "claude-code"
    decision = Compactor(ReplayJudge({}, default=0.01),
                         CompactionConfig(cost_gate=False, eligible_tools=frozenset({"Read", "Bash"})),
                         ExecutionOptions(Mode.SHADOW, 5.0)).plan_sync(messages)
    assert decision.status is Status.DECIDED, decision.detail
    rows = {r.call_id: r for r in decision.plan.pairs_table()}
    assert rows["toolu_EARLIER"].pinned == "its call is not in this history (carried over from an earlier session)"
    assert rows["toolu_D"].action.value != "KEEP" and not rows["toolu_D"].pinned
    written = formats.dump(messages, "anthropic")
    assert written[2]["content"][0]["caller"] == {"type": "direct"}
    assert written[1]["content"][1]["type"] == "image"


def test_a_turn_with_extended_thinking_keeps_its_thinking_and_lets_its_read_result_be_cut() -> None:
    """Issue 36 item 4 on Claude Code's shape: a turn written as a thinking line and a tool_use line under one
    message.id; its result, in the next user entry, may be truncated (never dropped), and the turn —
    thinking, signature and call — is written back byte for byte."""
    from jev import Action, CompactionConfig, Compactor, ExecutionOptions, Mode
    from jev.judges import ReplayJudge
    lines = [entry("user", "u1", None, {"role": "user", "content": "Why does count() fail?"}),
             assistant("a1", "u1", "msg_t", {"type": "thinking", "thinking": "Read the module first.",
                                             "signature": "EqQBCkYIBxgCKkD"}),
             assistant("a2", "a1", "msg_t", {"type": "tool_use", "id": "toolu_T", "name": "Read",
                                             "input": {"file_path": "/home/dev/app/count.py"}}),
             tool_result("u2", "a2", "toolu_T", READ, {"type": "text"}),
             *[entry("user" if k % 2 == 0 else "assistant", f"z{k}", "u2", {"role": "user", "content": f"step {k}"}
                     if k % 2 == 0 else {"id": f"msg_z{k}", "role": "assistant",
                                         "content": [{"type": "text", "text": "ok"}]}) for k in range(6)]]
    messages = formats.load(lines)
    decision = Compactor(ReplayJudge({}, default=0.01), CompactionConfig(eligible_tools=frozenset({"Read"}),
                                                                         cost_gate=False),
                         ExecutionOptions(Mode.SHADOW, 5.0)).plan_sync(messages)
    assert decision.plan.decisions == {"t1": Action.TRUNCATE_RESULT}
    before, after = formats.dump(messages, "anthropic"), formats.dump(list(decision.plan.messages), "anthropic")
    assert after[1] == before[1] == {"role": "assistant", "content": [lines[1]["message"]["content"][0],
                                                                      lines[2]["message"]["content"][0]]}
    assert len(str(after[2])) < len(str(before[2]))


def compacted(boundary_of: list[dict] | None = None) -> list[dict]:
    """`session()` after which Claude Code compacted on its own, in the shape the dev sessions show
    (Claude Code 2.1): a main-thread `system` entry of subtype `compact_boundary` (no parent, the last
    message as its logical parent, the tokens it held), then the summary as a user entry, a hook's
    `progress`, and the turns that went on from it; and, not seen there, a result answering a call made
    before the boundary."""
    boundary = {"parentUuid": None, "logicalParentUuid": "a7", "isSidechain": False, "type": "system",
                "subtype": "compact_boundary", "content": "Conversation compacted", "level": "info",
                "compactMetadata": {"trigger": "auto", "preTokens": 178144}, "sessionId": SESSION,
                "uuid": "cb1", "timestamp": "2026-01-20T12:40:00.000Z"}
    return [
        *session(),
        assistant("a8", "a7", "msg_4", {"type": "tool_use", "id": "toolu_01E", "name": "Read",
                                        "input": {"file_path": "/home/dev/app/README.md"}}),
        *(boundary_of or [boundary]),
        entry("user", "c1", "cb1", {"role": "user", "content": "This session is being continued from a previous "
                                    "conversation that ran out of context. Summary: count() is fixed."},
              isCompactSummary=True, isVisibleInTranscriptOnly=True),
        {"parentUuid": "c1", "isSidechain": False, "type": "progress", "sessionId": SESSION, "uuid": "p1",
         "data": {"type": "hook_progress", "hookEvent": "SessionStart"}, "timestamp": "2026-01-20T12:40:01.000Z"},
        tool_result("c2", "c1", "toolu_01E", "# app\n", {"type": "text"}),
        assistant("c3", "c2", "msg_5", {"type": "text", "text": "Done."}),
    ]


def test_a_session_claude_code_compacted_is_read_from_its_last_compaction_on() -> None:
    """The model went on from Claude Code's summary alone: `load` reads from the boundary on (a result
    answering a call before it is a carried-over pair, named after its call), `stretches` gives both
    conversations, and every line is still checked, whichever stretch it is in."""
    from jev.formats import claude_code
    doc = compacted()
    messages = formats.load(doc)
    assert [m.id for m in messages] == ["c1", "c2", "c3"]
    assert messages[0].content[0].text.startswith("This session is being continued")
    (pair,) = analyze(messages).pairs
    assert (pair.call_id, pair.tool, pair.call_message) == ("toolu_01E", "Read", -1)
    before, after = claude_code.stretches(doc)
    assert [m.id for m in before] == ["u1", "a1", "u2", "u3", "a5", "u4", "u5", "a6", "a8"] and after == messages
    assert claude_code.compactions(doc) == [len(session()) + 2]
    assert [len(s) for s in claude_code.stretches(compacted([doc[-5], {**doc[-5], "uuid": "cb2"}]))] == [9, 0, 3]
    # a sub-agent's own compaction leaves the main thread whole
    side = {**doc[-5], "isSidechain": True}
    assert len(formats.load(compacted([side]))) == 12 and claude_code.compactions(compacted([side])) == []
    broken = compacted()
    broken[2] = {**broken[2], "uuid": 5}
    with pytest.raises(FormatError, match=r"line 3\.uuid: must be a non-blank string"):
        formats.load(broken)


def test_inspect_and_compact_say_a_session_was_read_from_claude_codes_last_compaction(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in compacted()) + "\n")
    inspected = cli(["inspect", str(path)], text=True)
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["messages"] == 3
    said = " ".join(inspected.stderr.split())
    assert f"Claude Code compacted this session once: read from its last compaction (line {len(session()) + 2}) " \
           "on, what the model holds now" in said
    shadow = cli(["compact", str(path), "--eligible-tools", "Read"], text=True)
    assert shadow.returncode == 0, shadow.stderr
    assert "Claude Code compacted this session once" in " ".join(shadow.stderr.split())
    assert json.loads(shadow.stdout)["messages"][0]["content"].startswith("This session is being")
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(json.dumps(e) for e in session()) + "\n")
    assert "compacted" not in cli(["inspect", str(plain)], text=True).stderr


def test_a_branch_the_user_rewound_away_from_is_left_out_and_parallel_work_is_not(tmp_path: Path) -> None:
    """A rewind (Esc Esc, /rewind) writes the next message under an earlier one and leaves the old branch in
    the file: the model never sees it again, so it is not read — its tool pair included. The chain's own
    parallel work hangs off the chain too (another line of a turn, results of its calls: `session()` has
    both) and stays, and so does everything before a link that breaks (`session()`'s `a3` names a parent
    the file does not hold)."""
    from jev.formats import claude_code
    base = session()
    tip = base[-1]["uuid"]
    rewound = [
        *base,
        entry("user", "b1u", tip, {"role": "user", "content": "Now rename count() to size()."}),
        assistant("b1a", "b1u", "msg_b1", {"type": "tool_use", "id": "toolu_OLD", "name": "Bash",
                                           "input": {"command": "sed -i s/count/size/ count.py"}}),
        tool_result("b1r", "b1a", "toolu_OLD", "", {"stdout": ""}),
        assistant("b1z", "b1r", "msg_b1z", {"type": "text", "text": "Renamed."}),
        entry("user", "b2u", tip, {"role": "user", "content": "Leave the name; add a docstring instead."}),
        assistant("b2a", "b2u", "msg_b2", {"type": "text", "text": "Added."}),
    ]
    messages = formats.load(rewound)
    assert [m.id for m in messages] == [m.id for m in formats.load(base)] + ["b2u", "b2a"]
    assert "toolu_OLD" not in {p.call_id for p in analyze(messages).pairs}
    # the branch is the conversation while it is the newest: nothing is left behind then
    assert [m.id for m in formats.load(rewound[:-2])][-4:] == ["b1u", "b1a", "b1r", "b1z"]
    # each stretch has its own chain: a rewind before a compaction is left out of the stretch it is in
    before, after = claude_code.stretches(rewound + compacted()[len(session()) + 1:])
    assert [m.id for m in before][-2:] == ["b2u", "b2a"] and "b1u" not in {m.id for m in before}
    assert [m.id for m in after] == ["c1", "c2", "c3"]
    assert claude_code.rewound(rewound) == [len(base) + k for k in (1, 2, 3, 4)]
    path = tmp_path / "rewound.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in rewound) + "\n")
    said = " ".join(cli(["inspect", str(path)], text=True).stderr.split())
    assert f"left out 4 message line(s), from line {len(base) + 1}, of a branch the user rewound away from" in said


def test_attachment_entries_in_the_parent_chain_are_passed_through_and_never_read_as_messages() -> None:
    """Newer Claude Code versions write `attachment` entries (a hook's added context, a file it re-read) with
    their own `uuid`, the next message's `parentUuid` naming them. They are not messages: none is read. The
    conversation's chain runs through them, so a rewind to a prompt that hangs under one is still seen."""
    from jev.formats import claude_code

    def attachment(uuid: str, parent: str, body: dict) -> dict:
        return {"type": "attachment", "attachment": body, "parentUuid": parent, "isSidechain": False,
                "userType": "external", "cwd": "/home/dev/app", "sessionId": SESSION, "version": "2.1.12",
                "uuid": uuid, "timestamp": "2026-01-20T11:59:00.000Z"}

    base = session()
    with_attachments = [
        *base,
        attachment("t1", base[-1]["uuid"], {"type": "hook_additional_context", "hookName": "UserPromptSubmit",
                                            "content": ["Run the linter before you finish."]}),
        entry("user", "b1u", "t1", {"role": "user", "content": "Now rename count() to size()."}),
        assistant("b1a", "b1u", "msg_b1", {"type": "tool_use", "id": "toolu_OLD", "name": "Bash",
                                           "input": {"command": "sed -i s/count/size/ count.py"}}),
        tool_result("b1r", "b1a", "toolu_OLD", "", {"stdout": ""}),
        entry("user", "b2u", "t1", {"role": "user", "content": "Leave the name; add a docstring instead."}),
        attachment("t2", "b2u", {"type": "file", "filename": "/home/dev/app/count.py", "content": "def count"}),
        assistant("b2a", "t2", "msg_b2", {"type": "text", "text": "Added."}),
    ]
    messages = formats.load(with_attachments)
    assert [m.id for m in messages] == [m.id for m in formats.load(base)] + ["b2u", "b2a"]
    assert claude_code.rewound(with_attachments) == [len(base) + k for k in (2, 3, 4)]
    # without the rewind, the same attachments are passed over and every message is read
    kept = formats.load(with_attachments[:len(base) + 4])
    assert [m.id for m in kept][-3:] == ["b1u", "b1a", "b1r"]


def test_malformed_ids_in_a_rewound_session_are_the_readers_to_refuse_not_a_type_error() -> None:
    """The rewind search runs before the reader checks each line, so it compares ids only where they are
    strings (the fuzz found an assistant line whose `message.id` was a list: `TypeError`, not a library
    error). A non-string turn id reads as a line of its own; a non-string call id is refused by line."""
    base = session()
    tip = base[-1]["uuid"]
    rewound = [*base, entry("user", "b1u", tip, {"role": "user", "content": "Rename it."}),
               entry("user", "b2u", tip, {"role": "user", "content": "Leave the name."})]
    odd_turn = copy.deepcopy(rewound)
    odd_turn[3]["message"]["id"] = [["msg_1"]]  # `a1`, a line of turn msg_1
    assert [m.id for m in formats.load(odd_turn)][-1] == "b2u"
    odd_result = copy.deepcopy(rewound)
    odd_result[6]["message"]["content"][0]["tool_use_id"] = ["toolu_01A"]  # `u2`, a result of the chain's turn
    with pytest.raises(FormatError, match="line 7"):
        formats.load(odd_result)


def test_replay_label_and_calibrate_take_each_stretch_as_a_conversation_of_one_session(tmp_path) -> None:
    """`jev replay` replays every stretch of a session Claude Code compacted itself, its records naming each
    `<session>#stretch-<k>`; `jev label` finds that stretch and labels it within itself; calibration keeps
    the stretches of one session one unit (never split, one loss). The summary says what the reader left out."""
    from calibration.dataset import group_of
    from calibration.thresholds import rows_from, split
    from jev.formats import conversation_id, parse_conversation_id
    folder = tmp_path / "projects"
    folder.mkdir()
    base = session()
    tip = base[-1]["uuid"]
    rewound = [*base, entry("user", "b1u", tip, {"role": "user", "content": "Rename it."}),
               assistant("b1a", "b1u", "msg_b1", {"type": "text", "text": "Renamed."}),
               entry("user", "b2u", tip, {"role": "user", "content": "Leave the name."})]
    went_on = [*compacted(),  # two pairs of the second stretch's own
               assistant("c4", "c3", "msg_6", {"type": "tool_use", "id": "toolu_02F", "name": "Read",
                                               "input": {"file_path": "/home/dev/app/count.py"}}),
               tool_result("c5", "c4", "toolu_02F", READ, {"type": "text"}),
               assistant("c6", "c5", "msg_7", {"type": "tool_use", "id": "toolu_02G", "name": "Read",
                                               "input": {"file_path": "/home/dev/app/test_count.py"}}),
               tool_result("c7", "c6", "toolu_02G", READ, {"type": "text"})]
    for name, doc in (("plain", base), ("compacted", went_on), ("rewound", rewound)):
        (folder / f"{name}.jsonl").write_text("\n".join(json.dumps(e) for e in doc) + "\n")
    records = tmp_path / "records.jsonl"
    ran = cli(["replay", str(folder), "--records", str(records), "--every", "1", "--eligible-tools", "Read,Bash",
               "--preserve-recent", "1"], text=True)
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert (summary["sessions"], summary["conversations"], summary["sessions_in_stretches"],
            summary["rewound_message_lines_left_out"]) == (3, 4, 1, 2)
    said = " ".join(ran.stderr.split())
    assert "1 Claude Code session(s) that Claude Code compacted itself replayed as one conversation per stretch" in said
    assert "2 message line(s) of Claude Code branches the user rewound away from left out" in said
    ids = {json.loads(line)["session_id"] for line in records.read_text().splitlines()}
    assert ids == {"plain", "rewound", "compacted#stretch-1", "compacted#stretch-2"}
    labelled = tmp_path / "labelled.jsonl"
    done = cli(["label", str(records), "--transcripts", str(folder), "--out", str(labelled)], text=True)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in labelled.read_text().splitlines()]
    assert {r["session_id"] for r in rows} == ids
    # each stretch's pairs are labelled at decision points inside it, by its own keys
    first = [r for r in rows if r["session_id"] == "compacted#stretch-1"]
    second = [r for r in rows if r["session_id"] == "compacted#stretch-2"]
    assert first and max(r["decision_point"] for r in first) < 9
    assert {r["call_id"] for r in second} == {"toolu_02F"} and {r["key"] for r in second} == {"t2"}
    calibration_rows = rows_from(rows)
    units = dict(zip(calibration_rows.sessions.tolist(), calibration_rows.unit_ids.tolist(), strict=True))
    assert units["compacted#stretch-1"] == "compacted" and units["plain"] == "plain"
    fit, test = split(calibration_rows, fit_share=0.5)
    assert not set(fit.unit_ids.tolist()) & set(test.unit_ids.tolist())
    assert group_of("proj/abc#stretch-2") == group_of("proj/abc") == "abc"
    assert conversation_id("s", 1, 1) == "s" and conversation_id("s", 2, 3) == "s#stretch-2"
    assert parse_conversation_id("s#stretch-2") == ("s", 2) and parse_conversation_id("s") == ("s", None)
    for whole in ("s#stretch-0", "#stretch-1", "s#stretch-x", "s#stretch-\u00b2"):  # no stretch: the id is the session's own
        assert parse_conversation_id(whole) == (whole, None)


def _dev_session() -> bytes:
    """One real dev Claude Code session (the first with a tool pair), as it lies on disk."""
    import tarfile
    with tarfile.open(CLAUDE_CODE, "r|*") as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".jsonl"):
                data = tar.extractfile(member).read()
                if b'"tool_use"' in data:
                    return data
    raise AssertionError("no dev session with a tool call")


@needs_data(CLAUDE_CODE)
def test_glued_entries_read_as_the_entries_they_are() -> None:
    """Issue 62: 12 of 552 real files held two entries on one line (`…}{"type":"summary"…`)."""
    data = _dev_session()
    lines = data.splitlines()
    glued = b"\n".join([*lines[:3], lines[3] + lines[4], *lines[5:]])
    assert formats.parse(glued) == formats.parse(data)
    with pytest.raises(FormatError, match="line 4"):  # a line of no JSON at all is still refused, by line
        formats.parse(b"\n".join([*lines[:3], b"{not json", *lines[4:]]))


@needs_data(CLAUDE_CODE)
def test_a_session_still_being_written_is_read_without_its_cut_last_line(tmp_path: Path) -> None:
    """Issue 62: a truncated last line refused the whole session (46 of 46 damaged copies)."""
    data = _dev_session()
    cut = data.rstrip(b"\n")[:-40]
    parsed = formats.parse(cut)
    assert parsed == formats.parse(data)[:-1] and "the last line" in parsed.left_out
    assert formats.load(parsed)  # plans as it stands
    path = tmp_path / "live.jsonl"
    path.write_bytes(cut)
    for command in (["inspect", str(path)], ["compact", str(path), "--eligible-tools", "Read"]):
        ran = cli(command, text=True)
        assert ran.returncode == 0, ran.stderr
        assert "cut short" in ran.stderr and "cut short" in json.loads(ran.stdout)["left_out"]
    middle = data.splitlines()
    middle[2] = middle[2][:-10]
    with pytest.raises(FormatError, match="line 3"):  # a cut line anywhere else is damage: refused
        formats.parse(b"\n".join(middle))


def test_a_tool_with_an_empty_name_is_an_ordinary_tool_never_eligible(tmp_path: Path) -> None:
    """Issue 62: `jev inspect` ended in a ConfigError traceback on 9 real files."""
    entries = session()
    for e in entries:
        content = e.get("message", {}).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                block["name"] = ""
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries))
    ran = cli(["inspect", str(path)], text=True)
    assert ran.returncode == 0, ran.stderr
    facts = json.loads(ran.stdout)
    assert facts["tools"][""]["judgeable"] == 0 and "" not in facts["could_be_eligible"]
