"""Long histories: judges that never receive a state are not bound by its budget; remote judges judge in
windows, each request carrying the task and the pairs it asks about, inside one plan budget."""

from __future__ import annotations

import asyncio

import pytest
from conftest import ScriptedJudge, compactor, long_history, reference_config, reference_messages

from jev import CompactionConfig, Mode, Reason, Status
from jev.deciding.policy import candidates
from jev.judges import LocalJudge, ReplayJudge
from jev.judges.base import traits
from jev.judges.windows import NOT_SENT, WINDOW_CONTEXT, plan_requests
from jev.model.canonical import canonical_json
from jev.model.transcript import ToolUseBlock
from jev.reading.analysis import analyze
from jev.reading.state import INPUT_CAPS, state_tokens

CONFIG = dict(eligible_tools=frozenset({"read"}), preserve_recent_messages=6, minimum_reduction=0.0)


def test_judges_declare_whether_they_receive_the_state() -> None:
    assert traits(LocalJudge()).receives_state is False
    assert traits(ReplayJudge({})).receives_state is True
    assert traits(ReplayJudge({}, receives_state=False)).receives_state is False
    assert traits(ScriptedJudge()).receives_state is True  # a judge that does not say is taken to


def test_a_judge_says_its_name_and_size_exponent_or_takes_the_defaults() -> None:
    """`traits` reads the optional attributes of the judge protocol once: a judge's own when usable, else
    the default — its class name, no exponent (the compactor then ranks at the policy's default)."""
    assert traits(LocalJudge()).size_exponent == LocalJudge().size_exponent
    assert traits(LocalJudge()).name == LocalJudge().model
    plain = traits(ScriptedJudge())
    assert (plain.name, plain.size_exponent) == ("ScriptedJudge", None)
    for bad in (True, "1.5", -1, 5, float("nan")):
        judge = ScriptedJudge()
        judge.size_exponent, judge.model = bad, "  "  # type: ignore[attr-defined]
        assert traits(judge).size_exponent is None and traits(judge).name == "ScriptedJudge"


@pytest.mark.parametrize("judge", [LocalJudge(), ReplayJudge({}, default=0.5, receives_state=False)],
                         ids=["local", "replay-in-process"])
def test_a_judge_that_receives_no_state_is_not_bound_by_its_budget(judge) -> None:
    config = reference_config(state=1, max_request_tokens=2)
    decision = compactor(judge, config, mode=Mode.SHADOW).plan_sync(reference_messages())
    assert decision.status is not Status.ERROR, decision.detail
    assert decision.plan.state_stage == NOT_SENT and decision.plan.request_tokens == 0
    assert decision.plan.windows == 0


def test_a_judge_that_receives_the_state_still_is() -> None:
    decision = compactor(ReplayJudge({}, default=0.5), reference_config(state=1), mode=Mode.SHADOW).plan_sync(
        reference_messages())
    assert decision.status is Status.ERROR and decision.reason is Reason.STATE_BUDGET_EXCEEDED


def test_a_long_history_is_judged_in_windows_that_each_fit_and_hold_what_they_ask_about() -> None:
    history = long_history(1000)
    judge = ScriptedJudge(0.5)
    config = CompactionConfig(**CONFIG)
    decision = compactor(judge, config, mode=Mode.SHADOW).plan_sync(history)
    assert decision.status is not Status.ERROR, decision.detail
    plan = decision.plan
    assert plan.windows == plan.requests == judge.calls > 1
    asked: list[str] = []
    total = 0
    for request in judge.requests:
        tokens = state_tokens(dict(request.state))
        questions = {q.id.partition("_")[2] for q in request.questions}
        assert tokens <= config.max_state_tokens and len(request.questions) <= config.max_questions
        entries = request.state["history"]
        assert entries[0]["text"].startswith("Fix the parser bug. Never edit generated files.")  # the task, whole
        shown = {c["id"] for e in entries for c in e["tool_calls"]}
        assert questions <= shown  # every pair asked about has its call in the window
        assert len(entries) < len(history) // 4  # a window, not the whole history again
        assert b"line " not in canonical_json(request.state)  # no tool output is ever sent
        asked.extend(sorted(questions, key=lambda k: int(k[1:])))
        total += tokens
    judged = [p.key for p in candidates(analyze(history), config)]
    assert sorted(asked, key=lambda k: int(k[1:])) == judged  # every candidate once, none twice
    assert plan.request_tokens >= total and plan.state_stage in {f"inputs<={c}" for c in INPUT_CAPS}


def test_windows_take_neighbours_and_report_the_deepest_stage() -> None:
    transcript = analyze(long_history(600))
    config = CompactionConfig(**CONFIG)
    judged = candidates(transcript, config)
    requests = plan_requests(transcript, judged, config)
    assert requests.windows == len(requests.calls) > 1
    stages = [c.stage for c in requests.calls]
    assert requests.stage == max(stages, key=lambda s: INPUT_CAPS.index(int(s.removeprefix("inputs<="))))
    for call in requests.calls:
        assert state_tokens(call.state) == call.state_tokens  # the additive estimate is exact
        indices = [e["i"] for e in call.state["history"]]
        asked = {q.id.partition("_")[2] for q in call.batch.questions}
        calls_at = [e["i"] for e in call.state["history"] if any(c["id"] in asked for c in e["tool_calls"])]
        after = [i for i in indices if i > max(calls_at)]
        assert after or max(calls_at) >= len(transcript.messages) - 2 * WINDOW_CONTEXT  # later context shown
    assert requests.tokens == sum(c.tokens for c in requests.calls)


def test_a_window_falls_back_to_a_shorter_input_cap_only_where_it_must() -> None:
    history = long_history(200)
    big = ToolUseBlock("k2", "read", {"path": "src/big.py", "patch": "." * 40_000})  # ~900 tokens at cap 1000
    history[5] = history[5].replace(content=(history[5].content[0], big))
    config = CompactionConfig(**CONFIG, max_state_tokens=600, max_request_tokens=800)
    transcript = analyze(history)
    requests = plan_requests(transcript, candidates(transcript, config), config)
    by_pair = {q.id: c.stage for c in requests.calls for q in c.batch.questions}
    assert by_pair["call_t3"] == "inputs<=200" and requests.stage == "inputs<=200"
    assert {c.stage for c in requests.calls} == {"inputs<=1000", "inputs<=200"}
    assert all(c.state_tokens <= 600 and c.tokens <= 800 for c in requests.calls)


def test_only_a_pair_that_cannot_fit_alone_ends_the_plan() -> None:
    history = long_history(50, thought="x " * 30_000)  # each thought alone is over the budget
    decision = compactor(ScriptedJudge(0.5), CompactionConfig(**CONFIG), mode=Mode.SHADOW).plan_sync(history)
    assert decision.status is Status.ERROR and decision.reason is Reason.STATE_BUDGET_EXCEEDED
    assert "does not fit in one judge request even alone beside the task" in decision.detail


def test_windows_share_one_budget_and_the_concurrency_limit() -> None:
    history = long_history(1000)
    in_flight = peak = 0

    class Slow(ScriptedJudge):
        async def ask(self, request):
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            try:
                await asyncio.sleep(0.05)
                return await super().ask(request)
            finally:
                in_flight -= 1

    config = CompactionConfig(**CONFIG, max_concurrent_requests=2)
    decision = compactor(Slow(0.5), config, mode=Mode.SHADOW).plan_sync(history)
    assert decision.status is not Status.ERROR and decision.plan.windows > 2 and peak == 2
    slow = compactor(Slow(0.5, delay=0.2), config, mode=Mode.SHADOW, budget=0.3).plan_sync(history)
    assert slow.status is Status.ERROR and slow.reason is Reason.TIMEOUT


def test_a_long_sessions_user_text_does_not_crowd_the_pairs_out_of_every_window() -> None:
    """Every window carries the task. When the history's user text passes half the state budget (a long
    session with a human turn after every result), a window carries the first message, the first user
    message and the latest user messages that fit — before, each window carried all of it, and here no
    pair fit beside it (StateBudgetError)."""
    from conftest import call, msg, result, text

    from jev.reading.state import history_entries
    messages = [msg("task", "user", text("Fix the failing test; keep the public API. " * 20))]
    for k in range(300):
        messages += [msg(f"c{k}", "assistant", call(f"r{k}", name="read", input={"path": f"f{k}.py"})),
                     msg(f"o{k}", "tool", result(f"r{k}", f"line {k}\n" * 300, name="read")),
                     msg(f"u{k}", "user", text(f"Now look at module {k} and say what it does. " * 15))]
    config = CompactionConfig(**{**CONFIG, "max_state_tokens": 20_000, "max_request_tokens": 60_000})
    transcript = analyze(messages)
    user_text = sum(len(canonical_json(e)) for i, e in history_entries(transcript, 60) if messages[i].role == "user")
    assert user_text / 4 > config.max_state_tokens  # all of it could not ride in any window
    requests = plan_requests(transcript, candidates(transcript, config), config)
    assert requests.windows > 1
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    for request in requests.calls:
        shown = [entry["i"] for entry in request.state["history"]]
        assert shown[0] == 0 and last_user in shown  # the task's first words and the latest turn, always
        assert request.state_tokens <= config.max_state_tokens
    decision = compactor(ReplayJudge({}, default=0.5), config, Mode.SHADOW, budget=30).plan_sync(messages)
    assert decision.status is not Status.ERROR, decision.detail
