"""API request bodies (Anthropic Messages, OpenAI Chat Completions, Responses) and JSON Lines: detected,
loaded, compacted and written back exactly — the system prompt goes back where it came from, every other
field of the body (model, tools, cache_control, max_tokens, ...) rides along untouched and counts in no
size."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys

import pytest

from jev import Action, CompactionConfig, Compactor, ExecutionOptions, FormatError, Mode, Status, formats
from jev.formats.request import SYSTEM_ID
from jev.judges import ReplayJudge
from jev.model.transcript import Message, TextBlock
from jev.reading.analysis import analyze
from jev.reading.history import size

OUTPUT = "".join(f"line {n} of a long file\n" for n in range(200))


def anthropic_body() -> dict:
    """The shape of a Messages API request: system as cached text blocks, tools, tool_use/tool_result."""
    return {
        "model": "claude-sonnet-4-5", "max_tokens": 4096,
        "system": [{"type": "text", "text": "You are a careful coding agent.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "read_file", "description": "Read a file.",
                   "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "messages": [
            {"role": "user", "content": "Fix the failing test in app.py."},
            {"role": "assistant", "content": [{"type": "text", "text": "Reading app.py."},
                                              {"type": "tool_use", "id": "toolu_01", "name": "read_file",
                                               "input": {"path": "app.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": OUTPUT}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_02", "name": "read_file",
                                               "input": {"path": "test_app.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_02", "content": "ok",
                                          "cache_control": {"type": "ephemeral"}}]},
            {"role": "user", "content": "Go on."},
        ],
        "temperature": 0,
    }


def chat_body() -> dict:
    return {"model": "gpt-4o", "temperature": 0, "tool_choice": "auto",
            "messages": [{"role": "system", "content": "You are a careful coding agent."},
                         {"role": "user", "content": "Fix the failing test in app.py."},
                         {"role": "assistant", "content": None, "tool_calls": [
                             {"id": "call_1", "type": "function",
                              "function": {"name": "read_file", "arguments": "{\"path\": \"app.py\"}"}}]},
                         {"role": "tool", "tool_call_id": "call_1", "content": OUTPUT},
                         {"role": "assistant", "content": "Found it."},
                         {"role": "user", "content": "Go on."}],
            "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]}


def responses_body() -> dict:
    return {"model": "gpt-5", "instructions": "You are a careful coding agent.", "store": False,
            "input": [{"role": "user", "content": "Fix the failing test in app.py."},
                      {"type": "function_call", "call_id": "call_1", "name": "read_file",
                       "arguments": "{\"path\": \"app.py\"}"},
                      {"type": "function_call_output", "call_id": "call_1", "output": OUTPUT},
                      {"role": "user", "content": "Go on."}],
            "tools": [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]}


BODIES = {"anthropic-request": anthropic_body, "openai-chat-request": chat_body,
          "openai-responses-request": responses_body}


@pytest.mark.parametrize("form", list(BODIES))
def test_detected_and_written_back_exactly_key_order_included(form: str) -> None:
    body = BODIES[form]()
    assert formats.detect(body) == form
    messages = formats.load(copy.deepcopy(body))
    back = formats.dump(messages, form)
    assert back == body and list(back) == list(body)
    assert messages[0].role == "system" and "careful coding agent" in messages[0].text
    assert len(analyze(messages).pairs) >= 1


def test_a_responses_body_with_text_input_round_trips() -> None:
    body = {"model": "gpt-5", "instructions": "Be brief.", "input": "Hello"}
    assert formats.dump(formats.load(body), "openai-responses-request") == body


@pytest.mark.parametrize("form", list(BODIES))
def test_compacted_body_keeps_the_envelope_and_drops_the_pair(form: str) -> None:
    body = BODIES[form]()
    config = CompactionConfig(eligible_tools=frozenset({"read_file"}), preserve_recent_messages=1, minimum_reduction=0.05)
    judge = ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99)
    decision = Compactor(judge, config, ExecutionOptions(Mode.SHADOW)).plan_sync(formats.load(copy.deepcopy(body)))
    assert decision.status is Status.DECIDED and decision.plan.decisions["t1"] is Action.DROP_PAIR
    out = formats.dump(list(decision.plan.messages), form)
    assert {k: v for k, v in out.items() if k not in ("messages", "input")} == {
        k: v for k, v in body.items() if k not in ("messages", "input")}  # model, tools, system ... untouched
    assert OUTPUT not in json.dumps(out) and "Go on." in json.dumps(out)
    assert formats.detect(out) == form and analyze(formats.load(out)).pairs is not None


def test_the_envelope_counts_in_no_size() -> None:
    body = anthropic_body()
    bare = anthropic_body()
    bare["tools"] = bare["tools"] * 50  # a body with much more besides its messages
    assert [size(m) for m in formats.load(body)] == [size(m) for m in formats.load(bare)]


def test_a_body_with_nothing_to_judge_is_refused_by_name() -> None:
    with pytest.raises(FormatError, match=r"openai-chat-request.messages: holds no message"):
        formats.load({"model": "gpt-4o", "messages": []}, "openai-chat-request")
    with pytest.raises(FormatError, match=r"anthropic-request.system: must be a string or a list of text blocks"):
        formats.load({"system": 5, "messages": []}, "anthropic-request")


def test_json_lines_of_messages_and_the_cli_reads_them(tmp_path) -> None:
    lines = "\n".join(json.dumps(m) for m in chat_body()["messages"]) + "\n\n"
    assert formats.parse(lines.encode()) == chat_body()["messages"]
    with pytest.raises(FormatError, match="line 2"):  # a bad line before the last is damage
        formats.parse(b'{"role": "user"}\n{oops\n{"role": "user"}\n')
    assert "cut short" in formats.parse(b'{"role": "user"}\n{oops\n').left_out  # the last: still being written
    path = tmp_path / "session.jsonl"
    path.write_text(lines)
    proc = subprocess.run([sys.executable, "-m", "jev.cli.main", "compact", str(path), "--eligible-tools",
                           "read_file", "--out", str(tmp_path / "plan.json")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "plan.json").read_text())["status"] in ("DECIDED", "SKIPPED")


def test_converted_to_another_apis_body_only_the_conversation_goes_over() -> None:
    messages = formats.load(anthropic_body())
    chat = formats.dump(messages, "openai-chat-request")
    assert list(chat) == ["messages"] and chat["messages"][0] == {"role": "system",
                                                                  "content": "You are a careful coding agent."}
    assert formats.dump(formats.load(chat), "openai-chat-request") == chat
    responses = formats.dump(formats.load(chat_body()), "openai-responses-request")
    assert set(responses) == {"input"} and "model" not in responses
    plain = formats.dump(messages, "openai-chat")  # a bare form never carries the body
    assert all("jev.envelope" not in json.dumps(m) for m in plain)


def test_an_anthropic_body_is_told_by_its_own_fields_when_its_messages_could_be_either() -> None:
    """A plain chat (or one whose tool blocks a plan let go) reads alike in both forms: the body's tools,
    tool choice or stop sequences say which API it is for; a Chat body's stay Chat."""
    chat = {"role": "user", "content": "Hello"}
    anthropic_tool = {"name": "read_file", "input_schema": {"type": "object"}}
    for extra in ({"tools": [anthropic_tool]}, {"tools": [{"name": "editor", "type": "text_editor_20250728"}]},
                  {"tool_choice": {"type": "auto"}}, {"tool_choice": {"type": "any"}}, {"stop_sequences": ["\n"]}):
        assert formats.detect({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [chat], **extra}) \
            == "anthropic-request", extra
    for extra in ({}, {"tools": chat_body()["tools"]}, {"tool_choice": "auto"},
                  {"tool_choice": {"type": "function", "function": {"name": "read_file"}}}, {"stop": ["\n"]}):
        assert formats.detect({"model": "gpt-4o", "messages": [chat], **extra}) == "openai-chat-request", extra


def test_a_server_tools_blocks_say_anthropic() -> None:
    """Server and MCP tools' blocks (`server_tool_use`, `*_tool_result`) are Anthropic's alone."""
    content = [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
               {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
               {"type": "text", "text": "Found nothing."}]
    messages = [{"role": "user", "content": "Search."}, {"role": "assistant", "content": content}]
    assert formats.detect(messages) == "anthropic"
    assert formats.detect({"model": "claude-sonnet-4-5", "messages": messages}) == "anthropic-request"
    assert formats.dump(formats.load(messages), "anthropic") == messages


def test_a_conversation_holds_the_body_apart_from_its_messages_and_a_host_may_change_its_fields() -> None:
    """The body's fields live on the value, not only on the first message: a plan's messages that lost the
    first message's bookkeeping still go back into the whole body, and fields a host changes are written."""
    conversation = formats.load_request(anthropic_body())
    assert conversation.form == "anthropic-request" and conversation.model == "claude-sonnet-4-5"
    assert conversation.messages[0].role == "system" and conversation.system == anthropic_body()["system"]
    assert list(conversation.fields) == ["model", "max_tokens", "tools", "temperature"]
    bare = [conversation.messages[0].with_origin(envelope=None), *conversation.messages[1:]]
    assert formats.dump_request(conversation.with_messages(bare)) == anthropic_body()
    assert formats.dump(bare, "anthropic-request")["messages"] == anthropic_body()["messages"]
    assert "model" not in formats.dump(bare, "anthropic-request")  # without the value, the fields are gone
    changed = dataclasses.replace(conversation, fields={**conversation.fields, "max_tokens": 1024, "top_k": 5})
    out = formats.dump_request(changed)
    assert list(out) == ["model", "max_tokens", "system", "tools", "messages", "temperature", "top_k"]
    assert out["max_tokens"] == 1024 and out["top_k"] == 5
    edited = [Message(SYSTEM_ID, "system", (TextBlock("Be brief."),)), *conversation.messages[1:]]
    assert formats.dump_request(conversation.with_messages(edited))["system"] == "Be brief."


def test_a_responses_body_of_text_input_as_a_conversation_and_what_is_refused_by_name() -> None:
    body = {"model": "gpt-5", "input": "Hello?", "store": False}
    conversation = formats.load_request(body)
    assert conversation.text_input and conversation.system is None and formats.dump_request(conversation) == body
    with pytest.raises(FormatError, match="'openai-chat' is not an API request body form"):
        formats.load_request([{"role": "user", "content": "hi"}])
    with pytest.raises(FormatError, match="'jev' is not an API request body form"):
        formats.load_request([], "jev")
    with pytest.raises(FormatError, match=r"fields: 'input' is where openai-responses-request keeps the messages"):
        dataclasses.replace(conversation, fields={"input": []})
    with pytest.raises(FormatError, match=r"fields: 'system' is where anthropic-request keeps the system prompt"):
        dataclasses.replace(formats.load_request(anthropic_body()), fields={"system": "x"})
    with pytest.raises(FormatError, match="form must be one of anthropic-request"):
        dataclasses.replace(conversation, form="openai-chat")
    with pytest.raises(FormatError, match=r"conversation must be a jev\.formats\.Conversation"):
        formats.dump_request(body)  # type: ignore[arg-type]
