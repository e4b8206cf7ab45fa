"""Fuzzed documents in every form (issue 16, item 7): only the library's own errors escape `formats.load`,
`formats.dump` and a plan, and a document a converter accepts comes back exactly."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from conftest import ScriptedJudge, compactor, reference_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_formats import ALL_FORMATS

from jev import JevError, Mode, Status, ToolUseBlock, formats

JSON = st.recursive(st.none() | st.booleans() | st.integers(-10, 10) | st.floats(allow_nan=False) |
                    st.sampled_from(["", "x", "text", "tool_use", "function_call", "assistant", "user", "tool",
                                     "call_1", "success", "error"]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["type", "text", "id", "role", "content", "name", "input", "output",
                                         "call_id", "arguments", "tool_calls", "summary", "x"]), inner, max_size=3),
                    max_leaves=6)


def _places(doc: Any) -> list[tuple]:
    """The path of every container in a JSON document, the root included (iterative: values may be deep)."""
    out, stack = [], [((), doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, (dict, list)) and len(path) < 50:
            out.append(path)
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend(((*path, k), v) for k, v in items)
    return sorted(out, key=repr)


def _at(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any]:
    fmt, doc = draw(ALL_FORMATS)
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        places = _places(doc)
        target = _at(doc, draw(st.sampled_from(places)))
        keys = list(target.keys()) if isinstance(target, dict) else list(range(len(target)))
        how = draw(st.sampled_from(["replace", "delete", "duplicate", "add", "deep"]))
        if not keys or how == "add":
            if isinstance(target, dict):
                target[draw(st.sampled_from(["type", "id", "x", "annotations", "text", "content"]))] = draw(JSON)
            else:
                target.append(draw(JSON))
            continue
        key = draw(st.sampled_from(keys))
        if how == "replace":
            target[key] = draw(JSON)
        elif how == "delete":
            del target[key]
        elif how == "duplicate" and isinstance(target, list):
            target.insert(key, copy.deepcopy(target[key]))
        elif how == "deep":
            deep: Any = "x"
            for _ in range(300):  # past orjson's 255 levels (a separate test goes past Python's 1 000)
                deep = [deep]
            target[key] = deep
    return fmt, doc


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_only_library_errors_escape_and_accepted_documents_round_trip(case: tuple[str, Any]) -> None:
    fmt, doc = case
    original = copy.deepcopy(doc)
    try:
        messages = formats.load(doc, fmt)
    except JevError:
        return
    finally:
        assert doc == original  # the input is never changed
    assert formats.dump(messages, fmt) == doc, "an accepted document must come back exactly"
    for other in ("jev", "openai-chat", "openai-responses", "anthropic", "langchain", "agentscope"):
        try:
            formats.dump(messages, other)
        except JevError:
            pass
    tools = {b.name for m in messages for b in m.content if isinstance(b, ToolUseBlock) and isinstance(b.name, str)
             and b.name.strip()}
    decision = compactor(ScriptedJudge(0.01), reference_config(eligible_tools=frozenset(tools or {"read"})),
                         mode=Mode.SHADOW).plan_sync(messages)
    # the plan never raises; an ERROR is the library's own refusal, never a disguised bug (TypeError, …)
    assert decision.status is not Status.ERROR or decision.error_kind in ("TranscriptError", "FormatError"), (
        decision.error_kind, decision.detail)


DEEP_DOCS = {  # a value nested past Python's recursion limit, where each form keeps a call's input
    "jev": lambda deep: [{"id": "a", "role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "r",
                                                                        "input": deep}]}],
    "anthropic": lambda deep: [{"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "r",
                                                                   "input": deep}]}],
    "langchain": lambda deep: [{"type": "ai", "data": {"content": "", "type": "ai", "tool_calls": [
        {"name": "r", "args": deep, "id": "c", "type": "tool_call"}]}}],
    "openai-chat": lambda deep: [{"role": "user", "content": [{"type": "x", "v": deep}]}],
    "openai-responses": lambda deep: [{"type": "message", "role": "user", "content": [{"type": "x", "v": deep}]}],
    "agentscope": lambda deep: [{"id": "u", "role": "user", "name": "u", "created_at": "",
                                 "content": [{"type": "x", "v": deep}]}],
}


def test_values_nested_deeper_than_json_allows_are_format_errors() -> None:
    deep: Any = "x"
    for _ in range(1_500):
        deep = [deep]
    for fmt, build in DEEP_DOCS.items():
        try:
            messages = formats.load(build(deep), fmt)
        except JevError:
            continue
        decision = compactor(ScriptedJudge(0.01), mode=Mode.SHADOW).plan_sync(messages)
        assert decision.error_kind in ("TranscriptError", "FormatError"), (fmt, decision)


def test_bad_values_built_in_python_are_library_errors(tmp_path) -> None:
    from conftest import SCOPE, call, msg, reference_messages

    from archive import FileArchive, Scope
    from jev import ArchiveError, ConfigError, Status
    with pytest.raises(ConfigError, match="scope user_id must be valid Unicode"):
        Scope("\ud800", "a", "s")
    for scope, messages, words in ((None, reference_messages(), "archive needs an archive.Scope (got NoneType)"),
                                   (SCOPE, None, "messages must be a sequence of jev Messages (got NoneType)")):
        with pytest.raises(ArchiveError, match=re.escape(words)):
            FileArchive(tmp_path).save(scope, messages)  # type: ignore[arg-type]
    history = reference_messages()
    history[1] = msg("c-old", "assistant", call(5))  # type: ignore[arg-type]
    decision = compactor(ScriptedJudge(0.01), mode=Mode.SHADOW).plan_sync(history)
    assert decision.status is Status.ERROR and decision.detail == "messages[1].content[0].id: must be a string (got int)"
    with pytest.raises(ConfigError, match="eligible_tools must be a collection of strings"):
        reference_config(eligible_tools=None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=mutated())
def test_jev_compact_on_fuzzed_input_exits_0_2_or_3(case: tuple[str, Any], tmp_path_factory) -> None:
    """The CLI on the same fuzzed documents: an orderly outcome, a usage error or ERROR — never a traceback."""
    import io
    import json
    from contextlib import redirect_stderr

    from jev.cli.main import main
    fmt, doc = case
    path = tmp_path_factory.mktemp("fuzz") / "in.json"
    try:
        path.write_text(json.dumps(doc))
    except (ValueError, RecursionError):  # not JSON-serialisable by the stdlib either: nothing to feed
        return
    for format_flag in ("auto", fmt):
        with redirect_stderr(io.StringIO()):
            code = main(["compact", str(path), "--format", format_flag, "--eligible-tools", "read", "-q",
                         "--out", str(path.with_suffix(".out.json"))])
        assert code in (0, 2, 3)
