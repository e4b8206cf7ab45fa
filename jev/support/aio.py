"""Running the async core from sync code: one helper, so every sync twin behaves the same.

Each thread that calls a sync twin (`plan_sync`, `compact_sync`, `ask_sync`, …) gets one event loop,
kept between its calls, so what lives on a loop — a remote judge's HTTP client and its keep-alive
connections — serves every sync call of that thread instead of a new TCP (and TLS) handshake per plan.
The clean-up rules:

- after each call, the tasks it left behind are cancelled: nothing runs between calls;
- a thread's loop is shut down — its async generators closed (the judges' clients with them), its
  default executor joined, the loop closed — by `close_loop()` in that thread; when a later sync call,
  from any thread, finds the thread finished; or at interpreter exit (`atexit`);
- `judge.close()` (or `await judge.aclose()`) closes one judge's connections at once;
- a sync twin called from a thread that already runs a loop (async code calling sync code) runs on one
  shared helper thread, whose loop is kept the same way (so such calls take turns);
- after `os.fork()` the child starts with no loops: it never touches its parent's sockets.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_local = threading.local()  # .loop: this thread's kept loop; .helper: this thread serves other threads' calls
_loops: dict[threading.Thread, asyncio.AbstractEventLoop] = {}  # every kept loop, by its thread
_lock = threading.Lock()
_helper: ThreadPoolExecutor | None = None


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code on this thread's kept loop; when this thread already
    runs an event loop, on the helper thread's."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(coro)
    if getattr(_local, "helper", False):  # the helper itself (or a thread it started): never wait on itself
        return _run_fresh(coro)
    return _helper_pool().submit(_run_here, coro).result()


def close_loop() -> None:
    """Shut down the calling thread's kept loop now (its judges' connections close with it); the next
    sync call starts a new one."""
    loop = getattr(_local, "loop", None)
    _local.loop = None
    with _lock:
        _loops.pop(threading.current_thread(), None)
    if loop is not None:
        _shutdown(loop)


def _run_here(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` on a kept loop, and without its SIGINT bookkeeping, which formats `repr()` of the
    finished task — and so of a whole plan — on every call (CPython's `signal.getsignal` enum lookup)."""
    _shutdown_finished_threads()
    loop = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _new_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        _cancel_all(loop)


def _new_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    with _lock:
        _loops[threading.current_thread()] = loop
    _local.loop = loop
    return loop


def _run_fresh(coro: Coroutine[Any, Any, T]) -> T:
    """A coroutine on a new thread with its own loop, shut down after it (only for the helper calling a
    sync twin from inside a sync twin)."""
    box: dict[str, Any] = {}

    def target() -> None:
        _local.helper = True
        try:
            box["value"] = _run_here(coro)
        except BaseException as exc:
            box["error"] = exc
        finally:
            close_loop()

    thread = threading.Thread(target=target, name="jev-sync-nested")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _helper_pool() -> ThreadPoolExecutor:
    global _helper
    with _lock:
        if _helper is None:
            _helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jev-sync", initializer=_mark_helper)
        return _helper


def _mark_helper() -> None:
    _local.helper = True


def _shutdown_finished_threads() -> None:
    if all(thread.is_alive() for thread in list(_loops)):  # the usual case, without the lock
        return
    with _lock:
        finished = [thread for thread in _loops if not thread.is_alive()]
        loops = [_loops.pop(thread) for thread in finished]
    for loop in loops:
        _shutdown(loop)


def _shutdown(loop: asyncio.AbstractEventLoop) -> None:
    """What `asyncio.run` does on the way out: cancel, close async generators, join the executor, close."""
    if loop.is_closed() or loop.is_running():
        return
    try:
        _cancel_all(loop)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


@atexit.register
def _shutdown_all() -> None:
    with _lock:
        loops = list(_loops.values())
        _loops.clear()
    for loop in loops:
        _shutdown(loop)


def _forget_after_fork() -> None:
    global _local, _lock, _helper
    _local, _lock, _helper = threading.local(), threading.Lock(), None
    _loops.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
