"""Fuzzed documents in every form (issue 16, item 7; issue 35): only the library's own errors escape
`formats.load`, `formats.dump` and a plan, nothing hangs, and a document a converter accepts comes back
byte for byte — from memory and through a snapshot.

`JEV_FUZZ_EXAMPLES=10000 python -m pytest tests/test_fuzz.py -k every_form -p no:cacheprovider` is the long
run (10 000 mutated documents of each form, about 20 minutes on 2 cores); the suite runs 60 of each.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import ScriptedJudge, compactor, reference_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_formats import ALL_FORMATS, anthropic_messages, chat_transcripts, responses_items

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


DATA = Path(__file__).parent / "data"
_TRAJECTORIES = [json.loads(p.read_text()) for p in sorted(DATA.glob("mini_swe_agent_*.traj.json"))]


def _claude_code() -> list[list[dict]]:
    from test_claude_code import compacted, continued_session, session
    prompt, reply = session()[2:4]
    tip = session()[-1]["uuid"]
    rewound = [*session(), prompt | {"uuid": "r1", "parentUuid": tip},  # a branch, then a rewind to its prompt
               reply | {"uuid": "r2", "parentUuid": "r1", "message": reply["message"] | {"id": "msg_r2"}},
               prompt | {"uuid": "r3", "parentUuid": tip}]
    return [session(), continued_session(), compacted(), rewound]


def _pydantic_ai() -> list[list[dict]]:
    """Real Pydantic AI runs (a function model: thinking, text and calls; a tool that fails once, so a retry
    prompt answers a call), in their JSON form."""
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart, ThinkingPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def model(messages: list, _info: Any) -> ModelResponse:
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        if step < 3:
            return ModelResponse(parts=[ThinkingPart(f"step {step}", signature=f"s{step}"), TextPart("reading"),
                                        ToolCallPart("read", {"path": f"f{step}"}, tool_call_id=f"c{step}"),
                                        ToolCallPart("read", '{"path": "g"}', tool_call_id=f"d{step}")])
        return ModelResponse(parts=[TextPart("done")])

    agent: Agent[None, str] = Agent(FunctionModel(model, model_name="claude-sonnet-4-5"), instructions="be brief")
    failed: set[str] = set()

    @agent.tool_plain
    def read(path: str) -> Any:
        """Read."""
        if path == "f1" and path not in failed:
            failed.add(path)
            raise ModelRetry("no such file")
        return {"path": path, "lines": [path] * 3} if path == "g" else path * 40

    runs = [agent.run_sync("go").all_messages()]
    runs.append(agent.run_sync("again", message_history=runs[0]).all_messages())
    return [ModelMessagesTypeAdapter.dump_python(r, mode="json") for r in runs]


def _gemini() -> list[list[dict]]:
    """Real Google ADK requests' contents (signed thoughts, signed calls without ids, their responses)."""
    import tempfile

    import test_integration_google_adk as adk
    from conftest import module_workspace

    adk._run(None, module_workspace(Path(tempfile.mkdtemp(prefix="jev-fuzz-adk-")), adk.FILES))
    return [adk.SENT[-1], adk.SENT[len(adk.SENT) // 2]]


def _codex() -> list[list[dict]]:
    """Real Codex CLI rollouts (the dev set's, where it is beside the repository), each cut to its first 60
    lines so a mutation lands in what matters: session_meta, turn_context, messages, calls, reasoning."""
    from conftest import CODEX
    if not CODEX.exists():
        return []
    import tarfile
    with tarfile.open(CODEX, "r|*") as tar:
        found = [tar.extractfile(m).read() for m in tar if m.isfile() and m.name.endswith(".jsonl")]  # type: ignore[union-attr]
    return [list(formats.parse(data))[:60] for data in found[:3]]


CODEX_DOCS = _codex()

# every form `formats.load` reads, each from documents of its own shape
FORMS: dict[str, st.SearchStrategy[Any]] = {
    **{fmt: ALL_FORMATS.filter(lambda case, f=fmt: case[0] == f).map(lambda case: case[1])
       for fmt in ("openai-chat", "openai-responses", "anthropic", "langchain", "agentscope")},
    "jev": st.one_of(  # with other forms' bookkeeping in it, which the jev form carries (and a fuzz may break)
        chat_transcripts().map(lambda d: formats.dump(formats.load(d, "openai-chat"), "jev")),
        anthropic_messages().map(lambda d: formats.dump(formats.load({"system": "s", "messages": d},
                                                                     "anthropic-request"), "jev"))),
    "mini-swe-agent": st.sampled_from(_TRAJECTORIES),
    "claude-code": st.sampled_from(_claude_code()),
    "pydantic-ai": st.sampled_from(_pydantic_ai()),
    **({"codex": st.sampled_from(CODEX_DOCS)} if CODEX_DOCS else {}),
    "gemini": st.sampled_from(_gemini()),
    "openai-chat-request": chat_transcripts().map(lambda d: {"model": "gpt-4o", "messages": d, "temperature": 0}),
    "anthropic-request": anthropic_messages().map(lambda d: {"model": "claude", "system": "be brief", "messages": d,
                                                            "max_tokens": 100}),
    "openai-responses-request": responses_items().map(lambda d: {"model": "gpt-5", "instructions": "x", "input": d}),
}
EXAMPLES = int(os.environ.get("JEV_FUZZ_EXAMPLES", "60"))


@st.composite
def mutated(draw: st.DrawFn, form: str | None = None) -> tuple[str, Any]:
    fmt, doc = (form, draw(FORMS[form])) if form else draw(ALL_FORMATS)
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


def test_the_codex_form_is_fuzzed_where_the_dev_rollouts_are() -> None:
    if not CODEX_DOCS:
        pytest.skip("dev Codex rollouts not found beside the repository: the codex form is not fuzzed here")
    assert "codex" in FORMS


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_form_fuzzed_raises_only_library_errors_and_round_trips_byte_for_byte(form: str) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(mutated(form))
    def check(case: tuple[str, Any]) -> None:
        _check(*case)

    check()


def _with_states(doc: Any) -> Any:
    """A jev document as the jev form writes it back: every tool_result with its `state`."""
    def block(b: dict) -> dict:
        if b.get("type") != "tool_result":
            return b
        out = {**b, "state": b.get("state", "success")} if "state" not in b else dict(b)
        if isinstance(out.get("output"), list):
            out["output"] = [block(x) if isinstance(x, dict) else x for x in out["output"]]
        return out
    return [{**m, "content": [block(b) if isinstance(b, dict) else b for b in m["content"]]} for m in doc]


def _check(fmt: str, doc: Any) -> None:
    """One fuzzed document: read (or refused with a library error), written back byte for byte, through a
    snapshot too, written in every other form (or refused), planned (never a disguised bug)."""
    from archive import Scope
    from archive.snapshot import decode, encode
    original = copy.deepcopy(doc)
    try:
        messages = formats.load(doc, fmt)
    except JevError:
        return
    finally:
        assert doc == original  # the input is never changed
    written = formats.writable(fmt)
    if fmt == "jev":  # the library's own form writes a result's state always ("success" by default)
        doc = _with_states(doc)
    if written == fmt:
        assert formats.dump(messages, fmt) == doc, "an accepted document comes back exactly"
    # bytes, key order included — but the jev form's own objects, which it writes in its own order
    as_written = (lambda value: value) if fmt == "jev" else orjson.dumps
    try:
        orjson.dumps(doc)
    except orjson.JSONEncodeError:  # nested past JSON's 255 levels: no bytes to compare (a plan refuses it)
        _plan_and_convert(messages)
        return
    expected = as_written(doc if written == fmt else formats.dump(messages, written))
    assert as_written(formats.dump(messages, written)) == expected, "an accepted document comes back exactly"
    try:
        ref, data = encode(Scope("u", "a", "s"), messages)
    except JevError:  # refused with its reason (a value JSON cannot hold): nothing else may escape
        pass
    else:
        back = decode(Scope("u", "a", "s"), ref, data)
        assert as_written(formats.dump(back, written)) == expected, "and through the archive"
    _plan_and_convert(messages)


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
    _plan_and_convert(messages)


def _plan_and_convert(messages: list) -> None:
    """Written in every other form (or refused by the library) and planned: never a foreign exception."""
    for other in ("jev", "openai-chat", "openai-responses", "anthropic", "langchain", "agentscope", "mini-swe-agent",
                  "pydantic-ai", "gemini", "anthropic-request", "openai-chat-request", "openai-responses-request"):
        try:
            formats.dump(messages, other)
        except JevError:
            pass
    tools = {b.name for m in messages for b in m.content if isinstance(b, ToolUseBlock) and isinstance(b.name, str)
             and b.name.strip()}
    decision = compactor(ScriptedJudge(0.01), reference_config(eligible_tools=frozenset(tools or {"read"})),
                         mode=Mode.SHADOW, budget=60.0).plan_sync(messages)  # a loaded machine: no budget errors
    # the plan never raises; an ERROR is the library's own refusal, never a disguised bug (TypeError, …)
    # (a real session's task may not fit a remote judge's request budget: StateBudgetError, said so)
    assert decision.status is not Status.ERROR or decision.error_kind in ("TranscriptError", "FormatError",
                                                                          "StateBudgetError"), (
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
