"""SystemOneJudge on the wire against real local HTTP servers (loopback), and the plan budget against a
server that accepts and never answers."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from conftest import SCOPE, CountingArchive, compactor, long_history, reference_config, reference_messages
from systemone_server import SystemOneServer as Server
from systemone_server import noul

from jev import CompactionConfig, ConfigError, JudgeError, Mode, Reason, Status, estimate_tokens
from jev.deciding.policy import PINNED_SCORES
from jev.judges import JudgeRequest, SystemOneJudge
from jev.judges.questions import Question
from jev.judges.retry import NO_RETRIES
from jev.judges.systemone import endpoint_url


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test")
    monkeypatch.delenv("JEV_BASE_URL", raising=False)


def test_wire_request_and_a_compaction_through_http() -> None:
    with Server(noul(0.01)) as server:
        judge = SystemOneJudge(server.url + "/v1/")
        decision = compactor(judge, mode=Mode.SHADOW).plan_sync(reference_messages())
    assert decision.status is Status.DECIDED and decision.plan.input_tokens == 10
    path, headers, body = server.requests[0]
    assert path == "/v1/systemone"
    assert headers["authorization"] == "Bearer sk-test" and headers["content-type"] == "application/json"
    assert "content-encoding" not in headers
    assert set(body) == {"state", "model", "questions"} and body["model"] == "jev-latest"
    assert body["questions"]["call_t1"]["type"] == "noul"
    assert "evidence-" not in json.dumps(body)  # tool outputs never leave the process


def test_one_connection_serves_every_batch_and_plan_on_a_loop() -> None:
    config = dataclasses.replace(reference_config(questions=2), max_concurrent_requests=1)
    with Server(noul(0.5)) as server:
        judge = SystemOneJudge(server.url)
        c = compactor(judge, config, mode=Mode.SHADOW)

        async def host() -> None:
            for _ in range(2):
                await c.plan(reference_messages())
            await judge.aclose()
            assert not judge._clients._clients
        asyncio.run(host())
    assert len(server.requests) >= 4 and len(set(server.peers)) == 1


@pytest.mark.parametrize("base", ["https://h.example", "https://h.example/", "https://h.example/v1",
                                  "https://h.example/v1/", "https://h.example/v1/systemone/"])
def test_base_url_normalisation(base: str) -> None:
    assert endpoint_url(base) == "https://h.example/v1/systemone"


def test_key_and_url_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", " ")
    monkeypatch.setenv("JEV_API_KEY", "fallback")
    assert "fallback" not in repr(SystemOneJudge())
    monkeypatch.delenv("JEV_API_KEY")
    with pytest.raises(ConfigError, match=r"TYPESAFE_API_KEY.*JEV_API_KEY"):
        SystemOneJudge()
    monkeypatch.setenv("TYPESAFE_API_KEY", "k")
    for bad in ("ftp://x", "not a url", "http://"):
        with pytest.raises(ConfigError, match="base_url must be an absolute http"):
            SystemOneJudge(bad)
    with pytest.raises(ConfigError, match="timeout must be positive"):
        SystemOneJudge(timeout=0)


def _ask(url: str, **kw: object) -> object:
    import asyncio
    request = JudgeRequest({"context": "c", "history": []}, (Question("call_t1", "q"), Question("result_t1", "q")))
    kw.setdefault("retry", NO_RETRIES)
    return asyncio.run(SystemOneJudge(url, **kw).ask(request))


@pytest.mark.parametrize("status, payload, message", [
    (401, {"error": {"message": "bad key"}}, "HTTP 401: bad key"),
    (500, {"detail": "boom"}, "HTTP 500: boom"),
    (503, "", "failed with HTTP 503"),
    (200, "null", "must not be null"),
    (200, "not json", "Failed to parse System One response"),
    (200, {"model": "", "answers": {}, "usage": {}}, "model must not be blank"),
    (200, {"model": "m", "usage": {}}, "answers must not be null"),
    (200, {"model": "m", "answers": {}}, "usage must not be null"),
    (200, {"model": "m", "answers": {"call_t1": {"type": "noul", "noul": 0.5}}, "usage": {}}, "answer keys do not match"),
    (200, {"model": "m", "answers": {"call_t1": {"type": "choice"}, "result_t1": {"type": "noul", "noul": 0.5}},
           "usage": {}}, "must have type noul"),
    (200, {"model": "m", "answers": {"call_t1": {"type": "noul", "noul": 1.5}, "result_t1": {"type": "noul", "noul": 0.5}},
           "usage": {}}, "invalid probability"),
    (200, {"model": "m", "answers": {"call_t1": {"type": "noul", "noul": 0.5}, "result_t1": {"type": "noul", "noul": 0.5}},
           "usage": {"input_tokens": -1}}, "usage must not be negative"),
])
def test_failures_and_invalid_responses(status: int, payload: object, message: str) -> None:
    raw = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
    with Server(lambda h, b: (status, raw)) as server, pytest.raises(JudgeError, match=message):
        _ask(server.url)


def test_per_attempt_timeout_is_a_judge_error() -> None:
    def slow(h: dict, b: dict) -> tuple[int, bytes]:
        time.sleep(1.0)
        return noul(0.5)(h, b)
    with Server(slow) as server:
        with pytest.raises(JudgeError, match="timed out after 200ms"):
            _ask(server.url, timeout=0.2)
        judge = SystemOneJudge(server.url, timeout=0.2, retry=NO_RETRIES)
        decision = compactor(judge, mode=Mode.SHADOW).plan_sync(reference_messages())
    assert (decision.status, decision.reason) == (Status.ERROR, Reason.CALL_OR_RESPONSE_ERROR)


class Silent:
    """Accepts connections, reads requests, never answers; notes when a client hangs up."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        self.closed_by_client = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:  # closed by close()
                return
            self.accepted += 1
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(0.1)
            while not self.stop.is_set():
                try:
                    if conn.recv(65536) == b"":
                        self.closed_by_client.set()
                        return
                except TimeoutError:
                    continue
                except OSError:
                    self.closed_by_client.set()
                    return

    def close(self) -> None:
        self.stop.set()
        self.thread.join(1)
        self.sock.close()


@pytest.fixture
def silent() -> Iterator[Silent]:
    server = Silent()
    yield server
    server.close()


def test_budget_ends_the_plan_and_cancels_the_in_flight_request(silent: Silent, tmp_path) -> None:
    records: list = []
    archive = CountingArchive(tmp_path)
    judge = SystemOneJudge(silent.url, timeout=30)
    c = compactor(judge, reference_config(), archive=archive, budget=0.5, records=records)
    started = time.monotonic()
    out = c.compact_sync(reference_messages(), scope=SCOPE)
    elapsed = time.monotonic() - started
    assert out == reference_messages() and archive.saves == 0
    assert (records[-1].status, records[-1].reason) == ("ERROR", "TIMEOUT")
    assert elapsed < 0.5 + 0.5
    assert silent.accepted == 1 and silent.closed_by_client.wait(2), "the in-flight request was not cancelled"


@pytest.mark.parametrize("state, questions, message", [
    (None, (Question("q", "x"),), "state must not be null"),
    ({}, (), "questions must not be empty"),
    ({}, (Question(" ", "x"),), "question ids must not be blank"),
])
def test_request_validation_sends_nothing(state, questions, message) -> None:
    import asyncio
    with Server(noul(0.5)) as server, pytest.raises(JudgeError, match=message):
        asyncio.run(SystemOneJudge(server.url).ask(JudgeRequest(state, questions)))
    assert server.requests == []


def test_sync_twin() -> None:
    with Server(noul(0.25)) as server:
        answers = SystemOneJudge(server.url).ask_sync(JudgeRequest({}, (Question("q", "x"),)))
    assert answers.probabilities == {"q": 0.25} and answers.model == "jev-test"


def test_a_1000_pair_history_is_judged_in_windows_over_http() -> None:
    history = long_history(1000)
    config = CompactionConfig(eligible_tools=frozenset({"read"}), max_concurrent_requests=4)
    with Server(noul(0.01)) as server:
        judge = SystemOneJudge(server.url, retry=NO_RETRIES)
        decision = compactor(judge, config, mode=Mode.SHADOW).plan_sync(history)
    assert decision.status is Status.DECIDED, decision.detail
    plan = decision.plan
    assert plan.windows == plan.requests == len(server.requests) > 1
    assert plan.input_tokens == 10 * plan.requests  # the server's usage, summed over the windows
    asked = [q for _, _, body in server.requests for q in body["questions"]]
    assert len(asked) == len(set(asked)) == 2 * len(plan.decisions) - 2 * list(plan.scores.values()).count(
        PINNED_SCORES)
    for _, _, body in server.requests:
        assert estimate_tokens(json.dumps(body["state"], sort_keys=True, separators=(",", ":"),
                                          ensure_ascii=False)) <= config.max_state_tokens
        assert body["state"]["history"][0]["text"].startswith("Fix the parser bug")
