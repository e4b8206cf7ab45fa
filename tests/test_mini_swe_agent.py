"""mini-swe-agent trajectories, format 1.1 (mini-swe-agent 2.x): tool-call and text modes, in the shapes
mini-swe-agent 2.4.6 writes them (assistant messages from the provider's `model_dump()` with `extra`,
observations with `extra.raw_output`, a final `exit` message)."""

from __future__ import annotations

import copy
import json
import pathlib

import numpy as np
import pytest

from jev import CompactionConfig, formats
from jev.deciding.policy import candidates
from jev.errors import FormatError
from jev.model.transcript import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from jev.reading.analysis import analyze
from jev.reading.history import take

ENVELOPE = {"trajectory_format": "mini-swe-agent-1.1", "instance_id": "demo__demo-1",
            "info": {"exit_status": "Submitted", "submission": "diff --git a/x b/x\n"}}


def _assistant(k: int, command: str, reasoning: str | None = None) -> dict:
    call = {"index": 0, "function": {"arguments": json.dumps({"command": command}), "name": "bash"},
            "id": f"call_00_{k:04d}", "type": "function"}
    out = {"content": f"Step {k}: let me look.", "role": "assistant", "tool_calls": [call], "function_call": None,
           "provider_specific_fields": None,
           "extra": {"actions": [{"command": command, "tool_call_id": call["id"]}],
                     "response": {"id": f"r{k}", "choices": [{"message": {"content": "…", "tool_calls": [call]}}]},
                     "cost": 0.001, "timestamp": 1775784986.0 + k}}
    if reasoning is not None:
        out["reasoning_content"] = reasoning
    return out


def _tool(k: int, output: str, exception: str = "") -> dict:
    return {"content": f"<returncode>0</returncode>\n<output>\n{output}</output>", "role": "tool",
            "tool_call_id": f"call_00_{k:04d}",
            "extra": {"raw_output": output, "returncode": 0 if not exception else -1, "timestamp": 1775784990.0 + k,
                      "exception_info": exception}}


def tool_mode(submitted: bool = True) -> dict:
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "<pr_description>Fix the count.</pr_description>"}]
    for k in range(6):
        messages += [_assistant(k, f"cat src/m{k}.py", reasoning="I think." if k == 1 else None),
                     _tool(k, f"line {k}\n" * 200, exception="timed out after 60s" if k == 2 else "")]
    messages.append(_assistant(6, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"))
    if submitted:
        messages.append({"role": "exit", "content": "diff --git a/x b/x\n",
                         "extra": {"exit_status": "Submitted", "submission": "diff --git a/x b/x\n"}})
    else:
        messages.append(_tool(6, "ok\n"))
        messages.append({"role": "exit", "content": "LimitsExceeded",
                         "extra": {"exit_status": "LimitsExceeded", "submission": ""}})
    return {**ENVELOPE, "messages": messages}


def text_mode() -> dict:
    def said(k: int, body: str) -> dict:
        return {"content": body, "role": "assistant", "tool_calls": None, "function_call": None,
                "extra": {"actions": [{"command": f"ls {k}"}], "response": {"id": f"r{k}"}, "cost": 0.0,
                          "timestamp": 1.0 + k}}

    observation = {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>",
                   "extra": {"raw_output": "a.py\n", "returncode": 0, "timestamp": 2.0, "exception_info": ""}}
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Fix it."},
                said(0, "THOUGHT: list.\n\n```mswea_bash_command\nls 0\n```"),
                observation,
                said(1, "Two at once:\n```mswea_bash_command\nls\n```\n```mswea_bash_command\npwd\n```"),
                {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 "
                 "actions.", "extra": {"interrupt_type": "FormatError", "n_actions": 2, "model_response": "…"}},
                said(2, "Done.\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"),
                {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}}]
    return {**ENVELOPE, "messages": messages}


@pytest.mark.parametrize("doc", [tool_mode(), tool_mode(submitted=False), text_mode()],
                         ids=["tool-calls", "tool-calls-limit", "text-mode"])
def test_round_trip_exactly_and_auto_detected_with_and_without_envelope(doc: dict) -> None:
    assert formats.detect(doc) == "mini-swe-agent"
    assert formats.dump(formats.load(doc), "mini-swe-agent") == doc
    bare = doc["messages"]
    assert formats.detect(bare) == "mini-swe-agent"
    assert formats.dump(formats.load(bare, "auto"), "mini-swe-agent") == bare


def test_tool_calls_are_calls_and_tool_messages_their_results() -> None:
    messages = formats.load(tool_mode())
    transcript = analyze(messages)
    assert len(transcript.pairs) == 7 and not transcript.pending
    first = transcript.pairs[0]
    assert first.call.input == {"command": "cat src/m0.py"} and first.call.id == "call_00_0000"
    assert first.result.text.startswith("<returncode>0</returncode>") and first.result.state == "success"
    assert transcript.pairs[2].result.state == "error"  # extra.exception_info: the command did not finish
    exit_pair = transcript.pairs[-1]  # the exit message answers the trailing call that got no tool message
    assert exit_pair.call.input["command"].startswith("echo COMPLETE") and exit_pair.result.text.startswith("diff")


def test_exit_is_a_plain_message_when_no_call_is_left_open() -> None:
    messages = formats.load(tool_mode(submitted=False))
    assert messages[-1].role == "user" and messages[-1].content == (TextBlock("LimitsExceeded"),)
    assert len(analyze(messages).pairs) == 7


def test_reasoning_content_is_kept_but_does_not_pin() -> None:
    messages = formats.load(tool_mode())
    assert not any(isinstance(b, ThinkingBlock) for m in messages for b in m.content)
    config = CompactionConfig(eligible_tools=frozenset({"bash"}), preserve_recent_messages=2)
    keys = {p.key for p in candidates(analyze(messages), config)}
    assert "t2" in keys  # the call whose message carries reasoning_content is judged like any other
    assert formats.dump(messages, "mini-swe-agent")["messages"][4]["reasoning_content"] == "I think."


def test_text_mode_fences_next_to_bash() -> None:
    messages = formats.load(text_mode())
    transcript = analyze(messages)
    assert [p.call.input for p in transcript.pairs] == [{"command": "ls 0"},
                                                          {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}]
    assert messages[4].content[0].text.startswith("Two at once")  # two actions: plain text, not a call
    assert messages[5].role == "user"  # and the format-error notice after it is a plain user message
    assert transcript.pairs[1].result_message == len(messages) - 1  # exit answers the submitting call
    fmt1 = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"},
            {"role": "assistant", "content": "THOUGHT\n```bash\nls\n```"}, {"role": "user", "content": "a.py"}]
    assert len(analyze(formats.load(fmt1, "mini-swe-agent")).pairs) == 1


def test_in_tool_mode_a_fence_in_text_is_not_an_action() -> None:
    doc = tool_mode()
    doc["messages"].insert(2, {"role": "assistant", "content": "```bash\nrm -rf /\n```", "tool_calls": None})
    doc["messages"].insert(3, {"role": "user", "content": "Tool call error: no tool call"})
    messages = formats.load(doc)
    assert [type(b) for b in messages[2].content] == [TextBlock]
    assert formats.dump(messages, "mini-swe-agent") == doc


def test_bookkeeping_counts_in_no_size() -> None:
    doc = tool_mode()
    stripped = copy.deepcopy(doc)
    for m in stripped["messages"]:
        for key in ("provider_specific_fields", "function_call", "reasoning_content"):
            m.pop(key, None)
        if "extra" in m:  # keep only what decides a result's state
            m["extra"] = {"exception_info": m["extra"]["exception_info"]} if m["role"] == "tool" else {}
    full, bare = formats.load(doc), formats.load(stripped)
    assert take(full).chars == take(bare).chars
    assert take(full).chars < len(json.dumps(doc)) / 2  # half of the document is bookkeeping


def test_a_fresh_history_dumps_as_chat_into_a_tool_call_trajectory() -> None:
    messages = formats.load(tool_mode())
    extra = ToolUseBlock("fresh", "bash", {"command": "ls"})
    messages.append(messages[-2].replace(id="new", content=(extra,), metadata=None, origin=None))
    messages.append(messages[-2].replace(id="new-r", role="tool", content=(ToolResultBlock("fresh", "bash", "a\n"),),
                                         metadata=None, origin=None))
    out = formats.dump(messages, "mini-swe-agent")["messages"]
    assert out[-2]["tool_calls"][0]["id"] == "fresh" and out[-1] == {"role": "tool", "tool_call_id": "fresh",
                                                                      "content": "a\n"}


# trajectories the real mini-swe-agent 2.4.6 and litellm wrote against a scripted local endpoint
# (tests/data/make_mini_swe_agent_trajectories.py): Responses tool-call mode (`litellm_response`) and text mode
# with the command fenced (`mini_textbased.yaml`) or in <mswea_bash_command> tags (`benchmarks/swebench_xml.yaml`);
# and one 1.17.5 wrote, format 1 with <bash_code> tags (`extra/swebench_xml.yaml`)
DATA = pathlib.Path(__file__).parent / "data"
RESPONSES = DATA / "mini_swe_agent_responses.traj.json"


@pytest.mark.parametrize("name", ["text", "text_xml", "1_xml"])
def test_real_text_mode_trajectories_read_their_commands_and_write_back_byte_for_byte(name: str) -> None:
    path = DATA / f"mini_swe_agent_{name}.traj.json"
    doc = json.loads(path.read_text())
    messages = formats.load(doc)
    assert json.dumps(formats.dump(messages, "mini-swe-agent"), indent=2) == path.read_text()  # key order too
    transcript = analyze(messages)
    assert [p.call.input["command"] for p in transcript.pairs[:2]] == ["ls -la", "cat calc.py"]
    assert len(transcript.pairs) == 8 and not transcript.pending  # the turn with two commands is plain text
    assert transcript.pairs[-1].result.text.startswith("diff --git")  # the exit entry answers the submit call
    assert next(p for p in transcript.pairs if p.call.input["command"] == "sleep 5").result.state == "error"
    error = next(m for m in messages if "found 2" in m.text)  # the answer with two commands: a format error
    assert error.role == "user" and isinstance(error.content[0], TextBlock)


def responses_doc() -> dict:
    return json.loads(RESPONSES.read_text())


def test_a_responses_trajectory_reads_as_calls_results_and_thinking_and_writes_back_byte_for_byte() -> None:
    doc = responses_doc()
    assert formats.detect(doc) == "mini-swe-agent" and formats.detect(doc["messages"]) == "mini-swe-agent"
    messages = formats.load(doc)
    assert json.dumps(formats.dump(messages, "mini-swe-agent"), indent=2) == RESPONSES.read_text()  # as 2.4.6 saves
    transcript = analyze(messages)
    calls = [p.call.id for p in transcript.pairs]
    assert calls == [f"call_{k:04d}" for k in (1, 2, 3, 4, 6, 11, 7, 8, 9, 10)] and not transcript.pending
    by_id = {p.call.id: p for p in transcript.pairs}
    assert by_id["call_0002"].call.input == {"command": "cat calc.py"}
    assert "def add(a, b):" in by_id["call_0002"].result.text
    assert by_id["call_0009"].result.state == "error"  # `sleep 5` timed out: extra.exception_info
    assert by_id["call_0010"].result.text.startswith("diff --git")  # the exit entry answers the submit call
    thinking = [m for m in messages if any(isinstance(b, ThinkingBlock) for b in m.content)]
    assert next(m.content[0].thinking for m in thinking) == "Look at the repository first."
    error = next(m for m in messages if m.role == "user" and "No tool calls found" in m.text)
    assert error.id == "m9" and len(error.content) == 1  # the format error's `extra.response` is bookkeeping
    assert formats.dump(formats.load(doc["messages"], "auto"), "mini-swe-agent") == doc["messages"]
    other = formats.load(tool_mode())[2]  # read in tool-call mode: written afresh, as Responses items
    mixed = formats.dump([*messages[:-1], other, messages[-1]], "mini-swe-agent")["messages"]
    assert mixed[-3] == {"type": "message", "role": "assistant", "content": "Step 0: let me look."}
    assert mixed[-2]["type"] == "function_call" and mixed[-2]["call_id"] == "call_00_0000"
    assert mixed[-1]["role"] == "exit"


def test_compacting_a_responses_trajectory_keeps_each_response_whole_and_its_reasoning_with_its_call() -> None:
    from jev.applying.apply import apply_actions
    from jev.deciding.policy import Action

    doc = responses_doc()
    transcript = analyze(formats.load(doc))
    key = {p.call.id: p.key for p in transcript.pairs}
    actions = {key["call_0001"]: Action.DROP_PAIR,  # its response: [reasoning, call] -> nothing left to write
               key["call_0002"]: Action.DROP_PAIR,  # [message, call, call]: the object stays, with two items
               key["call_0006"]: Action.DROP_PAIR,  # [call, call]: its first item gone -> the other one bare
               key["call_0004"]: Action.TRUNCATE_RESULT}
    written = formats.dump(apply_actions(transcript, actions, CompactionConfig(truncate_head_chars=20)),
                           "mini-swe-agent")["messages"]
    shape = [("response", [(i["type"], i.get("call_id")) for i in m["output"]]) if m.get("object") == "response"
             else (m.get("type") or m["role"], m.get("call_id")) for m in written]
    assert shape[:9] == [
        ("system", None), ("user", None),
        ("message", None),  # call_0001's tombstone; its reasoning, without the call after it, is left out
        ("response", [("message", None), ("function_call", "call_0003")]),
        ("message", None),  # call_0002's tombstone, after the response it sat in
        ("function_call_output", "call_0003"),
        ("response", [("reasoning", None), ("function_call", "call_0004")]),
        ("function_call_output", "call_0004"),
        ("message", None)]  # the format error
    assert "JEV dropped call \"call_0001\"" in written[2]["content"]
    assert "[JEV archived the full result of call \"call_0004\"" in written[7]["output"]
    # call_0006's tombstone where its call was, then the response's other call, bare: its object rode on the first
    assert shape[9:12] == [("message", None), ("function_call", "call_0011"), ("function_call_output", "call_0011")]
    again = analyze(formats.load({**doc, "messages": written}))  # what mini-swe-agent reads back still pairs
    assert [p.call.id for p in again.pairs] == ["call_0003", "call_0004", "call_0011", "call_0007", "call_0008",
                                                "call_0009", "call_0010"]


def test_a_response_without_output_items_is_kept_and_one_without_a_list_refused_by_name() -> None:
    doc = responses_doc()
    doc["messages"].insert(3, {**doc["messages"][2], "output": [], "status": "incomplete"})
    messages = formats.load(doc)
    assert formats.dump(messages, "mini-swe-agent") == doc  # written back where it was
    assert [m.content for m in messages if m.id == "m3"] == [()] and len(analyze(messages).pairs) == 10
    doc["messages"][2]["output"] = {"type": "function_call"}
    with pytest.raises(FormatError, match=r"messages\[2\]\.output: a response must hold a list of output items"):
        formats.load(doc)


def test_a_run_folder_of_every_mode_builds_rows_and_its_other_json_is_not_read_as_a_trajectory(tmp_path) -> None:
    import shutil

    from calibration.dataset import build_rows, raw_trajectories

    for name in ("responses", "text", "text_xml", "1_xml"):  # as mini-swe-agent lays out a run: <instance>/<file>
        (tmp_path / name).mkdir()
        shutil.copy(DATA / f"mini_swe_agent_{name}.traj.json", tmp_path / name / f"{name}.traj.json")
    (tmp_path / "preds.json").write_text('{"demo__calc-1": {"model_patch": "diff"}}')  # no trajectory
    assert [s for s, _ in raw_trajectories(tmp_path)] == ["1_xml/1_xml", "responses/responses", "text/text",
                                                          "text_xml/text_xml"]
    rows = build_rows(tmp_path, every=4, protect=1, workers=1)
    per_session = {s: int((rows.sessions == s).sum()) for s in set(rows.sessions.tolist())}
    assert per_session == {"1_xml/1_xml": 10, "responses/responses": 10, "text/text": 10, "text_xml/text_xml": 10}
    assert rows.X.shape[0] == 40 and not np.isnan(rows.X).any()  # points at 4 and 8 pairs: 3 + 7 rows each
