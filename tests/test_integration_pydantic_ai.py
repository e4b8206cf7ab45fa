"""Pydantic AI, the real package: `JevHistoryProcessor` as the `ProcessHistory` capability of a real `Agent`
run on Pydantic AI's own `FunctionModel` (scripted answers, recording every history it is sent; no network),
with a real tool reading files from a temporary folder."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import module_workspace
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from archive import FileArchive
from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, Scope, formats
from jev.applying.archived_pair import NAME
from jev.integrations.pydantic_ai import JevHistoryProcessor
from jev.judges import LocalJudge, ReplayJudge

FILES = 8
SCOPE = Scope("user-1", "pydantic-ai", "run-1")


def _workspace(tmp_path: Path) -> Path:
    return module_workspace(tmp_path, FILES)


class Scripted:
    """A function model that reads every module (a line of text and one call a step, after a signed thought
    when it `thinks`), then answers; it keeps a copy of each history it is sent. `upto`: the module count it
    reads before it answers, across runs that go on from each other's messages."""

    def __init__(self, thinks: bool = False, upto: int = FILES, restores: bool = False) -> None:
        self.sent: list[list[ModelMessage]] = []
        self.thinks, self.upto, self.step = thinks, upto, 0  # its own count: a compacted history holds fewer calls
        self.restores = restores  # when done reading, restore the first call whose result it no longer sees

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.sent.append(list(messages))
        step = self.step
        if step < self.upto:
            self.step += 1
            thought = [ThinkingPart(f"module {step} next", signature=f"sig-{step}")] if self.thinks else []
            return ModelResponse(parts=[*thought, TextPart(f"Reading module {step}."),
                                        ToolCallPart("read_file", {"name": f"module_{step}.py"},
                                                     tool_call_id=f"call-{step}")])
        if self.restores and not any(p.part_kind == "tool-return" and p.tool_name == NAME
                                     for m in messages for p in m.parts):
            gone = _let_go(messages)
            if gone:
                return ModelResponse(parts=[ToolCallPart(NAME, {"call_id": gone[0]}, tool_call_id="call-restore")])
        return ModelResponse(parts=[TextPart("Done.")])


def _let_go(history: list[ModelMessage]) -> list[str]:
    """The call ids whose results a history no longer holds whole: cut (a marker in the return) or dropped
    with their call (a note naming it)."""
    cut = [p.tool_call_id for m in history for p in m.parts
           if isinstance(p, ToolReturnPart) and "JEV archived the full result" in str(p.content)]
    notes = " ".join(str(getattr(p, "content", "")) for m in history for p in m.parts)
    return cut + re.findall(r'\[JEV dropped call "([^"]+)"', notes)


def _agent(processor: JevHistoryProcessor | None, work: Path, model: Scripted,
           model_name: str | None = None) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(model, model_name=model_name), instructions="Read every module.",
                                    capabilities=[processor.capability()] if processor else [],
                                    tools=[processor.restore_tool()] if processor and model.restores else [])

    @agent.tool_plain
    def read_file(name: str) -> str:
        """Read a file of the workspace."""
        return (work / name).read_text()

    return agent


def _compactor(judge: Any, mode: Mode, tmp_path: Path) -> Compactor:
    return Compactor(judge, CompactionConfig(eligible_tools=frozenset({"read_file"}), preserve_recent_messages=2),
                     ExecutionOptions(mode, 10.0, "pydantic-ai-test"), FileArchive(tmp_path / "archive"))


def _pairs_hold(history: list[ModelMessage]) -> None:
    """In the host's types: every return follows its call, every call is answered, a thought never outlives
    its response's calls."""
    called: set[str] = set()
    returned: set[str] = set()
    for message in history:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                called.add(part.tool_call_id)
            if isinstance(part, ToolReturnPart):
                assert part.tool_call_id in called
                returned.add(part.tool_call_id)
        if isinstance(message, ModelResponse) and any(isinstance(p, ThinkingPart) for p in message.parts):
            step = next(p for p in message.parts if isinstance(p, ThinkingPart)).signature
            assert step is not None and step.startswith("sig-")
    assert called - returned <= {max(called, default=None)}  # only the newest call may wait for its return


def test_enforce_compacts_through_process_history_and_the_run_finishes(tmp_path: Path) -> None:
    work = _workspace(tmp_path)
    jev = JevHistoryProcessor(_compactor(LocalJudge(), Mode.ENFORCE, tmp_path), trigger=("tokens", 6000),
                              target_tokens=3000, scope=SCOPE, keep_decisions=50)
    model = Scripted(restores=True)
    result = _agent(jev, work, model).run_sync("Read every module.")
    assert result.output == "Done." and jev.conversation_of(result.conversation_id).references
    for history in model.sent:
        _pairs_hold(history)
    # a result let go: cut (its head and a marker) or dropped with its call (a tombstone naming the call)
    let_go = _let_go(model.sent[-2])
    assert let_go, "the last history read lets a result go"
    # what the model no longer sees comes back from the archive, byte for byte, through the restore tool the
    # model called (in its run's conversation)
    restored = next(p.content for m in model.sent[-1] for p in m.parts
                    if isinstance(p, ToolReturnPart) and p.tool_call_id == "call-restore")
    assert (work / f"module_{let_go[0].split('-')[1]}.py").read_text()[:500] in restored
    # ProcessHistory wrote the compacted history into the run: it is what the run's messages end with
    assert any("JEV archived" in str(getattr(p, "content", "")) or "JEV dropped" in str(getattr(p, "content", ""))
               for m in result.all_messages() for p in m.parts)


def test_one_processor_keeps_each_conversation_apart_and_restores_only_its_own(tmp_path: Path) -> None:
    """One agent, two conversations reading other files under the same call ids: each conversation has its
    own trigger, decisions and snapshot references, and the restore tool its model calls answers from that
    conversation's snapshots only — never the other's result under the same id."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = module_workspace(tmp_path / "a", FILES), module_workspace(tmp_path / "b", FILES)
    for path in second.iterdir():
        path.write_text("# the second conversation's copy\n" + path.read_text())
    judge = ReplayJudge({}, default=0.01)
    jev = JevHistoryProcessor(_compactor(judge, Mode.ENFORCE, tmp_path), trigger=("messages", 6), target_tokens=1000,
                              scope=lambda ctx: Scope("u", "pydantic-ai", ctx.conversation_id), keep_decisions=50)
    restored, ids = {}, {}
    for work in (first, second):
        model = Scripted(restores=True)
        result = _agent(jev, work, model).run_sync("Read every module.")
        ids[work] = result.conversation_id
        restored[work] = next(p.content for m in model.sent[-1] for p in m.parts
                              if isinstance(p, ToolReturnPart) and p.tool_call_id == "call-restore")
    assert ids[first] != ids[second]
    assert "def handler_" in restored[first] and "second conversation" not in restored[first]
    assert "second conversation" in restored[second]
    for work in (first, second):
        state = jev.conversation_of(ids[work])
        assert state is not None and state.references and state.last_decision is not None
    assert jev.last_decision is None and jev.references == []  # no call outside a conversation


def test_shadow_and_off_send_every_history_as_it_was(tmp_path: Path) -> None:
    work = _workspace(tmp_path)
    plain = Scripted()
    _agent(None, work, plain).run_sync("Read every module.")
    for mode in (Mode.SHADOW, Mode.OFF):
        model = Scripted()
        jev = JevHistoryProcessor(_compactor(LocalJudge(), mode, tmp_path), trigger=("messages", 3), scope=SCOPE,
                                  keep_decisions=50)
        run = _agent(jev, work, model).run_sync("Read every module.")
        # timestamps and run ids differ between runs: what the model reads is the same
        assert [_read(h) for h in model.sent] == [_read(h) for h in plain.sent]
        state = jev.conversation_of(run.conversation_id)
        assert (state is not None and state.recent_decisions != ()) is (mode is Mode.SHADOW)
    messages = list(plain.sent[-1])
    shadow = JevHistoryProcessor(_compactor(LocalJudge(), Mode.SHADOW, tmp_path), trigger=("messages", 1))
    assert asyncio.run(shadow.process(messages)) is messages  # SHADOW: the very list given


def _read(history: list[ModelMessage]) -> list[tuple[str, ...]]:
    """What a model reads of a history: each part's kind and its text, content or call."""
    return [tuple(f"{p.part_kind}:{getattr(p, 'content', '')}{getattr(p, 'args', '')}" for p in m.parts)
            for m in history]


def test_a_dropped_pair_s_note_is_the_model_s_own_text(tmp_path: Path) -> None:
    work = _workspace(tmp_path)
    model = Scripted()
    judge = ReplayJudge({}, default=0.01)  # nothing is needed: every old pair may go
    jev = JevHistoryProcessor(_compactor(judge, Mode.ENFORCE, tmp_path), trigger=("messages", 6),
                              target_tokens=1000, scope=SCOPE, keep_decisions=50)
    result = _agent(jev, work, model).run_sync("Read every module.")
    assert result.output == "Done."
    notes = [(type(m), p) for h in model.sent for m in h for p in m.parts
             if "JEV dropped call" in str(getattr(p, "content", ""))]
    assert notes and all(kind is ModelResponse and isinstance(p, TextPart) for kind, p in notes)
    for history in model.sent:
        _pairs_hold(history)


@pytest.mark.parametrize("model_name", ["claude-sonnet-4-5", "claude-fable-5-1"])
def test_thinking_goes_with_its_calls_across_runs(tmp_path: Path, model_name: str) -> None:
    """A conversation of two runs, the second going on from the first's messages, its model thinking before
    each call. The thinking of the run in progress is never touched, and a thought left in place keeps its own
    signature beside its own call. Claude Sonnet 4.5 lets the earlier run's pairs go; Claude Fable 5.1 binds
    every thinking block to its exact prefix, so nothing before the run in progress changes at all."""
    work = _workspace(tmp_path)
    model = Scripted(thinks=True, upto=FILES // 2)
    jev = JevHistoryProcessor(_compactor(ReplayJudge({}, default=0.01), Mode.ENFORCE, tmp_path),
                              trigger=("messages", 4), target_tokens=1500, scope=SCOPE, keep_decisions=50)
    agent = _agent(jev, work, model, model_name)
    first = agent.run_sync("Read the first half.")
    model.upto = FILES
    second = agent.run_sync("Now the rest.", message_history=first.all_messages())
    assert second.conversation_id == first.conversation_id  # it goes on: one conversation, one state
    state = jev.conversation_of(first.conversation_id)
    started = len(first.all_messages())
    for history in model.sent:
        _pairs_hold(history)
        for message in history:
            thoughts = [p for p in message.parts if isinstance(p, ThinkingPart)]
            calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
            for thought in thoughts:  # a thought left in place is its own call's
                assert calls and thought.signature == f"sig-{calls[0].tool_call_id.split('-')[1]}"
    last = model.sent[-1]
    if model_name == "claude-sonnet-4-5":
        assert state.references  # the first run's pairs were let go of during the second
        kept = [p for m in last for p in m.parts if isinstance(p, ThinkingPart)]
        assert {p.signature for p in kept} >= {f"sig-{k}" for k in range(FILES // 2, FILES)}
    else:
        assert not state.references
        assert _read(last[:started]) == _read(first.all_messages())


def test_the_run_s_request_limit_bounds_the_horizon(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    compactor = _compactor(LocalJudge(), Mode.SHADOW, tmp_path)
    plan = compactor.plan

    async def recorded(messages: Any, **kwargs: Any) -> Any:
        seen.append((sum(1 for m in messages if m.role == "assistant"), kwargs["horizon"]))
        return await plan(messages, **kwargs)

    compactor.plan = recorded  # type: ignore[method-assign]
    jev = JevHistoryProcessor(compactor, trigger=("messages", 1), conversation=lambda _ctx: None)  # the compactor's own
    _agent(jev, _workspace(tmp_path), Scripted()).run_sync("Read every module.",
                                                            usage_limits=UsageLimits(request_limit=FILES + 1))
    limit = FILES + 1  # the estimate (a third of the calls made), bounded by the requests left
    assert len(seen) == FILES + 1 and seen == [(made, max(1, min(made // 3, limit - made))) for made in range(limit)]
    jev_free = JevHistoryProcessor(compactor, trigger=("messages", 1))
    assert jev_free.host.horizon_for(object(), []) is None  # no limit known: the compactor estimates it


def test_the_form_round_trips_a_real_run_exactly(tmp_path: Path) -> None:
    result = _agent(None, _workspace(tmp_path), Scripted()).run_sync("Read every module.")
    messages = result.all_messages()
    assert formats.detect(messages) == "pydantic-ai"
    back = formats.dump(formats.load(messages), "pydantic-ai")
    assert ModelMessagesTypeAdapter.dump_json(back) == ModelMessagesTypeAdapter.dump_json(messages)
    data = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    assert formats.dump(formats.load(data, "pydantic-ai"), "pydantic-ai") == data
    assert isinstance(messages[0], ModelRequest)


def test_run_context_processor_signature_is_what_pydantic_ai_expects() -> None:
    from pydantic_ai._utils import takes_run_context

    jev = JevHistoryProcessor(_compactor(LocalJudge(), Mode.SHADOW, Path("/tmp")))
    assert takes_run_context(jev.__call__)
    with pytest.raises(Exception, match="trigger must be"):
        JevHistoryProcessor(_compactor(LocalJudge(), Mode.SHADOW, Path("/tmp")), trigger=("turns", 3))
