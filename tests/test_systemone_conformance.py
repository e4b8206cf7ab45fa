"""SystemOneJudge against jevcompat's fault-injecting mock (in-process) and the real sparrow-decider server.

sparrow-decider's answers are noise: these tests check the wire, timing and time-outs, never quality.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SCOPE, CountingArchive, compactor, reference_config, reference_messages
from jevcompat.mock import FAULTS, MockConfig, Running
from sparrow_server import SparrowDecider

from jev import Mode, Reason, Status
from jev.judges import SystemOneJudge
from jev.judges.retry import NO_RETRIES, RetryPolicy

FAST = RetryPolicy(max_retries=2, initial_backoff=0.01)
# Faults that break the part of the contract a noul compaction uses: each must end the plan, unapplied.
BREAKING = {"auth-x-api-key", "boolean-type", "extra-answer", "first-question-only", "float-usage", "nan",
            "no-usage", "noul-range", "plain-content-type", "reject-jev-latest", "wrong-route", "xssi-200"}


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test")
    monkeypatch.delenv("JEV_API_KEY", raising=False)


def test_every_fault_that_breaks_the_contract_leads_to_no_application(tmp_path: Path) -> None:
    assert set(FAULTS) >= BREAKING
    config = MockConfig(key="sk-test")
    with Running(config) as mock:
        for fault in sorted(FAULTS):
            config.faults = frozenset({fault})  # one server, one fault at a time
            archive = CountingArchive(tmp_path / fault)
            messages = reference_messages()
            c = compactor(SystemOneJudge(mock.url, retry=NO_RETRIES), reference_config(minimum_reduction=0.0),
                          archive=archive)
            out = c.compact_sync(messages, scope=SCOPE)
            decision = c.plan_sync(messages, scope=SCOPE)
            _check(fault, decision, out, messages, archive)


def _check(fault: str, decision, out, messages, archive) -> None:
    if fault in BREAKING:
        assert (decision.status, decision.reason) == (Status.ERROR, Reason.CALL_OR_RESPONSE_ERROR), fault
        assert out == messages and archive.saves == 0, fault
    else:  # faults in parts of the protocol compaction does not use (choice, score, error shapes, ...)
            assert decision.status in (Status.DECIDED, Status.INCONCLUSIVE), (fault, decision.detail)


def test_retry_counts() -> None:
    config = MockConfig(key="sk-test", busy_every=2, requests=1)  # the 1st request gets 429, the 2nd 200
    with Running(config) as mock:
        decision = compactor(SystemOneJudge(mock.url, retry=FAST), mode=Mode.SHADOW).plan_sync(reference_messages())
        assert decision.status is Status.DECIDED and config.requests == 3  # counter started at 1: two calls
        config.busy_every, config.key = 0, "other-key"  # now every request is a 401, never retried
        judge = SystemOneJudge(mock.url, retry=FAST)
        decision = compactor(judge, mode=Mode.SHADOW).plan_sync(reference_messages())
        assert decision.status is Status.ERROR and "401" in decision.detail


def test_529_three_times_makes_three_calls_then_fails() -> None:
    from systemone_server import SystemOneServer as Server
    with Server(lambda h, b: (529, b'{"error": "overloaded"}')) as server:
        decision = compactor(SystemOneJudge(server.url, retry=FAST), mode=Mode.SHADOW).plan_sync(reference_messages())
    assert decision.status is Status.ERROR and "529: overloaded" in decision.detail
    assert len(server.requests) == 3


def test_retries_and_backoff_stay_inside_the_budget() -> None:
    from systemone_server import SystemOneServer as Server
    with Server(lambda h, b: (503, b"{}")) as server:
        slow = RetryPolicy(max_retries=5, initial_backoff=0.4)
        started = time.monotonic()
        decision = compactor(SystemOneJudge(server.url, retry=slow), mode=Mode.SHADOW, budget=0.6).plan_sync(
            reference_messages())
    assert (decision.status, decision.reason) == (Status.ERROR, Reason.TIMEOUT)
    assert time.monotonic() - started < 1.1 and len(server.requests) <= 2


@pytest.fixture(scope="module")
def sparrow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with SparrowDecider(tmp_path_factory.mktemp("sparrow") / "server.log") as server:
        yield server.url


def test_real_sparrow_server_wire(sparrow: str, tmp_path: Path) -> None:
    archive = CountingArchive(tmp_path)
    decision = compactor(SystemOneJudge(sparrow, timeout=10), reference_config(questions=2), archive=archive,
                         budget=20).plan_sync(reference_messages(), scope=SCOPE)
    assert decision.status in (Status.DECIDED, Status.INCONCLUSIVE), decision.detail
    assert decision.plan.requests == 3
    for scores in decision.plan.scores.values():
        assert 0 <= scores.keep_call <= 1 and 0 <= scores.keep_result <= 1


def test_real_sparrow_server_per_attempt_timeout(sparrow: str) -> None:
    big = reference_messages()
    big[0] = big[0].replace(content=(big[0].content[0].__class__("constraint " * 20000),))  # slow to tokenise
    judge = SystemOneJudge(sparrow, timeout=0.001, retry=NO_RETRIES)
    decision = compactor(judge, reference_config(state=60_000), mode=Mode.SHADOW, budget=5).plan_sync(big)
    assert (decision.status, decision.reason) == (Status.ERROR, Reason.CALL_OR_RESPONSE_ERROR)
    assert "timed out after 1ms" in decision.detail


def test_401_makes_exactly_one_call() -> None:
    from systemone_server import SystemOneServer as Server
    with Server(lambda h, b: (401, b'{"message": "invalid key"}')) as server:
        decision = compactor(SystemOneJudge(server.url, retry=FAST), mode=Mode.SHADOW).plan_sync(reference_messages())
    assert decision.status is Status.ERROR and "401: invalid key" in decision.detail and len(server.requests) == 1
