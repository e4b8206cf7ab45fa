"""TypeSafe's Jev (System One) over HTTP: `POST {base}/v1/systemone` with `noul` questions.

The key comes from the environment only (`TYPESAFE_API_KEY`, then `JEV_API_KEY`). Each attempt has its
own timeout; 429, 529, 5xx, transport errors and per-attempt timeouts are retried with backoff, and the
compactor's plan budget bounds all of it. Request bodies are never compressed. What every remote judge
shares is in `jev.judges.remote`; this module is only the System One wire.
"""

from __future__ import annotations

import os
from typing import Any

import httpx2
import orjson

from ..errors import ConfigError, JudgeProtocolError
from .base import JudgeRequest
from .http import async_client
from .questions import Question, questions_map
from .remote import Part, RemoteJudge, Reply
from .retry import RetryPolicy

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


class SystemOneJudge(RemoteJudge):
    """A System One client. `transport` is for tests (an `httpx2.AsyncBaseTransport`)."""

    service = "System One"

    def __init__(self, base_url: str | None = None, *, model: str = DEFAULT_MODEL, timeout: float = 5.0,
                 retry: RetryPolicy = RetryPolicy(), transport: httpx2.AsyncBaseTransport | None = None) -> None:
        self._key = api_key_from_env()
        super().__init__(model=model, timeout=timeout, retry=retry, secret=self._key)
        self.endpoint = endpoint_url(base_url or os.environ.get("JEV_BASE_URL") or DEFAULT_BASE_URL)
        self._transport = transport

    def __repr__(self) -> str:  # never show the key
        return f"SystemOneJudge(endpoint={self.endpoint!r}, model={self.model!r}, timeout={self.timeout})"

    def body(self, request: JudgeRequest) -> dict[str, Any]:
        """The wire request: state, model and `noul` questions (no tool outputs, ever), validated with the
        reference's messages before anything is sent."""
        if request.state is None:
            raise JudgeProtocolError("state must not be null")
        if not request.questions:
            raise JudgeProtocolError("questions must not be empty")
        for q in request.questions:
            if not q.id.strip():
                raise JudgeProtocolError("question ids must not be blank")
            if q.instructions is None:
                raise JudgeProtocolError(f"question '{q.id}' instructions must not be null")
        return {"state": request.state, "model": self.model, "questions": questions_map(request.questions)}

    # --- the wire (RemoteJudge) ------------------------------------------------------------------

    def _client(self) -> httpx2.AsyncClient:
        return async_client(transport=self._transport)

    @staticmethod
    async def _close(client: httpx2.AsyncClient) -> None:
        await client.aclose()

    def _bodies(self, request: JudgeRequest) -> list[tuple[tuple[Question, ...], bytes]]:
        return [(request.questions, orjson.dumps(self.body(request)))]

    async def _send(self, client: httpx2.AsyncClient, body: bytes) -> Reply:
        headers = {"Authorization": f"Bearer {self._key}", "Accept": "application/json",
                   "Content-Type": "application/json"}
        try:
            response = await client.post(self.endpoint, content=body, headers=headers)
        except httpx2.TimeoutException:
            raise TimeoutError from None
        except httpx2.HTTPError as exc:
            raise ConnectionError(type(exc).__name__) from None
        return Reply(response.status_code, response.headers, response.content)

    def _answers(self, reply: Any, questions: tuple[Question, ...]) -> Part:
        """A System One response body (reference §1.2 messages), checked against the questions asked."""
        if not isinstance(reply, dict):
            raise JudgeProtocolError("Failed to parse System One response")
        model = self._model(reply.get("model"))
        answers = reply.get("answers")
        if not isinstance(answers, dict):
            raise JudgeProtocolError("System One response answers must not be null")
        tokens = self._usage(reply.get("usage"))
        ids = [q.id for q in questions]
        if set(answers) != set(ids):
            raise JudgeProtocolError("System One response answer keys do not match request keys")
        probabilities: dict[str, Any] = {}
        for qid in ids:
            answer = answers[qid]
            if not isinstance(answer, dict):
                raise JudgeProtocolError(f"System One response missing answer for question '{qid}'")
            if answer.get("type") != "noul":
                raise JudgeProtocolError(f"System One answer for question '{qid}' must have type noul")
            probabilities[qid] = self._probability(answer.get("noul"), qid)
        return Part(probabilities, model, *tokens)
