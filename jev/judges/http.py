"""HTTP clients for the remote judges: one TLS context per process, and one client per event loop, so
keep-alive connections serve every batch and every plan on that loop instead of a TCP and TLS handshake
per batch.

A loop's client is closed when the loop shuts down its async generators — what `asyncio.run` and jev's
sync runner do on the way out — or by the judge's `aclose()`.
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
    """One client per running event loop, made on first use (see the module docstring for its end)."""

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
        self._forget_closed_loops()
        client = self._make()
        keeper = self._keep(client)
        self._clients[loop] = (client, keeper)
        await anext(keeper)  # now the loop knows the generator and finalizes it at shutdown
        return client

    async def aclose(self) -> None:
        """Close this loop's client, if it has one."""
        entry = self._clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[1].aclose()

    async def _keep(self, client: C) -> AsyncGenerator[None, bool]:
        close = True
        try:
            close = yield
        finally:
            if close is not False:  # the loop is shutting down, or aclose(): close the connections
                self._clients.pop(asyncio.get_running_loop(), None)
                await self._close(client)

    def _forget_closed_loops(self) -> None:
        """Drop the clients of loops that closed without shutting down their generators; their keepers are
        finished without the dead loop (the sockets go with the client)."""
        for loop in [loop for loop in list(self._clients.keys()) if loop.is_closed()]:
            entry = self._clients.pop(loop, None)
            if entry is not None:
                try:
                    entry[1].asend(False).send(None)
                except StopAsyncIteration:
                    pass
