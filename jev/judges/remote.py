"""The base of the judges that send the state over HTTP, on httpx's pattern: the steps every backend shares
are written here once — the constructor's checks, one attempt under its own timeout, the mapping of
transport and status failures onto the error kinds of `jev.errors` (timeout, connection, status,
protocol), reading a JSON reply, checking probabilities and usage, retries, and one client per event
loop (sync callers keep theirs: `jev.support.aio`). A backend supplies only its wire:

- `_client()` / `_close(client)` (a static method): make and close its HTTP (or SDK) client;
- `_bodies(request)`: the request bodies, serialised once, each with the questions it asks;
- `_send(client, body)`: one POST, returning a `Reply` whatever its status; its own library's timeout
  raised as `TimeoutError`, its transport failures as `ConnectionError`;
- `_answers(reply_json, questions)`: the probabilities (or `REFUSAL`), model and usage of one reply.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import (
    ConfigError,
    JudgeConnectionError,
    JudgeError,
    JudgeProtocolError,
    JudgeStatusError,
    JudgeTimeoutError,
)
from ..support.aio import Runner
from ..support.validate import require_positive
from .base import Answers, JudgeRequest, check_probability, check_usage
from .http import LoopClients
from .questions import Question
from .retry import RetryPolicy, retry_after_seconds, retryable_status, with_retries


@dataclass(frozen=True, slots=True)
class Reply:
    """One HTTP reply as received: status, headers (a case-insensitive mapping) and body bytes."""

    status: int
    headers: Mapping[str, str]
    content: bytes


@dataclass(frozen=True, slots=True)
class Part:
    """What one reply answered: probabilities by question id, the model, and the usage it reported."""

    probabilities: dict[str, Any]
    model: str
    input_tokens: int
    output_tokens: int


def server_message(content: bytes) -> str:
    """The server's own words for a failure (`error.message`, `message`, `error` or `detail`), or ""."""
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return ""
    for holder in (body, body.get("error") if isinstance(body, dict) else None):
        if isinstance(holder, dict):
            for key in ("message", "error", "detail"):
                if isinstance(holder.get(key), str) and holder[key].strip():
                    return holder[key].strip()
    return ""


class RemoteJudge:
    """A judge over HTTP: state and questions out (tool outputs never), answers back, checked. See the
    module docstring for what a backend supplies; `service` names it in every message."""

    receives_state = True
    service = "judge"

    def __init__(self, *, model: str, timeout: float, retry: RetryPolicy, secret: str = "") -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("model must not be blank")
        require_positive("timeout", timeout)
        if not isinstance(retry, RetryPolicy):
            raise ConfigError(f"retry must be a jev.judges.retry.RetryPolicy (got {type(retry).__name__})")
        self.model = model
        self.timeout = float(timeout)
        self.retry = retry
        self._secret = secret  # the API key: never in a message, even when a server sends it back
        self._runner = Runner(f"jev-{self.service}")  # `ask_sync`'s loop, and its connections
        # Neither callable holds the judge (a keeper may close a client after the judge is gone), so a
        # judge let go of is freed at once and its clients closed on their loops' next turn.
        judge = weakref.ref(self)

        def client() -> Any:
            alive = judge()
            if alive is None:  # no plan asks a judge that is gone: its clients are only being closed
                raise RuntimeError("the judge was let go of")
            return alive._client()

        self._clients: LoopClients[Any] = LoopClients(client, type(self)._close)

    async def ask(self, request: JudgeRequest) -> Answers:
        """Every body of the request in turn, each retried per the policy; the answers merged."""
        bodies = self._bodies(request)  # built (and checked) before anything is sent
        client = await self._clients.get()  # this loop's: connections are reused across batches and plans
        parts = [await with_retries(functools.partial(self._exchange, client, body, questions), self.retry)
                 for questions, body in bodies]
        merged: dict[str, Any] = {}
        for part in parts:
            merged.update(part.probabilities)
        return Answers(merged, parts[0].model if parts else self.model,
                       sum(p.input_tokens for p in parts), sum(p.output_tokens for p in parts))

    def ask_sync(self, request: JudgeRequest) -> Answers:
        """`ask` for sync code, on this judge's own loop (`jev.support.aio.Runner`), so its connections stay
        open between calls, from any thread."""
        return self._runner.run(self.ask(request))

    async def aclose(self) -> None:
        """Close this event loop's connections now (they close anyway when the loop shuts down)."""
        await self._clients.aclose()

    def close(self) -> None:
        """End the loop `ask_sync` ran on, and the connections it kept open. (A session's sync plans ran on
        the session's loop: `Compactor.close` ends those.)"""
        self._runner.close()

    async def _exchange(self, client: Any, body: bytes, questions: tuple[Question, ...]) -> Part:
        """One attempt, with the key taken out of whatever the server sent back: an endpoint (or a proxy)
        that echoes the `Authorization` header must not put the key into an error, a plan's detail, a record
        or the command line's output."""
        try:
            part = await self._attempt(client, body, questions)
        except JudgeError as exc:
            exc.args = tuple(self.redact(a) if isinstance(a, str) else a for a in exc.args)
            raise
        return dataclasses.replace(part, model=self.redact(part.model)) if self._secret in part.model else part

    def redact(self, text: str) -> str:
        """`text` with the key (and its JSON-escaped form) replaced by `[redacted]`."""
        secret = self._secret
        if not secret or (secret not in text and orjson.dumps(secret).decode()[1:-1] not in text):
            return text
        return text.replace(secret, "[redacted]").replace(orjson.dumps(secret).decode()[1:-1], "[redacted]")

    async def _attempt(self, client: Any, body: bytes, questions: tuple[Question, ...]) -> Part:
        """One attempt: send, then map whatever went wrong onto its kind; the reply's answers, checked."""
        name = self.service
        try:
            reply = await asyncio.wait_for(self._send(client, body), self.timeout)
        except TimeoutError:
            raise JudgeTimeoutError(f"{name} request timed out after {round(self.timeout * 1000)}ms") from None
        except ConnectionError as exc:
            raise JudgeConnectionError(f"{name} transport error ({exc})") from None
        if not 200 <= reply.status < 300:
            words = server_message(reply.content)
            raise JudgeStatusError(f"{name} request failed with HTTP {reply.status}" + (f": {words}" if words else ""),
                                   reply.status, retryable=retryable_status(reply.status),
                                   retry_after=retry_after_seconds(reply.headers))
        content_type = reply.headers.get("content-type", "")
        if "json" not in content_type.lower():
            raise JudgeProtocolError(f"{name} response is not JSON (Content-Type {content_type or 'missing'!r})")
        try:
            parsed = orjson.loads(reply.content)
        except orjson.JSONDecodeError:
            raise JudgeProtocolError(f"Failed to parse {name} response") from None
        if parsed is None:
            raise JudgeProtocolError(f"{name} response must not be null")
        return self._answers(parsed, questions)

    def _model(self, value: Any) -> str:
        """A reply's model name, which must not be blank (the reference's wording, for any backend)."""
        if not isinstance(value, str) or not value.strip():
            raise JudgeProtocolError(f"{self.service} response model must not be blank")
        return value

    def _usage(self, value: Any) -> tuple[int, int]:
        """A reply's input and output token counts: an object of non-negative integers."""
        if not isinstance(value, Mapping):
            raise JudgeProtocolError(f"{self.service} response usage must not be null")
        return check_usage(value, self.service)

    def _probability(self, value: Any, qid: str) -> float:
        return check_probability(value, f"{self.service} answer for question '{qid}'")

    # --- the wire: what a backend supplies ---------------------------------------------------------

    def _client(self) -> Any:  # pragma: no cover - per backend
        raise NotImplementedError

    @staticmethod
    async def _close(client: Any) -> None:  # pragma: no cover - per backend
        raise NotImplementedError

    def _bodies(self, request: JudgeRequest) -> Sequence[tuple[tuple[Question, ...], bytes]]:  # pragma: no cover
        raise NotImplementedError

    async def _send(self, client: Any, body: bytes) -> Reply:  # pragma: no cover - per backend
        raise NotImplementedError

    def _answers(self, reply: Any, questions: tuple[Question, ...]) -> Part:  # pragma: no cover - per backend
        raise NotImplementedError
