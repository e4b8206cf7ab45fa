"""What each provider accepts in a history sent back (issue 61): the rules by model, the check before every
adoption, the thinking policies, and the request a drop-block plan sends. Cases follow the providers'
documented examples: Anthropic's preserved-thinking pages (a tool loop with thinking, an edit before it),
the Responses reasoning-item error, Gemini's thought signatures on calls of the current turn."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import call, cli, msg, result, text

from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, Reason, Status, formats
from jev.judges import ReplayJudge
from jev.model.transcript import ThinkingBlock
from jev.providers import (
    ANTHROPIC,
    ANTHROPIC_PRESERVED,
    DEFAULT,
    GEMINI,
    OPENAI,
    ThinkingPolicy,
    check,
    frozen_until,
    model_of,
    rules_for,
    strip_thinking,
    with_drop_block,
)

FABLE, OPUS_46 = "claude-fable-5-1", "claude-opus-4-6"


def thought(s: str) -> ThinkingBlock:
    return ThinkingBlock(s)


def tool_loop(ends_in_loop: bool = False) -> list:
    """A Claude tool loop as the thinking docs walk it: prompt, think + call, result, think + call, result, answer."""
    messages = [
        msg("u0", "user", text("Find the bug in parser.py")),
        msg("a1", "assistant", thought("Read the file first."), call("c1")),
        msg("u1", "user", result("c1")),
        msg("a2", "assistant", thought("Line 12 looks off; check its test."), call("c2")),
        msg("u2", "user", result("c2")),
    ]
    return messages if ends_in_loop else [*messages, msg("a3", "assistant", text("The bug is on line 12.")),
                                          msg("u3", "user", text("Fix it."))]


def cut_result(messages: list, index: int) -> list:
    out = list(messages)
    block = out[index].content[0]
    out[index] = out[index].replace(content=(dataclasses.replace(block, output="[cut]"),))
    return out


# --- the rules by model -----------------------------------------------------------------------------------

@pytest.mark.parametrize("model, rules", [
    ("claude-fable-5-1", ANTHROPIC_PRESERVED), ("claude-mythos-5-2", ANTHROPIC_PRESERVED),
    ("claude-opus-5-5", ANTHROPIC_PRESERVED), ("claude-sonnet-5-5", ANTHROPIC_PRESERVED),
    ("claude-haiku-5-5@20261001", ANTHROPIC_PRESERVED), ("us.anthropic.claude-fable-5-1-v1:0", ANTHROPIC_PRESERVED),
    ("claude-fable-6-0", ANTHROPIC_PRESERVED),  # newer than the docs' list: the family's rule
    ("claude-opus-4-6", ANTHROPIC), ("claude-sonnet-4-5-20250929", ANTHROPIC), ("claude-3-5-sonnet-20241022", ANTHROPIC),
    ("claude-opus-5", ANTHROPIC), ("claude-fable-5", ANTHROPIC), ("claude-something-new", ANTHROPIC_PRESERVED),
    ("gpt-5.1-codex", OPENAI), ("o3", OPENAI), ("gemini-3-pro-preview", GEMINI),
    (None, DEFAULT), ("", DEFAULT), ("llama-4", DEFAULT),
])
def test_a_model_name_selects_its_rules_with_a_family_fallback_and_a_strict_default(model, rules) -> None:
    assert rules_for(model) == rules


def test_the_history_names_its_model_and_the_host_overrides_it() -> None:
    lines = [{"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}},
             {"type": "assistant", "uuid": "a1", "sessionId": "s",
              "message": {"id": "m1", "role": "assistant", "model": FABLE, "content": [{"type": "text", "text": "hello"}]}}]
    messages = formats.load(lines, "claude-code")
    assert model_of(messages) == FABLE
    assert "model" not in formats.dump(messages, "anthropic")[1]  # never written into a request's messages
    body = {"model": "claude-sonnet-5-5", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    assert model_of(formats.load(body, "anthropic-request")) == "claude-sonnet-5-5"
    assert check(messages, messages).model == FABLE
    assert check(messages, messages, model=OPUS_46).model == OPUS_46
    from langchain_core.messages import AIMessage, HumanMessage
    chat = [HumanMessage("hi"), AIMessage("hello", response_metadata={"model_name": "claude-sonnet-5-5"})]
    assert model_of(formats.load(chat, "langchain")) == "claude-sonnet-5-5"
    assert model_of(formats.load([{"role": "user", "content": "hi"}], "openai-chat")) is None


# --- Anthropic: preserved thinking, and every thinking model ----------------------------------------------

def test_an_edit_before_thinking_is_refused_by_a_preserved_thinking_model_only() -> None:
    sent = tool_loop()
    edited = cut_result(sent, 2)  # the first result cut: the thinking in a2 was produced after it
    refused = check(sent, edited, FABLE)
    assert not refused.passes
    [v] = refused.refused
    assert (v.rule, v.path, v.message_id) == ("preserved-thinking", "messages[3].content[0]", "a2")
    assert check(sent, edited, OPUS_46).passes  # no prefix check on Opus 4.6
    assert check(sent, sent, FABLE).passes  # nothing changed: accepted
    assert check(sent, cut_result(sent, 4), FABLE).passes  # an edit after the last thinking: append-only


def test_strip_removes_the_invalid_thinking_and_passes() -> None:
    sent = tool_loop()
    stripped, n = strip_thinking(sent, cut_result(sent, 2))
    assert n == 1 and stripped[3].content == (call("c2"),) and stripped[1] is sent[1]
    assert check(sent, stripped, FABLE).passes


def test_drop_block_lets_the_api_drop_what_the_edit_invalidated() -> None:
    sent = tool_loop()
    verdict = check(sent, cut_result(sent, 2), FABLE, ThinkingPolicy.DROP_BLOCK)
    assert verdict.passes and [v.refused for v in verdict.violations] == [False]
    body = {"model": FABLE, "thinking": {"type": "adaptive"}, "messages": []}
    assert with_drop_block(body)["thinking"] == {"type": "adaptive",
                                                  "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    assert with_drop_block({"messages": []}) == {"messages": []}  # no thinking asked for: nothing to bind


def test_omitting_or_moving_a_thinking_block_between_others_is_refused() -> None:
    sent = tool_loop()
    omitted = [sent[0], sent[1].replace(content=(call("c1"),)), *sent[2:]]  # a1's thinking left out, a2's kept
    verdict = check(sent, omitted, FABLE)
    assert [v.rule for v in verdict.refused] == ["preserved-thinking", "preserved-thinking"]
    assert "left out or moved" in verdict.refused[0].detail
    changed = [sent[0], sent[1].replace(content=(thought("Rewritten."), call("c1"))), *sent[2:]]
    assert [v.rule for v in check(sent, changed, OPUS_46).refused] == ["thinking-unmodified"]


def test_the_tool_loops_latest_thinking_goes_back_with_its_results() -> None:
    sent = tool_loop(ends_in_loop=True)
    without = [*sent[:3], sent[3].replace(content=(call("c2"),)), sent[4]]
    for model in (OPUS_46, FABLE):
        assert [v.rule for v in check(sent, without, model).refused] == ["thinking-in-progress"]
    # on a preserved-thinking model it must also stay valid: nothing before it may change, whatever the policy
    for policy in ThinkingPolicy:
        assert frozen_until(sent, ANTHROPIC_PRESERVED, policy) == 3
        assert not check(sent, cut_result(sent, 2), FABLE, policy).passes
    assert frozen_until(tool_loop(), ANTHROPIC_PRESERVED, ThinkingPolicy.STRIP) == -1  # a finished turn
    assert frozen_until(tool_loop(), ANTHROPIC_PRESERVED, ThinkingPolicy.APPEND_ONLY) == 3  # the last thinking
    assert frozen_until(tool_loop(), ANTHROPIC, ThinkingPolicy.APPEND_ONLY) == -1


def test_a_broken_pair_is_refused_by_every_provider() -> None:
    sent = tool_loop()
    lone_result = [sent[0], sent[1].replace(content=(thought("Read the file first."),)), *sent[2:]]
    for model in (FABLE, OPUS_46, "gpt-5.1", "gemini-3-pro", None):
        assert "pairs-whole" in {v.rule for v in check(sent, lone_result, model).refused}
    lone_call = [*sent[:2], *sent[3:]]
    assert [v.rule for v in check(sent, lone_call, OPUS_46).refused] == ["pairs-whole"]


# --- OpenAI: Responses reasoning items, Chat tool messages --------------------------------------------------

RESPONSES = [
    {"type": "message", "role": "user", "content": "Weather in Paris and Rome?"},
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA…"},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": "{\"city\":\"Paris\"}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny " * 300},
    {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAB…"},
    {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "weather", "arguments": "{\"city\":\"Rome\"}"},
    {"type": "function_call_output", "call_id": "call_2", "output": "rain " * 300},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny, then rain."}]},
]


def test_a_reasoning_item_must_be_followed_by_its_item() -> None:
    sent = formats.load(RESPONSES, "openai-responses")
    without_call = [m for m in sent if m.id not in ("m2", "m3")]  # the first call and its output dropped
    verdict = check(sent, without_call, "gpt-5.1")
    assert [(v.rule, v.message_id) for v in verdict.refused] == [("reasoning-follows", "m1")]
    assert check(sent, [m for m in sent if m.id not in ("m1", "m2", "m3")], "gpt-5.1").passes  # taken along
    assert check(sent, sent, "gpt-5.1").passes


def test_a_plan_keeps_the_call_after_a_reasoning_item() -> None:
    sent = formats.load(RESPONSES, "openai-responses")
    config = CompactionConfig(eligible_tools=frozenset({"weather"}), preserve_recent_messages=1, cost_gate=False,
                              model="gpt-5.1", minimum_reduction=0.01)
    plan = Compactor(ReplayJudge({}, default=0.01), config, ExecutionOptions(Mode.SHADOW)).plan_sync(sent).plan
    assert set(plan.decisions.values()) == {formats_action("TRUNCATE_RESULT")}  # never DROP_PAIR
    assert check(sent, plan.messages, "gpt-5.1").passes


def formats_action(name: str):
    from jev import Action
    return Action(name)


def test_chat_tool_messages_follow_their_calls() -> None:
    sent = [msg("u", "user", text("go")), msg("a", "assistant", call("c1"), call("c2")),
            msg("t1", "tool", result("c1")), msg("t2", "tool", result("c2")), msg("b", "assistant", text("done")),
            msg("u2", "user", text("next"))]
    between = [*sent[:2], msg("x", "assistant", text("note")), *sent[2:]]
    assert [v.rule for v in check(sent, between, "gpt-5.1").refused] == ["results-follow-calls"]
    assert check(sent, between, OPUS_46).passes  # Anthropic joins consecutive assistant turns


def test_a_dropped_parallel_calls_tombstone_comes_after_its_messages_results() -> None:
    sent = [msg("u", "user", text("go")), msg("a", "assistant", call("c1"), call("c2")),
            msg("t1", "tool", result("c1")), msg("t2", "tool", result("c2")), msg("b", "assistant", text("done")),
            *[msg(f"p{k}", "user", text(f"pad {k}")) for k in range(7)]]
    config = CompactionConfig(eligible_tools=frozenset({"read"}), cost_gate=False, model="gpt-5.1")
    judge = ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99)
    plan = Compactor(judge, config, ExecutionOptions(Mode.SHADOW)).plan_sync(sent).plan
    assert [m.id for m in plan.messages][:5] == ["u", "a", "t2", "a~dropped~c1", "b"]
    assert check(sent, plan.messages, "gpt-5.1").passes


# --- Gemini: thought signatures -----------------------------------------------------------------------------

def gemini_chat(signed_turn: str) -> list:
    """Gemini through its OpenAI-compatible Chat API: the signature rides on the call (`extra_content`)."""
    def turn(n: int, signed: bool) -> list:
        tool_call = {"id": f"call_{n}", "type": "function", "function": {"name": "read", "arguments": f"{{\"n\":{n}}}"}}
        if signed:
            tool_call["extra_content"] = {"google": {"thought_signature": f"sig{n}"}}
        return [{"role": "user", "content": f"step {n}"},
                {"role": "assistant", "content": None, "tool_calls": [tool_call]},
                {"role": "tool", "tool_call_id": f"call_{n}", "content": "x" * 2000}]
    return turn(1, signed_turn == "old") + [{"role": "assistant", "content": "ok"}] + turn(2, signed_turn == "current")


def test_a_signed_call_of_the_current_turn_goes_back_with_its_signature() -> None:
    for where, refused in (("current", True), ("old", False)):
        sent = formats.load(gemini_chat(where), "openai-chat")
        at = 5 if where == "current" else 1
        dropped = [m for k, m in enumerate(sent) if k not in (at, at + 1)]
        verdict = check(sent, dropped, "gemini-3-pro")
        assert verdict.passes is not refused, verdict.summary()
        if refused:
            assert verdict.refused[0].rule == "thought-signature"


# --- the compactor: thinking policies, and the check before adoption ---------------------------------------

def long_thinking_loop(pairs: int = 12, ends_in_loop: bool = False, last: int | None = None) -> list:
    """A long tool loop with thinking on every third call (up to call `last`)."""
    messages = [msg("u0", "user", text("Survey the repository."))]
    for k in range(1, pairs + 1):
        thinks = k % 3 == 0 and (last is None or k <= last)
        blocks = (thought(f"Next, file {k}."), call(f"c{k}")) if thinks else (call(f"c{k}"),)
        messages += [msg(f"a{k}", "assistant", *blocks), msg(f"r{k}", "user", result(f"c{k}"))]
    if not ends_in_loop:
        messages += [msg("end", "assistant", text("Surveyed.")), msg("next", "user", text("Now fix it."))]
    return messages


def plan_for(messages: list, model: str | None, policy: str, **kw) -> object:
    config = CompactionConfig(eligible_tools=frozenset({"read"}), cost_gate=False, target_reduction=0.5,
                              model=model, thinking_policy=policy, **kw)
    return Compactor(ReplayJudge({}, default=0.05), config, ExecutionOptions(Mode.SHADOW)).plan_sync(messages)


def test_strip_is_the_default_and_its_plan_passes_the_check() -> None:
    sent = long_thinking_loop()
    assert CompactionConfig().thinking_policy is ThinkingPolicy.STRIP
    decision = plan_for(sent, FABLE, "strip")
    plan = decision.plan
    assert decision.status is Status.DECIDED and plan.thinking_stripped > 0
    assert check(sent, plan.messages, FABLE).passes
    older = plan_for(sent, OPUS_46, "strip").plan  # no prefix check: thinking stays where it was
    assert older.thinking_stripped == 0 and sum(isinstance(b, ThinkingBlock) for m in older.messages for b in m.content) == 4


def test_append_only_changes_nothing_before_the_last_thinking() -> None:
    sent = long_thinking_loop(18, last=9)
    decision = plan_for(sent, FABLE, "append-only")
    last = max(i for i, m in enumerate(sent) if any(isinstance(b, ThinkingBlock) for b in m.content))
    plan = decision.plan
    assert plan is not None and all(a is b for a, b in zip(plan.messages[:last + 1], sent[:last + 1], strict=True))
    assert any("binds to its prefix" in v.pinned for v in plan.pairs_table())
    assert check(sent, plan.messages, FABLE).passes


def test_drop_block_keeps_the_thinking_and_its_request_asks_for_drop_block(tmp_path) -> None:
    sent = long_thinking_loop()
    plan = plan_for(sent, FABLE, "drop-block").plan
    assert plan.thinking_stripped == 0
    assert sum(isinstance(b, ThinkingBlock) for m in plan.messages for b in m.content) == 4
    assert check(sent, plan.messages, FABLE, "drop-block").passes
    assert not check(sent, plan.messages, FABLE, "strip").passes  # without drop_block, a 400
    body = {"model": FABLE, "max_tokens": 1000, "thinking": {"type": "adaptive"},
            "messages": formats.dump(sent, "anthropic")}
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    ran = cli(["compact", str(path), "--mode", "enforce", "--eligible-tools", "read", "--target-reduction", "0.5",
               "--no-cost-gate", "--thinking-policy", "drop-block", "--archive", str(tmp_path / "a"),
               "--user", "u", "--agent", "a", "--session", "s", "--judge", "local", "-q"], text=True)
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["status"] == "DECIDED"
    assert out["messages"]["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}


def test_thinking_in_the_turn_in_progress_holds_everything_before_it() -> None:
    sent = long_thinking_loop(12, ends_in_loop=True)  # the loop's latest call (c12) carries thinking
    decision = plan_for(sent, FABLE, "strip", preserve_recent_messages=2)
    assert decision.status is Status.SKIPPED and decision.reason is Reason.NO_CANDIDATES
    sent = long_thinking_loop(11, ends_in_loop=True)  # c11 carries none: the plan may go on
    decision = plan_for(sent, FABLE, "strip", preserve_recent_messages=2)
    assert decision.status is Status.DECIDED and check(sent, decision.plan.messages, FABLE).passes


def test_a_plan_the_provider_would_refuse_is_never_adopted(monkeypatch, tmp_path) -> None:
    import jev.running.compactor
    monkeypatch.setattr(jev.running.compactor, "strip_thinking", lambda sent, proposed: (list(proposed), 0))  # a broken strip
    from archive import FileArchive, Scope
    sent = long_thinking_loop()
    config = CompactionConfig(eligible_tools=frozenset({"read"}), cost_gate=False, target_reduction=0.5, model=FABLE)
    compactor = Compactor(ReplayJudge({}, default=0.05), config, ExecutionOptions(Mode.ENFORCE),
                          FileArchive(tmp_path / "archive"))
    decision = compactor.plan_sync(sent, scope=Scope("u", "a", "s"))
    assert (decision.status, decision.reason) == (Status.INCONCLUSIVE, Reason.PROVIDER_REFUSES)
    assert "claude-fable-5-1 would refuse it: preserved-thinking at messages[" in decision.detail
    assert compactor.compact_sync(sent, scope=Scope("u", "a", "s")) == sent


def test_a_stripped_history_writes_back_in_every_form_with_its_blocks_aligned() -> None:
    raw = [{"role": "user", "content": "go"},
           {"role": "assistant", "content": [{"type": "thinking", "thinking": "plan", "signature": "s1"},
                                             {"type": "text", "text": "Reading."},
                                             {"type": "tool_use", "id": "c1", "name": "read", "input": {}}]},
           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "x"}]},
           {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "abc"},
                                             {"type": "text", "text": "Done."}]}]
    sent = formats.load(raw, "anthropic")
    stripped, n = strip_thinking(sent, [*sent[:2], cut_result(sent, 2)[2], sent[3]])
    assert n == 1
    assert formats.dump(stripped, "anthropic")[3] == {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    assert formats.dump(stripped, "anthropic")[1] == raw[1]
    for form in ("openai-chat", "openai-responses", "langchain"):
        formats.dump(stripped, form)  # writes: nothing misaligned raises


# --- the CLI ------------------------------------------------------------------------------------------------

def test_jev_check_names_what_the_provider_would_refuse(tmp_path) -> None:
    sent = tool_loop()
    a, b = tmp_path / "sent.json", tmp_path / "proposed.json"
    a.write_text(json.dumps(formats.dump(sent, "anthropic")))
    b.write_text(json.dumps(formats.dump(cut_result(sent, 2), "anthropic")))
    ran = cli(["check", str(a), str(b), "--model", FABLE], text=True)
    assert ran.returncode == 1
    out = json.loads(ran.stdout)
    assert out["passes"] is False and out["violations"][0]["rule"] == "preserved-thinking"
    assert out["violations"][0]["path"] == "messages[3].content[0]" and "refused by claude-fable-5-1" in ran.stderr
    assert cli(["check", str(a), str(b), "--model", OPUS_46]).returncode == 0
    assert cli(["check", str(a), str(b), "--model", FABLE, "--thinking-policy", "drop-block"]).returncode == 0
    bad = cli(["check", str(a), str(b), "--thinking-policy", "never"], text=True)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


@pytest.mark.parametrize("command", ["compact", "cost", "replay"])
def test_compact_cost_and_replay_take_the_model_and_the_thinking_policy(command) -> None:
    ran = cli([command, "--help"], text=True)
    assert "--model" in ran.stdout and "--thinking-policy" in ran.stdout and "default: strip" in ran.stdout


def test_a_config_names_a_bad_thinking_policy() -> None:
    from jev.errors import ConfigError
    with pytest.raises(ConfigError, match="thinking_policy must be one of strip, drop-block, append-only"):
        CompactionConfig(thinking_policy="keep")
    with pytest.raises(ConfigError, match="model"):
        CompactionConfig(model="  ")


def test_jev_cost_counts_the_thinking_a_policy_strips(tmp_path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "s.json").write_text(json.dumps(formats.dump(long_thinking_loop(18), "anthropic")))
    stripped = {}
    for policy in ("strip", "drop-block"):
        ran = cli(["cost", str(folder), "--trigger-tokens", "4000", "--target-tokens", "2000", "--eligible-tools", "read",
                   "--model", FABLE, "--thinking-policy", policy, "--no-labels", "-q"], text=True)
        assert ran.returncode == 0, ran.stderr
        rows = json.loads(ran.stdout)["policies"]
        jev_row = next(row for name, row in rows.items() if name.startswith("jev"))
        assert jev_row["compactions_adopted"] > 0 and rows["no compaction"]["thinking_stripped"] == 0
        stripped[policy] = (jev_row["thinking_stripped"], jev_row["tokens_sent"])
    assert stripped["strip"][0] > 0 and stripped["drop-block"][0] == 0
    assert stripped["strip"][1] < stripped["drop-block"][1]  # what it strips is not sent (nor billed)
