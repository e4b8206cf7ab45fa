"""A judge that answers from a recording: for tests, examples and offline evaluation (SPEC §10)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..errors import FormatError
from .base import REFUSAL, Answers, JudgeRequest


class ReplayJudge:
    """Answers each question id from `answers`, else `default`; values pass through unvalidated, so the
    compactor's own checks see exactly what was recorded. `calls` counts requests. It stands in for a
    remote judge, so by default it receives the state and is bound by the state budget like one;
    `receives_state=False` makes it an in-process judge."""

    def __init__(self, answers: Mapping[str, Any], *, default: Any = None, model: str = "replay",
                 receives_state: bool = True) -> None:
        self.receives_state = bool(receives_state)
        self.answers = dict(answers)
        self.default = default
        self.model = model
        self.calls = 0

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayJudge:
        """Load `{"model": "replay", "answers": {id: p | "refusal"}, "default": p}` from a JSON file."""
        try:
            data = orjson.loads(Path(path).read_bytes())
        except OSError as exc:
            raise FormatError(f"replay file {path}: cannot read ({exc.strerror or exc})") from None
        except orjson.JSONDecodeError as exc:
            raise FormatError(f"replay file {path}: invalid JSON ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
            raise FormatError(f"replay file {path}: must be a JSON object with an 'answers' object")
        unknown = set(data) - {"model", "answers", "default"}
        if unknown:
            raise FormatError(f"replay file {path}: unknown field {sorted(unknown)[0]!r}")
        model = data.get("model", "replay")
        if not isinstance(model, str):
            raise FormatError(f"replay file {path}: 'model' must be a string")
        return cls(data["answers"], default=data.get("default"), model=model)

    async def ask(self, request: JudgeRequest) -> Answers:
        self.calls += 1
        out: dict[str, Any] = {}
        for q in request.questions:
            value = self.answers.get(q.id, self.default)
            if value is not None:
                out[q.id] = REFUSAL if value == "refusal" else value
        return Answers(out, self.model, 0, 0)
