"""OpenAI Agents SDK end to end: a real `Runner` loop with a real function tool, a scripted `Model`, and a
real `SQLiteSession` wrapped by `JevSession`; and the per-call input filter."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.items import ModelResponse
from agents.memory import SQLiteSession
from agents.models.interface import Model
from agents.usage import Usage
from conftest import DEEPSEEK, needs_data, recorded_outputs, recorded_runs
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from archive import FileArchive, Scope
from jev import CompactionConfig, Compactor, ConfigError, ExecutionOptions, Mode, formats
from jev.integrations.openai_agents import JevSession, input_filter
from jev.judges import ReplayJudge

SCOPE = Scope("u", "agent", "s")


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + "line of text\n" * 200


class ScriptedModel(Model):
    """Three reads, then an answer; records every input it was given."""

    def __init__(self) -> None:
        self.step = 0
        self.inputs: list[list[Any]] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None):
        self.inputs.append(list(input) if isinstance(input, list) else [input])
        self.step += 1
        if self.step <= 3:
            output = [ResponseFunctionToolCall(type="function_call", call_id=f"call{self.step}", name="read_file",
                                               arguments=f'{{"path": "f{self.step}.py"}}', id=f"fc{self.step}",
                                               status="completed")]
        else:
            output = [ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed",
                                            content=[ResponseOutputText(type="output_text", text="done",
                                                                        annotations=[])])]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any):
        raise NotImplementedError


def compactor(mode: Mode, tmp_path, records: list | None = None) -> Compactor:
    config = CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2, minimum_reduction=0.05)
    observer = (lambda _c, r: records.append(r)) if records is not None else None
    judge = ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99)
    return Compactor(judge, config, ExecutionOptions(mode, 5.0, "agents-test", observer), FileArchive(tmp_path))


def run(session: Any, model: ScriptedModel, run_config: RunConfig | None = None, text: str = "Read three files.") -> Any:
    agent = Agent(name="reader", instructions="Read files.", tools=[read_file], model=model)
    config = run_config or RunConfig()
    config.tracing_disabled = True
    return asyncio.run(Runner.run(agent, text, session=session, run_config=config))


def stored_call_ids(session: Any) -> list[str]:
    return [i.get("call_id") for i in asyncio.run(session.get_items()) if i.get("type") == "function_call_output"]


def test_shadow_session_records_and_changes_nothing(tmp_path) -> None:
    records: list = []
    session = JevSession(SQLiteSession("s1"), compactor(Mode.SHADOW, tmp_path, records), trigger=("messages", 5), scope=SCOPE,
                         keep_decisions=50)
    result = run(session, ScriptedModel())
    assert result.final_output == "done"
    assert stored_call_ids(session) == ["call1", "call2", "call3"]
    assert records and any(r.status == "DECIDED" for r in records)


def test_enforce_session_compacts_stored_items_and_the_next_call_sees_it(tmp_path) -> None:
    model = ScriptedModel()
    c = compactor(Mode.ENFORCE, tmp_path)
    session = JevSession(SQLiteSession("s2"), c, trigger=("messages", 5), scope=SCOPE, keep_decisions=50)
    assert run(session, model).final_output == "done"
    assert "call1" not in stored_call_ids(session)
    decided = [d for d in session.recent_decisions if d.status.value == "DECIDED"]
    assert decided
    calls_before = len(model.inputs)
    assert run(session, model, text="And now?").final_output == "done"  # the next turn starts from the session
    next_input = model.inputs[calls_before]
    assert not any(isinstance(i, dict) and i.get("call_id") == "call1" for i in next_input)
    assert any(isinstance(i, dict) and i.get("call_id") == "call3" for i in next_input)
    ref = decided[0].plan.archive_reference
    assert any(getattr(b, "id", None) == "call1" for m in c.archive.restore(SCOPE, ref) for b in m.content)


def test_a_concurrent_change_keeps_the_stored_history(tmp_path) -> None:
    underlying = SQLiteSession("s3")

    class Meddling(ReplayJudge):
        async def ask(self, request):
            await underlying.add_items([{"role": "user", "content": "meanwhile"}])
            return await super().ask(request)

    c = Compactor(Meddling({"call_t1": 0.01, "result_t1": 0.01}, default=0.99),
                  CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2,
                                   minimum_reduction=0.05),
                  ExecutionOptions(Mode.ENFORCE, 5.0, "agents-test"), FileArchive(tmp_path))
    session = JevSession(underlying, c, trigger=("messages", 5), scope=SCOPE, keep_decisions=50)
    run(session, ScriptedModel())
    assert "call1" in stored_call_ids(session)  # every plan was judged, none adopted over a changed history
    assert any(d.status.value == "DECIDED" for d in session.recent_decisions)


def test_a_failed_write_of_the_compacted_items_puts_the_history_back(tmp_path) -> None:
    class FailsOnce(SQLiteSession):
        """A real SQLite session whose first write after a clear fails (a dropped connection, say)."""
        cleared = failed = False

        async def clear_session(self) -> None:
            await super().clear_session()
            self.cleared = True

        async def add_items(self, items) -> None:
            if self.cleared and not self.failed:
                self.failed = True
                raise ConnectionError("store went away")
            await super().add_items(items)

    underlying = FailsOnce("s6")
    session = JevSession(underlying, compactor(Mode.ENFORCE, tmp_path), trigger=("messages", 5), scope=SCOPE, keep_decisions=50)
    with pytest.raises(ConnectionError, match="store went away"):  # the failure goes on to the host
        run(session, ScriptedModel())
    assert stored_call_ids(session)[:1] == ["call1"]  # the judged history is back, nothing lost


def test_input_filter_compacts_the_view_only(tmp_path) -> None:
    model = ScriptedModel()
    decisions: list = []
    session = SQLiteSession("s4")
    config = RunConfig(call_model_input_filter=input_filter(compactor(Mode.ENFORCE, tmp_path), scope=SCOPE,
                                                            decisions=decisions, keep_decisions=50))
    assert run(session, model, config).final_output == "done"
    assert stored_call_ids(session) == ["call1", "call2", "call3"]  # the session keeps everything
    assert any(d.status.value == "DECIDED" for d in decisions)
    assert len(decisions) == len(model.inputs)  # one per model call, all 50 kept
    bounded: list = []  # issue 37: the list grew with every model call; now the last keep_decisions (1)
    config = RunConfig(call_model_input_filter=input_filter(compactor(Mode.ENFORCE, tmp_path), scope=SCOPE,
                                                            decisions=bounded))
    run(SQLiteSession("s4-bounded"), ScriptedModel(), config)
    assert len(bounded) == 1
    assert not any(isinstance(i, dict) and i.get("call_id") == "call1" for i in model.inputs[-1])


def test_restore_tool_brings_back_an_archived_pair(tmp_path) -> None:
    c = compactor(Mode.ENFORCE, tmp_path)
    session = JevSession(SQLiteSession("s5"), c, trigger=("messages", 5), scope=SCOPE, keep_decisions=50)
    run(session, ScriptedModel())
    tool = session.restore_tool()
    text = asyncio.run(tool.on_invoke_tool(None, '{"call_id": "call1"}'))
    assert text.startswith("Call call1 (read_file)") and "contents of f1.py" in text


def test_a_token_target_sizes_the_session_compaction(tmp_path) -> None:
    from jev.integrations.openai_agents import estimated_tokens
    judge = ReplayJudge({}, default=0.3)  # unsure: the threshold table would keep everything
    config = CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2, minimum_reduction=0.05)
    c = Compactor(judge, config, ExecutionOptions(Mode.ENFORCE, 5.0, "agents-test"), FileArchive(tmp_path))
    session = JevSession(SQLiteSession("s-tokens"), c, trigger=("messages", 5), scope=SCOPE, keep_decisions=50,
                         target_tokens=1_000)
    assert run(session, ScriptedModel()).final_output == "done"
    decided = [d for d in session.recent_decisions if d.status.value == "DECIDED"]
    assert decided
    for d in decided:  # each adopted history is under the target, by the counter the session was given, or
        # nothing more could go: every pair outside the pinned recent window was dropped
        under = estimated_tokens(formats.dump(list(d.plan.messages), "openai-responses")) <= 1_000
        assert under or all(d.plan.decisions[k].value == "DROP_PAIR" for k, s in d.plan.scores.items()
                            if s.reason != "PINNED")
    assert len(stored_call_ids(session)) < 3
    with pytest.raises(Exception, match="target_tokens must be an integer >= 1"):
        input_filter(c, target_tokens=-1)


def test_the_session_keeps_only_its_last_decisions(tmp_path) -> None:
    """Every add_items over the trigger plans; the session keeps the last `keep_decisions` of them (1 by
    default), and `decisions` is deprecated."""
    session = JevSession(SQLiteSession("s-bounded"), compactor(Mode.SHADOW, tmp_path), trigger=("messages", 1))
    made = []
    for i in range(30):
        asyncio.run(session.add_items([{"role": "user", "content": f"note {i}"}]))
        made.append(session.last_decision)
    assert len(set(map(id, made))) == 30 and session.recent_decisions == (made[-1],)
    with pytest.warns(DeprecationWarning, match="keep_decisions"):
        assert session.decisions == [made[-1]]
    with pytest.raises(ConfigError, match="keep_decisions must be an integer >= 1"):
        JevSession(SQLiteSession("s-bad"), compactor(Mode.SHADOW, tmp_path), keep_decisions=0)


class RecordedModel(Model):
    """Answers what a recorded run's model answered — its text and bash calls, ids included — one turn per
    call, then a final answer; records every input it was given."""

    def __init__(self, turns: list[dict]) -> None:
        self.turns = iter(turns)
        self.inputs: list[list[Any]] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None):
        self.inputs.append(list(input) if isinstance(input, list) else [input])
        turn = next(self.turns, None)
        text = "Submitted." if turn is None else turn.get("content") or ""
        output: list[Any] = [ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed",
                                                   content=[ResponseOutputText(type="output_text", text=text,
                                                                               annotations=[])])] if text else []
        output += [ResponseFunctionToolCall(type="function_call", call_id=c["id"], name="bash",
                                            arguments=c["function"]["arguments"], id=f"fc_{c['id']}", status="completed")
                   for c in (turn or {}).get("tool_calls") or []]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any):
        raise NotImplementedError


@needs_data(DEEPSEEK)
def test_real_deepseek_runs_replayed_through_runner_and_a_jev_session(tmp_path) -> None:
    """Real runs (the DeepSeek dev set) through a real `Runner` loop on a `JevSession` over a real
    `SQLiteSession`: the model answers what the recorded model answered, the bash tool prints what each
    recorded command printed, and the session compacts in ENFORCE with the local judge at its default
    trigger (50 items). Every run ends, no plan fails, and every result the model is given has its call."""
    from jev.judges import LocalJudge

    adopted = 0
    for k, recorded in enumerate(recorded_runs(3)):
        outputs = recorded_outputs(recorded)
        answers = [m for m in recorded["messages"] if m.get("role") == "assistant"]
        printed: dict[str, list[str]] = {}
        for m in answers:
            for c in m.get("tool_calls") or []:
                if c["id"] in outputs:
                    printed.setdefault(json.loads(c["function"]["arguments"]).get("command"), []).append(
                        outputs[c["id"]]["shown"])

        @function_tool
        def bash(command: str) -> str:
            """Run a bash command."""
            shown = printed.get(command) or ["COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
            return shown.pop(0) if len(shown) > 1 else shown[0]

        compactor = Compactor(LocalJudge(), CompactionConfig(eligible_tools=frozenset({"bash"})),
                              ExecutionOptions(Mode.ENFORCE, 10.0, "agents-replay"), FileArchive(tmp_path / f"a{k}"))
        session = JevSession(SQLiteSession(f"replay-{k}"), compactor, scope=Scope("u", "agents", f"r{k}"),
                             keep_decisions=100)
        model = RecordedModel(answers)
        agent = Agent(name="coder", instructions=recorded["messages"][0]["content"], tools=[bash], model=model)
        result = asyncio.run(Runner.run(agent, recorded["messages"][1]["content"], session=session, max_turns=1000,
                                        run_config=RunConfig(tracing_disabled=True)))
        assert result.final_output == "Submitted." and next(model.turns, None) is None
        assert all(d.status.value != "ERROR" for d in session.recent_decisions), \
            [d.detail for d in session.recent_decisions]
        for given in model.inputs:
            called = {i.get("call_id") for i in given if isinstance(i, dict) and i.get("type") == "function_call"}
            answered = {i.get("call_id") for i in given if isinstance(i, dict) and i.get("type") == "function_call_output"}
            assert answered <= called
        adopted += len(session.references)
    assert adopted >= 1


def test_the_session_s_old_trigger_spelling_warns_and_both_spellings_are_refused(tmp_path) -> None:
    with pytest.warns(DeprecationWarning, match=r'trigger=\("messages", n\)'):
        session = JevSession(SQLiteSession("s-old"), compactor(Mode.SHADOW, tmp_path), trigger_items=7)
    assert session.trigger == ("messages", 7)
    with pytest.raises(ConfigError, match="not both"):
        JevSession(SQLiteSession("s-both"), compactor(Mode.SHADOW, tmp_path), trigger=("messages", 7), trigger_items=7)
    with pytest.raises(ConfigError, match=r"trigger must be \('messages', n\) or \('tokens', n\)"):
        JevSession(SQLiteSession("s-bad"), compactor(Mode.SHADOW, tmp_path), trigger=("tool_results", 7))
