"""LangChain v1 end to end: a real `create_agent` loop with real tools and a scripted chat model."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, ClassVar

import pytest
from conftest import DEEPSEEK, needs_data, recorded_outputs, recorded_runs
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool

from archive import FileArchive, Scope
from jev import CompactionConfig, Compactor, ExecutionOptions, Mode
from jev.integrations.langchain import JevCompactionMiddleware
from jev.judges import ReplayJudge

SCOPE = Scope("u", "agent", "session")


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + ("line of text\n" * 200)


class ScriptedModel(GenericFakeChatModel):
    """Calls read_file on three files, then answers; records the messages it was shown each time."""

    seen: ClassVar[list] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        type(self).seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def script() -> ScriptedModel:
    ScriptedModel.seen = []
    turns = [AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"call{i}",
                                        "type": "tool_call"}]) for i in range(3)]
    return ScriptedModel(messages=iter([*turns, AIMessage("All read.")]))


def agent(mode: Mode, judge: Any, archive: Any = None, records: list | None = None) -> tuple[Any, JevCompactionMiddleware]:
    config = CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2, minimum_reduction=0.05)
    observer = (lambda _c, r: records.append(r)) if records is not None else None
    compactor = Compactor(judge, config, ExecutionOptions(mode, 5.0, "lc-test", observer), archive)
    middleware = JevCompactionMiddleware(compactor, trigger=("messages", 6), scope=SCOPE, keep_decisions=50)
    return create_agent(script(), tools=[read_file], middleware=[middleware]), middleware


def test_shadow_records_and_leaves_state_untouched() -> None:
    records: list = []
    graph, middleware = agent(Mode.SHADOW, ReplayJudge({}, default=0.01), records=records)
    state = graph.invoke({"messages": [{"role": "user", "content": "Read the three files."}]})
    tools = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert len(tools) == 3 and all("line of text" * 3 in m.content.replace("\n", "") for m in tools)
    assert records and all(r.mode == "SHADOW" for r in records)
    assert any(d.plan is not None for d in middleware.recent_decisions)


def test_enforce_compacts_state_once_and_the_next_call_sees_it(tmp_path) -> None:
    archive = FileArchive(tmp_path)
    judge = ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99)
    graph, middleware = agent(Mode.ENFORCE, judge, archive)
    state = graph.invoke({"messages": [{"role": "user", "content": "Read the three files."}]})
    ids = [getattr(m, "tool_call_id", None) for m in state["messages"]]
    assert "call0" not in ids and "call1" in ids and "call2" in ids  # the first pair left the state
    decided = [d for d in middleware.recent_decisions if d.status.value == "DECIDED"]
    assert len(decided) >= 1
    last_view = ScriptedModel.seen[-1]
    assert not any(getattr(m, "tool_call_id", None) == "call0" for m in last_view)
    scope, ref = middleware.references[0]
    assert any(getattr(m, "tool_call_id", None) == "call0" for m in
               __import__("jev").formats.dump(archive.restore(scope, ref), "langchain"))
    text = asyncio.run(middleware.restore_tool().ainvoke({"call_id": "call0"}))
    assert "contents of f0.py" in text


def test_a_concurrent_change_keeps_the_live_history(tmp_path) -> None:
    holder: dict = {}

    class Meddling(ReplayJudge):
        async def ask(self, request):
            holder["state"]["messages"][0].content += " (edited meanwhile)"
            return await super().ask(request)

    judge = Meddling({"call_t1": 0.01, "result_t1": 0.01}, default=0.99)
    config = CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2, minimum_reduction=0.05)
    compactor = Compactor(judge, config, ExecutionOptions(Mode.ENFORCE, 5.0, "lc-test"), FileArchive(tmp_path))
    middleware = JevCompactionMiddleware(compactor, trigger=("messages", 1), scope=SCOPE, keep_decisions=50)
    from langchain_core.messages import HumanMessage
    live = [HumanMessage("go", id="h"),
            AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a"}, "id": "c1", "type": "tool_call"}],
                      id="a1"),
            ToolMessage("x" * 2000, tool_call_id="c1", name="read_file", id="t1"),
            AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "b"}, "id": "c2", "type": "tool_call"}],
                      id="a2"),
            ToolMessage("y" * 2000, tool_call_id="c2", name="read_file", id="t2"),
            HumanMessage("next", id="h2")]
    holder["state"] = {"messages": live}
    assert middleware.before_model(holder["state"], None) is None  # judged fine, but the history moved on
    assert middleware.recent_decisions[-1].status.value == "DECIDED"


def test_trigger_is_validated() -> None:
    from jev import ConfigError
    with pytest.raises(ConfigError, match="trigger must be"):
        JevCompactionMiddleware(Compactor(ReplayJudge({})), trigger=("turns", 3))


def test_example_runs() -> None:
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "examples/enforce_in_agent_loop.py"], cwd=root, capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    assert "decision: DECIDED ARCHIVED_PROPOSAL" in out and "final state holds results of: ['read_1'" in out
    assert "restore tool, read_0: Call read_0 (read_file)" in out


def test_a_token_target_runs_budget_mode_and_brings_the_history_under_it(tmp_path) -> None:
    from langchain_core.messages.utils import count_tokens_approximately

    from jev import formats
    # an unsure judge: the threshold table keeps every result (UNCERTAIN), budget mode lets go of them
    judge = ReplayJudge({}, default=0.3)
    graph, plain = agent(Mode.SHADOW, judge)
    graph.invoke({"messages": [{"role": "user", "content": "Read the three files."}]})
    assert all(d.plan is None or not any(a.value != "KEEP" for a in d.plan.decisions.values())
               for d in plain.recent_decisions)
    config = CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2, minimum_reduction=0.05)
    compactor = Compactor(judge, config, ExecutionOptions(Mode.ENFORCE, 5.0, "lc-test"), FileArchive(tmp_path))
    middleware = JevCompactionMiddleware(compactor, trigger=("tokens", 900), scope=SCOPE, keep_decisions=50,
                                         target_tokens=900)
    state = create_agent(script(), tools=[read_file], middleware=[middleware]).invoke(
        {"messages": [{"role": "user", "content": "Read the three files."}]})
    decided = [d for d in middleware.recent_decisions if d.status.value == "DECIDED"]
    assert decided
    for d in decided:  # counted with the host's counter, each adopted history is under the target, as it says
        assert count_tokens_approximately(formats.dump(list(d.plan.messages), "langchain")) <= 900
        assert d.plan.target_met is True  # the plan counted what it leaves with that counter
    assert len([m for m in state["messages"] if isinstance(m, ToolMessage)]) < 3
    with pytest.raises(Exception, match="target_tokens must be an integer >= 1"):
        JevCompactionMiddleware(compactor, target_tokens=0)


@pytest.mark.slow
def test_a_long_running_agent_keeps_only_its_last_decisions() -> None:
    """10 000 plans through the middleware: only the last `keep_decisions` are still reachable (weak
    references, collected), and the deprecated `decisions` says so and holds only those."""
    import gc
    import weakref

    from langchain.agents.middleware import ModelRequest
    from langchain_core.messages import HumanMessage

    compactor = Compactor(ReplayJudge({}, default=0.01), CompactionConfig(cost_gate=False, eligible_tools={"read_file"},
                                                                          preserve_recent_messages=1),
                          ExecutionOptions(Mode.SHADOW, 5.0, "lc-test"))
    grows = iter(range(1, 10**9))  # the host's count passes the trigger again before every call (hysteresis)
    middleware = JevCompactionMiddleware(compactor, trigger=("tokens", 1), keep_decisions=3,
                                         token_counter=lambda _messages: next(grows))
    messages = [HumanMessage("Read f0.py.", id="h"),
                AIMessage("", id="a", tool_calls=[{"name": "read_file", "args": {"path": "f0.py"}, "id": "c0",
                                                   "type": "tool_call"}]),
                ToolMessage("line of text\n" * 200, tool_call_id="c0", name="read_file", id="t"),
                AIMessage("Read it.", id="z")]
    request = ModelRequest(model=script(), messages=messages)
    plans = []
    for _ in range(10_000):
        middleware.wrap_model_call(request, lambda _request: None)
        plans.append(weakref.ref(middleware.last_decision.plan))
    gc.collect()
    alive = [ref() for ref in plans if ref() is not None]
    assert len(alive) == 3 and alive == [d.plan for d in middleware.recent_decisions]
    assert middleware.last_decision.status.value == "DECIDED"  # real plans, not skipped ones
    with pytest.warns(DeprecationWarning, match="keep_decisions"):
        assert middleware.decisions == list(middleware.recent_decisions)


def test_a_token_trigger_and_target_compact_deep_then_wait_for_the_trigger_again(tmp_path) -> None:
    """Issue 36 item 3, in a real agent loop: with ("tokens", T) and target_tokens=T/2 the middleware brings
    the history under the target once the trigger passes, then waits until it has grown past T again; a
    plan that was not adopted is not retried on the very next call."""
    from langchain_core.messages.utils import count_tokens_approximately

    turns = [AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"call{i}",
                                        "type": "tool_call"}]) for i in range(8)]
    model = ScriptedModel(messages=iter([*turns, AIMessage("All read.")]))
    config = CompactionConfig(eligible_tools={"read_file"}, preserve_recent_messages=2)
    compactor = Compactor(ReplayJudge({}, default=0.05), config, ExecutionOptions(Mode.ENFORCE, 5.0, "lc"),
                          FileArchive(tmp_path))
    middleware = JevCompactionMiddleware(compactor, trigger=("tokens", 1500), target_tokens=750, scope=SCOPE,
                                         keep_decisions=50)
    graph = create_agent(model, tools=[read_file], middleware=[middleware])
    ScriptedModel.seen = []
    graph.invoke({"messages": [{"role": "user", "content": "Read the files."}]})
    sizes = [count_tokens_approximately(view) for view in ScriptedModel.seen]
    adopted = [d for d in middleware.recent_decisions if d.status.value == "DECIDED"]
    assert adopted and len(middleware.recent_decisions) < len(sizes)  # not a plan on every call
    assert all(d.plan.target_met is not False or d.detail for d in adopted)
    after = [sizes[k + 1] for k in range(len(sizes) - 1) if sizes[k + 1] < sizes[k]]  # the calls after a compaction
    assert after and all(size < 1500 for size in after)


@needs_data(DEEPSEEK)
def test_real_deepseek_runs_replayed_through_create_agent(tmp_path) -> None:
    """Real runs (the DeepSeek dev set) replayed through a real `create_agent` loop: the model answers what
    the recorded model answered (its text and bash calls, ids included), the bash tool prints what the
    recorded command printed, and the middleware compacts in ENFORCE with the local judge at a 20 k-token
    trigger and the host's horizon. Every run ends as recorded, no plan fails, every tool message the model is sent follows its
    call, and what the model no longer sees comes back through the restore tool."""
    from jev.judges import LocalJudge

    adopted_runs = restored = 0
    for k, run in enumerate(recorded_runs(4)):
        outputs = recorded_outputs(run)

        @tool
        def bash(command: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Run a bash command."""
            recorded = outputs.get(tool_call_id)
            return recorded["shown"] if recorded else "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

        turns = [AIMessage(m.get("content") or "", tool_calls=[
            {"name": "bash", "args": json.loads(c["function"]["arguments"]), "id": c["id"], "type": "tool_call"}
            for c in m.get("tool_calls") or []]) for m in run["messages"] if m.get("role") == "assistant"]
        ScriptedModel.seen = []
        model = ScriptedModel(messages=iter([*turns, AIMessage("Submitted.")]))
        compactor = Compactor(LocalJudge(), CompactionConfig(eligible_tools=frozenset({"bash"})),
                              ExecutionOptions(Mode.ENFORCE, 10.0, "lc-replay"), FileArchive(tmp_path / f"a{k}"))
        # the host knows these runs go on for 40 more calls: past the estimate's cap, so its plans pay
        middleware = JevCompactionMiddleware(compactor, trigger=("tokens", 20_000), scope=Scope("u", "lc", f"r{k}"),
                                             keep_decisions=100, horizon=40)
        graph = create_agent(model, tools=[bash], middleware=[middleware])
        state = graph.invoke({"messages": [SystemMessage(run["messages"][0]["content"]),
                                           {"role": "user", "content": run["messages"][1]["content"]}]},
                             {"recursion_limit": 1000})
        assert state["messages"][-1].content == "Submitted."
        assert all(d.status.value != "ERROR" for d in middleware.recent_decisions)
        for seen in ScriptedModel.seen:
            called: set[str] = set()
            for m in seen:
                called |= {c["id"] for c in getattr(m, "tool_calls", None) or []}
                assert not isinstance(m, ToolMessage) or m.tool_call_id in called
        if middleware.references:
            adopted_runs += 1
            shown = ScriptedModel.seen[-1]
            let_go = [m.tool_call_id for m in shown if isinstance(m, ToolMessage)
                      and "JEV archived the full result" in str(m.content)]
            for call_id in let_go[:2]:
                text = asyncio.run(middleware.restore_tool().ainvoke({"call_id": call_id}))
                assert outputs[call_id]["shown"][:200] in text
                restored += 1
    assert adopted_runs >= 1 and restored >= 1


class ThinkingModel(ScriptedModel):
    """A scripted model named as a preserved-thinking Claude that thinks (as ChatAnthropic's `model` and
    `thinking` fields say); records the settings each call was bound with."""

    model: str = "claude-fable-5-1"
    thinking: dict | None = None
    settings: ClassVar[list] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # as ChatAnthropic: the settings bound with the tools
        kwargs.pop("tool_choice", None)
        return self.bind(**kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        type(self).settings.append(kwargs)
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.mark.parametrize("policy, thinking, bound", [
    ("drop-block", {"type": "adaptive"}, True), ("strip", {"type": "adaptive"}, False),
    ("drop-block", None, False)])
def test_drop_block_asks_the_model_to_drop_thinking_an_edit_invalidated(tmp_path, policy, thinking, bound) -> None:
    script()  # resets what the scripted model saw
    ThinkingModel.settings = []
    turns = [AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"call{i}",
                                        "type": "tool_call"}]) for i in range(3)]
    model = ThinkingModel(messages=iter([*turns, AIMessage("All read.")]), thinking=thinking)
    config = CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2,
                              minimum_reduction=0.05, thinking_policy=policy)
    compactor = Compactor(ReplayJudge({}, default=0.01), config, ExecutionOptions(Mode.ENFORCE, 5.0),
                          FileArchive(tmp_path))
    middleware = JevCompactionMiddleware(compactor, trigger=("messages", 6), scope=SCOPE)
    create_agent(model, tools=[read_file], middleware=[middleware]).invoke(
        {"messages": [{"role": "user", "content": "Read the three files."}]})
    assert len(ThinkingModel.settings) == 4
    for kwargs in ThinkingModel.settings:
        if bound:
            assert kwargs["thinking"] == {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
            assert kwargs["extra_headers"] == {"anthropic-beta": "thinking-binding-controls-2026-08-01"}
        else:
            assert "thinking" not in kwargs and "extra_headers" not in kwargs


@pytest.mark.parametrize("mode", [Mode.SHADOW, Mode.ENFORCE])
@pytest.mark.parametrize("trigger, target", [(("tokens", 10), None), (("messages", 6), 100)])
def test_a_counter_that_answers_none_never_fails_the_agent_step(tmp_path, mode, trigger, target) -> None:
    """Issue 62: a token counter returning None made `before_model` raise, so the agent step failed."""
    config = CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2)
    compactor = Compactor(ReplayJudge({}, default=0.01), config, ExecutionOptions(mode, 5.0), FileArchive(tmp_path))
    middleware = JevCompactionMiddleware(compactor, trigger=trigger, scope=SCOPE, target_tokens=target,
                                         token_counter=lambda messages: None, keep_decisions=20)
    state = create_agent(script(), tools=[read_file], middleware=[middleware]).invoke(
        {"messages": [{"role": "user", "content": "Read the three files."}]})
    assert state["messages"][-1].content == "All read."  # the run went on, history as it was
    assert sum(isinstance(m, ToolMessage) for m in state["messages"]) == 3
    errors = [d for d in middleware.recent_decisions if d.status.value == "ERROR"]
    assert errors and all(d.error_kind == "ConfigError" and "token_counter's answer must be a whole number" in d.detail
                          for d in errors)


def test_one_middleware_serves_each_thread_as_its_own_conversation(tmp_path) -> None:
    """An agent built once and run on several threads (a checkpointer): each thread has its own trigger,
    decisions, snapshot references and compactor session, so one thread's plan never delays another's, and
    the restore tool answers from the calling thread's snapshots only — the same call id in another thread
    restores nothing of it."""
    from langgraph.checkpoint.memory import InMemorySaver

    from jev.integrations.langchain import thread_id

    def reader(prefix: str) -> ScriptedModel:  # the same call ids in every thread, other files
        turns = [AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": f"{prefix}{i}.py"}, "id": f"call{i}",
                                            "type": "tool_call"}]) for i in range(3)]
        return ScriptedModel(messages=iter([*turns, AIMessage("All read.")]))

    archive = FileArchive(tmp_path)
    judge = ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99)
    config = CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2,
                              minimum_reduction=0.05)
    middleware = JevCompactionMiddleware(Compactor(judge, config, ExecutionOptions(Mode.ENFORCE, 5.0, "lc"), archive),
                                         trigger=("messages", 6),
                                         scope=lambda _runtime: Scope("u", "agent", str(thread_id())))
    saver = InMemorySaver()
    for thread, prefix in (("A", "a"), ("B", "b")):
        graph = create_agent(reader(prefix), tools=[read_file], middleware=[middleware], checkpointer=saver)
        state = graph.invoke({"messages": [{"role": "user", "content": "Read the files."}]},
                             {"configurable": {"thread_id": thread}})
        assert "call0" not in [getattr(m, "tool_call_id", None) for m in state["messages"]], thread  # compacted
        own = middleware.conversation_of(thread)
        assert own is not None and own.last_decision.status.value == "DECIDED" and len(own.references) == 1
    assert middleware.conversation_of(None).references == [] and middleware.last_decision is None
    tool = middleware.restore_tool()

    def restored(thread: str) -> str:
        return asyncio.run(tool.ainvoke({"call_id": "call0"}, config={"configurable": {"thread_id": thread}}))

    assert "contents of a0.py" in restored("A") and "b0.py" not in restored("A")
    assert "contents of b0.py" in restored("B") and "a0.py" not in restored("B")
    assert restored("C").startswith("No archived result")  # a thread that archived nothing sees no other's
    crowded = JevCompactionMiddleware(Compactor(judge, config, ExecutionOptions(Mode.SHADOW, 5.0, "lc")),
                                      conversation=lambda host: host, conversations=2)
    for key in ("x", "y", "z"):
        crowded.process_sync([], key)
    assert crowded.conversation_of("x") is None and crowded.conversation_of("z") is not None  # the oldest let go
