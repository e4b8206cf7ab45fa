"""Prompt-cache cost (issue 36): the cost model on hand-computed cases, the gate both ways, placement, the
thinking rule, deep and rare compactions in the integrations' core, and the billed replay."""

from __future__ import annotations

import math

import pytest
from conftest import SCOPE, ScriptedJudge, call, msg, reference_config, reference_messages, result, text

from archive import FileArchive, MemoryStore, StoreArchive
from jev import (
    Action,
    CompactionConfig,
    Compactor,
    ConfigError,
    ExecutionOptions,
    Mode,
    Reason,
    Status,
    formats,
)
from jev.deciding.cost import (
    PROFILES,
    PricingProfile,
    cheapest_start,
    estimate,
    first_change,
    horizon_from_history,
    message_tokens,
    pricing,
    tokens_of,
)
from jev.model.transcript import Message, TextBlock


def words(n: int) -> str:
    """`n` tokens exactly under SPEC §4's estimate: n six-letter words."""
    return " ".join(["abcdef"] * n)


def history(*sizes: int) -> list[Message]:
    return [msg(f"m{k}", "user" if k % 2 == 0 else "assistant", text(words(n))) for k, n in enumerate(sizes)]


def test_tokens_are_spec_estimates_plus_a_fixed_cost_per_message() -> None:
    assert message_tokens(msg("a", "user", text("hello world"))) == 4 + 2
    assert tokens_of(history(10, 20, 30)) == 3 * 4 + 60
    image = msg("i", "user", text("see"), __import__("jev").OtherBlock(
        {"type": "image", "source": {"type": "base64", "data": "A" * 100_000}}))
    assert message_tokens(image) == 4 + 1 + 1_600  # billed by its pixels, not its base64


def test_the_estimate_by_hand() -> None:
    """A 4-message history of 100 tokens each (104 with the message cost); the compaction empties message 1
    (cut to 10 tokens): the next call re-bills messages 1..3 (14 + 104 + 104 = 222 tokens) at 1.25 instead
    of reading 312 at 0.1; each later call reads 90 tokens fewer at 0.1."""
    before = history(100, 100, 100, 100)
    after = [before[0], history(10, 10)[1], before[2], before[3]]
    cost = estimate(before, after, horizon=10, profile="anthropic-5m")
    assert (cost.first_change, cost.replaced, cost.rebilled, cost.freed) == (1, 312, 222, 90)
    assert cost.extra == pytest.approx(222 * 1.25 - 312 * 0.1)  # 246.3
    assert cost.saving == pytest.approx(9.0)
    assert cost.break_even == pytest.approx(246.3 / 9.0)
    assert cost.net == pytest.approx(246.3 - 9 * 9.0) and not cost.pays
    assert estimate(before, after, horizon=40).pays  # 246.3 - 39 * 9 < 0
    assert estimate(before, after, horizon=1, cold=True).net == pytest.approx(222 * 1.25 - 312 * 1.25)  # pays at once
    plain = estimate(before, after, horizon=3, profile="no-cache")  # no cache: -freed on every call
    assert plain.net == pytest.approx(-3 * 90)


def test_a_token_count_wrong_by_the_same_factor_everywhere_leaves_the_gate_where_it_was() -> None:
    """The README's claim behind "SPEC's estimate reads Anthropic's tokens 15 % low": the break-even is the
    re-billed tokens' extra cost over the freed tokens' saving, and the net their difference, so counting
    every message 1.15x (or 3x) scales both and moves neither the break-even nor the verdict."""
    before = history(100, 40, 300, 100, 20, 100)
    after = [*before[:2], history(10, 10)[1], *before[3:]]
    for horizon in (2, 5, 12, 40):
        for profile in ("anthropic-5m", "anthropic-1h", "openai"):
            base = estimate(before, after, horizon, profile)
            for factor in (1.15, 3):
                off = estimate(before, after, horizon, profile, count=lambda m, f=factor: message_tokens(m) * f)
                assert off.break_even == pytest.approx(base.break_even, rel=1e-12)
                assert off.pays is base.pays and off.net == pytest.approx(base.net * factor, rel=1e-12)
    assert {estimate(before, after, h).pays for h in (2, 40)} == {False, True}  # the cases hold both verdicts


def test_profiles_and_your_own() -> None:
    assert set(PROFILES) == {"anthropic-5m", "anthropic-1h", "openai", "no-cache"}
    mine = PricingProfile("gateway", cache_read=0.2, cache_write=1.1, lifetime=120)
    assert pricing(mine) is mine and pricing("openai").cache_write == 1.0
    with pytest.raises(ConfigError, match="cache_read must be <= cache_write"):
        PricingProfile("odd", cache_read=2.0, cache_write=1.0, lifetime=1)
    with pytest.raises(ConfigError, match="pricing must be one of"):
        CompactionConfig(pricing="cheap")
    assert CompactionConfig(pricing="openai").pricing is PROFILES["openai"]


def test_first_change_and_the_cheapest_start() -> None:
    before = history(100, 100, 100, 100)
    assert first_change(before, before) == 4 and first_change(before, before[:2]) == 2
    tokens = [104] * 4
    # letting go of 90 tokens at message 1 re-bills 3 messages; of 90 at message 3, one: the late one pays first
    assert cheapest_start(tokens, [(1, 90.0), (3, 90.0)], horizon=5)[0] == 3
    assert cheapest_start(tokens, [(1, 90.0)], horizon=1) == (4, 0.0)  # nothing pays: start past the end


def test_the_horizon_rule() -> None:
    assert horizon_from_history(history(*([1] * 30))) == 5  # 15 assistant messages, a third
    assert horizon_from_history(history(1)) == 1
    assert horizon_from_history(history(*([1] * 100))) == 10  # 50 made: at most ten
    assert horizon_from_history(history(*([1] * 30)), calls_left=2) == 2  # the host's limit bounds it
    assert horizon_from_history(history(*([1] * 30)), calls_left=0) == 1  # the coming call always counts


def compactor(judge, mode=Mode.ENFORCE, archive=None, **config) -> Compactor:
    return Compactor(judge, reference_config(cost_gate=True, **config), ExecutionOptions(mode, 5.0, "t"), archive)


def test_the_gate_refuses_what_would_raise_the_bill_and_adopts_what_pays(tmp_path) -> None:
    archive = FileArchive(tmp_path)
    judge = ScriptedJudge(lambda q: 0.01 if q.endswith("t1") else 0.99)  # drop the obsolete read (early)
    refused = compactor(judge, archive=archive).plan_sync(reference_messages(), scope=SCOPE, horizon=2)
    assert (refused.status, refused.reason) == (Status.INCONCLUSIVE, Reason.UNPROFITABLE)
    assert refused.plan.messages == tuple(reference_messages()) and not archive.snapshots(SCOPE)  # nothing archived
    assert refused.plan.cost.net > 0 and "re-bills" in refused.detail and "the horizon is 2" in refused.detail
    adopted = compactor(judge, archive=archive).plan_sync(reference_messages(), scope=SCOPE, horizon=100)
    assert adopted.status is Status.DECIDED and adopted.plan.cost.pays and archive.snapshots(SCOPE)
    assert adopted.recommendation["reduction"]  # the record carries the plan's figures
    shadow = compactor(judge, Mode.SHADOW).plan_sync(reference_messages(), horizon=2)  # SHADOW says what ENFORCE would
    assert shadow.reason is Reason.UNPROFITABLE


def test_no_cache_pricing_reduces_the_gate_to_minimum_reduction_and_budget_mode_is_never_gated() -> None:
    judge = ScriptedJudge(lambda q: 0.01 if q.endswith("t1") else 0.99)
    assert compactor(judge, Mode.SHADOW, pricing="no-cache").plan_sync(reference_messages(), horizon=1).status \
        is Status.DECIDED
    budget = compactor(judge, Mode.SHADOW, target_reduction=0.5).plan_sync(reference_messages(), horizon=1)
    assert budget.status is Status.DECIDED and not budget.plan.cost.pays  # the host's need: adopted anyway
    idle = compactor(judge, Mode.SHADOW).plan_sync(reference_messages(), horizon=1, idle_seconds=3600)
    assert idle.status is Status.DECIDED  # the cache is cold: nothing is re-billed that would not be
    with pytest.raises(ConfigError, match="horizon must be an integer >= 1"):
        compactor(judge, Mode.SHADOW).plan_sync(reference_messages(), horizon=0)


def test_placement_keeps_early_let_gos_when_a_later_start_pays_more() -> None:
    """Two obsolete reads: one early (message 1), one late; with a short horizon only the late one pays,
    so the early one stays (CACHED_PREFIX) and the cached prefix up to the late one is kept."""
    messages = [msg("task", "user", text("task")),
                msg("c1", "assistant", call("early")), msg("r1", "tool", result("early", output=words(300))),
                *[msg(f"x{k}", "user" if k % 2 else "assistant", text(words(400))) for k in range(6)],
                msg("c2", "assistant", call("late")), msg("r2", "tool", result("late", output=words(3000))),
                msg("end", "user", text("go on"))]
    decision = compactor(ScriptedJudge(0.01), Mode.SHADOW, tombstones=True).plan_sync(messages, horizon=4)
    assert decision.status is Status.DECIDED, decision.detail
    assert decision.plan.decisions == {"t1": Action.KEEP, "t2": Action.DROP_PAIR}
    assert decision.plan.scores["t1"].reason == "CACHED_PREFIX"
    assert decision.plan.cost.first_change == 9 and decision.plan.messages[:9] == tuple(messages[:9])


def thinking_history() -> list[Message]:
    """Anthropic's shape: the assistant thinks, then calls; the result comes in the user's next message."""
    return formats.load([
        {"role": "user", "content": "Fix the parser."},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "read it first", "signature": "sig"},
                                          {"type": "tool_use", "id": "toolu_1", "name": "Read",
                                           "input": {"file_path": "p.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1\n" * 400}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": "go on"},
    ], "anthropic")


def test_a_call_in_a_thinking_message_leaves_its_result_truncatable_never_droppable() -> None:
    messages = thinking_history()
    decision = Compactor(ScriptedJudge(0.01), CompactionConfig(eligible_tools=frozenset({"Read"}),
                                                               preserve_recent_messages=2, cost_gate=False),
                         ExecutionOptions(Mode.SHADOW, 5.0)).plan_sync(messages)
    assert decision.plan.decisions == {"t1": Action.TRUNCATE_RESULT}  # the scores say drop; the call stays
    compacted = decision.plan.messages
    assert compacted[1] is messages[1]  # the thinking message: the very same object, its bytes unchanged
    written = formats.dump(list(compacted), "anthropic")
    assert written[1] == formats.dump(messages, "anthropic")[1]
    cut = written[2]["content"][0]["content"]
    assert (cut if isinstance(cut, str) else cut[0]["text"]).endswith("do not re-execute this tool for recovery.]")
    budget = Compactor(ScriptedJudge(0.01), CompactionConfig(eligible_tools=frozenset({"Read"}),
                                                             preserve_recent_messages=2, target_reduction=0.9),
                       ExecutionOptions(Mode.SHADOW, 5.0)).plan_sync(messages)
    assert budget.plan.decisions == {"t1": Action.TRUNCATE_RESULT}


def test_a_later_plan_never_rewrites_an_earlier_plans_markers_or_tombstones() -> None:
    """Two plans, the second on the first's history grown by a pair: every message the first wrote comes
    back byte for byte (the same objects), and its cut result is pinned rather than cut again."""
    config = reference_config(truncate_head_chars=30, tombstones=True)
    judge = ScriptedJudge(lambda q: 0.99 if q.startswith("call_t2") else 0.01)
    first = Compactor(judge, config, ExecutionOptions(Mode.SHADOW, 5.0)).plan_sync(reference_messages())
    assert set(first.plan.decisions.values()) >= {Action.DROP_PAIR, Action.TRUNCATE_RESULT}
    grown = [*first.plan.messages[:-1], msg("c9", "assistant", call("next")),
             msg("r9", "tool", result("next")), first.plan.messages[-1]]
    second = Compactor(judge, config, ExecutionOptions(Mode.SHADOW, 5.0)).plan_sync(grown)
    kept = {id(m) for m in second.plan.messages}
    assert all(id(m) in kept for m in first.plan.messages if m not in reference_messages())  # markers, tombstones
    cut = next(v for v in second.plan.pairs_table() if v.call_id == "preview")
    assert cut.pinned == "already cut by an earlier plan"


def test_the_host_core_compacts_deep_and_rarely() -> None:
    """After a plan, the next waits for the next multiple of the trigger above what the history holds now."""
    from jev.integrations.core import HostCompaction
    host = HostCompaction(Compactor(ScriptedJudge(0.5)), trigger=100, horizon=7)
    assert not host.due(99) and host.due(100)
    host.planned(130)  # not adopted: the history still holds 130
    assert not host.due(199) and host.due(200)
    host.planned(40)  # adopted, down to 40: fires again once the history is back past 100
    assert not host.due(99) and host.due(100)
    assert host.horizon_for(None) == 7 and HostCompaction(Compactor(ScriptedJudge(0.5)), horizon=len).horizon_for(
        [1, 2]) == 2
    with pytest.raises(ConfigError, match="horizon must be an integer >= 1"):
        HostCompaction(Compactor(ScriptedJudge(0.5)), horizon=0)


def test_the_replay_bills_each_policy_on_the_same_calls() -> None:
    """By hand: four calls over a growing history with no compaction read all but the newest messages."""
    from jev.billing import ClearBatched, ClearEachCall, JevCompaction, NoCompaction, replay
    messages = [msg("u0", "user", text(words(50)))]
    for k in range(1, 5):
        messages += [msg(f"c{k}", "assistant", call(f"r{k}")), msg(f"t{k}", "tool", result(f"r{k}", output=words(500)))]
    messages.append(msg("end", "assistant", text("done")))
    bills = replay(messages, [NoCompaction()], "anthropic-5m")
    base = bills["no compaction"]
    assert base.calls == 5  # every assistant message but a first one is a call
    sizes = [message_tokens(m) for m in messages]
    sent = [sum(sizes[:i]) for i in (1, 3, 5, 7, 9)]
    assert base.sent == sum(sent) and base.read == sum(sent[:-1])  # each reads the request before it
    assert base.billed == pytest.approx(sum(sent[:-1]) * 0.1 + (sum(sent) - sum(sent[:-1])) * 1.25)
    jev = Compactor(ScriptedJudge(0.01), reference_config(tombstones=True, cost_gate=False),
                    ExecutionOptions(Mode.ENFORCE, 5.0), StoreArchive(MemoryStore()))
    bills = replay(messages, [NoCompaction(), ClearEachCall(600), ClearBatched(600, 300),
                              JevCompaction(jev, 600)], "anthropic-5m")
    each, batched, judged = bills["clear each call (keep 3)"], bills["clear batched (to 300, keep 3)"], bills["jev"]
    assert each.sent < base.sent and batched.sent < base.sent and judged.adopted >= 1
    assert {key for key, _ in batched.let_go} and all(point >= 0 for _, point in judged.let_go)
    assert math.isclose(bills["no compaction"].billed, base.billed)


def test_a_fixed_prefix_is_written_on_the_first_call_and_after_a_cold_gap_and_read_on_every_other() -> None:
    """By hand: what every request carries before the history (a system prompt, tool definitions) is billed
    alike under every policy: written (1.25x) on the first call and on one that comes after the cache went
    cold, read (0.1x) on the others; `Bill.prefix` is that part of the bill, so the history's bill is the
    same with the prefix as without it."""
    from jev.billing import NoCompaction, replay, replayed
    stamps = ["2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z", "2026-01-01T00:00:20Z", "2026-01-01T00:20:00Z"]
    messages = [msg("u0", "user", text(words(50)))]
    for k, stamp in enumerate(stamps, 1):
        messages += [msg(f"c{k}", "assistant", call(f"r{k}"), timestamp=stamp),
                     msg(f"t{k}", "tool", result(f"r{k}", output=words(300)))]
    bare = replay(messages, [NoCompaction()], "anthropic-5m")["no compaction"]
    with_prefix = replay(messages, [NoCompaction()], "anthropic-5m", prefix=1000)["no compaction"]
    # calls 1 and 4 write it (first; 20 minutes idle, past the 5-minute cache), calls 2 and 3 read it
    assert with_prefix.prefix == pytest.approx(2 * 1000 * 1.25 + 2 * 1000 * 0.1)
    assert with_prefix.billed - with_prefix.prefix == pytest.approx(bare.billed)
    assert with_prefix.sent == bare.sent + 4 * 1000 and with_prefix.read == bare.read + 2 * 1000
    assert with_prefix.largest == bare.largest + 1000
    with pytest.raises(ConfigError, match="prefix must be an integer >= 0"):
        replay(messages, [NoCompaction()], "anthropic-5m", prefix=-1)
    # priced after the replay (what `jev cost --prefix-tokens auto` does once it has fitted the prefix): the
    # same bills, and pricing one run again and again adds nothing to it
    run = replayed(messages, [NoCompaction()], "anthropic-5m")["no compaction"]
    assert run.priced(1000) == with_prefix and run.priced(0) == bare and run.priced(1000) == with_prefix
    assert run.priced(0, window=1) == replay(messages, [NoCompaction()], "anthropic-5m", window=1)["no compaction"]
    assert run.priced(0, window=1).over_window == 4 and run.bill.calls == 0


def test_the_replay_counts_a_trigger_as_each_integration_does() -> None:
    """The integrations' default triggers count messages (LangChain, the Agents SDK) or tool results
    (AgentScope), not tokens: the replay fires when that count passes the trigger, and not again until it
    passes the next multiple; any other unit is refused by name."""
    from jev.billing import JevCompaction, replay
    messages = [msg("u0", "user", text(words(50)))]
    for k in range(1, 9):
        messages += [msg(f"c{k}", "assistant", call(f"r{k}")), msg(f"t{k}", "tool", result(f"r{k}", output=words(500)))]
    messages.append(msg("end", "assistant", text("done")))

    def events(trigger: int, unit: str) -> int:
        jev = Compactor(ScriptedJudge(0.99), reference_config(cost_gate=False), ExecutionOptions(Mode.ENFORCE, 5.0),
                        StoreArchive(MemoryStore()))  # keeps everything: the count only grows
        return replay(messages, [JevCompaction(jev, trigger, unit=unit, name="j")], "anthropic-5m")["j"].events

    # calls see 1, 3, ..., 17 messages (0..8 results): 6 messages first passed at the 4th call, then 12, then 18
    assert events(6, "messages") == 2
    assert events(3, "tool_results") == 2  # 3 results at the 4th call, 6 at the 7th
    assert events(10**6, "tokens") == 0
    with pytest.raises(ValueError, match="unit must be one of tokens, messages, tool_results"):
        JevCompaction(Compactor(ScriptedJudge(0.5), reference_config(), ExecutionOptions(Mode.ENFORCE, 5.0),
                                StoreArchive(MemoryStore())), 5, unit="turns")


def test_jev_cost_replays_every_form_and_reports_each_policy(tmp_path) -> None:
    """Issue 36 item 5: `jev cost` on a folder holding a mini-swe-agent trajectory, a Claude Code session and
    a chat history: one row per policy with sent and billed ratios, cache reads, compactions adopted and
    refused, the largest request, requests over the window, needed results let go, and a plot."""
    import json
    import shutil
    from pathlib import Path

    from conftest import cli, long_history
    from test_claude_code import continued_session
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copy(Path(__file__).parent / "data" / "mini_swe_agent_responses.traj.json", sessions / "a.traj.json")
    (sessions / "b.jsonl").write_text("\n".join(json.dumps(e) for e in continued_session()))
    (sessions / "c.json").write_text(json.dumps(formats.dump(long_history(40), "openai-chat")))
    proc = cli(["cost", str(sessions), "--trigger-tokens", "3000", "--target-tokens", "1500", "--window", "4000",
                "--eligible-tools", "bash,read,Read,Bash", "--plot", str(tmp_path / "cost.png"),
                "--out", str(tmp_path / "cost.json")])
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "cost.json").read_text())
    assert report["sessions"] == 3 and report["profile"] == "anthropic-5m" and not report["unreadable"]
    rows = report["policies"]
    assert list(rows) == ["no compaction", "clear each call (keep 3)", "clear batched (to 1,500, keep 3)",
                          "jev (budget to 1,500)", "jev (budget to 1,500), warm triggers only"]
    base = rows["no compaction"]
    assert base["billed_ratio"] == 1.0 and base["needed_results_let_go"]["labels-v1"] == 0
    for _name, row in rows.items():
        assert row["calls"] == base["calls"] and 0 < row["cache_read_share"] <= 1
        assert row["largest_request"] <= base["largest_request"] and "requests_over_window" in row
    assert rows["jev (budget to 1,500)"]["compactions_adopted"] >= 1
    # with a target, the compactor's trigger events and those that ended over it (each saying why)
    events = rows["jev (budget to 1,500)"]["target_events"]
    assert events["events"] >= rows["jev (budget to 1,500)"]["compactions_adopted"]
    assert 0 <= events["over_target"] <= events["events"] and events["over_target_without_reason"] == 0
    assert all("target_events" not in row for name, row in rows.items() if not name.startswith("jev"))
    assert (f"jev (budget to 1,500): {events['over_target']} of {events['events']} trigger events ended over 1,500 "
            "tokens, each plan saying why") in proc.stderr.decode()
    assert rows["jev (budget to 1,500)"]["sent_ratio"] < 1 and rows["clear each call (keep 3)"]["sent_ratio"] < 1
    assert (tmp_path / "cost.png").read_bytes()[:4] == b"\x89PNG"
    shown = proc.stderr.decode()  # headers a word a line, so that no figure is cut at 80 columns
    assert all(word in shown for word in ("billed", "×", "needed", "(v1)"))
    bad = cli(["cost", str(sessions), "--trigger-tokens", "100", "--target-tokens", "200"])
    assert bad.returncode == 2 and b"--target-tokens must be below --trigger-tokens" in bad.stderr
    # a host's fixed prefix on every request: billed alike under every policy, so every ratio moves toward 1
    proc = cli(["cost", str(sessions), "--trigger-tokens", "3000", "--eligible-tools", "bash,read,Read,Bash",
                "--no-labels", "--prefix-tokens", "20000", "--out", str(tmp_path / "prefixed.json")])
    assert proc.returncode == 0, proc.stderr
    prefixed = json.loads((tmp_path / "prefixed.json").read_text())
    assert prefixed["prefix_tokens"] == 20000 and report["prefix_tokens"] == 0
    assert "20,000 prefix tokens a request" in " ".join(proc.stderr.decode().split())
    each = prefixed["policies"]["clear each call (keep 3)"]
    before = rows["clear each call (keep 3)"]["billed_ratio"]
    assert 0 < abs(each["billed_ratio"] - 1) < abs(before - 1) and (each["billed_ratio"] > 1) == (before > 1)
    assert each["tokens_sent"] == rows["clear each call (keep 3)"]["tokens_sent"] + 20000 * each["calls"]
    bad = cli(["cost", str(sessions), "--prefix-tokens", "-5"])
    assert bad.returncode == 2 and b"--prefix-tokens must be an integer >= 0" in bad.stderr


def test_tokens_each_equals_tokens_of_one_message_at_a_time() -> None:
    """The plan's new messages are measured together (one vectorised pass): the same figure as measuring
    each alone, for plain text, digits, symbols, non-ASCII text, letter runs at the edges and empty text."""
    import random

    from jev.deciding.cost import tokens_each, tokens_of
    rng = random.Random(7)
    alphabet = "abcXYZ 0189_./-:\n\té漢🙂" + "q" * 20
    texts = ["", "a", "abcdefg", "  x", "12.5%", "end with letters abcdefghijklm"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 3000))) for _ in range(60)]
    messages = [Message(f"m{k}", "user", (TextBlock(t),)) for k, t in enumerate(texts)]
    assert tokens_each(messages) == [tokens_of((m,)) for m in messages]
    assert sum(tokens_each(messages[:3])) == sum(tokens_of((m,)) for m in messages[:3])  # the short path too


def test_history_tokens_of_a_grown_history_measure_only_the_new_samples(monkeypatch) -> None:
    """The per-character rates are sampled over evenly spaced messages; given the counts of the history it
    grew from, only samples they had not measured are measured, and every figure is a fresh measure's. Given
    counts of another history, it measures afresh."""
    import jev.deciding.cost
    from jev.deciding.cost import SAMPLE_CHARS, HistoryTokens
    from jev.reading.analysis import analyze, extend
    messages = [msg("task", "user", text("Fix the parser. " * 20))]
    for k in range(160):
        messages += [msg(f"c{k}", "assistant", call(f"r{k}", input={"path": f"src/m{k}.py"})),
                     msg(f"o{k}", "tool", result(f"r{k}", f"line {k}: value_{k} = compute({k})\n" * (90 + k % 17)))]
    whole = analyze(messages)
    assert sum(whole.sizes) > 2 * SAMPLE_CHARS  # sampled, not measured whole
    fresh = HistoryTokens(whole)
    for cut in (101, 250, len(messages) - 1):
        part = analyze(messages[:cut])
        earlier = HistoryTokens(part)
        measured: list[int] = []
        real = jev.deciding.cost._billed
        monkeypatch.setattr(jev.deciding.cost, "_billed", lambda blocks: measured.append(1) or real(blocks))
        grown = HistoryTokens(extend(part, messages), earlier)
        monkeypatch.setattr(jev.deciding.cost, "_billed", real)
        assert grown.per_char == fresh.per_char and grown.sampled == fresh.sampled
        assert grown.of_history() == fresh.of_history() and list(map(grown, messages)) == fresh.of_history()
        assert len(measured) == len(set(fresh.sampled) - set(earlier.sampled)) < len(fresh.sampled)
        measured.clear()
        monkeypatch.setattr(jev.deciding.cost, "_billed", lambda blocks: measured.append(1) or real(blocks))
        unrelated = HistoryTokens(whole, earlier)  # not grown from `part`'s transcript: measured afresh
        monkeypatch.setattr(jev.deciding.cost, "_billed", real)
        assert len(measured) == len(fresh.sampled) and unrelated.of_history() == fresh.of_history()


def test_history_tokens_sample_each_role_apart_so_an_even_stride_does_not_see_one_role_alone() -> None:
    """A call, its result, the next call: with an even stride, a sample by position alone would read only
    the calls' messages and price the results' dense output at the calls' prose rate. Each role is sampled
    apart, at its own rate: the estimate stays within 1 % of measuring every message, each role too."""
    from jev.deciding.cost import SAMPLE_CHARS, HistoryTokens, tokens_each
    from jev.reading.analysis import analyze
    messages = [msg("task", "user", text("Fix the parser in the reporting module. " * 10))]
    for k in range(330):
        messages += [msg(f"c{k}", "assistant", text("Looking at the next module to see how the values are read. " * 4),
                         call(f"r{k}", input={"path": f"m{k}.py"})),
                     msg(f"o{k}", "tool", result(f"r{k}", f"{k:04d}: 3.14, -2.71, [0x1f] {{k}}; 9, 8, 7\n" * 60))]
    t = analyze(messages)
    assert sum(t.sizes) > 2 * SAMPLE_CHARS and (sum(t.sizes) // SAMPLE_CHARS) % 2 == 0  # sampled, an even stride
    tokens = HistoryTokens(t)
    assert {messages[k].role for k in tokens.sampled} == {"user", "assistant", "tool"}
    estimated, measured = tokens.of_history(), tokens_each(messages)
    assert sum(estimated) == pytest.approx(sum(measured), rel=0.01)
    for role in ("assistant", "tool"):
        mine = [k for k, m in enumerate(messages) if m.role == role]
        assert sum(estimated[k] for k in mine) == pytest.approx(sum(measured[k] for k in mine), rel=0.01)


def test_history_tokens_measure_every_message_of_a_history_under_the_sample_and_keep_media_out_of_the_rate(
) -> None:
    """Under `SAMPLE_CHARS` every message is measured, so each one's count is its own (not the history's
    average rate times its characters), and a message holding an image is measured whole: its base64
    characters and its 1 600 tokens never enter the rate the other messages are priced at."""
    from jev.deciding.cost import MESSAGE_TOKENS, HistoryTokens, tokens_each
    from jev.model.transcript import OtherBlock
    from jev.reading.analysis import analyze, extend
    image = OtherBlock({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                              "data": "iVBORw0KGgo" * 2000}})
    messages = [msg("task", "user", text("Make the chart match the screenshot."), image),
                msg("a1", "assistant", text("Reading the plotting code first."), call("r1")),
                msg("o1", "tool", result("r1", "def plot(values):\n    return [v * 2 for v in values]\n" * 40)),
                msg("a2", "assistant", call("r2")),
                msg("o2", "tool", result("r2", (TextBlock("the rendered chart:"), image)))]
    t = analyze(messages)
    assert t.mixed_results == {4} and t.opaque == {0}  # the image result's message; the pasted image's
    assert extend(analyze(messages[:4]), messages).mixed_results == extend(analyze(messages[:2]), messages).mixed_results == {4}
    tokens = HistoryTokens(t)
    assert tokens.of_history() == tokens_each(messages)
    text_only = messages[1:4]  # the rate is theirs: their tokens over their characters
    assert tokens.per_char == pytest.approx((sum(tokens_each(text_only)) - MESSAGE_TOKENS * len(text_only))
                                            / sum(t.sizes[1:4]), rel=0.01)


def test_jev_cost_replays_each_stretch_of_a_session_claude_code_compacted_as_its_own_conversation(tmp_path) -> None:
    """Claude Code went on from its summary alone, so the calls after a compaction re-read none of what came
    before: `jev cost` over such a session bills what its stretches, each replayed alone, bill together."""
    import json

    from conftest import cli
    from test_claude_code import compacted

    from jev.formats import claude_code
    doc = compacted()
    every = formats.conversations(doc)
    assert [len(s) for s in every] == [len(s) for s in claude_code.stretches(doc)] == [9, 3]
    assert formats.conversations(formats.dump(every[0], "jev")) == [every[0]]  # any other form: one
    whole, apart = tmp_path / "whole", tmp_path / "apart"
    whole.mkdir()
    apart.mkdir()
    (whole / "s.jsonl").write_text("\n".join(json.dumps(e) for e in doc))
    for k, messages in enumerate(every):
        (apart / f"s{k}.json").write_text(json.dumps(formats.dump(messages, "jev")))

    def billed(folder) -> dict:
        proc = cli(["cost", str(folder), "--trigger-tokens", "1000", "--eligible-tools", "Read,Bash", "-q",
                    "--out", str(tmp_path / f"{folder.name}.json")])
        assert proc.returncode == 0, proc.stderr
        report = json.loads((tmp_path / f"{folder.name}.json").read_text())
        return {name: (row["calls"], row["tokens_sent"], row["billed_input"]) for name, row in report["policies"].items()}

    assert billed(whole) == billed(apart)
    assert billed(whole)["no compaction"][0] == sum(m.role == "assistant" for s in every for m in s)


def test_a_cold_cache_plans_from_a_fifth_of_the_trigger_and_the_replay_shows_what_it_saves() -> None:
    """Issue 63 item 3: past the cache's lifetime the next call re-writes the history anyway, so a host plans
    from a fifth of its trigger on; the replay bills it (timestamps give the gaps), and "warm triggers only"
    is the same policy without it."""
    from conftest import long_history

    from archive import MemoryStore, StoreArchive
    from jev import CompactionConfig, Compactor, ExecutionOptions, Mode
    from jev.billing import JevCompaction, NoCompaction, replay
    from jev.deciding.cost import cold_trigger
    from jev.judges import ReplayJudge
    assert cold_trigger(50_000) == 10_000 and cold_trigger(3) == 1
    messages = long_history(30)
    stamped = [m.replace(timestamp=f"2026-12-01T{10 + (k >= 40):02d}:{k % 60:02d}:00Z") for k, m in enumerate(messages)]

    def policies() -> list:
        def compactor() -> Compactor:
            return Compactor(ReplayJudge({}, default=0.01), CompactionConfig(eligible_tools=frozenset({"read"}),
                             minimum_reduction=0.01), ExecutionOptions(Mode.ENFORCE, 5.0), StoreArchive(MemoryStore()))
        return [NoCompaction(), JevCompaction(compactor(), trigger, name="cold"),  # a trigger never reached
                JevCompaction(compactor(), trigger, name="warm", cold=False)]
    from jev.deciding.cost import tokens_each
    trigger = 5 * sum(tokens_each(messages[:38]))  # a fifth of it reached before the gap, the whole never
    bills = replay(stamped, policies(), "anthropic-5m")  # an hour's gap at message 40: a cold cache
    assert bills["cold"].adopted >= 1 and bills["cold"].billed < bills["warm"].billed == bills["no compaction"].billed
    assert replay(messages, policies(), "anthropic-5m")["cold"].adopted == 0  # no timestamps: no gap known


def test_a_host_plans_at_a_cold_cache_from_a_fifth_of_its_trigger(monkeypatch) -> None:
    import jev.integrations.core as core
    from jev import CompactionConfig, Compactor
    from jev.judges import ReplayJudge
    host = core.HostCompaction(Compactor(ReplayJudge({}), CompactionConfig()), trigger=50)
    now = [1000.0]
    monkeypatch.setattr(core.time, "monotonic", lambda: now[0])
    assert host.tick() is None and not host.due(20)  # the first call: no gap known
    now[0] += 60
    assert host.tick() == 60 and not host.due(20) and host.due(50)  # warm: the trigger
    now[0] += 301  # past anthropic-5m's lifetime
    assert host.tick() == 301 and host.due(10) and not host.due(9)
    uncached = core.HostCompaction(Compactor(ReplayJudge({}), CompactionConfig(pricing="no-cache")), trigger=50)
    uncached.tick()
    now[0] += 3600
    assert uncached.tick() == 3600 and not uncached.due(10)  # no cache to go cold: the trigger alone
