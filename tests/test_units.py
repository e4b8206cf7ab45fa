"""Pure steps: transcript validation and pairing, state and token estimate, batching, policy, apply."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
from conftest import call, msg, plain, reference_config, reference_messages, result, text
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jev import (
    Action,
    CompactionConfig,
    ConfigError,
    FormatError,
    Message,
    Origin,
    OtherBlock,
    ThinkingBlock,
    TranscriptError,
    canonical_json,
    estimate_tokens,
)
from jev.applying.apply import apply_actions
from jev.deciding.policy import candidates, decide, pinned_message_indices
from jev.errors import StateBudgetError
from jev.judges.questions import batches, questions_map
from jev.model.markers import TRUNCATION_MARKER, is_truncated
from jev.model.transcript import TextBlock, ToolResultBlock, ToolUseBlock, messages_from_dicts
from jev.reading.analysis import analyze
from jev.reading.state import build_state, cut, fit_state

# --- token estimate and cutting -------------------------------------------------------------------

@pytest.mark.parametrize("s, n", [("", 0), ("hello world", 2), ("internationalization", 4), ("12345678", 4),
                                  ("a,b", 3), ("123", 2), ("\u00e9", 1), ("abcdefg", 2), ("  \t\n", 0)])
def test_token_estimate_examples(s: str, n: int) -> None:
    assert estimate_tokens(s) == n


@pytest.mark.parametrize("s, cap, out", [("abc", 3, "abc"), ("abcd", 3, "ab\u2026"), ("abcd", 1, "\u2026"),
                                         ("abcd", 0, ""), ("", 0, "")])
def test_cut(s: str, cap: int, out: str) -> None:
    assert cut(s, cap) == out


# --- validation and pairing -----------------------------------------------------------------------

def test_pairs_are_keyed_in_result_order_and_pending_calls_are_found() -> None:
    messages = [msg("a", "assistant", call("x"), call("y"), call("z")),
                msg("b", "tool", result("y")), msg("c", "tool", result("x"))]
    t = analyze(messages)
    assert [(p.key, p.call_id) for p in t.pairs] == [("t1", "y"), ("t2", "x")]
    assert t.pending == {"z"}


@pytest.mark.parametrize("messages, message", [
    ([msg("a", "user", text("x")), msg("a", "user", text("y"))], "duplicate message id 'a'"),
    ([msg("a", "assistant", call(" "))], "ambiguous call id"),
    ([msg("a", "assistant", call("x")), msg("b", "assistant", call("x"))], "ambiguous call id 'x'"),
    ([msg("a", "assistant", call("y")), msg("b", "tool", result("y")), msg("c", "tool", result("x"))],
     "unpaired result 'x'"),  # no call, after the history's first call: not carried over
    ([msg("a", "assistant", call("x"), result("x"))], "unpaired result 'x'"),  # same message
    ([msg("a", "assistant", call("x")), msg("b", "tool", result("x", name="write"))], "unpaired result"),
    ([msg("a", "assistant", call("x")), msg("b", "tool", result("x")), msg("c", "tool", result("x"))],
     "unpaired result"),
    ([msg("a", "user", text("ok \udcff"))], r"messages\[0\]\.content\[0\]\.text: a lone surrogate \(U\+DCFF"),
    ([msg("a", "user", text("x")), msg("b", "tool", result("x", output="bad \ud800 output"))],
     r"messages\[1\]\.content\[0\]\.output: a lone surrogate"),
    ([msg("a", "assistant", call("x", "read", {"path": "\udcff"}))], r"messages\[0\]\.content\[0\]\.input\.path"),
    # a malformed or repeated message is named before a pairing problem earlier in the list
    ([msg("a", "tool", result("x")), msg("b", "user", text("y")), "not a message"], r"messages\[2\] is a str"),
    ([msg("a", "tool", result("x")), msg("b", "user", text("y")), msg("b", "user", text("z"))],
     "duplicate message id 'b'"),
])
def test_validation_names_the_culprit(messages: list[Message], message: str) -> None:
    with pytest.raises(TranscriptError, match=message):
        analyze(messages)


def test_a_continued_session_starts_with_results_whose_calls_are_elsewhere() -> None:
    """Issue 35 item 6: results before the history's first call, answering ids not seen, are carried over
    from an earlier session: pairs of their own, pinned with the reason, never an error."""
    from jev.deciding.policy import why_pinned
    messages = [msg("a", "user", result("old1"), result("old2")), msg("b", "assistant", call("x")),
                msg("c", "tool", result("x")), msg("d", "assistant", call("old1")), msg("e", "tool", result("old1"))]
    t = analyze(messages)
    assert [(p.key, p.call_id, p.call_message) for p in t.pairs] == [
        ("t1", "old1", -1), ("t2", "old2", -1), ("t3", "x", 1), ("t4", "old1", 3)]  # an id reused after its pair
    config = reference_config(preserve_recent_messages=0)
    assert why_pinned(t, config)["t1"] == why_pinned(t, config)["t2"] == (
        "its call is not in this history (carried over from an earlier session)")
    assert [p.key for p in candidates(t, config)] == ["t3"]  # t4's result is the last message, which stays


def test_content_jev_does_not_read_pins_its_message_instead_of_abandoning() -> None:
    """An image a user pasted beside their text (21 of the 110 dev Claude Code sessions) pins its message:
    it is sent as it is and nothing in that message is judged."""
    from jev.deciding.policy import why_pinned
    messages = reference_messages()
    messages[1] = msg("c-old", "assistant", text("see"), OtherBlock({"type": "image", "url": "u"}),
                      *messages[1].content)
    t = analyze(messages)
    assert t.opaque == {1}
    assert why_pinned(t, reference_config())["t1"] == "its message holds content other than text (an image, a file)"


def test_non_text_inside_a_result_is_allowed_but_pins_the_pair() -> None:
    messages = reference_messages()
    messages[2] = messages_from_dicts([{"id": "r-old", "role": "tool", "content": [
        {"type": "tool_result", "id": "old", "name": "read", "output": [{"type": "image", "url": "x"}]}]}])[0]
    t = analyze(messages)
    assert "t1" not in {p.key for p in candidates(t, reference_config())}


@pytest.mark.parametrize("doc, where", [
    ([{"role": "user", "content": []}], "messages[0]: a message is missing required field 'id'"),
    ([{"id": "a", "role": "robot", "content": []}], "messages[0].role"),
    ([{"id": "a", "role": "user", "content": "hi"}], "messages[0].content: must be a list"),
    ([{"id": "a", "role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "r"}]}],
     "messages[0].content[0]: a tool_use block is missing required field 'input'"),
    ([{"id": "a", "role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "r", "input": {},
                                                     "x": 1}]}], "unknown field 'x' in a tool_use block"),
    ([{"id": "a", "role": "user", "content": [{"type": 5}]}], "messages[0].content[0].type: must be a string"),
    ([{"id": "a", "role": "user", "content": [{"type": "text", "text": 1}]}], "messages[0].content[0].text: must be a string"),
    ([{"id": "a", "role": "user", "content": [], "extra": 1}], "unknown field 'extra'"),
    ([{"id": "a", "role": "tool", "content": [{"type": "tool_result", "id": "x", "name": "r", "output": 3}]}],
     "output: must be a string or a list"),
    ([{"id": "a", "role": "tool", "content": [{"type": "tool_result", "id": "x", "name": "r", "output": "",
                                                "state": "done"}]}], "state: must be one of"),
    ({"id": "a"}, "must be a JSON array"),
])
def test_jev_format_errors_name_the_path(doc: object, where: str) -> None:
    with pytest.raises(FormatError, match=re.escape(where)):
        messages_from_dicts(doc)


def test_canonical_json_sorts_keys_and_keeps_unicode() -> None:
    assert canonical_json({"b": 1, "a": "\u00e9"}) == '{"a":"\u00e9","b":1}'.encode()
    m = msg("a", "user", text("x"), metadata={"z": 1, "a": 2})
    assert canonical_json(m) == b'{"content":[{"text":"x","type":"text"}],"id":"a","metadata":{"a":2,"z":1},"role":"user"}'


# --- pinning and candidates -----------------------------------------------------------------------

def test_pinning_rules() -> None:
    messages = [msg("0", "user", text("task")),
                msg("1", "system", text("sys")),
                msg("2", "assistant", text("x"), metadata={"jev.context.pinned": True}),
                msg("3", "assistant", text("x"), metadata={"jev.context.pinned": "true"}),
                msg("4", "assistant", ThinkingBlock("hmm")),
                msg("5", "user", text("by id")),
                msg("6", "user", text("plain")),
                msg("7", "user", text("recent"))]
    config = reference_config(recent=1, pinned_message_ids=frozenset({"5"}))
    assert pinned_message_indices(analyze(messages), config) == {0, 1, 2, 4, 5, 7}


@pytest.mark.parametrize("change", [
    dict(name="write"), dict(state="error"), dict(state="rejected"), dict(state="incomplete"),
    dict(metadata={"suspended": True}), dict(metadata={"pending": True})])
def test_pair_rules_pin(change: dict) -> None:
    messages = reference_messages()
    name = change.pop("name", "read")
    messages[1] = msg("c-old", "assistant", call("old", name))
    messages[2] = msg("r-old", "tool", result("old", name=name, **change))
    keys = [p.key for p in candidates(analyze(messages), reference_config())]
    assert keys == ["t2", "t3"]


def test_empty_eligible_tools_judges_nothing() -> None:
    assert candidates(analyze(reference_messages()), CompactionConfig(preserve_recent_messages=1)) == []


# --- policy table -----------------------------------------------------------------------------------

@pytest.mark.parametrize("c, r, action, reason", [
    (0.2, 0.2, Action.DROP_PAIR, "DROP_PAIR"),
    (0.0, 0.0, Action.DROP_PAIR, "DROP_PAIR"),
    (0.8, 0.2, Action.TRUNCATE_RESULT, "TRUNCATE_RESULT"),
    (1.0, 0.0, Action.TRUNCATE_RESULT, "TRUNCATE_RESULT"),
    (0.5, 0.2, Action.KEEP, "UNCERTAIN"),
    (0.79, 0.2, Action.KEEP, "UNCERTAIN"),
    (0.2, 0.21, Action.KEEP, "UNCERTAIN"),
    (0.0, 0.8, Action.KEEP, "NEEDED_RESULT"),
    (1.0, 1.0, Action.KEEP, "NEEDED_RESULT"),
    (0.1, 0.79, Action.KEEP, "UNCERTAIN"),
    (None, 0.0, Action.KEEP, "REFUSED"),
])
def test_threshold_table(c, r, action, reason) -> None:
    got_action, scores = decide(c, r, CompactionConfig(size_exponent=0.0))  # SPEC §6 plain table
    assert (got_action, scores.reason) == (action, reason)


@pytest.mark.parametrize("kwargs, message", [
    (dict(discard_threshold=math.nan), r"discard_threshold must be a number in \[0, 1\] \(got nan\)"),
    (dict(keep_threshold=math.inf), r"keep_threshold must be a number in \[0, 1\] \(got inf\)"),
    (dict(discard_threshold=-0.1), r"discard_threshold must be a number in \[0, 1\] \(got -0.1\)"),
    (dict(keep_threshold=1.1), r"keep_threshold must be a number in \[0, 1\] \(got 1.1\)"),
    (dict(keep_threshold=0.1, discard_threshold=0.2), r"keep_threshold must be > discard_threshold \(got 0.1 <= 0.2\)"),
    (dict(keep_threshold=0.2, discard_threshold=0.2), "keep_threshold must be > discard_threshold"),
    (dict(preserve_recent_messages=-1), "preserve_recent_messages must be an integer >= 0"),
    (dict(preserve_recent_messages=1.5), "preserve_recent_messages must be an integer"),
    (dict(max_state_tokens=0), "max_state_tokens must be an integer >= 1"),
    (dict(max_state_tokens=30_000), "max_request_tokens must be > max_state_tokens"),
    (dict(max_questions=1), "max_questions must be an integer in 2..512"),
    (dict(max_questions=513), "max_questions must be an integer in 2..512"),
    (dict(max_concurrent_requests=0), "max_concurrent_requests must be an integer in 1..16"),
    (dict(max_concurrent_requests=17), "max_concurrent_requests must be an integer in 1..16"),
    (dict(truncate_head_chars=-1), "truncate_head_chars must be an integer >= 0"),
    (dict(minimum_reduction=1.0), r"minimum_reduction must be a number in \[0, 1\)"),
    (dict(minimum_reduction=-0.1), r"minimum_reduction must be a number in \[0, 1\)"),
    (dict(max_transcript_chars=0), "max_transcript_chars must be an integer >= 1"),
    (dict(eligible_tools="read"), "eligible_tools must be a collection of strings"),
    (dict(eligible_tools={" "}), "eligible_tools must contain non-blank strings"),
    (dict(pinned_message_ids={1}), "pinned_message_ids must contain non-blank strings"),
])
def test_config_errors_name_the_field(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CompactionConfig(**kwargs)


def test_config_is_hashable_and_compares_by_value() -> None:
    a = CompactionConfig(eligible_tools={"read"})
    assert a == CompactionConfig(eligible_tools=frozenset({"read"}))
    assert hash(a) == hash(CompactionConfig(eligible_tools={"read"}))
    with pytest.raises(ConfigError, match="unknown CompactionConfig field 'bogus'"):
        CompactionConfig.from_mapping({"bogus": 1})


# --- state ----------------------------------------------------------------------------------------

def test_state_never_carries_outputs_thinking_ids_or_metadata() -> None:
    messages = reference_messages()
    messages.insert(1, msg("think", "assistant", ThinkingBlock("private reasoning"), text("visible"),
                           metadata={"secret": "meta"}, timestamp="2026-01-01"))
    messages.append(msg("p", "assistant", call("pend", input={"q": "later"})))
    state = build_state(analyze(messages), 1000)
    blob = canonical_json(state).decode()
    for absent in ("evidence-", "private reasoning", "secret", "2026-01-01", "think", "c-old", "r-old"):
        assert absent not in blob
    assert state["history"][0] == {"i": 0, "role": "USER", "text": messages[0].text, "tool_calls": []}
    entry = state["history"][2]
    assert entry["tool_calls"] == [{"id": "t1", "tool": "read", "input": '{"path":"old.txt"}',
                                    "result": f"success, {len('evidence-old ' * 500)} chars (omitted)"}]
    assert state["history"][-1]["tool_calls"][0]["id"] == "pending"
    assert state["history"][-1]["tool_calls"][0]["result"] == "pending"
    assert len(state["history"]) == 1 + 1 + 3 + 1 + 1  # result-only messages get no entry


def test_fitting_shortens_inputs_never_text() -> None:
    long_text = "Never edit generated files. " * 50
    messages = [msg("0", "user", text(long_text))]
    for i in range(5):
        messages += [msg(f"c{i}", "assistant", call(f"k{i}", input={"q": "x" * 900})), msg(f"r{i}", "tool", result(f"k{i}"))]
    t = analyze(messages)
    tokens = {cap: estimate_tokens(canonical_json(build_state(t, cap)).decode()) for cap in (1000, 200, 60)}
    assert fit_state(t, tokens[1000]).stage == "inputs<=1000"
    assert fit_state(t, tokens[1000] - 1).stage == "inputs<=200"
    assert fit_state(t, tokens[200] - 1).stage == "inputs<=60"
    fitted = fit_state(t, tokens[60])
    assert fitted.value["history"][0]["text"] == long_text
    assert len(fitted.value["history"][1]["tool_calls"][0]["input"]) == 60
    with pytest.raises(StateBudgetError, match="state exceeds budget after input fitting"):
        fit_state(t, tokens[60] - 1)


# --- batching ---------------------------------------------------------------------------------------

def _many_pairs(n: int) -> list:
    messages = [msg("0", "user", text("task"))]
    for i in range(n):
        messages += [msg(f"c{i}", "assistant", call(f"k{i}")), msg(f"r{i}", "tool", result(f"k{i}", output="x"))]
    return list(analyze(messages).pairs)


def test_batch_token_count_equals_direct_estimate() -> None:
    for batch in batches(_many_pairs(120), 100, 64, 100_000):
        assert batch.tokens == estimate_tokens(canonical_json(questions_map(batch.questions)).decode())


def test_batches_keep_order_cover_every_pair_and_respect_limits() -> None:
    pairs = _many_pairs(40)
    plan = batches(pairs, 1000, 128, 1000 + 20 + 400)
    assert len(plan) > 1
    ids = [q for b in plan for q in b.ids]
    assert ids == [q for p in pairs for q in (f"call_{p.key}", f"result_{p.key}")]
    assert all(1000 + b.tokens + 20 <= 1420 for b in plan)
    assert [len(b.questions) for b in batches(pairs, 10, 6, 100_000)][:2] == [6, 6]
    assert len(batches(pairs, 10, 128, 100_000)) == 1


def test_a_pair_that_cannot_fit_alone_is_an_error() -> None:
    with pytest.raises(StateBudgetError, match="no room for compaction questions"):
        batches(_many_pairs(1), 1000, 128, 1030)


# --- apply ------------------------------------------------------------------------------------------

def _truncate_one(output: str, head: int) -> str:
    messages = [msg("0", "user", text("t")), msg("c", "assistant", call("x")), msg("r", "tool", result("x", output))]
    out = apply_actions(analyze(messages), {"t1": Action.TRUNCATE_RESULT}, plain(head))
    return out[2].content[0].text, out[2] is messages[2]


def test_truncation_rules() -> None:
    assert _truncate_one("a" * 460, 300) == ("a" * 460, True)  # exactly head + 160: kept as is
    body, same = _truncate_one("a" * 461, 300)
    marker = '[JEV archived the full result of call "x"; ask the host to restore call "x"; do not re-execute ' \
             'this tool for recovery.]'  # it names the call and the way back
    assert not same and body == "a" * 299 + "\u2026\n" + marker
    body, _ = _truncate_one("b" * 200, 0)
    assert body == "\n" + marker
    named = apply_actions(analyze([msg("0", "user", text("t")), msg("c", "assistant", call("x")),
                                   msg("r", "tool", result("x", "b" * 200))]), {"t1": Action.TRUNCATE_RESULT},
                          CompactionConfig(truncate_head_chars=0, restore_tool="restore_archived_result"))
    assert named[2].content[0].text.endswith('restore it with restore_archived_result(call_id="x"); do not '
                                             're-execute this tool for recovery.]')
    # SPEC §6's own marker is still recognised as a cut result (snapshots written before)
    assert is_truncated(result("x", "head\n" + TRUNCATION_MARKER)) and not is_truncated(result("x", "head"))


def test_drop_pair_removes_exactly_its_two_blocks() -> None:
    messages = [msg("0", "user", text("t")),
                msg("c", "assistant", text("two reads"), call("x"), call("y")),
                msg("r", "tool", result("x"), result("y")),
                msg("c2", "assistant", call("z")), msg("r2", "tool", result("z"))]
    out = apply_actions(analyze(messages), {"t1": Action.DROP_PAIR, "t3": Action.DROP_PAIR}, plain(300))
    assert [m.id for m in out] == ["0", "c", "r"]
    assert [getattr(b, "id", None) for b in out[1].content] == [None, "y"]
    assert [b.id for b in out[2].content] == ["y"]
    assert out[0] is messages[0]


@settings(max_examples=200, deadline=None)
@given(call_id=st.text(min_size=1, max_size=12).filter(str.strip), tool=st.text(min_size=1, max_size=8),
       arg=st.text(max_size=90), head=st.integers(0, 400),
       output=st.builds(lambda a, n: a + "o" * n, st.text(max_size=20), st.integers(0, 900)),
       restore=st.sampled_from([None, "restore_archived_result"]), stones=st.booleans())
@example(call_id='c"\\\n\u00e9', tool="t", arg="x" * 80, output="o" * 600, head=10, restore=None, stones=True)
def test_what_letting_go_saves_is_counted_exactly_without_writing_it(call_id, tool, arg, output, head, restore,
                                                                     stones) -> None:
    """`let_go` counts the characters a truncation or a drop removes without building the marker or the
    tombstone: the counts must be what `apply_actions` then writes, for any id, tool, input and config."""
    from jev.applying.apply import let_go
    messages = [msg("0", "user", text("t")), Message("c", "assistant", (ToolUseBlock(call_id, tool, {"a": arg}),)),
                Message("r", "tool", (ToolResultBlock(call_id, tool, output),))]
    t = analyze(messages)
    config = CompactionConfig(truncate_head_chars=head, restore_tool=restore, tombstones=stones)
    counted = let_go(t.pairs, config)
    cut_result = apply_actions(t, {"t1": Action.TRUNCATE_RESULT}, config)
    written = cut_result[2].content[0].text
    assert counted.truncate["t1"] == (0 if cut_result[2] is messages[2] else len(output) - len(written))
    dropped = apply_actions(t, {"t1": Action.DROP_PAIR}, config)
    left = sum(len(m.content[0].text) for m in dropped[1:])  # the tombstone, when there is one
    assert counted.drop["t1"] == max(0, len(output) - left)


def _visible(blocks) -> int:
    """Model-visible characters written the plain way, to check history.size against."""
    total = 0
    for b in blocks:
        if isinstance(b, TextBlock):
            total += len(b.text)
        elif isinstance(b, ThinkingBlock):
            total += len(b.thinking)
        elif isinstance(b, ToolUseBlock):
            total += len(b.name) + (len(b.input) if isinstance(b.input, str) else len(canonical_json(b.input).decode()))
        elif isinstance(b, ToolResultBlock):
            total += len(b.output) if isinstance(b.output, str) else _visible(b.output)
        else:
            total += len(canonical_json(b.data).decode())
    return total


def test_reduction_sizes_count_model_visible_content_only() -> None:
    from jev.reading.history import chars_after, take
    messages = reference_messages()
    messages.insert(1, msg("u", "user", text("ünïcödé text"), ThinkingBlock("hm")))
    messages[2] = messages[2].replace(metadata={"host": [1, 2]}, origin=Origin("x", {"big": "x" * 5000}))
    t = analyze(messages)
    out = apply_actions(t, {"t1": Action.DROP_PAIR, "t2": Action.TRUNCATE_RESULT},
                        CompactionConfig(truncate_head_chars=30))  # with tombstones
    judged = take(messages)
    assert judged.chars == sum(_visible(m.content) for m in messages)  # envelopes, ids, metadata left out
    # message by message, as the plain way above counts them
    assert judged.transcript.sizes == tuple(_visible(m.content) for m in messages)
    assert chars_after(out, judged) == sum(_visible(m.content) for m in out)  # tombstones counted
    assert any(m.id.endswith("~dropped~" + t.pairs[0].call_id) for m in out)
    assert take([]).chars == 0


def _reference_estimate(text: str) -> int:
    """SPEC §4 written the plain way, to check the fast byte-level implementation against."""
    total = 0.0
    for piece in re.findall(r"[A-Za-z]+|[0-9]+|[^ \t\n\r\f\vA-Za-z0-9]", text):
        if piece[0].isascii() and piece[0].isalpha():
            total += 1 + (len(piece) - 1) // 6
        elif piece[0] in "0123456789":
            total += len(piece) / 2
        else:
            total += 0.9
    return math.ceil(round(total, 6))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abcXYZ019 \t\n,.{}\"é日_-") + ["\U0001F600"]), max_size=200))
def test_fast_token_estimate_matches_the_spec(text: str) -> None:
    assert estimate_tokens(text) == _reference_estimate(text)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("abcdefgXYZ019 \t\n,.{}\"é日_-") + ["\U0001F600"]),
                        min_size=1, max_size=300), min_size=20, max_size=60))
def test_vectorised_token_estimate_on_long_texts_matches_the_spec(parts: list[str]) -> None:
    from jev.reading.state import _VECTOR_FROM, estimate_tenths_utf8
    text = "".join(parts) * (1 + _VECTOR_FROM // max(1, len("".join(parts).encode())))
    assert len(text.encode()) >= _VECTOR_FROM  # the numpy path, not the short-text one
    assert -(-estimate_tenths_utf8(text.encode()) // 10) == _reference_estimate(text)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("abcdefgXYZ019 \t\n,.{}\"é日_-") + ["\U0001F600"]),
                        max_size=400), min_size=1, max_size=40))
def test_token_estimate_of_many_texts_at_once_is_each_ones_own(texts: list[str]) -> None:
    from jev.reading.state import _VECTOR_FROM, estimate_tenths_each, estimate_tenths_utf8
    encoded = [t.encode() for t in texts] * (1 + _VECTOR_FROM // max(1, sum(len(t.encode()) for t in texts)))
    assert sum(map(len, encoded)) >= _VECTOR_FROM or not any(encoded)  # the joined numpy pass, where there is text
    assert estimate_tenths_each(encoded) == [estimate_tenths_utf8(t) for t in encoded]


def test_vectorised_token_estimate_is_additive_across_its_slices(monkeypatch) -> None:
    from jev.reading import state
    text = ("abcdefghij" * 5 + " 12 {é} " + "x" * 13 + "\n") * 400
    whole = state.estimate_tenths_utf8(text.encode())
    monkeypatch.setattr(state, "_SLICE", 7)  # slices end inside letter runs and multi-byte characters
    assert state.estimate_tenths_utf8(text.encode()) == whole
    assert -(-whole // 10) == _reference_estimate(text)


def test_quick_init_values_behave_as_their_dataclasses() -> None:
    import dataclasses

    from jev.reading.analysis import Pair
    from jev.support.quick import quick_init
    block = ToolResultBlock("c", "read", ["x"])  # type: ignore[arg-type]  # __post_init__ still runs: list -> tuple
    assert block.output == ("x",) and block.state == "success" and block.metadata is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        block.state = "error"  # type: ignore[misc]
    with pytest.raises(FormatError, match="state must be one of"):
        ToolResultBlock("c", "read", "x", "nope")
    with pytest.raises(FormatError, match="role must be one of"):
        Message("m", "robot", ())
    assert dataclasses.replace(block, state="error") == ToolResultBlock("c", "read", ("x",), "error")
    assert Message("m", "user", [text("hi")]).content == (text("hi"),)
    with pytest.raises(TypeError):
        Pair("t1")  # type: ignore[call-arg]  # required fields stay required
    with pytest.raises(TypeError, match="frozen slotted dataclass"):
        quick_init(type("Plain", (), {}))
    for cls in (TextBlock, ToolUseBlock, ToolResultBlock, Message, Pair):  # the cheaper __init__ is in place
        assert "_set0" in cls.__init__.__code__.co_freevars, cls

    @dataclasses.dataclass(frozen=True, slots=True)
    class Later:
        items: list[int] = dataclasses.field(default_factory=list)
    with pytest.raises(TypeError, match="default factory"):
        quick_init(Later)


def test_import_jev_loads_no_heavy_stack_until_used() -> None:
    """`import jev` (and `import archive`) load no numpy, HTTP, storage or agent framework, nor the
    compactor's asyncio; each arrives with the first use of what needs it. Timing is benchmarks/footprint.py."""
    import subprocess
    import sys
    heavy = ("numpy", "httpx", "httpx2", "fsspec", "openai", "sklearn", "langchain_core", "asyncio")
    probe = (f"import sys, jev, archive; print(','.join(m for m in {heavy!r} if m in sys.modules)); "
             "jev.Compactor; from jev.judges import LocalJudge; from archive import ObjectStoreArchive; "
             f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    first, then = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                                 text=True).stdout.splitlines()
    assert first == ""
    assert {"asyncio", "numpy", "fsspec"} <= set(then.split(","))  # loaded when used, and then there


def test_the_shared_value_rules() -> None:
    from jev.support.validate import is_finite_number, is_integer, is_positive, is_probability
    assert [is_finite_number(v) for v in (0, 1.5, -2, True, float("nan"), float("inf"), "1", None)] == \
        [True, True, True, False, False, False, False, False]
    assert [is_probability(v) for v in (0, 1, 0.5, 1.0000001, -0.0, False)] == [True, True, True, False, True, False]
    assert [is_positive(v) for v in (1e-9, 0, -1, float("inf"))] == [True, False, False, False]
    assert [is_integer(v, 0, 3) for v in (0, 3, 4, -1, 2.0, True)] == [True, True, False, False, False, False]


def test_names_that_left_jev_transcript_still_import_from_it_with_a_warning() -> None:
    """Issue 37 split the transcript module (model / canonical JSON / checks / analysis); one home per
    name, and the old import path keeps working for a host's code, with a DeprecationWarning."""
    import jev.model.canonical
    import jev.model.transcript
    import jev.reading.analysis
    with pytest.warns(DeprecationWarning, match="moved to jev.reading.analysis.analyze"):
        assert jev.model.transcript.analyze is jev.reading.analysis.analyze
    with pytest.warns(DeprecationWarning, match="moved to jev.model.canonical.canonical_json"):
        assert jev.model.transcript.canonical_json is jev.model.canonical.canonical_json
    with pytest.raises(AttributeError):
        jev.model.transcript.no_such_name  # noqa: B018


def _example(shape):
    """A block of `shape` with every field filled (strings ASCII, values JSON)."""
    from jev.model.transcript import TextBlock
    sample = {"text": "t", "thinking": "th", "id": "call_1", "name": "bash", "input": {"command": "ls"},
              "output": (TextBlock("out"),)}
    return shape.cls(*(sample[name] for name in shape.fields))


@pytest.mark.parametrize("kind", ["text", "thinking", "tool_use", "tool_result"])
def test_one_shape_per_block_drives_the_reader_the_writer_and_the_checks(kind: str) -> None:
    """Each typed block's shape (`jev.model.transcript.SHAPES`) is what the writer writes, the reader reads back,
    and the checks hold its string fields to: a non-string in any of them is refused by the reader and
    by `block_problem`, each naming the field, and fails the fast path."""
    from jev.model.transcript import SHAPES, block_from_dict, block_to_dict
    from jev.providers.checks import block_problem, plain_message
    shape = SHAPES[kind]
    block = _example(shape)
    written = block_to_dict(block)
    assert list(written)[: 1 + len(shape.fields)] == ["type", *shape.fields]
    assert block_from_dict(written, "b") == block and block_problem(block, "b") is None
    assert plain_message(Message("m", "user", (block,)))
    for name in shape.strings:
        bad = {**written, name: 7}
        with pytest.raises(FormatError, match=f"b.{name}: must be a string"):
            block_from_dict(bad, "b")
        broken = dataclasses.replace(block, **{name: 7})
        assert block_problem(broken, "b") == f"b.{name}: must be a string (got int)"
        assert not plain_message(Message("m", "user", (broken,)))


def test_a_block_with_no_json_form_is_refused_naming_its_place() -> None:
    from jev.errors import TranscriptError
    from jev.model.blocks import visible_chars
    from jev.model.transcript import OtherBlock
    base = [msg("u", "user", text("task")), msg("a", "assistant", call("c1", input={"path": "a.py"}))]
    bad_call = [*base[:1], msg("a", "assistant", text("x"), call("c1", input={"path": object()}))]
    with pytest.raises(TranscriptError, match=r"^messages\[1\]\.content\[1\]\.input\.path: not a JSON value"):
        analyze(bad_call)
    part = OtherBlock({"type": "image", "source": object()})
    bad_part = [*base, msg("r", "user", result("c1", (TextBlock("ok"), part)))]
    with pytest.raises(TranscriptError, match=r"^messages\[2\]\.content\[0\]\.output\[1\]\.source: not a JSON"):
        analyze(bad_part)
    with pytest.raises(TranscriptError, match=r"^content\[1\]\.input\.path: not a JSON value"):
        visible_chars(bad_call[1].content)
    assert visible_chars(base[1].content) == len("read") + len('{"path":"a.py"}')


def test_every_block_type_has_one_description() -> None:
    """`jev.model.blocks` describes each block type once — size, token text, mutable values with their paths,
    restore text — and every type a message may hold has a description."""
    import typing

    from jev.model.blocks import KINDS, block_chars, is_media, kind_of
    from jev.model.transcript import Block, ToolResultBlock, ToolUseBlock
    assert set(typing.get_args(Block)) == set(KINDS)
    image = OtherBlock({"type": "image", "source": {"b": 1, "a": 2}})
    result = ToolResultBlock("c1", "read", (TextBlock("ok"), image), metadata={"m": [1]})
    call = ToolUseBlock("c1", "read", {"path": "a.py"})
    assert kind_of(result).values(result) == ((("metadata",), {"m": [1]}), (("output", 1), image.data))
    assert kind_of(call).values(call) == ((("input",), {"path": "a.py"}),)
    assert kind_of(ToolUseBlock("c2", "bash", "ls")).values(ToolUseBlock("c2", "bash", "ls")) == ()  # a string is immutable
    assert kind_of(TextBlock("x")).values(TextBlock("x")) == () and not kind_of(TextBlock("x")).mutable
    assert kind_of(result).token_text(result) == "ok" and is_media(image)  # media are billed apart
    assert kind_of(result).restore_text(result) == 'ok\n' + canonical_json(image).decode()
    assert kind_of(call).restore_text(call) == '{"path":"a.py"}'
    parts: list = []
    assert block_chars(result, parts, 0, 0) == 2 + len(canonical_json(image.data).decode())
    assert parts == [{"m": [1]}, image.data]


def test_the_judge_is_shown_what_each_block_type_s_description_says() -> None:
    """A remote judge's state holds a message's text blocks as its text and its calls as call entries, and
    nothing of thinking, media or unknown blocks (`BlockKind.judge_view`); a result only through its call."""
    from jev.model.blocks import KINDS
    from jev.model.transcript import ThinkingBlock, ToolResultBlock, ToolUseBlock
    from jev.reading.analysis import analyze
    from jev.reading.state import history_entries
    assert {kind: description.judge_view for kind, description in KINDS.items()} == {
        TextBlock: "text", ThinkingBlock: None, ToolUseBlock: "call", ToolResultBlock: None, OtherBlock: None}
    messages = [Message("u", "user", (TextBlock("Read a.py"), OtherBlock({"type": "image", "source": {}}))),
                Message("a", "assistant", (ThinkingBlock("secret plan"), TextBlock("Reading."),
                                           TextBlock("Now."), ToolUseBlock("c1", "read", {"path": "a.py"}))),
                Message("r", "user", (ToolResultBlock("c1", "read", "x" * 50),)),
                Message("t", "assistant", (ThinkingBlock("only thinking"),))]
    entries = history_entries(analyze(messages), 300)
    assert [i for i, _ in entries] == [0, 1]  # the result and the thinking-only message show nothing
    assert entries[0][1]["text"] == "Read a.py" and entries[0][1]["tool_calls"] == []
    assert entries[1][1]["text"] == "Reading.\nNow."
    assert entries[1][1]["tool_calls"] == [{"id": "t1", "tool": "read", "input": '{"path":"a.py"}',
                                            "result": "success, 50 chars (omitted)"}]
