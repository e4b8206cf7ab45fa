"""Converters: lossless round trips (examples and property-based) and format detection."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jev import FormatError, formats
from jev.transcript import analyze

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
    from jev.apply import apply_actions
    messages = formats.load(CHAT, "openai-chat")
    out = formats.dump(apply_actions(analyze(messages), {"t2": Action.DROP_PAIR}, 300), "openai-chat")
    assert [c["id"] for c in out[3]["tool_calls"]] == ["call_1"]
    assert all(m.get("tool_call_id") != "call_2" for m in out)


def test_unknown_and_planned_formats() -> None:
    with pytest.raises(FormatError, match="unknown format 'yaml'"):
        formats.load([], "yaml")
    with pytest.raises(FormatError, match="'anthropic' is not available in this version"):
        formats.load([], "anthropic")
    with pytest.raises(FormatError, match="cannot detect"):
        formats.detect({"messages": []})


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
