"""Converters: lossless round trips (examples and property-based) and format detection."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import orjson
import pytest
from conftest import plain
from hypothesis import given, settings
from hypothesis import strategies as st

from jev import FormatError, formats
from jev.model.transcript import TextBlock, ToolUseBlock
from jev.reading.analysis import analyze

CHAT = [
    {"role": "system", "content": "You fix tests."},
    {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
    {"role": "user", "content": "Fix it", "name": "alice"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.py\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "grep", "arguments": "not json"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "a.py:1"}]},
    {"role": "assistant", "content": "Done.", "refusal": None, "annotations": []},
    {"role": "assistant", "tool_calls": [
        {"id": "call_3", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
]


def test_openai_chat_round_trip_and_pairs() -> None:
    messages = formats.load(CHAT, "openai-chat")
    assert formats.dump(messages, "openai-chat") == CHAT
    t = analyze(messages)
    assert [(p.call_id, p.tool) for p in t.pairs] == [("call_1", "read"), ("call_2", "grep")]
    assert t.pending == {"call_3"}
    assert messages[3].content[0].input == {"path": "a.py"} and messages[3].content[1].input == "not json"
    assert formats.detect(CHAT) == "openai-chat"


def test_openai_chat_dump_after_dropping_one_of_two_calls() -> None:
    from jev import Action
    from jev.applying.apply import apply_actions
    messages = formats.load(CHAT, "openai-chat")
    out = formats.dump(apply_actions(analyze(messages), {"t2": Action.DROP_PAIR}, plain(300)), "openai-chat")
    assert [c["id"] for c in out[3]["tool_calls"]] == ["call_1"]
    assert all(m.get("tool_call_id") != "call_2" for m in out)


def test_unknown_and_planned_formats() -> None:
    with pytest.raises(FormatError, match="unknown format 'yaml'"):
        formats.load([], "yaml")
    with pytest.raises(FormatError, match="cannot detect"):
        formats.detect({"prompt": "a completion request has no messages"})
    assert formats.detect({"messages": []}) == "openai-chat-request"  # a request body: loading it says why not


@pytest.mark.parametrize("doc, message", [
    ([{"role": "function", "content": "x"}], "unsupported chat role"),
    ([{"role": "tool", "content": "x"}], "tool_call_id"),
    ([{"role": "assistant", "tool_calls": [{"id": "1"}]}], "tool_calls[0]"),
    ([{"role": "user", "content": 5}], "content: must be a string, null or a list"),
])
def test_openai_chat_errors_name_the_path(doc: list, message: str) -> None:
    with pytest.raises(FormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        formats.load(doc, "openai-chat")


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)), max_leaves=8)
words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)


@st.composite
def chat_transcripts(draw) -> list:
    out: list = [{"role": "user", "content": draw(words)}]
    n = draw(st.integers(0, 6))
    for i in range(n):
        ids = [f"c{i}_{k}" for k in range(draw(st.integers(1, 3)))]
        content = draw(st.sampled_from([None, "", "thinking aloud", ...]))
        m: dict = {"role": "assistant", "tool_calls": [
            {"id": cid, "type": "function",
             "function": {"name": draw(st.sampled_from(["read", "grep"])),
                          "arguments": orjson.dumps(draw(json_value)).decode()}} for cid in ids]}
        if content is not ...:
            m["content"] = content
        out.append(m)
        for cid in ids:
            if draw(st.booleans()):
                out.append({"role": "tool", "tool_call_id": cid, "content": draw(words)})
    return out


@settings(max_examples=150, deadline=None)
@given(chat_transcripts())
def test_openai_chat_round_trip_property(doc: list) -> None:
    messages = formats.load(doc, "openai-chat")
    assert formats.dump(messages, "openai-chat") == doc
    again = formats.load(formats.dump(messages, "jev"), "jev")
    assert again == messages and formats.dump(again, "openai-chat") == doc


RESPONSES = [
    {"role": "user", "content": "Fix the parser"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "look first"}],
     "encrypted_content": "xyz"},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\": \"p.py\"}",
     "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "def parse(): ..."},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "Found it.", "annotations": []}]},
    {"type": "function_call", "call_id": "call_2", "name": "grep", "arguments": "not json"},
]

ANTHROPIC = [
    {"role": "user", "content": "Fix the parser"},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Reading two files."},
        {"type": "tool_use", "id": "tu_1", "name": "read", "input": {"path": "a.py"}, "cache_control": {"type": "ephemeral"}},
        {"type": "tool_use", "id": "tu_2", "name": "read", "input": {"path": "b.py"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "tu_1", "content": "A" * 50},
        {"type": "tool_result", "tool_use_id": "tu_2", "content": [{"type": "text", "text": "B" * 50}], "is_error": True},
        {"type": "text", "text": "Both read."}]},
    {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "zzz"}, {"type": "text", "text": "ok"}]},
]


@pytest.mark.parametrize("doc, fmt", [(RESPONSES, "openai-responses"), (ANTHROPIC, "anthropic")])
def test_round_trip_and_detection(doc: list, fmt: str) -> None:
    assert formats.detect(doc) == fmt
    messages = formats.load(doc, fmt)
    assert formats.dump(messages, fmt) == doc
    again = formats.load(formats.dump(messages, "jev"), "jev")
    assert formats.dump(again, fmt) == doc


def test_responses_pairs_and_pending() -> None:
    t = analyze(formats.load(RESPONSES, "openai-responses"))
    assert [(p.call_id, p.tool) for p in t.pairs] == [("call_1", "read")] and t.pending == {"call_2"}


def test_anthropic_pairs_states_and_a_compacted_payload() -> None:
    from jev import Action
    from jev.applying.apply import apply_actions
    messages = formats.load(ANTHROPIC, "anthropic")
    t = analyze(messages)
    assert [(p.call_id, p.result.state) for p in t.pairs] == [("tu_1", "success"), ("tu_2", "error")]
    out = formats.dump(apply_actions(t, {"t1": Action.DROP_PAIR}, plain(300)), "anthropic")
    assert [b.get("id") for b in out[1]["content"] if b["type"] == "tool_use"] == ["tu_2"]
    assert [b["tool_use_id"] for b in out[2]["content"] if b["type"] == "tool_result"] == ["tu_2"]
    assert out[1]["content"][0] == ANTHROPIC[1]["content"][0]  # thinking and its signature untouched
    cut = formats.dump(apply_actions(analyze(formats.load(ANTHROPIC, "anthropic")), {"t1": Action.TRUNCATE_RESULT}, plain(0)),
                       "anthropic")
    assert cut[2]["content"][0]["content"] == "A" * 50  # short results stay as they are


@st.composite
def responses_items(draw) -> list:
    items: list = [{"role": "user", "content": draw(words)}]
    for i in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):  # a reasoning model thinks before it calls
            items.append({"type": "reasoning", "id": f"rs_{i}", "summary": [{"type": "summary_text", "text": draw(words)}],
                          "encrypted_content": "e"})
        freeform = draw(st.booleans())  # a GPT-5 freeform tool's call: its input is text
        items.append({"type": "custom_tool_call", "call_id": f"c{i}", "name": "sql", "input": draw(words)} if freeform
                     else {"type": "function_call", "call_id": f"c{i}", "name": draw(st.sampled_from(["read", "grep"])),
                           "arguments": orjson.dumps(draw(json_value)).decode()})
        if draw(st.booleans()):
            items.append({"type": "custom_tool_call_output" if freeform else "function_call_output", "call_id": f"c{i}",
                          "output": draw(words)})
        if draw(st.booleans()):
            items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                                "text": draw(words)}]})
    return items


@st.composite
def anthropic_messages(draw) -> list:
    out: list = [{"role": "user", "content": draw(words)}]
    for i in range(draw(st.integers(0, 4))):
        ids = [f"t{i}_{k}" for k in range(draw(st.integers(1, 3)))]
        blocks = ([{"type": "text", "text": draw(words)}] if draw(st.booleans()) else []) + [
            {"type": "tool_use", "id": t, "name": "read", "input": draw(json_value)} for t in ids]
        out.append({"role": "assistant", "content": blocks})
        answered = [t for t in ids if draw(st.booleans())]
        if answered:
            out.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": t, "content": draw(words)} |
                ({"is_error": True} if draw(st.booleans()) else {}) for t in answered]})
    return out


@settings(max_examples=100, deadline=None)
@given(st.one_of(responses_items().map(lambda d: ("openai-responses", d)),
                 anthropic_messages().map(lambda d: ("anthropic", d))))
def test_round_trip_property_responses_and_anthropic(case) -> None:
    fmt, doc = case
    messages = formats.load(doc, fmt)
    assert formats.dump(messages, fmt) == doc
    t = analyze(messages)  # pairs found equal the pairs in the source
    calls = [b.id for m in messages for b in m.content if isinstance(b, ToolUseBlock)]
    assert sorted([p.call_id for p in t.pairs] + sorted(t.pending)) == sorted(calls)


def _lc_messages():
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    return [SystemMessage("You fix tests.", id="s"),
            HumanMessage("Fix it", id="h1"),
            AIMessage([{"type": "text", "text": "Reading."}], tool_calls=[
                {"name": "read", "args": {"path": "a.py"}, "id": "c1", "type": "tool_call"},
                {"name": "read", "args": {"path": "b.py"}, "id": "c2", "type": "tool_call"}],
                id="a1", response_metadata={"model": "x"}, usage_metadata={"input_tokens": 3, "output_tokens": 1,
                                                                             "total_tokens": 4}),
            ToolMessage("A" * 400, tool_call_id="c1", name="read", id="t1"),
            ToolMessage("boom", tool_call_id="c2", name="read", status="error", id="t2", artifact={"raw": 1}),
            AIMessage("Done.", id="a2")]


def test_langchain_objects_and_dicts_round_trip() -> None:
    from langchain_core.messages import messages_to_dict
    objects = _lc_messages()
    assert formats.detect(objects) == "langchain"
    loaded = formats.load(objects, "auto")
    assert formats.dump(loaded, "langchain") == objects
    assert [m.id for m in loaded] == ["s", "h1", "a1", "t1", "t2", "a2"]
    t = analyze(loaded)
    assert [(p.call_id, p.result.state) for p in t.pairs] == [("c1", "success"), ("c2", "error")]
    dicts = messages_to_dict(objects)
    assert formats.detect(dicts) == "langchain" and formats.dump(formats.load(dicts, "auto"), "langchain") == dicts


def test_langchain_compacted_history_is_valid() -> None:
    from jev import Action
    from jev.applying.apply import apply_actions
    loaded = formats.load(_lc_messages(), "langchain")
    out = formats.dump(apply_actions(analyze(loaded), {"t1": Action.TRUNCATE_RESULT, "t2": Action.DROP_PAIR}, plain(10)),
                       "langchain")
    assert [c["id"] for c in out[2].tool_calls] == ["c1"] and [m.id for m in out] == ["s", "h1", "a1", "t1", "a2"]
    assert out[3].content.startswith("A" * 9 + "\u2026\n[JEV archived") and out[3].tool_call_id == "c1"


def _agentscope_msgs() -> list:
    from agentscope.message import Msg, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock, ToolResultState
    msgs = [Msg(name="user", role="user", content=[TextBlock(text="Read two files.")]),
            Msg(name="coder", role="assistant", content=[
                ThinkingBlock(thinking="plan"), TextBlock(text="Reading."),
                ToolCallBlock(id="c1", name="read", input='{"path": "a.py"}'),
                ToolCallBlock(id="c2", name="read", input='{"path": "b.py"}'),
                ToolResultBlock(id="c1", name="read", output="A" * 400, state=ToolResultState.SUCCESS),
                ToolResultBlock(id="c2", name="read", output=[TextBlock(text="B" * 400)], state=ToolResultState.ERROR)]),
            Msg(name="coder", role="assistant", content=[TextBlock(text="Done.")])]
    return [m.model_dump(mode="json") for m in msgs]


def test_agentscope_round_trip_split_and_merge() -> None:
    from agentscope.message import Msg
    doc = _agentscope_msgs()
    assert formats.detect(doc) == "agentscope"
    messages = formats.load(doc, "agentscope")
    assert [m.role for m in messages] == ["user"] + ["assistant"] * 5 + ["tool", "tool", "assistant"]
    assert messages[1].content == ()  # the header carrying the original Msg
    assert formats.dump(messages, "agentscope") == doc
    t = analyze(messages)
    assert [(p.call_id, p.result.state) for p in t.pairs] == [("c1", "success"), ("c2", "error")]
    assert messages[4].content[0].input == {"path": "a.py"}
    from jev import Action
    from jev.applying.apply import apply_actions
    out = formats.dump(apply_actions(t, {"t1": Action.DROP_PAIR}, plain(300)), "agentscope")
    kinds = [(b["type"], b.get("id")) for b in out[1]["content"]]
    assert kinds == [("thinking", kinds[0][1]), ("text", kinds[1][1]), ("tool_call", "c2"), ("tool_result", "c2")]
    assert [Msg.model_validate(d).id for d in out] == [d["id"] for d in doc]  # still valid AgentScope messages


@st.composite
def langchain_dicts(draw) -> list:
    out: list = [{"type": "human", "data": {"content": draw(words), "id": "h0", "type": "human"}}]
    for i in range(draw(st.integers(0, 4))):
        ids = [f"c{i}_{k}" for k in range(draw(st.integers(1, 3)))]
        out.append({"type": "ai", "data": {"content": draw(words), "id": f"a{i}", "type": "ai", "tool_calls": [
            {"name": "read", "args": draw(st.dictionaries(st.text(max_size=4), json_leaf, max_size=2)), "id": c,
             "type": "tool_call"} for c in ids]}})
        for c in ids:
            if draw(st.booleans()):
                out.append({"type": "tool", "data": {"content": draw(words), "tool_call_id": c, "name": "read",
                                                     "id": f"t{c}", "type": "tool",
                                                     "status": draw(st.sampled_from(["success", "error"]))}})
    return out


@st.composite
def agentscope_dicts(draw) -> list:
    out: list = [{"id": "u0", "role": "user", "name": "user", "created_at": "", "content": [{"type": "text",
                                                                                             "text": draw(words)}]}]
    for i in range(draw(st.integers(0, 3))):
        blocks: list = [{"type": "hint", "hint": "think"}] if draw(st.booleans()) else []
        for k in range(draw(st.integers(1, 3))):
            cid = f"c{i}_{k}"
            blocks.append({"type": "tool_call", "id": cid, "name": "read", "input": orjson.dumps(draw(json_value)).decode()})
            if draw(st.booleans()):
                blocks.append({"type": "tool_result", "id": cid, "name": "read", "output": draw(words),
                               "state": draw(st.sampled_from(["success", "error", "interrupted"]))})
        blocks.append({"type": "text", "text": draw(words)})
        out.append({"id": f"a{i}", "role": "assistant", "name": "coder", "created_at": "", "content": blocks})
    return out


ALL_FORMATS = st.one_of(chat_transcripts().map(lambda d: ("openai-chat", d)),
                        responses_items().map(lambda d: ("openai-responses", d)),
                        anthropic_messages().map(lambda d: ("anthropic", d)),
                        langchain_dicts().map(lambda d: ("langchain", d)),
                        agentscope_dicts().map(lambda d: ("agentscope", d)))


@settings(max_examples=200, deadline=None)
@given(ALL_FORMATS, st.data())
def test_every_format_round_trips_and_compacts_to_a_valid_payload(case, data) -> None:
    from jev import Action, CompactionConfig
    from jev.applying.apply import apply_actions
    from jev.model.markers import is_tombstone
    fmt, doc = case
    messages = formats.load(doc, fmt)
    assert formats.dump(messages, fmt) == doc
    t = analyze(messages)
    calls = [b.id for m in messages for b in m.content if isinstance(b, ToolUseBlock)]
    assert sorted([p.call_id for p in t.pairs] + sorted(t.pending)) == sorted(calls)
    actions = {p.key: data.draw(st.sampled_from(list(Action))) for p in t.pairs}
    dropped = {p.call_id for p in t.pairs if actions[p.key] is Action.DROP_PAIR}
    for config in (plain(5), CompactionConfig(truncate_head_chars=5)):  # SPEC §6 as written, and tombstones
        compacted = formats.dump(apply_actions(t, actions, config), fmt)
        again = analyze(formats.load(compacted, fmt))  # no result without its call (analyze would refuse it)
        assert {p.call_id for p in again.pairs} == {p.call_id for p in t.pairs} - dropped
        assert again.pending == t.pending  # no call loses its result; pending calls stay pending
        if config.tombstones:  # every dropped pair left its line, naming its call id
            texts = [b.text for m in again.messages for b in m.content if isinstance(b, TextBlock)]
            assert all(any(orjson.dumps(i).decode() in x and is_tombstone(x) for x in texts) for i in dropped)


def test_agentscope_msg_survives_dropping_its_first_block() -> None:
    """Regression (found by hypothesis): dropping the pair whose call opens a reply Msg lost the whole Msg."""
    from jev import Action
    from jev.applying.apply import apply_actions
    doc = [{"id": "u0", "role": "user", "name": "user", "created_at": "", "content": [{"type": "text", "text": "go"}]},
           {"id": "a0", "role": "assistant", "name": "coder", "created_at": "", "content": [
               {"type": "tool_call", "id": "c0", "name": "read", "input": "null"},
               {"type": "tool_result", "id": "c0", "name": "read", "output": "x", "state": "success"},
               {"type": "tool_call", "id": "c1", "name": "read", "input": "null"},
               {"type": "text", "text": "waiting"}]}]
    t = analyze(formats.load(doc, "agentscope"))
    out = formats.dump(apply_actions(t, {"t1": Action.DROP_PAIR}, plain(300)), "agentscope")
    assert [b.get("id") for b in out[1]["content"]] == ["c1", None] and out[1]["content"][1]["text"] == "waiting"


# --- from one form to another --------------------------------------------------------------------------

# What each form can hold of a result's state and of thinking; everything else must arrive unchanged.
_STATES_HELD = {"openai-chat": lambda s: "success", "openai-responses": lambda s: "success" if s == "success" else "error",
                "anthropic": lambda s: "success" if s == "success" else "error",
                "langchain": lambda s: "success" if s == "success" else "error", "agentscope": lambda s: s,
                "jev": lambda s: s, "mini-swe-agent": lambda s: "success"}
_THINKING_HELD = {"openai-chat": False, "mini-swe-agent": False}
_IDS_HELD = {"mini-swe-agent": False}  # it has no call ids: they are made up on load


def _essence(messages: list, target: str) -> tuple:
    """What a conversion must keep: the text lines, the calls, the results (with the state `target` can hold),
    the thinking and other blocks, each in order (how text and calls interleave within a message is the
    target's own affair: chat and LangChain keep a message's calls apart from its content)."""
    from jev.model.transcript import OtherBlock, TextBlock, ThinkingBlock, ToolResultBlock
    out: list = []
    ids = _IDS_HELD.get(target, True)
    for m in messages:
        for b in m.content:
            if isinstance(b, TextBlock):
                out += [("text", line) for line in b.text.split("\n") if line]
            elif isinstance(b, ToolUseBlock):
                out.append(("call", ids and b.id, b.name, orjson.dumps(b.input, option=orjson.OPT_SORT_KEYS)))
            elif isinstance(b, ToolResultBlock):
                out.append(("result", ids and b.id, b.text, _STATES_HELD[target](b.state)))
            elif isinstance(b, ThinkingBlock) and _THINKING_HELD.get(target, True):
                out.append(("thinking", b.thinking))
            elif isinstance(b, OtherBlock):
                out.append(("other", orjson.dumps(b.data, option=orjson.OPT_SORT_KEYS)))
    return tuple(sorted(out, key=lambda item: item[0]))  # stable: each kind keeps its order


@settings(max_examples=200, deadline=None)
@given(ALL_FORMATS, st.sampled_from(["jev", "openai-chat", "openai-responses", "anthropic", "langchain", "agentscope"]))
def test_a_history_converts_to_every_other_form_without_loss(case, target: str) -> None:
    """Load one form, dump another, load that: the same text, calls, results and thinking (less what the
    target has no place for), the same pairs and pending calls."""
    fmt, doc = case
    messages = formats.load(doc, fmt)
    back = formats.load(orjson.loads(orjson.dumps(formats.dump(messages, target))), target)
    assert _essence(back, target) == _essence(messages, target)
    before, after = analyze(messages), analyze(back)
    assert [p.call_id for p in after.pairs] == [p.call_id for p in before.pairs] and after.pending == before.pending


def _native() -> list:
    """A history made in Python: parallel calls, two results in one message beside text, an error, an
    image in a result, thinking, a system prompt, a call still pending."""
    from jev import Message, OtherBlock, TextBlock, ThinkingBlock, ToolResultBlock
    image = OtherBlock({"type": "image", "url": "file://shot.png"})
    return [Message("s", "system", (TextBlock("You fix tests."),)),
            Message("u", "user", (TextBlock("Fix the parser\nplease"),)),
            Message("a1", "assistant", (ThinkingBlock("read both"), TextBlock("Reading."),
                                        ToolUseBlock("c1", "read", {"path": "a.py"}), ToolUseBlock("c2", "grep", "def parse"))),
            Message("r1", "tool", (ToolResultBlock("c1", "read", "print(1)"),
                                   ToolResultBlock("c2", "grep", (TextBlock("a.py:1"), image), "error"),
                                   TextBlock("both done"))),
            Message("a2", "assistant", (ToolUseBlock("c3", "read", {"path": "b.py"}),))]


@pytest.mark.parametrize("target", ["jev", "openai-chat", "openai-responses", "anthropic", "langchain", "agentscope"])
def test_a_history_made_in_python_converts_to_every_form(target: str) -> None:
    messages = _native()
    back = formats.load(orjson.loads(orjson.dumps(formats.dump(messages, target))), target)
    assert _essence(back, target) == _essence(messages, target)
    before, after = analyze(messages), analyze(back)
    assert [p.call_id for p in after.pairs] == ["c1", "c2"] and after.pending == before.pending == {"c3"}
    assert formats.dump(back, target) == formats.dump(formats.load(formats.dump(back, target), target), target)
    assert formats.detect(orjson.loads(orjson.dumps(formats.dump(messages, target)))) == target  # --format auto


def test_mini_swe_agent_holds_one_bash_call_per_step_and_refuses_the_rest() -> None:
    from jev import Message, TextBlock, ToolResultBlock
    bash = [Message("u", "user", (TextBlock("Fix it"),)),
            Message("a", "assistant", (TextBlock("Look first.\n"), ToolUseBlock("x", "bash", {"command": "ls"}))),
            Message("r", "tool", (ToolResultBlock("x", "bash", "a.py", "error"),)),
            Message("a2", "assistant", (TextBlock("Done."),))]
    back = formats.load(formats.dump(bash, "mini-swe-agent"), "mini-swe-agent")
    assert _essence(back, "mini-swe-agent") == _essence(bash, "mini-swe-agent")
    assert [p.tool for p in analyze(back).pairs] == ["bash"]
    with pytest.raises(FormatError, match=r"message 'a1': this format holds one bash call per assistant message"):
        formats.dump(_native(), "mini-swe-agent")
    with pytest.raises(FormatError, match="message 'r': a result must be the whole message right after its call"):
        formats.dump([bash[0], bash[2]], "mini-swe-agent")
    with pytest.raises(FormatError, match="message 'u2': a user message right after call 'x' would read as its result"):
        formats.dump([*bash[:2], Message("u2", "user", (TextBlock("hm"),)), bash[2]], "mini-swe-agent")


def test_responses_leaves_out_a_reasoning_item_whose_call_was_compacted_away() -> None:
    """The API refuses a reasoning item without its following item: when a plan drops the call a reasoning
    item led to, the Responses form leaves the reasoning out too; a parallel call still after it keeps it."""
    from jev import Action, CompactionConfig
    from jev.applying.apply import apply_actions, tombstone

    def rs(n: int) -> dict:
        return {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": "e"}

    def fc(c: str) -> dict:
        return {"type": "function_call", "call_id": c, "name": "read", "arguments": "{}"}

    def out(c: str) -> dict:
        return {"type": "function_call_output", "call_id": c, "output": "x" * 400}

    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
    user = {"role": "user", "content": "go"}
    one_by_one = [user, rs(1), fc("a"), out("a"), rs(2), fc("b"), out("b"), answer]
    messages = formats.load(one_by_one, "openai-responses")
    assert formats.dump(messages, "openai-responses") == one_by_one  # untouched: exactly as loaded
    compacted = apply_actions(analyze(messages), {"t1": Action.DROP_PAIR}, plain(300))
    assert any(m.id == "m1" for m in compacted)  # the plan keeps the pinned reasoning message...
    assert formats.dump(compacted, "openai-responses") == [user, rs(2), fc("b"), out("b"), answer]  # ...the wire not

    parallel = [user, rs(1), fc("a"), fc("b"), out("a"), out("b"), answer]
    messages = formats.load(parallel, "openai-responses")
    compacted = apply_actions(analyze(messages), {"t1": Action.DROP_PAIR}, plain(300))
    assert formats.dump(compacted, "openai-responses") == [user, rs(1), fc("b"), out("b"), answer]
    odd = [user, rs(1), user]  # as loaded, even where the API would object: written back as it came
    assert formats.dump(formats.load(odd, "openai-responses"), "openai-responses") == odd

    # with tombstones (the default) the dropped call's tombstone is no follower: no response produced it
    stones = CompactionConfig(eligible_tools=frozenset({"read"}))
    messages = formats.load(one_by_one, "openai-responses")
    [stone_a] = [{"type": "message", "role": "assistant", "content": tombstone(analyze(messages).pairs[0], stones)}]
    compacted = apply_actions(analyze(messages), {"t1": Action.DROP_PAIR}, stones)
    assert formats.dump(compacted, "openai-responses") == [user, stone_a, rs(2), fc("b"), out("b"), answer]
    messages = formats.load(parallel, "openai-responses")  # the parallel call it led to comes first, then the stone
    compacted = apply_actions(analyze(messages), {"t1": Action.DROP_PAIR}, stones)
    assert formats.dump(compacted, "openai-responses") == [user, rs(1), fc("b"), stone_a, out("b"), answer]
    last = [user, rs(1), fc("a"), out("a")]  # its only call dropped, nothing of its response is left
    messages = formats.load(last + [user], "openai-responses")
    compacted = apply_actions(analyze(messages), {"t1": Action.DROP_PAIR}, stones)
    assert formats.dump(compacted, "openai-responses") == [user, stone_a, user]


def test_chat_tool_calls_null_or_empty_round_trip() -> None:
    doc = [{"role": "user", "content": "hi"},
           {"role": "assistant", "content": "a", "tool_calls": None, "function_call": None},
           {"role": "assistant", "content": "b", "tool_calls": []}]
    messages = formats.load(doc, "openai-chat")
    assert [m.content for m in messages[1:]] == [(TextBlock("a"),), (TextBlock("b"),)]
    assert formats.dump(messages, "openai-chat") == doc


OLD_SNAPSHOTS = sorted((Path(__file__).parent / "data" / "snapshots-0.3.0").glob("*.json"))


@pytest.mark.parametrize("path", OLD_SNAPSHOTS, ids=[p.stem for p in OLD_SNAPSHOTS])
def test_a_result_is_kept_once_and_snapshots_written_before_still_restore(path: Path) -> None:
    """Issue 15, item 3 (the tool-result part): a loaded result's text lives in its block only, not again in
    the converter's bookkeeping, so a truncation removes the bytes; snapshots that 0.3.0 wrote (text kept
    twice) still restore and write back exactly."""
    from archive import Scope
    from archive.snapshot import decode, encode
    from jev import Action, CompactionConfig
    from jev.applying.apply import apply_actions
    case = json.loads(path.read_text())
    fmt, doc = case["format"], case["document"]
    scope = Scope("user-1", "agent-1", "session-1")
    restored = decode(scope, case["reference"], case["snapshot"].encode())
    assert formats.dump(restored, fmt) == doc
    messages = formats.load(doc, fmt)
    _, data = encode(scope, messages)
    assert data.decode().count("line of output") == 50  # the 50-line result, once
    assert len(data) <= len(case["snapshot"].encode())
    t = analyze(messages)
    cut = apply_actions(t, {p.key: Action.TRUNCATE_RESULT if p.call_id == "old" else Action.KEEP for p in t.pairs},
                        CompactionConfig(truncate_head_chars=20))
    assert "line of output\nline of output\n" not in orjson.dumps(list(cut), default=str).decode()
    again = formats.load(formats.dump(cut, fmt), fmt)  # the cut result is written back cut
    assert [p.result.text for p in analyze(again).pairs] == [p.result.text for p in analyze(cut).pairs]


def test_chat_messages_write_back_in_the_key_order_they_were_read_in() -> None:
    # a provider's model_dump(): content before role, a call's function before its id, arguments before name
    doc = [{"role": "user", "content": "Fix it."},
           {"content": "Looking.", "role": "assistant", "tool_calls": [
               {"index": 0, "function": {"arguments": '{"command": "ls"}', "name": "bash"}, "id": "c1", "type": "function"}],
            "function_call": None},
           {"content": "a.py\n", "role": "tool", "tool_call_id": "c1"}]
    written = formats.dump(formats.load(doc, "openai-chat"), "openai-chat")
    assert json.dumps(written) == json.dumps(doc)
    tidy = [{"role": "user", "content": "Fix it."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}]
    messages = formats.load(tidy, "openai-chat")
    assert all("order" not in (m.origin.source if m.origin else {}) for m in messages)  # chat's own order: kept as is
    assert json.dumps(formats.dump(messages, "openai-chat")) == json.dumps(tidy)


def _archived(messages: list) -> list:
    """The messages as a restore gives them back: through a real snapshot's bytes."""
    from archive import Scope
    from archive.snapshot import decode, encode
    scope = Scope("u", "a", "s")
    ref, data = encode(scope, messages)
    return decode(scope, ref, data)


@settings(max_examples=200, deadline=None)
@given(ALL_FORMATS)
def test_archive_restore_dump_gives_back_the_hosts_bytes(case) -> None:
    """Issue 35 item 1: a restore written back in the host's form is the host's document byte for byte,
    key order inside inputs, arguments strings and provider fields included (the canonical snapshot sorts)."""
    fmt, doc = case
    assert orjson.dumps(formats.dump(_archived(formats.load(doc, fmt)), fmt)) == orjson.dumps(doc)


GPT4O_AIRLINE = [  # the shape of tau-bench's GPT-4o airline sessions: arguments keys as the model wrote them
    {"role": "system", "content": "You are an airline agent."},
    {"role": "user", "content": "Book BOS to CLT on May 21."},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_a", "type": "function", "function": {
        "name": "search_direct_flight", "arguments": '{"origin":"BOS","destination":"CLT","date":"2024-05-21"}'}}]},
    {"role": "tool", "tool_call_id": "call_a", "name": "search_direct_flight", "content": "[]"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_a", "type": "function", "function": {
        "name": "search_onestop_flight", "arguments": '{"origin": "BOS", "destination": "CLT", "date": "2024-05-21"}'}}]},
    {"role": "tool", "tool_call_id": "call_a", "name": "search_onestop_flight", "content": "[[1, 2]]"},
]


def test_a_restored_chat_history_keeps_every_arguments_string() -> None:
    messages = formats.load(GPT4O_AIRLINE, "openai-chat")
    assert orjson.dumps(formats.dump(_archived(messages), "openai-chat")) == orjson.dumps(GPT4O_AIRLINE)


@pytest.mark.parametrize("fmt, doc", [
    ("openai-chat", [{"role": "user", "content": "hi", "tool_call_id": "x"}]),  # an id on a non-tool message
    ("openai-chat", [{"content": "hi", "role": "user", "name": None, "tool_calls": None, "tool_call_id": None}]),
    ("openai-chat", [{"content": None, "role": "assistant", "name": None, "function_call": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "r", "arguments": "{}"}}]},
                     {"content": "ok", "role": "tool", "name": None, "tool_call_id": "c"}]),  # model_dump()
    ("openai-chat-request", {"model": "m", "messages": [{"role": "user", "content": "hi", "name": None,
                                                        "tool_calls": None}]}),
    ("langchain", [{"type": "human", "data": {"content": "x", "tool_calls": [
        {"name": "a", "args": {"q": 1}, "id": "1", "type": "tool_call"}]}}]),  # constructible: kept, not []
    ("langchain", [{"type": "system", "data": {"content": "s", "tool_calls": "s"}}]),
    ("langchain", [{"type": "ai", "data": {"content": "", "tool_calls": [{"name": "a", "args": {"q": 1}, "id": "1",
                                                                          "type": "tool_call"}]}},
                   {"type": "tool", "data": {"content": "r", "tool_call_id": "1", "tool_calls": [
                       {"name": "b", "args": {"z": 1}, "id": "2"}]}}]),  # a tool message's own args stay
])
def test_what_hosts_send_round_trips_exactly(fmt: str, doc) -> None:
    """Issue 35 item 2: fields a tidy reading would drop are kept, in memory and through the archive."""
    messages = formats.load(doc, fmt)
    assert orjson.dumps(formats.dump(messages, fmt)) == orjson.dumps(doc)
    assert orjson.dumps(formats.dump(_archived(messages), fmt)) == orjson.dumps(doc)


def test_langchain_objects_keep_tool_calls_on_a_human_message() -> None:
    from langchain_core.messages import HumanMessage
    human = HumanMessage(content="x", tool_calls=[{"name": "a", "args": {"q": 1}, "id": "1", "type": "tool_call"}])
    back = formats.dump(formats.load([human], "langchain"), "langchain")
    assert back[0].tool_calls == human.tool_calls and back == [human]


def test_a_foreign_part_typed_as_an_agentscope_call_is_refused_by_name() -> None:
    """Issue 35 item 3: a chat part {"type": "tool_call", "id": []} written as AgentScope raised TypeError."""
    messages = formats.load([{"role": "user", "content": [{"type": "tool_call", "id": []}]}], "openai-chat")
    with pytest.raises(FormatError, match="agentscope: a 'tool_call' part that is not a jev tool call"):
        formats.dump(messages, "agentscope")


def test_mini_swe_agent_refuses_a_trajectory_object_without_messages() -> None:
    """Found by the fuzz run: an object whose `messages` is empty loaded to no messages and came back as
    `[]`, its other fields lost — now refused by name (a bare empty list still loads, as nothing)."""
    with pytest.raises(FormatError, match="messages: a trajectory object with no messages cannot be loaded"):
        formats.load({"info": {"exit_status": "Submitted"}, "messages": [], "trajectory_format": "mini-swe-agent-1"},
                     "mini-swe-agent")
    assert formats.load([], "mini-swe-agent") == []
    assert formats.dump([], "mini-swe-agent") == []


def test_agentscope_msgs_sharing_an_id_read_apart_and_write_back_as_they_were() -> None:
    """AgentScope's own context truncation can leave two `Msg`s with one id (seen replaying real runs
    through its reply loop): each reads as its own jev message (`id`, `id~2`) and writes back with the id
    it had."""
    doc = [{"id": "a", "role": "user", "name": "user", "content": [{"type": "text", "text": "fix it"}]},
           {"id": "b", "role": "assistant", "name": "coder", "content": [
               {"type": "tool_call", "id": "c1", "name": "read", "input": '{"path": "x.py"}'},
               {"type": "tool_result", "id": "c1", "name": "read", "output": "print(1)", "state": "success"}]},
           {"id": "b", "role": "assistant", "name": "coder", "content": [{"type": "text", "text": "done"}]}]
    messages = formats.load(doc, "agentscope")
    assert [m.id for m in messages] == ["a", "b", "b#0", "b#1", "b~2"]
    assert formats.dump(messages, "agentscope") == doc
    from jev.reading.analysis import analyze
    assert [p.call_id for p in analyze(messages).pairs] == ["c1"]


def test_a_responses_list_is_told_by_any_typed_item_without_a_role() -> None:
    """Items of a built-in tool (`web_search_call`) or an `item_reference` are Responses items too: a list
    holding them beside plain messages is read as Responses input, not refused as a chat with no role."""
    for item in ({"type": "item_reference", "id": "msg_1"},
                 {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}}):
        doc = [{"role": "user", "content": "Search for it."}, item]
        assert formats.detect(doc) == "openai-responses"
        assert formats.dump(formats.load(doc), "openai-responses") == doc
    assert formats.detect([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]) == "openai-chat"


def _nested_result_history(*inner) -> list:
    from jev import Message, ToolResultBlock
    nested = ToolResultBlock("c1", "read", (TextBlock("head"), *inner))
    return [Message("u", "user", (TextBlock("go"),)), Message("a", "assistant", (ToolUseBlock("c1", "read", {}),)),
            Message("t", "tool", (nested,))]


@pytest.mark.parametrize("form", ["openai-chat", "openai-responses", "openai-chat-request", "openai-responses-request",
                                  "langchain"])
def test_a_block_no_form_can_carry_in_a_results_output_is_a_format_error(form) -> None:
    """Issue 62: a thinking or tool_result block nested in a tool result's output raised AttributeError."""
    from jev import ThinkingBlock, ToolResultBlock
    for inner in (ThinkingBlock("hm"), ToolResultBlock("c0", "x", "inner")):
        if form == "langchain" and isinstance(inner, ThinkingBlock):
            formats.dump(_nested_result_history(inner), form)  # a reasoning part: LangChain carries it
            continue
        with pytest.raises(FormatError, match=f"a content part cannot be a {inner.type} block"):
            formats.dump(_nested_result_history(inner), form)


def test_values_nested_deeper_than_json_allows_are_format_errors() -> None:
    """Issue 62: 2 000 levels raised RecursionError in formats.load (auto) and in the dump to agentscope."""
    from jev import Message, ToolResultBlock
    output: object = "x"
    for i in range(2_000):
        output = [{"type": "tool_result", "id": f"n{i}", "name": "r", "output": output}]
    doc = [{"id": "a", "role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "read", "input": {}}]},
           {"id": "t", "role": "tool", "content": [{"type": "tool_result", "id": "c1", "name": "read", "output": output}]}]
    for form in ("auto", "jev"):
        with pytest.raises(FormatError, match="nested too deep"):
            formats.load(doc, form)
    deep: object = "x"
    for _ in range(2_000):
        deep = {"a": deep}
    messages = [Message("a", "assistant", (ToolUseBlock("c1", "read", deep),)),
                Message("t", "tool", (ToolResultBlock("c1", "read", "x"),))]
    for form in ("agentscope", "openai-chat", "openai-responses"):
        with pytest.raises(FormatError):
            formats.dump(messages, form)


def test_a_tool_messages_null_tool_calls_round_trips() -> None:
    """Issue 62: `"tool_calls": null` on a tool message was lost by a load and a dump."""
    doc = [{"role": "user", "content": "go"},
           {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
           {"role": "tool", "tool_call_id": "c1", "content": "x", "tool_calls": None}]
    assert formats.dump(formats.load(doc, "openai-chat"), "openai-chat") == doc


def test_a_loaded_message_keeps_its_origin_beside_the_hosts_metadata() -> None:
    """What a converter keeps rides in the message's frozen `origin`, never in the host's `metadata`; the `jev`
    form writes it as the metadata keys it always had, after the host's own, and reads them back into it."""
    from jev import Origin
    for doc, form in ((CHAT, "openai-chat"), (RESPONSES, "openai-responses"), (ANTHROPIC, "anthropic")):
        messages = formats.load(doc, form)
        assert all(m.metadata is None and (m.origin is None or m.origin.format == form) for m in messages)
        assert any(m.origin is not None for m in messages)  # chat keeps nothing of a message it writes back alike
        as_jev = formats.dump(messages, "jev")
        assert all(set(w["metadata"]) == {"jev.format", "jev.source"} if m.origin else "metadata" not in w
                   for m, w in zip(messages, as_jev, strict=True))
        assert formats.load(as_jev, "jev") == messages and formats.dump(formats.load(as_jev, "jev"), form) == doc
    first = formats.load(ANTHROPIC, "anthropic")[0]
    hosted = first.replace(metadata={"trace": "t1"})  # a host's own metadata beside the origin
    assert hosted.origin is first.origin and formats.dump([hosted], "jev")[0]["metadata"] == {
        "trace": "t1", "jev.format": "anthropic", "jev.source": first.origin.source}
    assert formats.load(formats.dump([hosted], "jev"), "jev")[0] == hosted
    fresh = hosted.replace(origin=None)  # made afresh: written in the form's own terms
    assert "jev.source" not in formats.dump([fresh], "jev")[0]["metadata"]
    assert hosted.with_origin(model="claude-x").origin == Origin("anthropic", first.origin.source, model="claude-x")
    assert Origin("x").replace(format=None) is None  # an origin with nothing left is none
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.origin.source = {}  # type: ignore[misc, union-attr]
