"""HTTP clients for the remote judges: one TLS context per process, so a client per call costs ~1 ms
instead of the ~20-40 ms of loading trust stores again."""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx2


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """The shared TLS context (system trust store, as httpx2 builds it by default)."""
    return httpx2.create_ssl_context()


def async_client(**kwargs: Any) -> httpx2.AsyncClient:
    """A new async client on the shared TLS context; no client-side timeout (callers set their own)."""
    kwargs.setdefault("timeout", None)
    return httpx2.AsyncClient(verify=ssl_context(), **kwargs)
