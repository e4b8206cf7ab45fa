"""Codex CLI rollouts (issue 65, item 4): detected, read as the Responses items they hold, written back
exactly as `openai-responses`, planned, inspected and costed — on the real dev rollouts."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import orjson
import pytest
from conftest import CODEX, cli, needs_data

from jev import CompactionConfig, Compactor, ExecutionOptions, FormatError, Mode, Status, formats
from jev.judges import LocalJudge
from jev.providers import check, model_of
from jev.reading.analysis import analyze

needs_codex = needs_data(CODEX)


def rollouts() -> list[tuple[str, bytes]]:
    with tarfile.open(CODEX, "r|*") as tar:
        return sorted((m.name, tar.extractfile(m).read()) for m in tar if m.isfile() and m.name.endswith(".jsonl"))


@needs_codex
def test_every_dev_rollout_reads_pairs_its_calls_and_writes_back_byte_for_byte() -> None:
    found = rollouts()
    assert len(found) == 5
    for name, data in found:
        doc = formats.parse(data)
        assert formats.detect(doc) == "codex", name
        messages = formats.load(doc)
        items = [e["payload"] for e in doc if e["type"] == "response_item"]
        assert orjson.dumps(formats.dump(messages, "openai-responses")) == orjson.dumps(items)  # key order too
        transcript = analyze(messages)
        calls = sum(1 for item in items if item["type"] in ("function_call", "custom_tool_call"))
        assert len(transcript.pairs) + len(transcript.pending) == calls > 0
        assert model_of(messages).startswith("gpt-5")  # the turn_context's: OpenAI's rules apply
        assert all(m.timestamp for m in messages)
        with pytest.raises(FormatError, match="read-only"):
            formats.dump(messages, "codex")


@needs_codex
def test_a_rollout_plans_in_shadow_and_enforce_and_the_plan_keeps_reasoning_with_its_calls(tmp_path) -> None:
    from archive import FileArchive, Scope
    _name, data = max(rollouts(), key=lambda item: len(item[1]))
    messages = formats.load(formats.parse(data))
    tools = sorted({p.tool for p in analyze(messages).pairs})
    config = CompactionConfig(eligible_tools=frozenset(tools), target_reduction=0.5)
    for mode in (Mode.SHADOW, Mode.ENFORCE):
        compactor = Compactor(LocalJudge(), config, ExecutionOptions(mode, 30.0), FileArchive(tmp_path / mode.value))
        decision = compactor.plan_sync(messages, scope=Scope("u", "a", "s"))
        assert decision.status is Status.DECIDED, decision.detail
        assert check(messages, decision.plan.messages).passes  # reasoning items keep their calls
        formats.dump(list(decision.plan.messages), "openai-responses")  # and it writes
    back = FileArchive(tmp_path / "ENFORCE").restore(Scope("u", "a", "s"), decision.plan.archive_reference)
    assert back == messages


def test_a_compacted_rollout_is_read_from_its_last_compaction_on() -> None:
    def line(kind: str, payload: dict) -> dict:
        return {"timestamp": "2026-06-18T04:57:49.150Z", "type": kind, "payload": payload}
    call = {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}"}
    out = {"type": "function_call_output", "call_id": "c1", "output": "a.py"}
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    doc = [line("session_meta", {"id": "s"}), line("turn_context", {"model": "gpt-5.5"}), line("response_item", user),
           line("response_item", call), line("response_item", out),
           line("compacted", {"message": "summary", "replacement_history": [user]}),
           line("response_item", {**call, "call_id": "c2"}), line("response_item", {**out, "call_id": "c2"})]
    stretches = formats.conversations(doc)
    assert [len(s) for s in stretches] == [3, 3] and formats.load(doc) == stretches[-1]
    assert stretches[1][0].text == "go" and [p.call_id for p in analyze(stretches[1]).pairs] == ["c2"]
    older = [*doc[:5], line("compacted", {"message": "what happened so far"}), *doc[6:]]
    assert formats.load(older)[0].text == "what happened so far"


@needs_codex
def test_inspect_compact_and_cost_take_a_folder_of_rollouts(tmp_path) -> None:
    folder = tmp_path / "codex"
    folder.mkdir()
    for name, data in rollouts():
        (folder / Path(name).name).write_bytes(data)
    first = sorted(folder.iterdir())[0]
    ran = cli(["inspect", str(first)], text=True)
    assert ran.returncode == 0 and json.loads(ran.stdout)["format"] == "codex"
    tools = ",".join(json.loads(ran.stdout)["tools"])
    ran = cli(["compact", str(first), "--eligible-tools", tools, "--target-reduction", "0.5"], text=True)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["messages"] == [e["payload"] for e in formats.parse(first.read_bytes())
                                                  if e["type"] == "response_item"]  # SHADOW: as it was
    ran = cli(["cost", str(folder), "--eligible-tools", tools, "--trigger-tokens", "20000", "--no-labels"], text=True)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["sessions"] == 5
