"""OpenAI Agents SDK end to end: a real `Runner` loop with a real function tool, a scripted `Model`, and a
real `SQLiteSession` wrapped by `JevSession`; and the per-call input filter."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool
from agents.items import ModelResponse
from agents.memory import SQLiteSession
from agents.models.interface import Model
from agents.usage import Usage
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
    session = JevSession(SQLiteSession("s1"), compactor(Mode.SHADOW, tmp_path, records), trigger_items=5, scope=SCOPE,
                         keep_decisions=50)
    result = run(session, ScriptedModel())
    assert result.final_output == "done"
    assert stored_call_ids(session) == ["call1", "call2", "call3"]
    assert records and any(r.status == "DECIDED" for r in records)


def test_enforce_session_compacts_stored_items_and_the_next_call_sees_it(tmp_path) -> None:
    model = ScriptedModel()
    c = compactor(Mode.ENFORCE, tmp_path)
    session = JevSession(SQLiteSession("s2"), c, trigger_items=5, scope=SCOPE, keep_decisions=50)
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
    session = JevSession(underlying, c, trigger_items=5, scope=SCOPE, keep_decisions=50)
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
    session = JevSession(underlying, compactor(Mode.ENFORCE, tmp_path), trigger_items=5, scope=SCOPE, keep_decisions=50)
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
    session = JevSession(SQLiteSession("s5"), c, trigger_items=5, scope=SCOPE, keep_decisions=50)
    run(session, ScriptedModel())
    tool = session.restore_tool()
    text = asyncio.run(tool.on_invoke_tool(None, '{"call_id": "call1"}'))
    assert text.startswith("Call call1 (read_file)") and "contents of f1.py" in text


def test_a_token_target_sizes_the_session_compaction(tmp_path) -> None:
    from jev.integrations.openai_agents import estimated_tokens
    judge = ReplayJudge({}, default=0.3)  # unsure: the threshold table would keep everything
    config = CompactionConfig(cost_gate=False, eligible_tools={"read_file"}, preserve_recent_messages=2, minimum_reduction=0.05)
    c = Compactor(judge, config, ExecutionOptions(Mode.ENFORCE, 5.0, "agents-test"), FileArchive(tmp_path))
    session = JevSession(SQLiteSession("s-tokens"), c, trigger_items=5, scope=SCOPE, keep_decisions=50,
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
    session = JevSession(SQLiteSession("s-bounded"), compactor(Mode.SHADOW, tmp_path), trigger_items=1)
    made = []
    for i in range(30):
        asyncio.run(session.add_items([{"role": "user", "content": f"note {i}"}]))
        made.append(session.last_decision)
    assert len(set(map(id, made))) == 30 and session.recent_decisions == (made[-1],)
    with pytest.warns(DeprecationWarning, match="keep_decisions"):
        assert session.decisions == [made[-1]]
    with pytest.raises(ConfigError, match="keep_decisions must be an integer >= 1"):
        JevSession(SQLiteSession("s-bad"), compactor(Mode.SHADOW, tmp_path), keep_decisions=0)
