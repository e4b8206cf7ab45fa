"""Google ADK, the real package: `JevBeforeModel` as the `before_model_callback` of a real `LlmAgent` run by ADK's
own `InMemoryRunner`, on a scripted `BaseLlm` (Gemini's shapes: thoughts and calls with thought signatures,
calls without ids; no network) and a real tool reading files from a temporary folder."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conftest import module_workspace
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from archive import FileArchive
from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, Scope, formats
from jev.applying.archived_pair import NAME
from jev.integrations.google_adk import JevBeforeModel
from jev.judges import LocalJudge, ReplayJudge

FILES = 8
SCOPE = Scope("user-1", "google-adk", "run-1")
SENT: list[list[dict[str, Any]]] = []  # every request's contents, as the model got them (JSON form)
STARTED = [0]  # where the current run's requests begin in SENT
RESTORES = [False]  # whether the model, done reading, restores the first result it no longer sees whole


class Scripted(BaseLlm):
    """Reads every module (a signed thought and a signed call without an id a step), then answers."""

    async def generate_content_async(self, llm_request: Any, stream: bool = False
                                     ) -> AsyncGenerator[LlmResponse, None]:
        SENT.append([c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents])
        step = len(SENT) - 1 - STARTED[0]  # its own count: a compacted request holds fewer calls
        if step < FILES:
            yield LlmResponse(content=types.Content(role="model", parts=[
                types.Part(text=f"module {step} next", thought=True, thought_signature=b"thought-%d" % step),
                types.Part(function_call=types.FunctionCall(name="read_file", args={"name": f"module_{step}.py"}),
                           thought_signature=b"call-%d" % step)]))
        elif RESTORES[0] and step == FILES and (named := _cut_ids(SENT[-1])):
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
                name=NAME, args={"call_id": named[0]}))]))
        else:
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Done.")]))


def _cut_ids(contents: list[dict[str, Any]]) -> list[str]:
    """The call ids whose results a request holds cut (the marker names each)."""
    return [str(p["function_response"]["response"]["result"]).split('call "')[1].split('"')[0]
            for c in contents for p in c["parts"] if "function_response" in p
            and "JEV archived the full result" in str(p["function_response"]["response"])]



def _run(jev: JevBeforeModel | None, work: Path, restores: bool = False) -> tuple[list[Any], tuple[str, str, str]]:
    """One run of a fresh agent in a new session; the session's events when it ends, and its key."""
    def read_file(name: str) -> str:
        """Read a file of the workspace."""
        return (work / name).read_text()

    STARTED[0] = len(SENT)
    RESTORES[0] = restores
    agent = LlmAgent(name="reader", model=Scripted(model="gemini-3-pro"),
                     tools=[read_file, *([jev.restore_tool()] if jev and restores else [])], before_model_callback=jev)
    runner = InMemoryRunner(agent=agent, app_name="jev-test")

    async def go() -> tuple[list[Any], tuple[str, str, str]]:
        session = await runner.session_service.create_session(app_name="jev-test", user_id="u")
        async for _event in runner.run_async(user_id="u", session_id=session.id, new_message=types.Content(
                role="user", parts=[types.Part(text="Read every module.")])):
            pass
        done = await runner.session_service.get_session(app_name="jev-test", user_id="u", session_id=session.id)
        assert done is not None
        return list(done.events), ("jev-test", "u", session.id)

    return asyncio.run(go())


def _compactor(judge: Any, mode: Mode, tmp_path: Path) -> Compactor:
    return Compactor(judge, CompactionConfig(eligible_tools=frozenset({"read_file"}), preserve_recent_messages=2),
                     ExecutionOptions(mode, 10.0, "adk-test"), FileArchive(tmp_path / "archive"))


def _pairs_and_signatures_hold(contents: list[dict[str, Any]]) -> None:
    """Every response follows a call of its name; every signature is on the part it came with."""
    open_calls: list[str] = []
    for content in contents:
        for part in content["parts"]:
            if "function_call" in part and part["function_call"]["name"] == NAME:  # the restore call: unsigned
                open_calls.append(NAME)
            elif "function_call" in part:
                step = part["function_call"]["args"]["name"].split("_")[1].split(".")[0]
                assert part["thought_signature"] == types.Part(thought_signature=b"call-" + step.encode()) \
                    .model_dump(mode="json")["thought_signature"]
                open_calls.append(part["function_call"]["name"])
            if "function_response" in part:
                assert part["function_response"]["name"] in open_calls
                open_calls.remove(part["function_response"]["name"])
            if part.get("thought"):
                step = part["text"].split()[1]
                assert part["thought_signature"] == types.Part(thought_signature=b"thought-" + step.encode()) \
                    .model_dump(mode="json")["thought_signature"]


def test_enforce_compacts_each_request_s_view_and_leaves_the_session_whole(tmp_path: Path) -> None:
    work = module_workspace(tmp_path, FILES)
    jev = JevBeforeModel(_compactor(LocalJudge(), Mode.ENFORCE, tmp_path), trigger=("tokens", 6000),
                         target_tokens=3000, scope=SCOPE, keep_decisions=50)
    events, key = _run(jev, work, restores=True)
    sent = SENT[STARTED[0]:]
    state = jev.conversation_of(key)
    assert len(sent) == FILES + 2 and state is not None and state.references
    for contents in sent:
        _pairs_and_signatures_hold(contents)
    named = _cut_ids(sent[-2])
    assert named, "the request after the last read holds a cut result"
    # the model called the restore tool for it: the next request holds the original, from this session's archive
    restored = [p["function_response"]["response"]["result"] for c in sent[-1] for p in c["parts"]
                if p.get("function_response", {}).get("name") == NAME]
    assert len(restored) == 1 and "def handler_" in restored[0]
    # view-only: the session's events still hold every result whole
    whole = [p.function_response.response for e in events for p in (e.content.parts if e.content else []) or []
             if p.function_response and p.function_response.name == "read_file"]
    assert len(whole) == FILES and all("JEV" not in str(r) for r in whole)
    assert state.last_decision is not None and state.last_decision.plan is not None
    # another session of the same agent, reading other files under the same call ids: a state of its own,
    # and its restores read its own snapshots, never this session's
    (tmp_path / "other").mkdir()
    second = module_workspace(tmp_path / "other", FILES)
    for path in second.iterdir():
        path.write_text("# the second session's copy\n" + path.read_text())
    _events, other = _run(jev, second)
    assert other != key and jev.conversation_of(other) is not state and jev.last_decision is None
    def in_session(session: tuple[str, str, str]) -> Any:
        return SimpleNamespace(session=SimpleNamespace(app_name=session[0], user_id=session[1], id=session[2]))
    assert "second session" in asyncio.run(jev.restore(named[0], in_session(other)))
    assert "second session" not in asyncio.run(jev.restore(named[0], in_session(key)))
    unseen = in_session(("jev-test", "u", "never-ran"))
    assert asyncio.run(jev.restore(named[0], unseen)).startswith("No archived result")


def test_shadow_sends_every_request_as_it_was(tmp_path: Path) -> None:
    work = module_workspace(tmp_path, FILES)
    _run(None, work)
    plain = SENT[STARTED[0]:]
    jev = JevBeforeModel(_compactor(LocalJudge(), Mode.SHADOW, tmp_path), trigger=("messages", 3), scope=SCOPE,
                         keep_decisions=50)
    _events, key = _run(jev, work)
    state = jev.conversation_of(key)
    assert SENT[STARTED[0]:] == plain and state is not None and state.recent_decisions


def test_a_gemini_model_lets_the_turn_in_progress_go_and_signatures_stay_with_their_parts(tmp_path: Path) -> None:
    """Gemini binds no thinking to its prefix, so within the one turn in progress old results may be cut (the
    request's `model` names the rules; under the strict default the turn's thinking would hold them all). A
    call sits beside its signed thought, so it stays: only its result is cut, and every thought and call keeps
    its own signature."""
    work = module_workspace(tmp_path, FILES)
    jev = JevBeforeModel(_compactor(ReplayJudge({}, default=0.01), Mode.ENFORCE, tmp_path), trigger=("messages", 6),
                         target_tokens=1000, scope=SCOPE, keep_decisions=50)
    _events, key = _run(jev, work)
    sent = SENT[STARTED[0]:]
    assert jev.conversation_of(key).references
    assert [len(contents) for contents in sent] == [1 + 2 * k for k in range(FILES + 1)]  # nothing dropped
    cut = [k for k, contents in enumerate(sent) for c in contents for p in c["parts"]
           if "JEV archived the full result" in str(p.get("function_response", ""))]
    assert cut and min(cut) >= 3  # from the request the trigger first fired on
    for contents in sent:
        _pairs_and_signatures_hold(contents)
        thoughts = [p for c in contents for p in c["parts"] if p.get("thought")]
        assert len(thoughts) == len(contents) // 2  # every thought of the turn, beside its call


def test_the_form_round_trips_real_adk_contents_exactly(tmp_path: Path) -> None:
    _run(None, module_workspace(tmp_path, FILES))
    data = SENT[-1]
    assert formats.detect(data) == "gemini"
    assert formats.dump(formats.load(data), "gemini") == data
    objects = [types.Content.model_validate(c) for c in data]
    assert formats.detect(objects) == "gemini"
    assert formats.dump(formats.load(objects), "gemini") == objects
    # Gemini's calls carry no id here: each is paired with the oldest unanswered call of its name
    messages = formats.load(data)
    calls = [b.id for m in messages for b in m.content if b.type == "tool_use"]
    results = [b.id for m in messages for b in m.content if b.type == "tool_result"]
    assert calls == results and len(set(calls)) == FILES
