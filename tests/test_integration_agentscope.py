"""AgentScope 2.x: the middleware through a real `Agent.compress_context` chain, and the archive offloader."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.credential import CredentialBase
from agentscope.message import Msg, TextBlock, ToolCallBlock, ToolResultBlock, ToolResultState
from agentscope.model import ChatModelBase
from agentscope.state import AgentState
from conftest import DEEPSEEK, needs_data, recorded_outputs, recorded_runs
from pydantic import BaseModel

from archive import FileArchive, Scope
from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, formats
from jev.integrations.agentscope import ArchiveOffloader, JevContextMiddleware
from jev.judges import ReplayJudge

SCOPE = Scope("u", "agent", "s")


class NoModel(ChatModelBase):
    """Never called in these tests: compression below AgentScope's own trigger does not reach the model."""

    class Parameters(BaseModel):
        pass

    def __init__(self) -> None:
        super().__init__(CredentialBase(), "none", self.Parameters(), stream=False)

    async def _call_api(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model must not be called")


def context() -> list[Msg]:
    out = [Msg(name="user", role="user", content=[TextBlock(text="Read the files and fix the bug.")])]
    for i in range(3):
        out.append(Msg(name="coder", role="assistant", content=[
            TextBlock(text=f"Reading f{i}."), ToolCallBlock(id=f"c{i}", name="read", input=f'{{"path": "f{i}.py"}}'),
            ToolResultBlock(id=f"c{i}", name="read", output=f"contents {i} " * 300, state=ToolResultState.SUCCESS)]))
    out.append(Msg(name="user", role="user", content=[TextBlock(text="Go on.")]))
    return out


def agent(mode: Mode, tmp_path, judge: Any = None, records: list | None = None) -> tuple[Agent, JevContextMiddleware]:
    config = CompactionConfig(cost_gate=False, eligible_tools={"read"}, preserve_recent_messages=1, minimum_reduction=0.05)
    judge = judge or ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99)
    observer = (lambda _c, r: records.append(r)) if records is not None else None
    compactor = Compactor(judge, config, ExecutionOptions(mode, 5.0, "as-test", observer), FileArchive(tmp_path))
    middleware = JevContextMiddleware(compactor, trigger=("messages", 3), scope=SCOPE, keep_decisions=50)
    state = AgentState(session_id="s")
    state.context.extend(context())
    return Agent(name="coder", system_prompt="Fix bugs.", model=NoModel(), middlewares=[middleware], state=state), middleware


def call_ids(a: Agent) -> list[str]:
    return [b.id for m in a.state.context for b in m.content if b.type == "tool_result"]


def test_enforce_replaces_the_context_through_the_real_chain(tmp_path) -> None:
    a, middleware = agent(Mode.ENFORCE, tmp_path)
    asyncio.run(a.compress_context())
    assert middleware.recent_decisions[-1].status.value == "DECIDED"
    assert call_ids(a) == ["c1", "c2"] and all(isinstance(m, Msg) for m in a.state.context)
    ref = middleware.recent_decisions[-1].plan.archive_reference
    restored = formats.dump(FileArchive(tmp_path).restore(SCOPE, ref), "agentscope")
    assert [b["id"] for m in restored for b in m["content"] if b["type"] == "tool_result"] == ["c0", "c1", "c2"]


def test_shadow_changes_nothing_and_writes_records(tmp_path) -> None:
    records: list = []
    a, middleware = agent(Mode.SHADOW, tmp_path, records=records)
    asyncio.run(a.compress_context())
    assert call_ids(a) == ["c0", "c1", "c2"] and middleware.recent_decisions[-1].status.value == "DECIDED"
    assert [(r.mode, r.status, r.session_id) for r in records] == [("SHADOW", "DECIDED", "s")]


def test_a_concurrent_change_keeps_the_live_context(tmp_path) -> None:
    holder: dict = {}

    class Meddling(ReplayJudge):
        async def ask(self, request):
            holder["agent"].state.context.append(Msg(name="user", role="user", content=[TextBlock(text="new")]))
            return await super().ask(request)

    a, _middleware = agent(Mode.ENFORCE, tmp_path, Meddling({"call_t1": 0.01, "result_t1": 0.01}, default=0.99))
    holder["agent"] = a
    asyncio.run(a.compress_context())
    assert call_ids(a) == ["c0", "c1", "c2"] and a.state.context[-1].content[0].text == "new"


def test_archive_offloader(tmp_path) -> None:
    archive = FileArchive(tmp_path)
    offloader = ArchiveOffloader(archive, lambda session: Scope("u", "agent", session))
    ref = asyncio.run(offloader.offload_context("s", context()))
    assert len(archive.restore(Scope("u", "agent", "s"), ref)) == 14  # three Msgs: a header and one step per block
    result = ToolResultBlock(id="c9", name="read", output="big " * 100, state=ToolResultState.SUCCESS)
    ref2 = asyncio.run(offloader.offload_tool_result("s", result))
    assert archive.restore(Scope("u", "agent", "s"), ref2)[0].content[0].output == "big " * 100
    assert asyncio.run(offloader.offload_data_block("block")) == "block"


class Scripted(ChatModelBase):
    """Three read_file calls, then an answer; records what each call was shown."""

    class Parameters(BaseModel):
        pass

    def __init__(self) -> None:
        from agentscope.formatter import OpenAIChatFormatter
        super().__init__(CredentialBase(), "scripted", self.Parameters(), stream=False)
        self.formatter = OpenAIChatFormatter()
        self.step = 0
        self.seen: list = []

    async def _call_api(self, model_name: str, messages: Any, tools: Any = None, tool_choice: Any = None, **kw: Any):
        from agentscope.model import ChatResponse
        self.seen.append([b.id for m in messages for b in m.content if b.type == "tool_result"])
        self.step += 1
        if self.step <= 3:
            return ChatResponse(content=[ToolCallBlock(id=f"call{self.step}", name="read_file",
                                                       input=f'{{"path": "f{self.step}.py"}}')], is_last=True)
        return ChatResponse(content=[TextBlock(text="done")], is_last=True)


async def read_file(path: str) -> Any:
    """Read a file.

    Args:
        path (str): the path to read
    """
    from agentscope.tool import ToolChunk
    return ToolChunk(content=[TextBlock(text=f"contents of {path} " * 200)])


def test_a_real_reply_loop_compacts_and_the_next_call_sees_it(tmp_path) -> None:
    from agentscope.tool import FunctionTool, Toolkit

    async def run() -> tuple[Agent, Scripted, JevContextMiddleware]:
        config = CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2,
                                  minimum_reduction=0.05)
        compactor = Compactor(ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99), config,
                              ExecutionOptions(Mode.ENFORCE, 5.0, "as-test"), FileArchive(tmp_path))
        middleware = JevContextMiddleware(compactor, trigger=("tool_results", 3), scope=SCOPE, keep_decisions=50)
        toolkit = Toolkit()
        await toolkit.add_tool(FunctionTool(read_file, is_read_only=True))
        model = Scripted()
        a = Agent(name="coder", system_prompt="Read.", model=model, toolkit=toolkit, middlewares=[middleware],
                  state=AgentState(session_id="s"))
        await a.reply(Msg(name="user", role="user", content=[TextBlock(text="Read three files.")]))
        return a, model, middleware

    a, model, middleware = asyncio.run(run())
    assert any(d.status.value == "DECIDED" for d in middleware.recent_decisions)
    assert "call1" not in model.seen[-1] and "call3" in model.seen[-1]  # the last model call saw the compaction
    assert "call1" not in call_ids(a) and "call3" in call_ids(a)


def test_restore_tool(tmp_path) -> None:
    a, middleware = agent(Mode.ENFORCE, tmp_path)
    asyncio.run(a.compress_context())
    tool = middleware.restore_tool()

    assert tool.name == "restore_archived_result" and tool.is_read_only
    assert tool.input_schema["properties"]["call_id"]["type"] == "string"

    async def call() -> str:
        result = tool(call_id="c0")  # the registered tool, called as AgentScope calls it
        if hasattr(result, "__aiter__"):
            chunks = [chunk async for chunk in result]
            return chunks[-1].content[0].text
        chunk = await result if asyncio.iscoroutine(result) else result
        return chunk.content[0].text
    text = asyncio.run(call())
    assert text.startswith("Call c0 (read)") and "contents 0" in text


def test_a_token_trigger_is_counted_by_the_agents_own_model(tmp_path) -> None:
    """`trigger=("tokens", n)`: the context as the agent's model counts it. Below n the middleware passes
    through (AgentScope's own compression decides); at n it plans, and the next plan waits for the next
    multiple of n."""
    config = CompactionConfig(cost_gate=False, eligible_tools={"read"}, preserve_recent_messages=1, minimum_reduction=0.05)
    judge = ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99)

    def agent_with(trigger: int) -> tuple[Agent, JevContextMiddleware]:
        compactor = Compactor(judge, config, ExecutionOptions(Mode.ENFORCE, 5.0, "as-test"), FileArchive(tmp_path))
        middleware = JevContextMiddleware(compactor, trigger=("tokens", trigger), scope=SCOPE, keep_decisions=50)
        state = AgentState(session_id="s")
        state.context.extend(context())
        return Agent(name="coder", system_prompt="Fix bugs.", model=NoModel(), middlewares=[middleware],
                     state=state), middleware

    probe, _ = agent_with(10**9)
    tokens = asyncio.run(probe.model.count_tokens(list(probe.state.context), None))
    quiet, idle = agent_with(tokens + 1)
    asyncio.run(quiet.compress_context())
    assert idle.last_decision is None and call_ids(quiet) == ["c0", "c1", "c2"]
    busy, fired = agent_with(tokens)
    asyncio.run(busy.compress_context())
    assert fired.last_decision is not None and fired.last_decision.status.value == "DECIDED"
    assert call_ids(busy) == ["c1", "c2"] and fired.host.next_at == tokens
    with pytest.raises(Exception, match="trigger must be"):
        JevContextMiddleware(fired.compactor, trigger=("turns", 3))


def test_a_token_target_is_counted_by_the_agents_own_model(tmp_path) -> None:
    config = CompactionConfig(cost_gate=False, eligible_tools={"read"}, preserve_recent_messages=1, minimum_reduction=0.05)
    judge = ReplayJudge({}, default=0.3)  # unsure: the threshold table would keep every result
    compactor = Compactor(judge, config, ExecutionOptions(Mode.ENFORCE, 5.0, "as-test"), FileArchive(tmp_path))
    middleware = JevContextMiddleware(compactor, trigger=("messages", 3), scope=SCOPE, keep_decisions=50,
                                      target_tokens=1_500)
    state = AgentState(session_id="s")
    state.context.extend(context())
    a = Agent(name="coder", system_prompt="Fix bugs.", model=NoModel(), middlewares=[middleware], state=state)
    before = asyncio.run(a.model.count_tokens(list(a.state.context), None))
    counted: list[int] = []
    count = a.model.count_tokens

    async def recording(messages, tools):  # the agent's own counter, each count it gives kept
        counted.append(await count(messages, tools))
        return counted[-1]

    a.model.count_tokens = recording
    asyncio.run(a.compress_context())
    decision = middleware.recent_decisions[-1]
    assert before > 1_500 and decision.status.value == "DECIDED" and decision.plan.target_met
    after = asyncio.run(count(list(a.state.context), None))
    assert after <= 1_500 < before
    assert after in counted[1:]  # the plan counted what it leaves with the agent's model, async as it is
    assert len(call_ids(a)) < 3


class Recorded(ChatModelBase):
    """Answers what a recorded run's model answered (its text and bash calls, ids included), one turn per
    call; records which tool results each call was shown."""

    class Parameters(BaseModel):
        pass

    def __init__(self, turns: list[dict]) -> None:
        from agentscope.formatter import OpenAIChatFormatter
        super().__init__(CredentialBase(), "recorded", self.Parameters(), stream=False)
        self.formatter = OpenAIChatFormatter()
        self.turns = iter(turns)
        self.seen: list[list[str]] = []  # the tool results each call was shown
        self.unanswered: list[set[str]] = []  # results each call was shown without their call

    async def _call_api(self, model_name: str, messages: Any, tools: Any = None, tool_choice: Any = None, **kw: Any):
        from agentscope.model import ChatResponse
        self.seen.append([b.id for m in messages for b in m.content if b.type == "tool_result"])
        called = {b.id for m in messages for b in m.content if b.type == "tool_call"}
        self.unanswered.append(set(self.seen[-1]) - called)
        turn = next(self.turns, None)
        if turn is None:
            return ChatResponse(content=[TextBlock(text="Submitted.")], is_last=True)
        blocks = [TextBlock(text=turn["content"])] if turn.get("content") else []
        blocks += [ToolCallBlock(id=c["id"], name="bash", input=c["function"]["arguments"])
                   for c in turn.get("tool_calls") or []]
        return ChatResponse(content=blocks, is_last=True)


@needs_data(DEEPSEEK)
def test_real_deepseek_runs_replayed_through_a_reply_loop(tmp_path) -> None:
    """Real runs (the DeepSeek dev set) through a real AgentScope reply loop: the model answers what the
    recorded model answered, the bash tool prints what each recorded command printed, and the middleware
    compacts in ENFORCE with the local judge at its default trigger (20 tool results). Every run ends, no
    plan fails, and every result the model is shown still has its call beside it. (AgentScope's own
    compression runs too, below the trigger, and its truncation can leave two Msgs with one id: read.)"""
    from agentscope.agent import ReActConfig
    from agentscope.tool import FunctionTool, ToolChunk, Toolkit

    from jev.judges import LocalJudge

    async def run(k: int, recorded: dict) -> tuple[Recorded, JevContextMiddleware]:
        outputs = recorded_outputs(recorded)
        answers = [m for m in recorded["messages"] if m.get("role") == "assistant"]
        printed = {}  # command -> what it printed, in the order the run ran it
        for m in answers:
            for c in m.get("tool_calls") or []:
                if c["id"] in outputs:
                    printed.setdefault(json.loads(c["function"]["arguments"]).get("command"), []).append(
                        outputs[c["id"]]["shown"])

        async def bash(command: str) -> ToolChunk:
            """Run a bash command.

            Args:
                command (str): the command
            """
            shown = printed.get(command) or ["COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
            return ToolChunk(content=[TextBlock(text=shown.pop(0) if len(shown) > 1 else shown[0])])

        compactor = Compactor(LocalJudge(), CompactionConfig(eligible_tools=frozenset({"bash"})),
                              ExecutionOptions(Mode.ENFORCE, 10.0, "as-replay"), FileArchive(tmp_path / f"a{k}"))
        middleware = JevContextMiddleware(compactor, scope=Scope("u", "as", f"r{k}"), keep_decisions=100)
        toolkit = Toolkit()
        await toolkit.add_tool(FunctionTool(bash, is_read_only=True))  # a replay: runs nothing, asks no permission
        model = Recorded(answers)
        a = Agent(name="coder", system_prompt=recorded["messages"][0]["content"], model=model, toolkit=toolkit,
                  middlewares=[middleware], state=AgentState(session_id=f"r{k}"),
                  react_config=ReActConfig(max_iters=1000))
        await a.reply(Msg(name="user", role="user", content=[TextBlock(text=recorded["messages"][1]["content"])]))
        return model, middleware

    decided = 0
    for k, recorded in enumerate(recorded_runs(3)):
        model, middleware = asyncio.run(run(k, recorded))
        assert model.seen and next(model.turns, None) is None  # every recorded turn was answered
        assert not any(model.unanswered), model.unanswered
        assert all(d.status.value != "ERROR" for d in middleware.recent_decisions), \
            [d.detail for d in middleware.recent_decisions]
        decided += sum(d.status.value == "DECIDED" for d in middleware.recent_decisions)
    assert decided >= 1
