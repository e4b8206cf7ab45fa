"""Request bodies recorded from the real Anthropic and OpenAI APIs (`tests/data/public-request-bodies.json`,
from pydantic-ai's VCR cassettes): what the request forms are tested on beside the shapes written here.
Each is detected, written back byte for byte (also from its snapshot), let go of what policy allows and
still a body of its own API, and read by the command line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import cli

from archive import Scope
from archive.snapshot import decode, encode
from jev import Action, CompactionConfig, Compactor, ExecutionOptions, Mode, Reason, Status, formats
from jev.applying.apply import apply_actions, tombstone
from jev.deciding.policy import pins, why_pinned
from jev.formats.request import FORMS
from jev.judges import ReplayJudge
from jev.model.transcript import TextBlock
from jev.reading.analysis import analyze

SAMPLES = json.loads((Path(__file__).parent / "data" / "public-request-bodies.json").read_text(encoding="utf-8"))
BODIES = {sample["name"]: sample for sample in SAMPLES["bodies"]}
WITH_PAIRS = [name for name, sample in BODIES.items() if analyze(formats.load(sample["body"])).pairs]


def _continued(body: dict[str, Any], form: str) -> dict[str, Any]:
    """The body as the next request sends it once the user answers: its conversation and a user message."""
    key = FORMS[form][1]
    return {**body, key: [*body[key], {"role": "user", "content": "Thanks. What next?"}]}


def test_the_samples_cover_every_request_form_with_and_without_pairs() -> None:
    forms = {sample["format"] for sample in BODIES.values()}
    assert forms == {"anthropic-request", "openai-chat-request", "openai-responses-request"}
    assert {BODIES[name]["format"] for name in WITH_PAIRS} == forms and len(WITH_PAIRS) < len(BODIES)


@pytest.mark.parametrize("name", list(BODIES))
def test_a_recorded_body_is_detected_and_written_back_byte_for_byte(name: str) -> None:
    sample = BODIES[name]
    body, form = sample["body"], sample["format"]
    assert formats.detect(body) == form
    messages = formats.load(body)
    assert orjson.dumps(formats.dump(messages, form)) == orjson.dumps(body)
    scope = Scope("u", "a", "s")  # through a snapshot's bytes, as a restore gives it back
    assert orjson.dumps(formats.dump(decode(scope, *encode(scope, messages)), form)) == orjson.dumps(body)


@pytest.mark.parametrize("name", WITH_PAIRS)
def test_a_recorded_body_with_its_pairs_let_go_is_still_a_body_of_its_api(name: str) -> None:
    """Every pair policy lets go of in the body's next request (a user message after it, no recent window)
    is let go (dropped; only cut where its call sits beside thinking): the body written back keeps every
    other field as it was, holds neither the call nor the result of a dropped pair, and reads again as a
    body of the same API."""
    form = BODIES[name]["format"]
    body = _continued(BODIES[name]["body"], form)
    transcript = analyze(formats.load(body))
    config = CompactionConfig(eligible_tools=frozenset(p.tool for p in transcript.pairs), preserve_recent_messages=0)
    pinned = pins(transcript, config)
    candidates = pinned.candidates(transcript)
    assert candidates, pinned.why
    actions = {p.key: Action.TRUNCATE_RESULT if p.key in pinned.truncate_only else Action.DROP_PAIR
               for p in candidates}
    out = formats.dump(apply_actions(transcript, actions, config), form)
    conversation = FORMS[form][1]
    assert {k: v for k, v in out.items() if k != conversation} == {k: v for k, v in body.items() if k != conversation}
    assert formats.detect(out) == form
    again = analyze(formats.load(out))
    dropped = {p.call_id for p in candidates if actions[p.key] is Action.DROP_PAIR}
    assert not dropped & {p.call_id for p in again.pairs} and not dropped & again.pending
    texts = [b.text for m in again.messages for b in m.content if isinstance(b, TextBlock)]
    assert all(tombstone(p, config) in texts for p in candidates if p.call_id in dropped)  # each says what went
    assert len(again.pairs) == len(transcript.pairs) - len(dropped)


def test_the_command_line_reads_every_recorded_body(tmp_path: Path) -> None:
    """`jev inspect` names the form and counts the pairs; `jev compact` (the local judge, the defaults)
    plans each body and writes back the very body it was given when it proposes nothing."""
    for name, sample in BODIES.items():
        body, path = sample["body"], tmp_path / "body.json"
        path.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
        ran = cli(["inspect", path, "-q"])
        assert ran.returncode == 0, (name, ran.stderr)
        shown: dict[str, Any] = json.loads(ran.stdout)
        pairs = analyze(formats.load(body)).pairs
        assert (shown["format"], shown["pairs"]) == (sample["format"], len(pairs)), name
        tools = ",".join(sorted({p.tool for p in pairs})) or "none"
        ran = cli(["compact", path, "-q", "--eligible-tools", tools, "--out", tmp_path / "plan.json"])
        assert ran.returncode == 0, (name, ran.stderr)
        plan = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))
        assert plan["status"] in ("SKIPPED", "INCONCLUSIVE"), (name, plan["status"])  # too short to pay
        assert plan["messages"] == body, name


def test_with_no_recent_window_the_last_message_stays_so_a_body_ends_as_it_ended() -> None:
    """`preserve_recent_messages=0`: the pair whose result ends the history stays (dropping it would end
    the body with its tombstone, an assistant message — a prefill, which Anthropic refuses with thinking on
    and from Claude 4.6 on); an earlier pair is still let go."""
    config = CompactionConfig(eligible_tools=frozenset({"get_capital", "str_replace_based_edit_tool"}),
                              preserve_recent_messages=0, minimum_reduction=0.0, cost_gate=False)
    judge = ReplayJudge({}, default=0.0)  # every pair asked about is let go
    editor = BODIES["test_anthropic_text_editor_tool#2"]["body"]
    decision = Compactor(judge, config, ExecutionOptions(Mode.SHADOW)).plan_sync(formats.load(editor))
    assert (decision.status, decision.reason) == (Status.SKIPPED, Reason.NO_CANDIDATES)
    assert why_pinned(analyze(formats.load(editor)), config) == {"t1": "the last message (a history ends as it ended)"}
    chat = BODIES["test_multiple_agent_tool_calls#4"]["body"]
    silent = dataclasses.replace(config, tombstones=False)  # a tombstone is longer than these short results
    decision = Compactor(judge, silent, ExecutionOptions(Mode.SHADOW)).plan_sync(formats.load(chat))
    assert decision.status is Status.DECIDED
    assert dict(decision.plan.decisions) == {"t1": Action.DROP_PAIR, "t2": Action.KEEP}
    assert decision.plan.scores["t2"].reason == "PINNED"
    kept = formats.dump(list(decision.plan.messages), "openai-chat-request")["messages"]
    assert kept == [m for m in chat["messages"] if "pyd_ai_" not in json.dumps(m)]  # t1's call and result gone


def test_a_freeform_tools_call_and_output_are_one_pair_let_go_together() -> None:
    """GPT-5's freeform tools: a `custom_tool_call` (its input a string, here the JSON text pydantic-ai sent)
    and its `custom_tool_call_output` are a pair like a function call's; dropped, both items go, and so does
    the reasoning item before the call (the API refuses one its response's next item does not follow: the
    tombstone is no such item); the plan's messages keep it."""
    body = _continued(BODIES["test_gpt5_freeform_text_sql_tool#2"]["body"], "openai-responses-request")
    transcript = analyze(formats.load(body))
    [pair] = transcript.pairs
    assert (pair.tool, pair.call.input, pair.result.text) == (
        "execute_sql", '{"query":"SELECT * FROM users;"}', "Result: 3 rows returned")
    config = CompactionConfig(eligible_tools=frozenset({"execute_sql"}), preserve_recent_messages=0)
    assert [p.key for p in pins(transcript, config).candidates(transcript)] == [pair.key]
    out = formats.dump(apply_actions(transcript, {pair.key: Action.DROP_PAIR}, config), "openai-responses-request")
    assert [item.get("type", "message") for item in out["input"]] == ["message", "message", "message"]
    assert out["input"][1]["content"] == tombstone(pair, config) and out["input"][2] == body["input"][-1]
    assert formats.detect(out) == "openai-responses-request" and not analyze(formats.load(out)).pairs


@pytest.mark.parametrize("name", list(BODIES))
def test_a_recorded_body_as_a_conversation_types_its_fields_and_writes_back_byte_for_byte(name: str) -> None:
    """`load_request` gives the messages `load` gives and the body's other fields typed beside them;
    `dump_request` writes the very body back, and around the messages left after letting go of every pair
    policy allows writes the same body `dump` does."""
    sample = BODIES[name]
    body, form = sample["body"], sample["format"]
    conversation = formats.load_request(body)
    key, system_key = FORMS[form][1], FORMS[form][2]
    assert conversation.form == form and list(conversation.messages) == formats.load(body)
    assert dict(conversation.fields) == {k: v for k, v in body.items() if k not in (key, system_key)}
    assert conversation.keys == tuple(body) and conversation.model == body.get("model")
    assert conversation.system == body.get(system_key) if system_key else conversation.system is None
    assert orjson.dumps(formats.dump_request(conversation)) == orjson.dumps(body)
    continued = formats.load_request(_continued(body, form))
    transcript = analyze(list(continued.messages))
    config = CompactionConfig(eligible_tools=frozenset(p.tool for p in transcript.pairs), preserve_recent_messages=0)
    pinned = pins(transcript, config)
    kept = apply_actions(transcript, {p.key: Action.TRUNCATE_RESULT if p.key in pinned.truncate_only else Action.DROP_PAIR
                                      for p in pinned.candidates(transcript)}, config)
    out = formats.dump_request(continued.with_messages(kept))
    assert out == formats.dump(kept, form) and formats.detect(out) == form
    assert {k: v for k, v in out.items() if k != key} == {k: v for k, v in _continued(body, form).items() if k != key}
