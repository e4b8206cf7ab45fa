"""mini-swe-agent 2.x, the real package: `JevAgent` runs the hook before each model call of a real agent
loop — mini-swe-agent's own `DeterministicModel` (scripted answers, recording what it was sent) and its
`LocalEnvironment` running the commands in a temporary folder — in text mode and in tool-call mode."""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import DEEPSEEK, module_workspace, needs_data, recorded_outputs, recorded_runs

# mini-swe-agent reads (and creates) its global config folder and its .env at import: a fresh one here,
# so a test never loads the user's settings or keys, nor writes to their home
os.environ["MSWEA_GLOBAL_CONFIG_DIR"] = tempfile.mkdtemp(prefix="mswea-config-")
os.environ["MSWEA_SILENT_STARTUP"] = "1"
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.test_models import (
    DeterministicModel,
    DeterministicResponseAPIToolcallModel,
    DeterministicToolcallModel,
    make_output,
    make_response_api_output,
    make_toolcall_output,
)

from archive import FileArchive
from jev import CompactionConfig, Compactor, ConfigError, ExecutionOptions, Mode, Scope, formats
from jev.integrations.mini_swe_agent import JevAgent, JevQueryHook
from jev.judges import LocalJudge

SCOPE = Scope("user-1", "mini-swe-agent", "run-1")
AGENT = {"system_template": "You are a helpful assistant that can run shell commands.",
         "instance_template": "{{task}}", "step_limit": 40, "cost_limit": 1000.0}
FILES = 10
DONE = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


class _Records:
    """A mini-swe-agent scripted model that keeps a copy of every history it is sent."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sent: list[list[dict]] = []

    def query(self, messages: list[dict], **kwargs: Any) -> dict:
        self.sent.append(copy.deepcopy(messages))
        return super().query(messages, **kwargs)  # type: ignore[misc]


class Recording(_Records, DeterministicModel):
    """Text mode."""


class RecordingToolcalls(_Records, DeterministicToolcallModel):
    """Tool-call mode."""


class RecordingResponses(_Records, DeterministicResponseAPIToolcallModel):
    """Responses mode."""


def _workspace(tmp_path: Path) -> Path:
    return module_workspace(tmp_path, FILES)


def _text_outputs() -> list[dict]:
    steps = [make_output(f"THOUGHT: read module {i}.\n\n```mswea_bash_command\ncat module_{i}.py\n```",
                         [{"command": f"cat module_{i}.py"}]) for i in range(FILES)]
    return [*steps, make_output(f"THOUGHT: done.\n\n```mswea_bash_command\n{DONE}\n```", [{"command": DONE}])]


def _compactor(mode: Mode, tmp_path: Path) -> Compactor:
    return Compactor(LocalJudge(), CompactionConfig(eligible_tools=frozenset({"bash"}), preserve_recent_messages=2),
                     ExecutionOptions(mode, 10.0, "mini-swe-agent-test"), FileArchive(tmp_path / "archive"))


def _enforced(model: _Records, tmp_path: Path) -> JevQueryHook:
    """Run a `JevAgent` with `model` in ENFORCE (trigger 6 000 tokens, target 3 000) over the workspace: it
    submits, at least one compaction is adopted, and the history sent changes only where one was."""
    hook = JevQueryHook(_compactor(Mode.ENFORCE, tmp_path), trigger=("tokens", 6000), target_tokens=3000,
                        scope=SCOPE)
    result = JevAgent(model, LocalEnvironment(cwd=str(_workspace(tmp_path))), jev=hook, **AGENT).run("Read every module.")
    assert result["exit_status"] == "Submitted" and hook.references
    assert _changes(model.sent) == len(hook.references)
    return hook


def _changes(sent: list[list[dict]]) -> int:
    """How many model calls were sent a history whose earlier part differs from the previous call's."""
    return sum(1 for before, after in itertools.pairwise(sent) if after[: len(before)] != before)


def test_enforce_compacts_the_agent_s_history_deeply_and_rarely_and_the_run_finishes(tmp_path: Path) -> None:
    work = _workspace(tmp_path)
    model = Recording(outputs=_text_outputs())
    hook = JevQueryHook(_compactor(Mode.ENFORCE, tmp_path), trigger=("tokens", 6000), target_tokens=3000,
                        scope=SCOPE)
    agent = JevAgent(model, LocalEnvironment(cwd=str(work)), jev=hook, output_path=tmp_path / "run.traj.json",
                     **AGENT)
    result = agent.run("Read every module.")
    assert result["exit_status"] == "Submitted"
    adopted = len(hook.references)
    assert adopted >= 1 and hook.last_decision is not None
    # deep and rare: the history sent changes only where a compaction was adopted, and each one brought
    # it under the target
    assert _changes(model.sent) == adopted
    sizes = [formats.load(s, "mini-swe-agent") for s in model.sent]
    from jev.deciding.cost import tokens_of
    counted = [tokens_of(m) for m in sizes]
    assert max(counted) < 6000 + 2500  # never far past the trigger (one step's output at most)
    cut = [m for m in model.sent[-1] if "JEV archived the full result of call" in str(m.get("content"))]
    dropped = [m for m in model.sent[-1] if str(m.get("content", "")).startswith("[JEV dropped")]
    assert cut or dropped
    # what the model no longer sees comes back from the archive, byte for byte
    named = re.search(r'call "([^"]+)"', str((cut or dropped)[0]["content"])).group(1)
    restored = hook.restore(named)
    assert "def handler_" in restored
    # the trajectory mini-swe-agent saved (the history the model saw) reads back as a trajectory
    saved = json.loads((tmp_path / "run.traj.json").read_text())
    assert formats.dump(formats.load(saved, "mini-swe-agent"), "mini-swe-agent") == saved


def test_the_step_limit_bounds_the_horizon_the_cost_gate_weighs(tmp_path: Path) -> None:
    # the gate (no target) plans at every step over a low trigger; each plan's horizon is the history's
    # estimate bounded by the calls the step limit leaves, the coming one included
    seen: list[tuple[int, int]] = []
    compactor = _compactor(Mode.SHADOW, tmp_path)
    plan = compactor.plan

    async def recorded(messages: Any, **kwargs: Any) -> Any:
        seen.append((sum(1 for m in messages if m.role == "assistant"), kwargs["horizon"]))
        return await plan(messages, **kwargs)

    compactor.plan = recorded  # type: ignore[method-assign]
    hook = JevQueryHook(compactor, trigger=("messages", 1), scope=SCOPE)
    limit = len(_text_outputs())
    agent = JevAgent(Recording(outputs=_text_outputs()), LocalEnvironment(cwd=str(_workspace(tmp_path))), jev=hook,
                     **{**AGENT, "step_limit": limit})
    assert agent.run("Read every module.")["exit_status"] == "Submitted"
    assert len(seen) == limit
    assert seen == [(made, max(1, min(made // 3, limit - made))) for made in range(limit)]
    assert JevQueryHook(compactor).host.horizon_for(agent, []) == 1  # no step left: the coming call still counts
    agent.config.step_limit = 0  # no limit: the compactor's own estimate (None here)
    assert JevQueryHook(compactor).host.horizon_for(agent, []) is None
    assert JevQueryHook(compactor, horizon=7).host.horizon_for(agent, []) == 7  # the host's figure wins


def test_shadow_and_off_leave_every_call_as_it_was(tmp_path: Path) -> None:
    work = _workspace(tmp_path)
    runs = {}
    for mode in (None, Mode.OFF, Mode.SHADOW):
        model = Recording(outputs=_text_outputs())
        hook = None if mode is None else JevQueryHook(_compactor(mode, tmp_path), trigger=("tokens", 6000),
                                                      scope=SCOPE)
        JevAgent(model, LocalEnvironment(cwd=str(work)), jev=hook, **AGENT).run("Read every module.")
        runs[mode] = (model.sent, hook)
    plain = [[{k: v for k, v in m.items() if k != "extra"} for m in s] for s in runs[None][0]]
    for mode in (Mode.OFF, Mode.SHADOW):
        assert [[{k: v for k, v in m.items() if k != "extra"} for m in s] for s in runs[mode][0]] == plain
    assert runs[Mode.OFF][1].last_decision is None
    assert runs[Mode.SHADOW][1].last_decision is not None and not runs[Mode.SHADOW][1].references


def test_tool_call_mode(tmp_path: Path) -> None:
    outputs = []
    for i in range(FILES):
        call = f"call_{i}"
        outputs.append(make_toolcall_output(
            None, [{"id": call, "type": "function", "function": {"name": "bash",
                                                              "arguments": json.dumps({"command": f"cat module_{i}.py"})}}],
            [{"command": f"cat module_{i}.py", "tool_call_id": call}]))
    outputs.append(make_toolcall_output(
        None, [{"id": "call_done", "type": "function", "function": {"name": "bash",
                                                                   "arguments": json.dumps({"command": DONE})}}],
        [{"command": DONE, "tool_call_id": "call_done"}]))
    model = RecordingToolcalls(outputs=outputs)
    hook = _enforced(model, tmp_path)
    last = model.sent[-1]
    tool_ids = {m.get("tool_call_id") for m in last if m.get("role") == "tool"}
    called = {c["id"] for m in last for c in m.get("tool_calls") or []}
    assert tool_ids <= called  # every result the model is sent still has its call
    assert any("JEV archived the full result" in str(m.get("content")) or "JEV dropped" in str(m.get("content"))
               for m in last)
    assert "def handler_0_1" in hook.restore("call_0")


def test_responses_mode(tmp_path: Path) -> None:
    """mini-swe-agent's Responses API models: each turn a whole `response` object, results
    `function_call_output` items."""
    outputs = [make_response_api_output(None, [{"command": f"cat module_{i}.py", "tool_call_id": f"fc_{i}"}])
               for i in range(FILES)]
    outputs.append(make_response_api_output("done", [{"command": DONE, "tool_call_id": "fc_done"}]))
    model = RecordingResponses(outputs=outputs)
    hook = _enforced(model, tmp_path)
    items = [m for m in model.sent[-1] if isinstance(m, dict)]
    answered = {m["call_id"] for m in items if m.get("type") == "function_call_output"}
    called = {o["call_id"] for m in items if m.get("object") == "response" for o in m["output"]
              if o.get("type") == "function_call"}
    assert answered <= called  # every result the model is sent still has its call
    assert "def handler_0_1" in hook.restore("fc_0")


def test_a_message_trigger_and_bad_arguments(tmp_path: Path) -> None:
    work = _workspace(tmp_path)
    model = Recording(outputs=_text_outputs())
    hook = JevQueryHook(_compactor(Mode.SHADOW, tmp_path), trigger=("messages", 8), scope=SCOPE, keep_decisions=3)
    JevAgent(model, LocalEnvironment(cwd=str(work)), jev=hook, **AGENT).run("Read every module.")
    assert 1 <= len(hook.recent_decisions) <= 3
    with pytest.raises(ConfigError, match="trigger must be"):
        JevQueryHook(_compactor(Mode.SHADOW, tmp_path), trigger=("tool_results", 5))


def test_a_history_jev_cannot_read_is_left_as_it_is_and_the_agent_goes_on(tmp_path: Path, caplog) -> None:
    """A message the mini-swe-agent reader refuses (a role it does not know): the hook keeps an ERROR
    decision naming it, logs a warning, and the model call goes ahead on the history as it was."""
    work = _workspace(tmp_path)
    model = Recording(outputs=_text_outputs())
    hook = JevQueryHook(_compactor(Mode.ENFORCE, tmp_path), trigger=("messages", 2), scope=SCOPE)
    agent = JevAgent(model, LocalEnvironment(cwd=str(work)), jev=hook, **AGENT)
    agent.messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"},
                      {"role": "narrator", "content": "a role no reader knows"}]
    before = copy.deepcopy(agent.messages)
    with caplog.at_level("WARNING", logger="jev"):
        answer = agent.query()
    assert answer["content"].startswith("THOUGHT: read module 0.")
    assert agent.messages[:3] == before and model.sent == [before]
    decision = hook.last_decision
    assert decision is not None and decision.status.value == "ERROR" and decision.error_kind == "FormatError"
    assert "messages[2]" in decision.detail and "left as it is" in decision.detail
    assert "could not read the host's history" in caplog.text


class Recorded(LocalEnvironment):
    """mini-swe-agent's local environment answering each command with what the recorded run's command
    printed (the SWE-bench containers are not here); submission is detected by the real class's check."""

    def __init__(self, outputs: dict[str, dict], submission: str) -> None:
        super().__init__()
        self.outputs, self.submission = outputs, submission

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        recorded = self.outputs.get(action.get("tool_call_id", ""))
        if recorded is None:  # the submitting command: its output is the exit message's content
            output = {"output": "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n" + self.submission, "returncode": 0,
                      "exception_info": ""}
        else:
            output = {k: recorded[k] for k in ("output", "returncode", "exception_info")}
        self._check_finished(output)
        return output


def _verbatim(text: str) -> str:
    """A recorded message as a mini-swe-agent template that renders to itself (a task may hold `{{`)."""
    return "{% raw %}" + text + "{% endraw %}"


@needs_data(DEEPSEEK)
def test_real_deepseek_runs_replayed_through_the_agent_loop(tmp_path: Path) -> None:
    """Real mini-swe-agent 2.x runs (DeepSeek, tool-call mode) replayed through a real `DefaultAgent`
    loop: the model answers what it answered, the environment prints what the commands printed, and the
    hook compacts in ENFORCE at its default trigger. Every run finishes as recorded, no plan fails, every
    history the model is sent keeps each result with its call, and what it no longer sees restores."""
    adopted_runs = 0
    for k, run in enumerate(recorded_runs(6)):
        messages = run["messages"]
        answers = [m for m in messages if m.get("role") == "assistant"]
        outputs = recorded_outputs(run)
        exit_message = next((m for m in messages if m.get("role") == "exit"), {"content": ""})
        model = RecordingToolcalls(outputs=answers)
        scope = Scope("user-1", "deepseek", f"run-{k}")
        hook = JevQueryHook(_compactor(Mode.ENFORCE, tmp_path), scope=scope, keep_decisions=100)
        agent = JevAgent(model, Recorded(outputs, exit_message["content"]), jev=hook,
                         system_template=_verbatim(messages[0]["content"]),
                         instance_template=_verbatim(messages[1]["content"]),
                         step_limit=0, cost_limit=0)
        result = agent.run("")
        assert result["exit_status"] == run["info"]["exit_status"] == "Submitted"
        assert all(d.status.value != "ERROR" for d in hook.recent_decisions), [d.detail for d in hook.recent_decisions]
        for sent in model.sent:
            answered = {m["tool_call_id"] for m in sent if m.get("role") == "tool"}
            assert answered <= {c["id"] for m in sent for c in m.get("tool_calls") or []}
        if hook.references:
            adopted_runs += 1
            assert _changes(model.sent) == len(hook.references)
            last = model.sent[-1]
            let_go = [re.search(r'call "([^"]+)"', str(m.get("content"))).group(1) for m in last
                      if "JEV archived the full result" in str(m.get("content"))
                      or str(m.get("content", "")).startswith("[JEV dropped")]
            assert let_go and all(outputs[call]["output"] in hook.restore(call) for call in let_go[:3])
    assert adopted_runs >= 1
