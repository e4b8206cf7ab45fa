"""A token target ("under N tokens") mapped onto budget mode's target_reduction."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import call, msg, result, sized_history, text

from jev import Action, CompactionConfig, Compactor, ConfigError, ExecutionOptions, Message, Mode, Status
from jev.deciding.token_target import MAX_REDUCTION, check_target_tokens, reduction_for_tokens
from jev.judges import ReplayJudge
from jev.model.transcript import ThinkingBlock
from jev.reading.history import size

CONFIG = CompactionConfig(eligible_tools=frozenset({"read"}), preserve_recent_messages=1, minimum_reduction=0.0)


def test_the_excess_becomes_a_share_of_the_candidate_results() -> None:
    messages = sized_history([4_000, 6_000, 2_000])
    total = sum(size(m) for m in messages)
    tokens = total // 4  # a host counting 4 characters a token
    r = reduction_for_tokens(messages, tokens, tokens - 1_000, CONFIG)
    # 1 000 of the host's tokens over: in SPEC §4 tokens (the host's count against the estimate of the same
    # history), then in result characters at the results' own rate, out of 12 000 candidate characters
    from jev.deciding.cost import HistoryTokens, sampled_tokens
    from jev.reading.analysis import analyze
    t = analyze(messages)
    estimated = sum(map(HistoryTokens(t), t.messages))
    per_token = 12_000 / sampled_tokens([p.result.text for p in t.pairs])
    assert r == pytest.approx(1_000 * estimated / tokens * per_token / 12_000, rel=1e-3)


def test_no_target_needed_no_candidates_or_no_transcript_gives_none() -> None:
    messages = sized_history([4_000])
    assert reduction_for_tokens(messages, 500, 500, CONFIG) is None  # already under
    assert reduction_for_tokens(messages, 5_000, 10, CompactionConfig(eligible_tools=frozenset())) is None
    broken = [msg("a", "tool", result("nope", "x"))]  # a result without its call: the plan says why
    assert reduction_for_tokens(broken, 5_000, 10, CONFIG) is None


def test_an_unreachable_target_is_capped_and_the_plan_says_where_it_fell_short() -> None:
    messages = sized_history([4_000, 6_000])
    assert reduction_for_tokens(messages, 10_000, 1, CONFIG) == MAX_REDUCTION
    # the judge is sure t2's result is needed, so not even the capped share can be let go
    compactor = Compactor(ReplayJudge({"result_t2": 0.95}, default=0.3), CONFIG, ExecutionOptions(Mode.SHADOW))
    sized = compactor.for_tokens(messages, 10_000, 1)
    assert sized is not compactor and compactor.config.target_reduction is None  # the original is untouched
    assert sized.config.target_reduction == MAX_REDUCTION and sized.judge is compactor.judge
    decision = sized.plan_sync(messages)
    assert decision.status is Status.DECIDED and decision.plan.target_met is False
    assert decision.plan.decisions == {"t1": Action.DROP_PAIR, "t2": Action.KEEP}
    assert compactor.for_tokens(messages, 10_000, None) is compactor
    assert compactor.for_tokens(messages, 100, 1_000) is compactor


@pytest.mark.parametrize("bad", [0, -5, 1.5, "100", True])
def test_target_tokens_is_checked(bad) -> None:
    with pytest.raises(ConfigError, match="target_tokens must be an integer >= 1"):
        check_target_tokens(bad)


def test_a_sized_plan_analyzes_the_history_once_and_a_changed_one_afresh(monkeypatch) -> None:
    import jev.deciding.token_target
    import jev.reading.history
    calls, extended = [], []
    real, real_extend = jev.reading.history.analyze, jev.reading.history.extend
    for module in (jev.reading.history, jev.deciding.token_target):  # every analysis a sized plan could make
        monkeypatch.setattr(module, "analyze", lambda messages: calls.append(len(messages)) or real(messages))
    monkeypatch.setattr(jev.reading.history, "extend", lambda previous, messages: extended.append(len(messages))
                        or real_extend(previous, messages))
    messages = sized_history([4_000, 6_000, 2_000])
    compactor = Compactor(ReplayJudge({}, default=0.3), CONFIG, ExecutionOptions(Mode.SHADOW))
    tokens = sum(size(m) for m in messages) // 4
    sized = compactor.for_tokens(messages, tokens, tokens - 1_000)
    first = sized.plan_sync(messages)
    assert first.status is Status.DECIDED and first.plan.target_met is True
    assert len(calls) == 1  # sized and judged on one analysis
    # the same copy on a history that grew since: only the new messages are read (issue 37), and it is judged
    # as it is now (not refused as changed), its new pair among the candidates
    messages += [msg("c9", "assistant", call("r9")), msg("o9", "tool", result("r9", "y" * 3_000)),
                 msg("end2", "user", text("more"))]
    grown = sized.plan_sync(messages)
    assert len(calls) == 1 and extended == [len(messages)]
    assert grown.status is Status.DECIDED and len(grown.plan.decisions) == len(first.plan.decisions) + 1


def test_a_sized_copy_takes_a_history_edited_in_place_afresh(monkeypatch) -> None:
    import jev.reading.history
    calls = []
    real = jev.reading.history.analyze
    monkeypatch.setattr(jev.reading.history, "analyze", lambda messages: calls.append(1) or real(messages))
    messages = [msg("task", "user", text("Fix the bug.")),
                msg("c0", "assistant", call("r0", input={"path": "a.py"})), msg("o0", "tool", result("r0", "x" * 4_000)),
                msg("c1", "assistant", call("r1", input={"path": "b.py"})), msg("o1", "tool", result("r1", "y" * 6_000)),
                msg("end", "user", text("go on"))]
    tokens = sum(size(m) for m in messages) // 4
    sized = Compactor(ReplayJudge({}, default=0.3), CONFIG, ExecutionOptions(Mode.SHADOW)).for_tokens(
        messages, tokens, tokens - 500)
    messages[1].content[0].input["path"] = "c.py"  # the host edits a tool input after sizing, before planning
    decision = sized.plan_sync(messages)
    assert len(calls) == 2 and decision.status is Status.DECIDED  # judged as it is now, not refused as changed


def test_a_token_target_lets_the_tables_let_gos_after_its_first_edit_ride_along() -> None:
    """Budget mode stops at its target; sized for a host's token target it also lets go of what the
    threshold table lets go at or after its first edit (re-billed anyway), never before it; a
    `target_reduction` set directly stays exact."""
    messages = sized_history([1_000, 8_000, 3_000, 2_000])
    # every result as good as unneeded, t2's less so: budget order t3 (3 000), t4, t1, t2
    answers = {"call_t1": 0.95, "call_t2": 0.95, "call_t3": 0.95, "call_t4": 0.95,
               "result_t1": 0.01, "result_t2": 0.3, "result_t3": 0.01, "result_t4": 0.01}
    compactor = Compactor(ReplayJudge(answers), CONFIG, ExecutionOptions(Mode.SHADOW))
    tokens = sum(size(m) for m in messages) // 4
    sized = compactor.for_tokens(messages, tokens, tokens - 200)  # a little over: t3 alone meets it
    exact = Compactor(ReplayJudge(answers), dataclasses.replace(CONFIG, target_reduction=sized.config.target_reduction),
                      ExecutionOptions(Mode.SHADOW))
    plain = exact.plan_sync(messages).plan
    assert plain is not None and plain.decisions["t3"] is Action.TRUNCATE_RESULT
    assert [plain.scores[k].reason for k in ("t1", "t2", "t4")] == ["WITHIN_BUDGET"] * 3
    table = Compactor(ReplayJudge(answers), CONFIG, ExecutionOptions(Mode.SHADOW)).plan_sync(messages).plan
    assert table is not None and table.decisions["t4"] is Action.TRUNCATE_RESULT  # what the table lets go
    deep = sized.plan_sync(messages).plan
    assert deep is not None
    assert deep.decisions["t3"] is Action.TRUNCATE_RESULT and deep.decisions["t4"] is Action.TRUNCATE_RESULT
    assert deep.scores["t4"].reason == table.scores["t4"].reason
    assert deep.scores["t1"].reason == "WITHIN_BUDGET"  # before the first edit: letting it go re-bills more
    assert deep.reduction > plain.reduction and deep.target_met


def _edits_history(thinking: bool = False) -> list[Message]:
    """A task, two reads whose results are big, three edits whose inputs are (a file's new text) and whose
    results are a line; the second edit's call in a message that carries thinking when `thinking`."""
    out = [msg("task", "user", text("Fix the bug."))]
    for k in range(2):
        out += [msg(f"c{k}", "assistant", call(f"r{k}")), msg(f"o{k}", "tool", result(f"r{k}", "x" * 3_000))]
    for k in range(3):
        edit = call(f"e{k}", "edit", {"path": f"f{k}.py", "new_text": "y" * 8_000})
        blocks = (ThinkingBlock("Rewrite it."), edit) if thinking and k == 1 else (edit,)
        out += [msg(f"ce{k}", "assistant", *blocks), msg(f"oe{k}", "tool", result(f"e{k}", "The file was updated.",
                                                                                  "edit"))]
    return out + [msg("end", "user", text("go on"))]


def test_a_token_target_results_cannot_reach_drops_whole_pairs_whose_calls_the_judge_wants() -> None:
    messages = _edits_history()
    config = dataclasses.replace(CONFIG, eligible_tools=frozenset({"read", "edit"}))
    judge = ReplayJudge({f"call_t{k}": 0.9 for k in range(1, 6)}, default=0.1)  # calls wanted, results not
    compactor = Compactor(judge, config, ExecutionOptions(Mode.SHADOW))
    tokens = sum(size(m) for m in messages) // 4
    sized = compactor.for_tokens(messages, tokens, 2_000)  # ~22 000 characters to let go; results hold ~6 000
    decision = sized.plan_sync(messages)
    plan = decision.plan
    assert decision.status is Status.DECIDED and plan.target_met is True
    assert decision.detail.startswith("results alone fall short of the token target: ")
    assert decision.detail.endswith("3 pairs dropped whole, 24,102 characters of calls with them (3 of them pairs "
                                    "whose calls the judge wants kept)")
    assert plan.decisions["t1"] is not Action.KEEP and plan.decisions["t2"] is not Action.KEEP  # results first
    # the edits go whole, inputs and all, though their calls are wanted
    assert [plan.decisions[f"t{k}"] for k in (3, 4, 5)] == [Action.DROP_PAIR] * 3
    assert all(m.id not in {"ce0", "ce1", "ce2"} for m in plan.messages)
    assert plan.result_share <= 1.0  # a share of result characters: the inputs are not counted in it
    # a target set directly (what calibration certifies) lets go of results only: the edits' calls stay
    direct = Compactor(judge, dataclasses.replace(config, target_reduction=sized.config.target_reduction),
                       ExecutionOptions(Mode.SHADOW)).plan_sync(messages).plan
    assert [direct.decisions[f"t{k}"] for k in (3, 4, 5)] == [Action.KEEP] * 3
    assert direct.target_met is False  # the results' heads and the edits' lines stay: it falls short


def test_a_token_target_never_drops_a_call_in_a_message_with_thinking_and_says_so() -> None:
    messages = _edits_history(thinking=True)
    judge = ReplayJudge({f"call_t{k}": 0.9 for k in range(1, 6)}, default=0.1)
    tokens = sum(size(m) for m in messages) // 4
    # a model without the prefix check (Opus 4.6): thinking after an edit stays as it was sent
    config = dataclasses.replace(CONFIG, eligible_tools=frozenset({"read", "edit"}), model="claude-opus-4-6")
    decision = Compactor(judge, config, ExecutionOptions(Mode.SHADOW)).for_tokens(messages, tokens, 2_000).plan_sync(messages)
    plan = decision.plan
    assert plan.decisions["t3"] is Action.DROP_PAIR and plan.decisions["t4"] is not Action.DROP_PAIR
    assert next(m for m in plan.messages if m.id == "ce1") is messages[7]  # byte-identical: the same object
    assert plan.target_met is False and plan.thinking_stripped == 0
    assert "then of whole pairs, never of a call in a message with thinking" in decision.detail
    # a preserved-thinking model (and the default, for a history that names none) binds that thinking to its
    # prefix: the plan strips it, and the call stays
    for model in ("claude-fable-5-1", None):
        config = dataclasses.replace(config, model=model)
        plan = Compactor(judge, config, ExecutionOptions(Mode.SHADOW)).for_tokens(messages, tokens, 2_000) \
            .plan_sync(messages).plan
        assert plan.decisions["t4"] is not Action.DROP_PAIR
        kept = next(m for m in plan.messages if m.id == "ce1")
        assert kept.content == messages[7].content[1:] and plan.thinking_stripped == 1


def test_tokens_left_counts_what_changed_as_the_host_counts() -> None:
    from jev.deciding.cost import tokens_each
    from jev.deciding.token_target import tokens_left
    a, b, c = msg("a", "user", text("alpha beta")), msg("b", "tool", text("x" * 600)), msg("c", "user", text("go"))
    made = msg("b", "tool", text("x" * 60))
    each = dict(zip("abcm", tokens_each([a, b, c, made]), strict=True))
    host = 2 * sum(each[k] for k in "abc")  # a host counting twice what the library estimates
    left = tokens_left(host, host // 2, [a, b, c], [a, made, c])
    assert left == host - 2 * (each["b"] - each["m"])  # only b and what replaced it are measured, scaled by 2
    assert tokens_left(host, host // 2, [a, b, c], [a, c]) == host - 2 * each["b"]  # a message removed
    assert tokens_left(host, host // 2, [a, b, c], [a, b, c]) == host  # nothing changed
    # a memo of the measure (what a compactor passes) measures each message once across refit rounds
    from jev.reading.history import Remeasured
    seen: list[str] = []
    memo = Remeasured(lambda ms: (seen.extend(m.id for m in ms), tokens_each(ms))[1])
    assert tokens_left(host, host // 2, [a, b, c], [a, made, c], memo) == left
    assert tokens_left(host, host // 2, [a, b, c], [a, made, c], memo) == left
    assert sorted(seen) == ["b", "b"]  # the original and what replaced it, once each (they share an id)


def _sparse_tails_history() -> list[Message]:
    """Results whose head (what a cut keeps) is dense with symbols and whose tail is plain words: a cut frees
    fewer tokens a character than the results' average, which sizes a token target."""
    out = [msg("task", "user", text("Fix the bug."))]
    for k in range(6):
        body = "{}[]();" * 60 + " ".join(["word"] * 1200)
        out += [msg(f"c{k}", "assistant", call(f"r{k}")), msg(f"o{k}", "tool", result(f"r{k}", body))]
    return out + [msg("end", "user", text("go on"))]


def test_a_token_target_plan_left_over_its_target_asks_again_or_says_so(monkeypatch) -> None:
    import jev.running.compactor
    from jev.deciding.cost import tokens_each
    messages = _sparse_tails_history()
    config = dataclasses.replace(CONFIG, size_exponent=0)  # the table keeps uncertain results: budget decides
    judge = ReplayJudge({f"call_t{k}": 0.9 for k in range(1, 7)}, default=0.6)  # calls wanted: results are cut
    tokens = sum(tokens_each(messages))  # the host counts as the library estimates
    target = int(tokens * 0.7)

    def planned():
        return Compactor(judge, config, ExecutionOptions(Mode.SHADOW)).for_tokens(messages, tokens, target
                                                                                 ).plan_sync(messages)

    monkeypatch.setattr(jev.running.compactor, "REFITS", 0)  # the first choice alone: a little over, and it says so
    first = planned()
    assert sum(tokens_each(first.plan.messages)) > target and first.plan.target_met is False
    left = sum(tokens_each(first.plan.messages))
    assert first.detail.startswith(f"the plan leaves about {left:,} tokens as the host counts them (estimated), "
                                   f"over the target of {target:,}; ")
    monkeypatch.undo()
    again = planned()  # asked again for what was still over: under the target
    assert sum(tokens_each(again.plan.messages)) <= target and again.plan.target_met is True
    assert again.detail == ""
    cut = [k for k, a in again.plan.decisions.items() if a is Action.TRUNCATE_RESULT]
    assert len(cut) > len([k for k, a in first.plan.decisions.items() if a is Action.TRUNCATE_RESULT])


def test_a_token_target_plan_counts_what_it_leaves_with_the_hosts_counter() -> None:
    from jev import formats
    from jev.model.canonical import canonical_json
    messages = _sparse_tails_history()
    config = dataclasses.replace(CONFIG, size_exponent=0)
    judge = ReplayJudge({f"call_t{k}": 0.9 for k in range(1, 7)}, default=0.6)
    counted: list[int] = []

    def host(history) -> int:  # a quarter token per character of the messages' JSON, ids and all
        counted.append(len(history))
        return sum(-(-len(canonical_json(formats.dump([m]))) // 4) for m in history)

    tokens = host(messages)
    for target in (int(tokens * 0.7), int(tokens * 0.4), 100):  # the last beyond reach: the task and turn stay
        decision = Compactor(judge, config, ExecutionOptions(Mode.SHADOW)).for_tokens(
            messages, tokens, target, host).plan_sync(messages)
        left = host(decision.plan.messages)
        assert (left <= target) is decision.plan.target_met  # what the plan says is what the host counts
        if target == 100:
            assert left > target and f"the plan leaves {left:,} tokens as the host counts them, over the target of " \
                f"{target:,}; " in decision.detail
    assert len(counted) > 3  # the plans counted with it: the history, then each plan's choice


def _raises(_messages):
    raise RuntimeError("tokenizer not loaded")


@pytest.mark.parametrize("counter, shown", [
    (_raises, "count failed (RuntimeError: tokenizer not loaded)"), (lambda _m: None, "(got None)"),
    (lambda _m: float("nan"), "(got nan)"), (lambda _m: float("inf"), "(got inf)"), (lambda _m: "120", "(got '120')"),
    (lambda _m: -5, "(got -5)"), (lambda _m: 0.5, "(got 0.5)")])
def test_a_hosts_counter_is_checked_and_its_failure_named(counter, shown) -> None:
    """Issue 62: a counter that raised or said None, NaN, inf or a string ended as INTERNAL_ERROR with a foreign
    error kind; one that said -5 or 0.5 was taken, and the plan said `target_met`."""
    messages = sized_history([4_000, 6_000, 2_000])
    tokens = sum(size(m) for m in messages) // 4
    compactor = Compactor(ReplayJudge({}, default=0.01), CONFIG, ExecutionOptions(Mode.SHADOW, 5.0))
    decision = compactor.for_tokens(messages, tokens, tokens // 2, count=counter).plan_sync(messages)
    assert (decision.status.value, decision.reason.value, decision.error_kind) == \
        ("ERROR", "CALL_OR_RESPONSE_ERROR", "ConfigError")
    assert shown in decision.detail and "count" in decision.detail
    ok = compactor.for_tokens(messages, tokens, tokens // 2, count=lambda m: float(sum(size(x) for x in m) // 4))
    assert ok.plan_sync(messages).status is Status.DECIDED  # a whole float is a count


def test_a_slow_sync_counter_cannot_push_a_plan_past_its_budget() -> None:
    import time
    messages = sized_history([4_000, 6_000, 2_000])
    tokens = sum(size(m) for m in messages) // 4
    compactor = Compactor(ReplayJudge({}, default=0.01), CONFIG, ExecutionOptions(Mode.SHADOW, 0.5))
    started = time.monotonic()
    decision = compactor.for_tokens(messages, tokens, tokens // 2,
                                    count=lambda m: (time.sleep(2), 10)[1]).plan_sync(messages)
    assert decision.reason.value == "TIMEOUT" and time.monotonic() - started < 1.5


@pytest.mark.parametrize("tokens, target, words", [
    (float("nan"), 5_000, "tokens must be a whole number"), (-1, 5_000, "tokens must be a whole number"),
    (10_000, 2.5, "target_tokens must be an integer"), ("10000", 5_000, "tokens must be a whole number")])
def test_for_tokens_names_a_bad_count_or_target(tokens, target, words) -> None:
    messages = sized_history([4_000])
    with pytest.raises(ConfigError, match=words):
        Compactor(ReplayJudge({}), CONFIG).for_tokens(messages, tokens, target)
