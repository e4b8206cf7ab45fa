"""TypeSafe's Jev (System One) over HTTP: `POST {base}/v1/systemone` with `noul` questions.

The key comes from the environment only (`TYPESAFE_API_KEY`, then `JEV_API_KEY`). Each attempt has its
own timeout; 429, 529, 5xx, transport errors and per-attempt timeouts are retried with backoff, and the
compactor's plan budget bounds all of it. Request bodies are never compressed.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx2
import orjson

from ..errors import ConfigError, JudgeError
from ..questions import questions_map
from ..aio import run_sync
from ..validate import is_probability
from .base import Answers, JudgeRequest
from .http import LoopClients, async_client
from .retry import RetryPolicy, retry_after_seconds, retryable_status, with_retries

DEFAULT_BASE_URL = "https://api.typesafe.ai"
DEFAULT_MODEL = "jev-latest"
KEY_VARIABLES = ("TYPESAFE_API_KEY", "JEV_API_KEY")


def endpoint_url(base_url: str) -> str:
    """`…`, `…/v1` or `…/v1/systemone` (trailing slashes ignored) to the full endpoint."""
    base = base_url.strip().rstrip("/")
    try:
        url = httpx2.URL(base)
    except httpx2.InvalidURL:
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(f"base_url must be an absolute http(s) URL (got {base_url!r})")
    if base.endswith("/v1/systemone"):
        return base
    if base.endswith("/v1"):
        return base + "/systemone"
    return base + "/v1/systemone"


def api_key_from_env() -> str:
    """The first non-blank of `TYPESAFE_API_KEY`, `JEV_API_KEY`, or a `ConfigError` naming both."""
    for name in KEY_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    raise ConfigError("System One judge needs an API key: set TYPESAFE_API_KEY (or JEV_API_KEY)")


def _server_message(response: httpx2.Response) -> str:
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    for holder in (body, body.get("error") if isinstance(body, dict) else None):
        if isinstance(holder, dict):
            for key in ("message", "error", "detail"):
                if isinstance(holder.get(key), str) and holder[key].strip():
                    return f"System One request failed with HTTP {response.status_code}: {holder[key].strip()}"
    return f"System One request failed with HTTP {response.status_code}"


def parse_response(body: Any, question_ids: list[str]) -> Answers:
    """Validate a System One response body (reference §1.2 messages) and return its answers."""
    if body is None:
        raise JudgeError("System One response must not be null")
    if not isinstance(body, dict):
        raise JudgeError("Failed to parse System One response")
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise JudgeError("System One response model must not be blank")
    answers = body.get("answers")
    if not isinstance(answers, dict):
        raise JudgeError("System One response answers must not be null")
    usage = body.get("usage")
    if not isinstance(usage, dict):
        raise JudgeError("System One response usage must not be null")
    if set(answers) != set(question_ids):
        raise JudgeError("System One response answer keys do not match request keys")
    probabilities: dict[str, float] = {}
    for qid in question_ids:
        answer = answers[qid]
        if not isinstance(answer, dict):
            raise JudgeError(f"System One response missing answer for question '{qid}'")
        if answer.get("type") != "noul":
            raise JudgeError(f"System One answer for question '{qid}' must have type noul")
        p = answer.get("noul")
        if not is_probability(p):
            raise JudgeError(f"System One answer for question '{qid}' contains an invalid probability")
        probabilities[qid] = float(p)
    tokens = []
    for name in ("input_tokens", "output_tokens"):
        n = usage.get(name, 0)
        if isinstance(n, bool) or not isinstance(n, int):
            raise JudgeError(f"System One usage {name} must be an integer (got {n!r})")
        if n < 0:
            raise JudgeError("System One usage must not be negative")
        tokens.append(n)
    return Answers(probabilities, model, tokens[0], tokens[1])


class SystemOneJudge:
    """A System One client. `transport` is for tests (an `httpx2.AsyncBaseTransport`)."""

    receives_state = True

    def __init__(self, base_url: str | None = None, *, model: str = DEFAULT_MODEL, timeout: float = 5.0,
                 retry: RetryPolicy = RetryPolicy(), transport: httpx2.AsyncBaseTransport | None = None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("model must not be blank")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ConfigError(f"timeout must be positive (got {timeout!r})")
        self.endpoint = endpoint_url(base_url or os.environ.get("JEV_BASE_URL") or DEFAULT_BASE_URL)
        self._key = api_key_from_env()
        self.model = model
        self.timeout = float(timeout)
        self.retry = retry
        self._clients = LoopClients(lambda: async_client(transport=transport), lambda client: client.aclose())

    def __repr__(self) -> str:  # never show the key
        return f"SystemOneJudge(endpoint={self.endpoint!r}, model={self.model!r}, timeout={self.timeout})"

    def body(self, request: JudgeRequest) -> dict[str, Any]:
        """The wire request: state, model and `noul` questions (no tool outputs, ever), validated with the
        reference's messages before anything is sent."""
        if request.state is None:
            raise JudgeError("state must not be null")
        if not request.questions:
            raise JudgeError("questions must not be empty")
        for q in request.questions:
            if not q.id.strip():
                raise JudgeError("question ids must not be blank")
            if q.instructions is None:
                raise JudgeError(f"question '{q.id}' instructions must not be null")
        return {"state": request.state, "model": self.model, "questions": questions_map(request.questions)}

    async def ask(self, request: JudgeRequest) -> Answers:
        """One batch: the request, retried per the policy; answers validated."""
        content = orjson.dumps(self.body(request))
        ids = [q.id for q in request.questions]
        client = await self._clients.get()  # this loop's: connections are reused across batches and plans
        return await with_retries(lambda: self._attempt(client, content, ids), self.retry)

    async def aclose(self) -> None:
        """Close this event loop's connections now (they close anyway when the loop shuts down)."""
        await self._clients.aclose()

    def ask_sync(self, request: JudgeRequest) -> Answers:
        """`ask` for sync code."""
        return run_sync(self.ask(request))

    async def _attempt(self, client: httpx2.AsyncClient, content: bytes, ids: list[str]) -> Answers:
        headers = {"Authorization": f"Bearer {self._key}", "Accept": "application/json",
                   "Content-Type": "application/json"}
        try:
            response = await asyncio.wait_for(client.post(self.endpoint, content=content, headers=headers),
                                              self.timeout)
        except TimeoutError:
            raise JudgeError(f"System One request timed out after {round(self.timeout * 1000)}ms",
                             retryable=True) from None
        except httpx2.HTTPError as exc:
            raise JudgeError(f"System One transport error ({type(exc).__name__})", retryable=True) from None
        if not 200 <= response.status_code < 300:
            raise JudgeError(_server_message(response), retryable=retryable_status(response.status_code),
                             status=response.status_code, retry_after=retry_after_seconds(response.headers))
        content_type = response.headers.get("content-type", "")
        if "json" not in content_type.lower():
            raise JudgeError(f"System One response is not JSON (Content-Type {content_type or 'missing'!r})")
        try:
            body = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            raise JudgeError("Failed to parse System One response") from None
        return parse_response(body, ids)
