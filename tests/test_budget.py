"""Budget mode (`target_reduction`): let go of the lowest-value results first until a share of the
candidates' result characters is removed; never a confidently needed, refused or pinned one."""

from __future__ import annotations

import json
import math

import pytest
from conftest import ScriptedJudge, compactor, sized_history

from jev import Action, CompactionConfig, ConfigError, Mode, Status
from jev.deciding.policy import Judged, action_of, budget, deepened
from jev.running import service


def judged(key: str, call_p: float | None, result_p: float | None, chars: int, saves: int | None = None) -> Judged:
    return Judged(key, call_p, result_p, "read", chars, chars - 400 if saves is None else saves)


def test_lowest_value_per_character_goes_first_until_the_target() -> None:
    config = CompactionConfig(target_reduction=0.5, size_exponent=1.0)
    items = [judged("t1", 0.1, 0.5, 10_000),  # 0.05 per 1 000 chars: cheapest
             judged("t2", 0.1, 0.3, 2_000),  # 0.15
             judged("t3", 0.1, 0.05, 200),  # 0.25: small, so dear per character
             judged("t4", 0.1, 0.6, 8_000)]  # 0.075
    chosen, removed, target = budget(items, config)
    assert target == math.ceil(0.5 * 20_200)
    assert [action_of(chosen[k]) for k in ("t1", "t4", "t2", "t3")] == [Action.DROP_PAIR, Action.DROP_PAIR,
                                                                         Action.KEEP, Action.KEEP]
    assert removed == 18_000 >= target and chosen["t2"] == "WITHIN_BUDGET"  # t1 alone fell short
    more, removed, _ = budget(items, CompactionConfig(target_reduction=0.9))
    assert {k for k, r in more.items() if action_of(r) is not Action.KEEP} == {"t1", "t4", "t2"} and removed == 20_000


def test_never_a_confident_result_or_a_refusal_and_the_call_decides_truncate_or_drop() -> None:
    config = CompactionConfig(target_reduction=0.99)
    items = [judged("t1", 0.9, 0.1, 5_000), judged("t2", 0.1, 0.85, 50_000), judged("t3", None, 0.0, 9_000),
             judged("t4", 0.95, 0.1, 300, saves=0)]
    chosen, removed, target = budget(items, config)
    assert chosen["t1"] == "TRUNCATE_RESULT" and removed == 4_600  # net of the kept head and marker
    assert chosen["t2"] == "NEEDED_RESULT" and chosen["t3"] == "REFUSED"
    assert action_of(chosen["t4"]) is Action.KEEP  # a truncation that would remove nothing is not a let-go
    assert removed < target


def test_a_truncation_is_valued_by_what_it_removes_not_by_the_whole_result() -> None:
    # same P(needed), same size; t1's call is needed so its let-go keeps a head and saves 600 of 1 000
    # characters, t2's is a drop saving all 1 000: t2 is the cheaper let-go per character removed
    items = [judged("t1", 0.9, 0.3, 1_000, saves=600), judged("t2", 0.1, 0.3, 1_000)]
    chosen, removed, _ = budget(items, CompactionConfig(target_reduction=0.3))
    assert chosen["t2"] == "DROP_PAIR" and action_of(chosen["t1"]) is Action.KEEP and removed == 1_000


def test_a_token_target_results_cannot_reach_drops_whole_pairs_least_needed_per_character_first() -> None:
    # every call is wanted (keep_call >= keep), so the results walk only truncates; a drop frees its result
    # (net of the tombstone) and its call's input: t2 and t3 are edits (big inputs, tiny results)
    items = [Judged("t1", 0.9, 0.1, "read", 5_000, 4_600, 4_900),  # a drop adds 4 900 + 200 - 4 600: 0.9 / 500
             Judged("t2", 0.95, 0.2, "edit", 100, 0, 50),  # 0.95 / 4 000
             Judged("t3", 0.9, 0.1, "edit", 100, 0, 50),  # 0.9 / 7 000: the cheapest
             Judged("t4", 0.9, 0.1, "edit", 100, 0, 50, truncate_only=True),  # its message carries thinking
             Judged("t5", 0.9, 0.95, "read", 3_000, 2_600, 2_900),  # a result the judge is sure is needed
             Judged("t6", None, 0.1, "edit", 100, 0, 50)]  # refused
    inputs = [200, 3_950, 6_950, 8_950, 100, 8_950]
    reasons, removed, _target = budget(items, CompactionConfig(target_reduction=0.99))
    assert reasons["t1"] == "TRUNCATE_RESULT" and removed == 4_600
    deep, total = deepened(items, reasons, removed, 15_000, inputs)
    assert {k for k, r in deep.items() if r == "DROP_PAIR"} == {"t2", "t3"} and total == 4_600 + 7_000 + 4_000
    assert deep["t1"] == "TRUNCATE_RESULT"  # the target was met before t1's drop, the dearest, was needed
    assert deep["t4"] == reasons["t4"] and deep["t5"] == "NEEDED_RESULT" and deep["t6"] == "REFUSED"
    assert reasons["t3"] != "DROP_PAIR"  # the walk's reasons are not changed in place
    short, total = deepened(items, reasons, removed, 11_000, inputs)  # t3 alone is enough
    assert {k for k, r in short.items() if r == "DROP_PAIR"} == {"t3"} and total == 11_600
    more, total = deepened(items, reasons, removed, 100_000, inputs)  # out of reach: every pair it may drop
    assert {k for k, r in more.items() if r == "DROP_PAIR"} == {"t1", "t2", "t3"} and total == 16_100
    assert deepened(items, reasons, removed, 4_000, inputs) == (reasons, removed)  # reached already: unchanged


@pytest.mark.parametrize("bad", [0, 1, -0.5, 1.5, math.nan, "0.5", True])
def test_target_reduction_is_range_checked(bad) -> None:
    with pytest.raises(ConfigError, match="target_reduction must be"):
        CompactionConfig(target_reduction=bad)


def test_a_plan_in_budget_mode_reaches_its_target_or_says_it_stopped_short() -> None:
    messages = sized_history([4_000, 6_000, 2_000, 8_000, 3_000])
    config = CompactionConfig(eligible_tools=frozenset({"read"}), preserve_recent_messages=1, target_reduction=0.5,
                              minimum_reduction=0.0)
    decision = compactor(ScriptedJudge(lambda q: 0.3 if q.startswith("result") else 0.1), config,
                         mode=Mode.SHADOW).plan_sync(messages)
    plan = decision.plan
    assert decision.status is Status.DECIDED and plan.target_met is True and 0.5 <= plan.result_share < 0.8
    assert plan.decisions["t4"] is Action.DROP_PAIR  # the biggest, so the cheapest per character
    sure = compactor(ScriptedJudge(lambda q: 0.9 if q.endswith(("t4", "t2")) else 0.1), config,
                     mode=Mode.SHADOW).plan_sync(messages)
    assert sure.plan.target_met is False and sure.plan.result_share < 0.5
    assert sure.plan.decisions["t4"] is Action.KEEP and sure.plan.scores["t4"].reason == "NEEDED_RESULT"
    plain = compactor(ScriptedJudge(0.3), CompactionConfig(eligible_tools=frozenset({"read"})),
                      mode=Mode.SHADOW).plan_sync(messages)
    assert plain.plan.target_met is None  # the threshold table: no target


def test_the_service_config_takes_target_reduction() -> None:
    base = {"mode": "SHADOW", "threshold": 0.8, "rejectionThreshold": 0.2, "eligibleTools": ["read"]}
    parsed = service.parse(json.dumps({"jev": {"compaction": {**base, "targetReduction": 0.4}}}))
    assert parsed.config.target_reduction == 0.4
    for bad, words in ((1.5, "targetReduction must be a number in (0, 1) (got 1.5)"),
                       ("half", "targetReduction must be a number")):
        with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
            service.parse(json.dumps({"jev": {"compaction": {**base, "targetReduction": bad}}}))
    with pytest.raises(ConfigError, match="threshold"):  # the thresholds stay required
        service.parse(json.dumps({"jev": {"compaction": {"mode": "SHADOW", "eligibleTools": ["read"],
                                                         "targetReduction": 0.4}}}))
