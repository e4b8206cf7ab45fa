"""The embedded local heuristic judge: its signals move scores the documented way; it is deterministic."""

from __future__ import annotations

import asyncio

import pytest
from conftest import call, msg, result, text

from jev import JudgeError
from jev.judges import JudgeRequest, LocalJudge
from jev.judges.local import features
from jev.questions import questions_for
from jev.transcript import analyze


def _scores(messages) -> dict[str, float]:
    t = analyze(messages)
    questions = tuple(q for p in t.pairs for q in questions_for(p))
    answers = asyncio.run(LocalJudge().ask(JudgeRequest({}, questions, t)))
    return dict(answers.probabilities)


def test_superseded_unreferenced_and_referenced_pairs() -> None:
    messages = [msg("0", "user", text("Fix src/app_main.py")),
                msg("1", "assistant", call("a", input={"path": "src/app_main.py"})),
                msg("2", "tool", result("a", output="def handler_v1(): pass")),
                msg("3", "assistant", call("b", input={"path": "notes.md"})),
                msg("4", "tool", result("b", output="unrelated scribbles")),
                msg("5", "assistant", call("c", input={"path": "src/app_main.py"})),
                msg("6", "tool", result("c", output="def handler_v2(): pass")),
                msg("7", "user", text("Now rename handler_v2 everywhere."))]
    s = _scores(messages)
    f = features(analyze(messages))
    assert f["t1"].superseded and not f["t3"].superseded and f["t3"].result_refs == 1
    assert s["result_t1"] < 0.2 and s["call_t1"] < 0.5  # superseded by the later identical read
    assert s["result_t3"] > 0.8  # its distinctive identifier is referenced later
    assert s["result_t3"] > s["result_t2"]
    assert _scores(messages) == s  # deterministic


def test_needs_the_in_process_transcript() -> None:
    with pytest.raises(JudgeError, match="needs the in-process transcript"):
        asyncio.run(LocalJudge().ask(JudgeRequest({}, ())))
