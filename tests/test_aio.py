"""The sync twins' runner (`jev.support.aio.Runner`) on its own: the caller's thread and context, an owner's
calls in turn and other owners' at once, an interrupted caller, closing, and a session's loop as its own."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import gc
import signal
import threading
import time

import pytest
from conftest import compactor, reference_messages

from jev import Mode
from jev.judges import ReplayJudge
from jev.support.aio import Runner

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("WHO", default="nobody")


async def _until_cancelled(cancelled: threading.Event) -> None:
    """Sleeps until cancelled, and says so."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        cancelled.set()
        raise


async def who() -> tuple[str, str]:
    await asyncio.sleep(0)
    return WHO.get(), threading.current_thread().name


def test_a_call_runs_on_its_caller_s_thread_and_context_on_a_loop_kept_between_calls() -> None:
    runner = Runner("jev-test")
    assert not runner.started
    loops: list[asyncio.AbstractEventLoop] = []

    async def where() -> tuple[str, str]:
        loops.append(asyncio.get_running_loop())
        return await who()
    token = WHO.set("caller")
    try:
        assert runner.run(where()) == ("caller", threading.current_thread().name)
    finally:
        WHO.reset(token)
    assert runner.run(where())[0] == "nobody" and runner.started and loops[0] is loops[1]
    runner.close()
    assert not runner.started
    runner.run(where())
    assert loops[2] is not loops[0] and loops[0].is_closed()  # a new loop after close()
    runner.close()


def test_an_owner_s_calls_from_many_threads_take_turns_and_other_owners_run_at_once() -> None:
    one, others = Runner(), [Runner() for _ in range(4)]
    inside = [0, 0]  # calls inside `one` now, the most at once

    async def nap() -> None:
        inside[0] += 1
        inside[1] = max(inside)
        await asyncio.sleep(0.1)
        inside[0] -= 1
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: one.run(nap()), range(4)))
        assert inside[1] == 1
        started = time.monotonic()
        list(pool.map(lambda r: r.run(asyncio.sleep(0.3)), others))
        assert time.monotonic() - started < 1.0  # in turn: 1.2 s
    for runner in (one, *others):
        runner.close()


def test_an_error_comes_back_as_raised_and_the_loop_serves_on() -> None:
    runner = Runner()

    async def fail() -> None:
        raise ValueError("the call's own")
    with pytest.raises(ValueError, match="the call's own"):
        runner.run(fail())
    assert runner.run(who())[0] == "nobody"
    runner.close()


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals need the main thread")
def test_a_caller_interrupted_while_it_waits_cancels_its_call() -> None:
    runner = Runner()
    cancelled = threading.Event()

    class Interrupted(Exception):
        pass

    def interrupt(_signum: int, _frame: object) -> None:
        raise Interrupted
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    try:
        with pytest.raises(Interrupted):
            runner.run(_until_cancelled(cancelled))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert cancelled.wait(5)
    runner.close()


def test_close_waits_for_the_call_in_progress_and_leaves_nothing_running() -> None:
    runner = Runner()
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(runner.run(asyncio.sleep(0.3, "slept"))))
    thread.start()
    time.sleep(0.1)
    runner.close()
    thread.join(5)
    assert outcome == ["slept"] and not runner.started


def test_tasks_a_call_left_behind_are_cancelled_when_it_returns() -> None:
    runner = Runner()
    cancelled = threading.Event()

    async def leave() -> str:
        asyncio.get_running_loop().create_task(_until_cancelled(cancelled))
        await asyncio.sleep(0)
        return "returned"
    assert runner.run(leave()) == "returned" and cancelled.is_set()
    runner.close()


def test_a_runner_let_go_of_inside_async_code_is_closed_on_a_thread_of_its_own() -> None:
    runner = Runner()
    runner.run(asyncio.sleep(0))
    loop = runner._loop
    assert loop is not None

    async def host() -> None:
        nonlocal runner
        del runner  # the finalizer runs here, while this thread runs a loop
        gc.collect()
    asyncio.run(host())
    assert loop.is_closed()


def test_a_session_owns_its_loop_and_a_copy_for_a_token_target_shares_it() -> None:
    judge = ReplayJudge({}, default=0.9)
    with compactor(judge, mode=Mode.SHADOW) as first, compactor(judge, mode=Mode.SHADOW) as second:
        first.plan_sync(reference_messages())
        second.plan_sync(reference_messages())
        assert first.runner is not second.runner and first.runner.started and second.runner.started
        messages = reference_messages()
        sized = first.for_tokens(messages, 10_000, 100)
        assert sized is not first and sized.runner is first.runner
    assert not first.runner.started and not second.runner.started


def test_close_loop_is_deprecated_and_does_nothing() -> None:
    from jev.support.aio import close_loop
    with pytest.warns(DeprecationWarning, match=r"close the owner instead \(Compactor.close\(\), judge.close\(\)\)"):
        close_loop()


def test_closing_from_inside_its_own_loop_is_refused_and_leaves_it_serving() -> None:
    runner = Runner()

    async def close_me() -> None:
        runner.close()
    with pytest.raises(RuntimeError, match=r"close\(\) was called from inside the loop it would close"):
        runner.run(close_me())
    assert runner.started and runner.run(asyncio.sleep(0, "served")) == "served"
    runner.close()


def test_a_call_from_async_code_runs_on_a_thread_of_its_own_in_its_caller_s_context() -> None:
    runner = Runner("jev-test")

    async def host() -> tuple[str, str]:
        WHO.set("async caller")
        return runner.run(who())  # this thread runs a loop: the owner's loop runs on another thread
    seen, thread = asyncio.run(host())
    assert seen == "async caller" and thread == "jev-test" != threading.current_thread().name
    runner.close()
