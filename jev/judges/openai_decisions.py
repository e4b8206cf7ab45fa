"""OpenAI's Decisions API through the official `openai` SDK: the request of `decisions.create(model, input,
questions)`, sent with the SDK client's `post` and a body serialised once (see `_attempt`).

The state goes in as JSON text; each question is a `predicate` named by its id. Answers come back in
question order and are matched by position *and* name. A `refusal` answer is valid and means "do not
know" (the pair is kept, reason REFUSED). The SDK's own 600 s timeout and retries are replaced by ours,
so the plan budget rules. Key and base URL from `OPENAI_API_KEY` / `OPENAI_BASE_URL`.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

import httpx2
import orjson

from ..aio import run_sync
from ..errors import ConfigError, JudgeError
from ..questions import Question
from ..validate import is_probability
from .base import REFUSAL, Answers, JudgeRequest
from .http import LoopClients, async_client
from .retry import RetryPolicy, retry_after_seconds, retryable_status, with_retries

if TYPE_CHECKING:
    import openai

DEFAULT_MODEL = "gpt-6-luna"
MAX_QUESTIONS = 400


def _answers(body: Any, questions: tuple[Question, ...]) -> tuple[dict[str, Any], str, int, int]:
    """Validate a Decisions response body against the questions asked."""
    if not isinstance(body, dict):
        raise JudgeError("Decisions response must be a JSON object")
    answers, model, usage = body.get("answers"), body.get("model"), body.get("usage")
    if not isinstance(answers, list):
        raise JudgeError("Decisions response answers must be a list")
    if not isinstance(model, str) or not model.strip():
        raise JudgeError("Decisions response model must not be blank")
    if not isinstance(usage, dict):
        raise JudgeError("Decisions response usage must be an object")
    if len(answers) != len(questions):
        raise JudgeError(f"Decisions response has {len(answers)} answers for {len(questions)} questions")
    out: dict[str, Any] = {}
    for position, (question, answer) in enumerate(zip(questions, answers, strict=True)):
        if not isinstance(answer, dict) or answer.get("name") != question.id:
            got = answer.get("name") if isinstance(answer, dict) else answer
            raise JudgeError(f"Decisions answer {position} is named {got!r}, expected {question.id!r}")
        kind = answer.get("type")
        if kind == "refusal":
            out[question.id] = REFUSAL
        elif kind == "predicate":
            p = answer.get("probability")
            if not is_probability(p):
                raise JudgeError(f"Decisions answer for question {question.id!r} contains an invalid probability")
            out[question.id] = float(p)
        else:
            raise JudgeError(f"Decisions answer for question {question.id!r} must have type predicate or refusal")
    tokens = [usage.get(name, 0) for name in ("input_tokens", "output_tokens")]
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in tokens):
        raise JudgeError("Decisions usage token counts must be non-negative integers")
    return out, model, tokens[0], tokens[1]


class OpenAIDecisionsJudge:
    """A judge on OpenAI's Decisions API (or any gateway that speaks it)."""

    receives_state = True

    def __init__(self, base_url: str | None = None, *, model: str = DEFAULT_MODEL, timeout: float = 5.0,
                 retry: RetryPolicy = RetryPolicy()) -> None:
        key = os.environ.get("OPENAI_API_KEY", "").strip()
        if not key:
            raise ConfigError("OpenAI Decisions judge needs an API key: set OPENAI_API_KEY")
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("model must not be blank")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ConfigError(f"timeout must be positive (got {timeout!r})")
        self.model = model
        self.timeout = float(timeout)
        self.retry = retry
        import openai  # noqa: F401 - here, not in the first plan: the SDK takes ~0.5 s to import, which a
        # plan budget of a fraction of a second cannot absorb
        # Our timeout and retries replace the SDK's (600 s, 2 retries), so the plan budget rules.
        client_args = {"api_key": key, "base_url": base_url or os.environ.get("OPENAI_BASE_URL") or None,
                       "timeout": self.timeout, "max_retries": 0}
        self._clients = LoopClients(lambda: _sdk_client(client_args), lambda client: client.close())

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIDecisionsJudge(model={self.model!r}, timeout={self.timeout})"

    async def ask(self, request: JudgeRequest) -> Answers:
        """Questions in chunks of at most 400, each retried per the policy; answers merged."""
        state = orjson.dumps(request.state).decode()
        chunks = [request.questions[i:i + MAX_QUESTIONS] for i in range(0, len(request.questions), MAX_QUESTIONS)]
        client = await self._clients.get()  # this loop's: connections are reused across batches and plans
        parts = []
        for chunk in chunks:  # more than one only for batches over 400 questions
            parts.append(await with_retries(lambda c=chunk: self._attempt(client, state, c), self.retry))
        merged: dict[str, Any] = {}
        for answers, _, _, _ in parts:
            merged.update(answers)
        model = parts[0][1] if parts else self.model
        return Answers(merged, model, sum(p[2] for p in parts), sum(p[3] for p in parts))

    def ask_sync(self, request: JudgeRequest) -> Answers:
        """`ask` for sync code."""
        return run_sync(self.ask(request))

    async def aclose(self) -> None:
        """Close this event loop's connections now (they close anyway when the loop shuts down)."""
        await self._clients.aclose()

    async def _attempt(self, client: openai.AsyncOpenAI, state: str,
                       questions: tuple[Question, ...]) -> tuple[dict[str, Any], str, int, int]:
        import openai

        body = orjson.dumps({"model": self.model, "input": state, "questions": [
            {"type": "predicate", "name": q.id, "instructions": q.instructions} for q in questions]})
        try:
            # The SDK's own request path (auth, headers, errors) with a pre-serialised body: the
            # TypedDict transform of `decisions.create` costs ~35 ms of CPU per 400 questions, which would
            # serialise concurrent batches.
            response = await asyncio.wait_for(client.post(
                "/decisions", cast_to=httpx2.Response, content=body,
                options={"headers": {"Content-Type": "application/json"}}), self.timeout)
        except TimeoutError:
            raise JudgeError(f"Decisions request timed out after {round(self.timeout * 1000)}ms",
                             retryable=True) from None
        except openai.APIStatusError as exc:
            raise JudgeError(f"Decisions request failed with HTTP {exc.status_code}: {_message(exc)}",
                             retryable=retryable_status(exc.status_code), status=exc.status_code,
                             retry_after=retry_after_seconds(getattr(exc.response, 'headers', None))) from None
        except openai.APITimeoutError:
            raise JudgeError(f"Decisions request timed out after {round(self.timeout * 1000)}ms",
                             retryable=True) from None
        except openai.APIConnectionError as exc:
            raise JudgeError(f"Decisions transport error ({type(exc).__name__})", retryable=True) from None
        try:
            reply = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            raise JudgeError("Failed to parse Decisions response") from None
        return _answers(reply, questions)


def _sdk_client(args: dict[str, Any]) -> openai.AsyncOpenAI:
    import openai  # already imported by the judge's constructor

    return openai.AsyncOpenAI(**args, http_client=async_client())


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return exc.message
