"""Running the async core from sync code: a `Runner` is one event loop, kept between calls and owned by what
has sync twins — a compactor session (`plan_sync`, `compact_sync`), a remote judge (`ask_sync`), a host's
conversation (`process_sync` runs on its session's) — so what lives on that loop, a remote judge's HTTP
client and its keep-alive connections, serves every sync call its owner gets and goes when the owner
closes. The rules:

- the loop is made on the first sync call (async-only code never makes one) and runs on the calling
  thread, any thread, as `asyncio.run` would, without its SIGINT bookkeeping (which formats `repr()` of the
  finished task — and so of a whole plan — on every call);
- an owner's sync calls take turns: a session serves one history, one plan at a time (a second thread's call
  waits for the first); owners of their own (a session per conversation) run at once;
- after each call, the tasks it left behind are cancelled: nothing runs between calls (a caller interrupted
  by `KeyboardInterrupt` cancels its call so);
- a sync twin called from a thread that already runs a loop (async code calling sync code) runs its
  owner's loop on a thread of its own, in the caller's context (`contextvars`); called from inside its own
  owner's loop it is refused: it would wait on itself;
- `close()` shuts the loop down — cancels what is left, closes async generators (the judges' clients with
  them), joins its executor, closes it (waiting for a call in progress); a runner let go of, or still open
  at interpreter exit, is closed the same way; the next call after `close()` makes a new loop;
- after `os.fork()` the child makes its own loop on first use: it never touches its parent's sockets.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Runner:
    """One owner's event loop for its sync twins (module docstring). `name` names the thread a call from
    async code runs on."""

    def __init__(self, name: str = "jev-sync") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        _RUNNERS.add(self)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` to completion on this runner's loop, from any thread, and return its result (or raise
        its exception)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return self._run_here(coro)
        if running is self._loop:
            coro.close()
            raise RuntimeError(f"a sync twin was called from inside its own owner's loop ({self._name}), where it "
                               "would wait on itself; await the async method instead")
        return _on_own_thread(self._name, lambda: self._run_here(coro))

    @property
    def started(self) -> bool:
        """Whether it holds a loop now (made by a sync call, not yet closed)."""
        loop = self._loop
        return loop is not None and not loop.is_closed()

    def close(self) -> None:
        """Shut the loop down now (module docstring); closing a runner that holds none does nothing. Refused
        from inside the loop itself (a plan closing its own session), which could only wait on itself."""
        try:
            inside = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            inside = False
        if inside:
            raise RuntimeError(f"close() was called from inside the loop it would close ({self._name}); close the "
                               "owner after its call returns")
        with self._lock:
            finalizer, self._finalizer, self._loop = self._finalizer, None, None
        if finalizer is not None:
            finalizer()

    def _run_here(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            loop = self._loop
            if loop is None or loop.is_closed():
                loop = self._loop = asyncio.new_event_loop()
                self._finalizer = weakref.finalize(self, _shutdown, loop)
            try:
                return loop.run_until_complete(coro)
            finally:
                _cancel_all(loop)

    def _forget(self) -> None:
        """In a forked child: drop the parent's loop without touching it, and a lock a parent thread held."""
        self._lock = threading.Lock()
        self._loop = None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None


def close_loop() -> None:
    """Deprecated, does nothing: sync twins no longer keep a loop per thread. Close the owner instead
    (`Compactor.close`, a remote judge's `close`)."""
    warnings.warn("jev.support.aio.close_loop() does nothing now: sync twins run on their owner's loop; close "
                  "the owner instead (Compactor.close(), judge.close())", DeprecationWarning, stacklevel=2)


def _on_own_thread(name: str, call: Callable[[], T]) -> T:
    """`call()` on a new thread, in this thread's context (`contextvars`), waited for (this thread runs a
    loop, and loops do not nest)."""
    box: dict[str, Any] = {}
    context = contextvars.copy_context()

    def target() -> None:
        try:
            box["value"] = context.run(call)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name=name)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _shutdown(loop: asyncio.AbstractEventLoop) -> None:
    """What `asyncio.run` does on the way out: cancel, close async generators, join the executor, close — on
    a thread of its own when this one runs a loop (a runner let go of inside async code)."""
    if loop.is_closed():
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        _on_own_thread("jev-sync-close", lambda: _shutdown(loop))
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


_RUNNERS: weakref.WeakSet[Runner] = weakref.WeakSet()


def _forget_after_fork() -> None:
    for runner in list(_RUNNERS):
        runner._forget()


os.register_at_fork(after_in_child=_forget_after_fork)
