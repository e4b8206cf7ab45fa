"""OpenAI's Decisions API through the official `openai` SDK: the request of `decisions.create(model, input,
questions)`, sent with the SDK client's `post` and a body serialised once (see `_attempt`).

The state goes in as JSON text; each question is a `predicate` named by its id. Answers come back in
question order and are matched by position *and* name. A `refusal` answer is valid and means "do not
know" (the pair is kept, reason REFUSED). The SDK's own 600 s timeout and retries are replaced by ours,
so the plan budget rules. Key and base URL from `OPENAI_API_KEY` / `OPENAI_BASE_URL`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import httpx2
import orjson

from ..errors import ConfigError, JudgeProtocolError
from .base import REFUSAL, JudgeRequest
from .http import async_client
from .questions import Question
from .remote import Part, RemoteJudge, Reply
from .retry import RetryPolicy

if TYPE_CHECKING:
    import openai

DEFAULT_MODEL = "gpt-6-luna"
MAX_QUESTIONS = 400


class OpenAIDecisionsJudge(RemoteJudge):
    """A judge on OpenAI's Decisions API (or any gateway that speaks it)."""

    service = "Decisions"

    def __init__(self, base_url: str | None = None, *, model: str = DEFAULT_MODEL, timeout: float = 5.0,
                 retry: RetryPolicy = RetryPolicy()) -> None:
        key = os.environ.get("OPENAI_API_KEY", "").strip()
        if not key:
            raise ConfigError("OpenAI Decisions judge needs an API key: set OPENAI_API_KEY")
        super().__init__(model=model, timeout=timeout, retry=retry, secret=key)
        import openai  # noqa: F401 - here, not in the first plan: the SDK takes ~0.5 s to import, which a
        # plan budget of a fraction of a second cannot absorb
        # Our timeout and retries replace the SDK's (600 s, 2 retries), so the plan budget rules.
        self._client_args: dict[str, Any] = {"api_key": key, "base_url": base_url or os.environ.get("OPENAI_BASE_URL") or None,
                             "timeout": self.timeout, "max_retries": 0}

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIDecisionsJudge(model={self.model!r}, timeout={self.timeout})"

    # --- the wire (RemoteJudge) ------------------------------------------------------------------

    def _client(self) -> openai.AsyncOpenAI:
        import openai  # already imported by the constructor

        return openai.AsyncOpenAI(**self._client_args, http_client=async_client())

    @staticmethod
    async def _close(client: openai.AsyncOpenAI) -> None:
        await client.close()

    def _bodies(self, request: JudgeRequest) -> list[tuple[tuple[Question, ...], bytes]]:
        """One body per 400 questions (more than one only for bigger batches), the state written once."""
        state = orjson.dumps(request.state).decode()
        chunks = [request.questions[i:i + MAX_QUESTIONS] for i in range(0, len(request.questions), MAX_QUESTIONS)]
        return [(chunk, orjson.dumps({"model": self.model, "input": state, "questions": [
            {"type": "predicate", "name": q.id, "instructions": q.instructions} for q in chunk]})) for chunk in chunks]

    async def _send(self, client: openai.AsyncOpenAI, body: bytes) -> Reply:
        import openai

        try:
            # The SDK's own request path (auth, headers, errors) with a pre-serialised body: the
            # TypedDict transform of `decisions.create` costs ~35 ms of CPU per 400 questions, which would
            # serialise concurrent batches.
            response = await client.post("/decisions", cast_to=httpx2.Response, content=body,
                                         options={"headers": {"Content-Type": "application/json"}})
        except openai.APIStatusError as exc:
            return Reply(exc.status_code, exc.response.headers, exc.response.content)
        except openai.APITimeoutError:
            raise TimeoutError from None
        except openai.APIConnectionError as exc:
            raise ConnectionError(type(exc).__name__) from None
        return Reply(response.status_code, response.headers, response.content)

    def _answers(self, reply: Any, questions: tuple[Question, ...]) -> Part:
        """A Decisions response body, its answers matched to the questions by position and name."""
        if not isinstance(reply, dict):
            raise JudgeProtocolError("Decisions response must be a JSON object")
        answers = reply.get("answers")
        if not isinstance(answers, list):
            raise JudgeProtocolError("Decisions response answers must be a list")
        model = self._model(reply.get("model"))
        tokens = self._usage(reply.get("usage"))
        if len(answers) != len(questions):
            raise JudgeProtocolError(f"Decisions response has {len(answers)} answers for {len(questions)} questions")
        out: dict[str, Any] = {}
        for position, (question, answer) in enumerate(zip(questions, answers, strict=True)):
            if not isinstance(answer, dict) or answer.get("name") != question.id:
                got = answer.get("name") if isinstance(answer, dict) else answer
                raise JudgeProtocolError(f"Decisions answer {position} is named {got!r}, expected {question.id!r}")
            kind = answer.get("type")
            if kind == "refusal":
                out[question.id] = REFUSAL
            elif kind == "predicate":
                out[question.id] = self._probability(answer.get("probability"), question.id)
            else:
                raise JudgeProtocolError(f"Decisions answer for question '{question.id}' must have type predicate "
                                         "or refusal")
        return Part(out, model, *tokens)
