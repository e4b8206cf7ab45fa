"""What the remote judges share (`jev.judges.remote`) and the sync twins' runners (`jev.support.aio`), on both
backends against real local servers: failures mapped onto error kinds, and sync plans that keep their
connections on their owner's loop instead of opening new ones, with the clean-up rules of `jev.support.aio`."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import compactor, reference_config, reference_messages
from decisions_server import DecisionsServer
from systemone_server import SystemOneServer, noul

from jev import (
    ConfigError,
    JudgeConnectionError,
    JudgeError,
    JudgeProtocolError,
    JudgeStatusError,
    JudgeTimeoutError,
    Mode,
    Reason,
    Status,
)
from jev.judges import JudgeRequest, OpenAIDecisionsJudge, RemoteJudge, SystemOneJudge
from jev.judges.questions import Question
from jev.judges.retry import NO_RETRIES
from jev.support.aio import Runner

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")
    monkeypatch.delenv("JEV_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def systemone_server(behaviour: str | int) -> tuple[SystemOneServer, str]:
    def reply(headers: dict, body: dict) -> tuple[int, bytes]:
        if isinstance(behaviour, int):
            return behaviour, b'{"error": {"message": "injected"}}'
        if behaviour == "malformed":
            return 200, b"{not json"
        if behaviour == "slow":
            time.sleep(1.0)
        return noul(0.5)(headers, body)
    server = SystemOneServer(reply)
    return server, server.url


def decisions_server(behaviour: str | int) -> tuple[DecisionsServer, str]:
    slow = behaviour == "slow"
    server = DecisionsServer(default="answer" if slow else behaviour, latency=1.0 if slow else 0.0)
    return server, server.base_url


BACKENDS: dict[str, tuple[Callable[..., RemoteJudge], Callable[[str | int], tuple]]] = {
    "systemone": (SystemOneJudge, systemone_server),
    "decisions": (OpenAIDecisionsJudge, decisions_server),
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> tuple[Callable[..., RemoteJudge], Callable[[str | int], tuple]]:
    return BACKENDS[request.param]


REQUEST = JudgeRequest({"context": "c", "history": []}, (Question("call_t1", "q"), Question("result_t1", "q")))


@pytest.mark.parametrize("behaviour, kind, retryable, status", [
    (429, JudgeStatusError, True, 429),
    (503, JudgeStatusError, True, 503),
    (400, JudgeStatusError, False, 400),
    ("malformed", JudgeProtocolError, False, None),
    ("slow", JudgeTimeoutError, True, None),
])
def test_failures_map_onto_one_error_kind_each(backend, behaviour, kind, retryable: bool, status) -> None:
    make, serve = backend
    server, url = serve(behaviour)
    with server:
        judge = make(url, timeout=0.3, retry=NO_RETRIES)
        with pytest.raises(kind) as caught:
            judge.ask_sync(REQUEST)
        judge.close()
        decision = compactor(make(url, timeout=0.3, retry=NO_RETRIES), mode=Mode.SHADOW).plan_sync(reference_messages())
    error = caught.value
    assert isinstance(error, JudgeError) and str(error).startswith((judge.service, "Failed to parse"))
    assert (error.retryable, error.status) == (retryable, status)
    if status is not None:
        assert f"HTTP {status}: injected" in str(error)
    assert (decision.status, decision.reason, decision.error_kind) == (
        Status.ERROR, Reason.CALL_OR_RESPONSE_ERROR, kind.__name__)


def test_a_refused_connection_is_a_connection_error(backend) -> None:
    make, _ = backend
    # a port held bound but never listening refuses every connection, and no other test's server (another
    # worker's, in parallel) can be given it meanwhile, as it could a port closed before the connect
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}" + ("/v1" if make is OpenAIDecisionsJudge else "")
        with pytest.raises(JudgeConnectionError, match="transport error") as caught:
            make(url, retry=NO_RETRIES).ask_sync(REQUEST)
    assert caught.value.retryable and caught.value.status is None


def test_the_shared_constructor_rules(backend) -> None:
    make, _ = backend
    for kwargs, message in (({"model": " "}, "model must not be blank"), ({"timeout": 0}, "timeout must be positive"),
                            ({"timeout": True}, "timeout must be positive"),
                            ({"retry": 3}, "retry must be a jev.judges.retry.RetryPolicy")):
        with pytest.raises(ConfigError, match=message):
            make("http://127.0.0.1:9/v1", **kwargs)


def test_100_sync_plans_open_no_more_connections_than_max_concurrent_requests(backend) -> None:
    """Sync plans run on their session's loop, so the judge's client and its keep-alive connections serve
    all of them; three batches a plan, two in flight at once. Closing the session closes them."""
    make, serve = backend
    config = dataclasses.replace(reference_config(questions=2), max_concurrent_requests=2)
    server, url = serve("answer")
    with server:
        judge = make(url, retry=NO_RETRIES)
        with compactor(judge, config, mode=Mode.SHADOW) as c:
            for _ in range(100):
                assert c.plan_sync(reference_messages()).status in (Status.DECIDED, Status.INCONCLUSIVE)
            assert len(judge._clients._clients) == 1
    assert len(server.requests) == 300
    assert 1 <= len(set(server.peers)) <= config.max_concurrent_requests
    assert not judge._clients._clients and not c.runner.started


def _kept_client(judge: SystemOneJudge):
    (client, _keeper), = judge._clients._clients.values()
    return client


def test_a_judge_s_sync_calls_take_turns_on_one_connection_and_sessions_of_their_own_run_at_once() -> None:
    """Four threads ask one judge: its calls take turns on its one loop and keep-alive connection. Four
    threads plan on a session each over that judge (each reply takes 0.4 s): the plans overlap, each on its
    session's loop and connection."""
    def slow(headers: dict, body: dict) -> tuple[int, bytes]:
        time.sleep(0.4)
        return noul(0.5)(headers, body)

    def on_threads(work: Callable[[int], object]) -> float:
        started = time.monotonic()
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.monotonic() - started
    config = dataclasses.replace(reference_config(questions=2), max_concurrent_requests=1)  # one batch at a time
    with SystemOneServer(slow) as server:
        judge = SystemOneJudge(server.url, retry=NO_RETRIES)
        assert on_threads(lambda _k: judge.ask_sync(REQUEST)) >= 1.6
        assert len(set(server.peers)) == 1
        judge.close()
        sessions = [compactor(judge, config, mode=Mode.SHADOW) for _ in range(4)]
        planned = len(server.requests)
        took = on_threads(lambda k: sessions[k].plan_sync(reference_messages()))
        batches = (len(server.requests) - planned) // 4
        assert took < batches * 0.4 * 2  # in turn: 4 sessions x batches x 0.4 s
        assert len(judge._clients._clients) == 4
        for session in sessions:
            session.close()
    assert len(set(server.peers)) == 5 and not judge._clients._clients


def test_close_ends_the_loop_and_its_connections_and_the_next_call_starts_a_new_one() -> None:
    with SystemOneServer(noul(0.5)) as server:
        judge = SystemOneJudge(server.url, retry=NO_RETRIES)
        judge.ask_sync(REQUEST)
        first = _kept_client(judge)
        judge.close()
        assert first.is_closed and not judge._clients._clients and not judge._runner.started
        judge.close()  # twice: nothing to do
        judge.ask_sync(REQUEST)
        assert _kept_client(judge) is not first
        judge.close()
    assert len(set(server.peers)) == 2


def test_a_session_let_go_of_ends_its_loop_and_closes_its_connections() -> None:
    with SystemOneServer(noul(0.5)) as server:
        judge = SystemOneJudge(server.url, retry=NO_RETRIES)
        session = compactor(judge, mode=Mode.SHADOW)
        session.plan_sync(reference_messages())
        client = _kept_client(judge)
        loop = session.runner._loop
        del session
        gc.collect()
        assert loop.is_closed() and client.is_closed and not judge._clients._clients


def test_sync_twins_called_from_async_code_share_the_owner_s_connection() -> None:
    with SystemOneServer(noul(0.5)) as server:
        judge = SystemOneJudge(server.url, retry=NO_RETRIES)

        async def host() -> None:
            for _ in range(3):
                judge.ask_sync(REQUEST)  # this thread runs a loop: the call waits on the judge's own
        asyncio.run(host())
        judge.close()
    assert len(server.requests) == 3 and len(set(server.peers)) == 1


def test_interpreter_exit_closes_every_runner_and_its_connections() -> None:
    """A process that ends after sync plans — one session planned on the main thread and on a worker
    thread (one loop), another session on the same judge (a second) — closes each kept client's transport
    on the way out, and leaves no unclosed loop, socket or transport (ResourceWarning shown)."""
    script = textwrap.dedent("""
        import sys, threading
        import httpx2
        sys.path[:0] = ["tests", "servers"]
        from conftest import compactor, reference_messages
        from jev import Mode
        from jev.judges import SystemOneJudge

        class Noted(httpx2.AsyncHTTPTransport):
            async def aclose(self):
                await super().aclose()
                print("transport closed", flush=True)

        judge = SystemOneJudge(sys.argv[1], transport=Noted())
        c = compactor(judge, mode=Mode.SHADOW)
        assert c.plan_sync(reference_messages()).status.value == "DECIDED"
        worker = threading.Thread(target=lambda: c.plan_sync(reference_messages()))
        worker.start(); worker.join()
        other = compactor(judge, mode=Mode.SHADOW)
        other.plan_sync(reference_messages())
        print("planned", flush=True)
    """)
    with SystemOneServer(noul(0.01)) as server:
        env = {**os.environ, "PYTHONWARNINGS": "always::ResourceWarning"}
        proc = subprocess.run([sys.executable, "-c", script, server.url], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["planned", "transport closed", "transport closed"], proc.stdout
    assert "ResourceWarning" not in proc.stderr and "unclosed" not in proc.stderr.lower(), proc.stderr


def test_a_forked_child_starts_its_own_loop_and_leaves_the_parents_alone() -> None:
    """A child shares its parent's sockets and epoll descriptor after `fork()` but not its loop's thread: it
    must start its own loop and client, and the parent's kept connection must still serve the parent."""
    with SystemOneServer(noul(0.5)) as server:
        judge = SystemOneJudge(server.url, retry=NO_RETRIES)
        judge.ask_sync(REQUEST)
        parent_client = _kept_client(judge)
        pid = os.fork()
        if pid == 0:  # the child: a sync call on a loop and client of its own
            try:
                judge.ask_sync(REQUEST)
                status = 0
            except BaseException:
                status = 2
            os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        judge.ask_sync(REQUEST)
        assert _kept_client(judge) is parent_client and not parent_client.is_closed
        judge.close()
    assert len(server.requests) == 3 and len(set(server.peers)) == 2  # the parent's connection, the child's


def test_a_sync_twin_inside_another_owner_s_sync_twin_runs_and_inside_its_own_is_refused() -> None:
    """A coroutine on one runner's loop may call another owner's sync twin (that loop serves it); calling
    its own would wait on itself, so it is refused with a message that says what to do."""
    with SystemOneServer(noul(0.5)) as server:
        judge = SystemOneJudge(server.url, retry=NO_RETRIES)
        outer = Runner()

        async def inner() -> object:
            return judge.ask_sync(REQUEST)
        answers = outer.run(inner())  # a deadlock would hang here until pytest's timeout fails the test
        judge.close()

        async def own() -> object:
            return outer.run(asyncio.sleep(0))
        with pytest.raises(RuntimeError, match=r"inside its own owner's loop.*await the async method"):
            outer.run(own())
        outer.close()
    assert answers.probabilities == {"call_t1": 0.5, "result_t1": 0.5}



SECRET = "sk-echo-SECRET-0123456789"


class _EchoDecisions(DecisionsServer):
    """A Decisions server that puts the caller's Authorization header into its reply (`how`)."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def respond(self, action, body):  # type: ignore[override]
        auth = self.headers[-1].get("authorization", "")
        if self.how == "error":
            return 401, json.dumps({"error": {"message": f"bad key {auth}"}}).encode()
        status, payload = super().respond("answer", body)
        reply = json.loads(payload)
        if self.how == "model":
            reply["model"] = f"echo {auth}"
        else:  # a probability the client must refuse, naming the value it got
            reply["answers"][0]["probability"] = auth
        return status, json.dumps(reply).encode()


def _echo_systemone(how: str) -> SystemOneServer:
    def reply(headers: dict, body: dict) -> tuple[int, bytes]:
        auth = headers.get("authorization", "")
        if how == "error":
            return 401, json.dumps({"error": {"message": f"bad key {auth}"}}).encode()
        status, payload = noul(0.5)(headers, body)
        parsed = json.loads(payload)
        if how == "model":
            parsed["model"] = f"echo {auth}"
        else:
            parsed["answers"][next(iter(parsed["answers"]))] = {"type": "noul", "noul": auth}
        return status, json.dumps(parsed).encode()
    return SystemOneServer(reply)


@pytest.mark.parametrize("how", ["error", "model", "answer"])
@pytest.mark.parametrize("wire", ["systemone", "decisions"])
def test_a_key_a_server_echoes_back_never_leaves_the_judge(monkeypatch, tmp_path, capfd, wire: str, how: str) -> None:
    """Issue 35 item 5: an endpoint echoing `Authorization` puts the key nowhere — exception text, a plan's
    detail, a record, the command line's stdout and stderr."""
    from jev.cli.main import main
    monkeypatch.setenv("TYPESAFE_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server = _echo_systemone(how) if wire == "systemone" else _EchoDecisions(how)
    make = SystemOneJudge if wire == "systemone" else OpenAIDecisionsJudge
    with server:
        url = server.url if wire == "systemone" else server.base_url
        judge = make(url, retry=NO_RETRIES)
        try:
            answers = judge.ask_sync(REQUEST)
            seen = repr(answers)
        except JudgeError as exc:
            seen = f"{exc} {exc!r}"
        judge.close()
        records: list = []
        decision = compactor(make(url, retry=NO_RETRIES), mode=Mode.SHADOW, records=records).plan_sync(
            reference_messages())
        history = tmp_path / "h.json"
        history.write_text(json.dumps(__import__("jev").formats.dump(reference_messages(), "openai-chat")))
        code = main(["compact", str(history), "--judge", wire.replace("decisions", "openai"), "--judge-url", url,
                     "--eligible-tools", "read", "--preserve-recent", "2", "--records", str(tmp_path / "r.jsonl")])
    out, err = capfd.readouterr()
    assert code in (0, 3)
    assert how != "error" or "[redacted]" in seen  # the server's words stay, the key goes
    for text in (seen, decision.detail or "", repr(decision), *(r.to_json().decode() for r in records), out, err,
                 (tmp_path / "r.jsonl").read_text()):
        assert SECRET not in text
