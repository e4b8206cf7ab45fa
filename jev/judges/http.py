"""HTTP clients for the remote judges: one TLS context per process, and one client per event loop, so
keep-alive connections serve every batch and every plan on that loop instead of a TCP and TLS handshake
per batch.

A loop's client is closed when the loop shuts down its async generators — what `asyncio.run` and jev's
sync runner do on the way out — or by the judge's `aclose()`, or on the loop's next turn after the judge
was let go of.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Generic, TypeVar

import httpx2

C = TypeVar("C")


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """The shared TLS context (system trust store, as httpx2 builds it by default)."""
    return httpx2.create_ssl_context()


def async_client(**kwargs: Any) -> httpx2.AsyncClient:
    """A new async client on the shared TLS context; no client-side timeout (callers set their own)."""
    kwargs.setdefault("timeout", None)
    return httpx2.AsyncClient(verify=ssl_context(), **kwargs)


class LoopClients(Generic[C]):
    """One client per running event loop, made on first use (see the module docstring for its end). The
    keepers never refer back to it, so a judge let go of without `aclose()` is freed at once, and asyncio's
    own finalizer has each loop close the judge's client on its next turn."""

    def __init__(self, make: Callable[[], C], close: Callable[[C], Awaitable[Any]]) -> None:
        self._make = make
        self._close = close
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[C, AsyncGenerator[None, bool]]] = (
            weakref.WeakKeyDictionary())

    async def get(self) -> C:
        """This loop's client."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is not None:
            return entry[0]
        _forget_closed_loops(self._clients)
        client = self._make()
        keeper = _keep(weakref.ref(self._clients), self._close, client)
        self._clients[loop] = (client, keeper)
        await anext(keeper)  # now the loop knows the generator and finalizes it at shutdown
        return client

    async def aclose(self) -> None:
        """Close this loop's client, if it has one."""
        entry = self._clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[1].aclose()


_Clients = weakref.WeakKeyDictionary  # loop -> (client, keeper)


async def _keep(clients: weakref.ref[_Clients], close: Callable[[Any], Awaitable[Any]],
                client: Any) -> AsyncGenerator[None, bool]:
    """Holds a loop's client until the loop shuts its generators down, `aclose()`, or the judge is gone:
    then closes it. It holds its table weakly, so that nothing here keeps a judge's clients alive."""
    closing = True
    try:
        closing = yield
    finally:
        if closing is not False:  # shutting down, aclose(), or finalized: close the connections
            table = clients()
            if table is not None:
                table.pop(asyncio.get_running_loop(), None)
            await close(client)


def _forget_closed_loops(clients: _Clients) -> None:
    """Drop the clients of loops that closed without shutting down their generators; their keepers are
    finished without the dead loop (the sockets go with the client)."""
    for loop in [loop for loop in list(clients.keys()) if loop.is_closed()]:
        entry = clients.pop(loop, None)
        if entry is not None:
            try:
                entry[1].asend(False).send(None)
            except StopAsyncIteration:
                pass
