"""OpenAIDecisionsJudge with the real `openai` client against the local `/v1/decisions` server."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import sys
import time

import pytest
from conftest import SCOPE, CountingArchive, compactor, long_history, reference_config, reference_messages
from decisions_server import DecisionsServer

from jev import Action, CompactionConfig, ConfigError, Mode, Reason, Status, estimate_tokens
from jev.judges import OpenAIDecisionsJudge, RetryPolicy
from jev.judges.retry import NO_RETRIES

FAST = RetryPolicy(max_retries=2, initial_backoff=0.01)


def low_t1(name: str) -> float:
    return 0.01 if name.endswith("t1") else 0.99


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_a_compaction_through_the_real_openai_client(tmp_path) -> None:
    archive = CountingArchive(tmp_path)
    with DecisionsServer(probability=low_t1) as server:
        judge = OpenAIDecisionsJudge(server.base_url, retry=NO_RETRIES)
        decision = compactor(judge, archive=archive).plan_sync(reference_messages(), scope=SCOPE)
    assert decision.status is Status.DECIDED and decision.plan.decisions["t1"] is Action.DROP_PAIR
    body = server.requests[0]
    assert body["model"] == "gpt-6-luna" and isinstance(body["input"], str)
    assert body["questions"][0] == {"type": "predicate", "name": "call_t1",
                                    "instructions": body["questions"][0]["instructions"]}
    assert "evidence-" not in body["input"]
    assert server.headers[0]["authorization"] == "Bearer sk-openai-test"
    assert decision.plan.input_tokens == 100 and decision.plan.output_tokens == 6


def test_base_url_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with DecisionsServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        decision = compactor(OpenAIDecisionsJudge(model="luna-gw"), mode=Mode.SHADOW).plan_sync(reference_messages())
    assert decision.status in (Status.DECIDED, Status.INCONCLUSIVE) and server.requests[0]["model"] == "luna-gw"


def test_refusals_keep_the_pair() -> None:
    with DecisionsServer(["refuse:result_t1"], probability=lambda n: 0.01) as server:
        decision = compactor(OpenAIDecisionsJudge(server.base_url), mode=Mode.SHADOW).plan_sync(reference_messages())
    assert decision.plan.scores["t1"].reason == "REFUSED" and decision.plan.decisions["t1"] is Action.KEEP
    assert decision.plan.decisions["t2"] is Action.DROP_PAIR


@pytest.mark.parametrize("script, calls", [([429], 2), ([500], 2), ([503, 503], 3)])
def test_retryable_statuses_are_retried(script: list, calls: int) -> None:
    with DecisionsServer(script, probability=low_t1) as server:
        decision = compactor(OpenAIDecisionsJudge(server.base_url, retry=FAST), mode=Mode.SHADOW).plan_sync(
            reference_messages())
    assert decision.status is Status.DECIDED and len(server.requests) == calls


@pytest.mark.parametrize("action, message", [
    (400, "HTTP 400: injected 400"), ("malformed", "Failed to parse"), ("wrong-count", "2 answers for 3"),
    ("wrong-name", "named 'someone_else'")])
def test_contract_breaks_fail_the_plan_without_retry(action, message: str, tmp_path) -> None:
    archive = CountingArchive(tmp_path)
    config = reference_config(questions=2)
    with DecisionsServer([action], probability=low_t1) as server:
        decision = compactor(OpenAIDecisionsJudge(server.base_url, retry=FAST), config,
                             archive=archive).plan_sync(reference_messages(), scope=SCOPE)
    if action == "wrong-count":
        message = "1 answers for 2"
    assert (decision.status, decision.reason) == (Status.ERROR, Reason.CALL_OR_RESPONSE_ERROR)
    assert message in decision.detail and archive.saves == 0


def test_exhausted_retries_fail() -> None:
    with DecisionsServer(default=500) as server:
        decision = compactor(OpenAIDecisionsJudge(server.base_url, retry=FAST), mode=Mode.SHADOW).plan_sync(
            reference_messages())
    assert decision.status is Status.ERROR and len(server.requests) == 3


def test_a_stall_is_cut_by_the_attempt_timeout_and_the_budget() -> None:
    with DecisionsServer(["stall"], probability=low_t1) as server:
        judge = OpenAIDecisionsJudge(server.base_url, timeout=0.3, retry=FAST)
        decision = compactor(judge, mode=Mode.SHADOW).plan_sync(reference_messages())
        assert decision.status is Status.DECIDED and len(server.requests) == 2  # timed out, retried, answered
    with DecisionsServer(default="stall") as server:
        judge = OpenAIDecisionsJudge(server.base_url, timeout=30, retry=FAST)
        started = time.monotonic()
        decision = compactor(judge, mode=Mode.SHADOW, budget=0.5).plan_sync(reference_messages())
    assert (decision.status, decision.reason) == (Status.ERROR, Reason.TIMEOUT)
    assert time.monotonic() - started < 1.0


def test_more_than_400_questions_are_split() -> None:
    from jev.judges import JudgeRequest
    from jev.judges.questions import Question
    questions = tuple(Question(f"call_t{i}", "q") for i in range(1, 451))
    with DecisionsServer(probability=lambda n: 0.3) as server:
        answers = OpenAIDecisionsJudge(server.base_url).ask_sync(JudgeRequest({"history": []}, questions))
    assert [len(r["questions"]) for r in server.requests] == [400, 50] and len(answers.probabilities) == 450


def test_a_judge_dropped_without_aclose_closes_its_connections_on_the_loops_next_turn() -> None:
    """A long-lived loop that lets go of a judge: asyncio's own finalizer closes the judge's client at once
    (its keeper does not hold the judge), not whenever the cycle collector runs."""
    async def host(url: str) -> None:
        judge = OpenAIDecisionsJudge(url, retry=NO_RETRIES)
        await compactor(judge, reference_config(), mode=Mode.SHADOW).plan(reference_messages())
        (client, _keeper), = judge._clients._clients.values()
        gc.disable()  # freed by reference counting alone
        try:
            del judge, _keeper
            for _ in range(5):
                await asyncio.sleep(0)  # the loop's next turns
            assert client.is_closed()
        finally:
            gc.enable()

    with DecisionsServer() as server:
        asyncio.run(host(server.base_url))


def test_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIDecisionsJudge()


def test_connections_are_reused_across_batches_and_plans_and_closed_with_the_loop() -> None:
    """One client per event loop: an async host's plans share keep-alive connections and `asyncio.run`
    closes them on the way out; sync plans share their session's loop, so its client too, until the session's
    `close()`; a loop closed without shutting down is forgotten quietly."""
    config = dataclasses.replace(reference_config(questions=2), max_concurrent_requests=1)  # batches in turn
    with DecisionsServer() as server:
        judge = OpenAIDecisionsJudge(server.base_url, retry=NO_RETRIES)
        c = compactor(judge, config, mode=Mode.SHADOW)

        async def host() -> None:
            for _ in range(3):
                await c.plan(reference_messages())
        asyncio.run(host())
        assert len(server.requests) >= 6 and len(set(server.peers)) == 1
        assert not judge._clients._clients  # closed when asyncio.run shut the loop down

        c.plan_sync(reference_messages())
        c.plan_sync(reference_messages())
        assert len(set(server.peers)) == 2 and len(judge._clients._clients) == 1  # one more, kept
        (client, _), = judge._clients._clients.values()
        c.close()
        assert client.is_closed() and not judge._clients._clients

        unraisable: list[object] = []
        hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
        try:
            loop = asyncio.new_event_loop()
            loop.run_until_complete(c.plan(reference_messages()))
            loop.close()  # without shutting down its generators
            c.plan_sync(reference_messages())  # forgets the dead loop's client
            del loop
            gc.collect()
            c.close()
        finally:
            sys.unraisablehook = hook
        assert not judge._clients._clients and unraisable == []


def test_a_1000_pair_history_is_judged_in_windows_through_the_openai_client() -> None:
    history = long_history(1000)
    config = CompactionConfig(eligible_tools=frozenset({"read"}))
    with DecisionsServer(probability=lambda name: 0.01) as server:
        judge = OpenAIDecisionsJudge(server.base_url, retry=NO_RETRIES)
        decision = compactor(judge, config, mode=Mode.SHADOW).plan_sync(history)
    assert decision.status is Status.DECIDED, decision.detail
    plan = decision.plan
    assert plan.windows == plan.requests == len(server.requests) > 1
    assert plan.input_tokens == 100 * plan.requests
    names = [q["name"] for body in server.requests for q in body["questions"]]
    assert len(names) == len(set(names)) and all(len(body["questions"]) <= config.max_questions
                                                   for body in server.requests)
    for body in server.requests:
        assert estimate_tokens(body["input"]) <= config.max_state_tokens
        assert "line 7" not in body["input"]


def test_the_sdk_is_imported_when_the_judge_is_made_not_inside_the_first_plan() -> None:
    import subprocess
    import sys
    code = ("import os, sys; os.environ['OPENAI_API_KEY'] = 'sk-test'; from jev.judges import OpenAIDecisionsJudge; "
            "assert 'openai' not in sys.modules, 'imported too early'; OpenAIDecisionsJudge(); "
            "assert 'openai' in sys.modules, 'not imported by the constructor'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in __import__("os").environ.items() if k != "OPENAI_API_KEY"})
    assert proc.returncode == 0, proc.stderr
