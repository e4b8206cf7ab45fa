"""`HistoryProcessor`, the one hook every host adapter is a few lines over: the host's messages in, the host's
messages out (the adapters' own tests run it inside each real host's loop)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import reference_config

from archive import FileArchive
from jev import Compactor, ConfigError, ExecutionOptions, Mode, Scope, Status
from jev.integrations.processor import HistoryProcessor
from jev.judges import ReplayJudge


def chat(reads: int, size: int = 4000) -> list[dict]:
    """An OpenAI Chat history of `reads` calls, each answered by a long result."""
    out: list[dict] = [{"role": "user", "content": "read every module"}]
    for i in range(reads):
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": f'{{"n": {i}}}'}}]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"module {i}: " + "x" * size})
    return out


def processor(mode: Mode, tmp_path, **kwargs) -> HistoryProcessor:
    compactor = Compactor(ReplayJudge({}, default=0.01), reference_config(cost_gate=False),
                          ExecutionOptions(mode, 10.0, "processor"), FileArchive(tmp_path / "archive"))
    return HistoryProcessor(compactor, "openai-chat", scope=Scope("u", "processor", "s"), **kwargs)


def test_off_below_the_trigger_and_shadow_return_the_very_list_given(tmp_path) -> None:
    history = chat(6)
    assert asyncio.run(processor(Mode.OFF, tmp_path).process(history)) is history
    below = processor(Mode.ENFORCE, tmp_path, trigger=("messages", 50))
    assert asyncio.run(below.process(history)) is history and below.last_decision is None  # nothing planned
    shadow = processor(Mode.SHADOW, tmp_path, trigger=("messages", 5))
    assert shadow.process_sync(history) is history and shadow.last_decision is not None


def test_enforce_returns_a_new_list_in_the_host_s_form_only_while_the_history_is_unchanged(tmp_path) -> None:
    history = chat(6)
    jev = processor(Mode.ENFORCE, tmp_path, trigger=("messages", 5))
    out = jev.process_sync(history)
    assert out is not history and out != history and len(jev.references) == 1
    assert all(isinstance(m, dict) and "role" in m for m in out)  # OpenAI Chat, as it came
    moved = processor(Mode.ENFORCE, tmp_path, trigger=("messages", 5))
    assert moved.process_sync(history, unchanged=lambda _judged: False) is history  # the host moved on
    assert moved.last_decision is not None and moved.last_decision.status is Status.DECIDED and not moved.references

    async def still() -> bool:
        return True

    assert processor(Mode.ENFORCE, tmp_path, trigger=("messages", 5)).process_sync(
        history, unchanged=lambda _judged: still()) is not history  # an async look is awaited


def test_a_history_it_cannot_read_keeps_an_error_and_is_left_as_it_is(tmp_path) -> None:
    history = [*chat(3), {"role": "tool", "content": "no call id"}]
    jev = processor(Mode.ENFORCE, tmp_path, trigger=("messages", 2))
    assert jev.process_sync(history) is history
    assert jev.last_decision is not None and jev.last_decision.status is Status.ERROR
    assert jev.process_sync(history) is history and jev.host.next_at > len(history)  # the trigger moved on


def test_a_token_trigger_counts_with_the_host_s_counter_and_a_failing_counter_is_an_error(tmp_path) -> None:
    history = chat(6)
    jev = processor(Mode.SHADOW, tmp_path, trigger=("tokens", 1000), token_counter=lambda items: 100 * len(items))
    jev.process_sync(history)  # 1 300 "tokens": over
    assert jev.last_decision is not None and jev.last_decision.status is not Status.ERROR

    def broken(_items: list) -> int:
        raise RuntimeError("tokenizer down")

    failing = processor(Mode.SHADOW, tmp_path, trigger=("tokens", 1000), token_counter=broken)
    assert failing.process_sync(history) is history
    assert failing.last_decision is not None and failing.last_decision.status is Status.ERROR
    assert "tokenizer down" in failing.last_decision.detail


def test_bad_arguments_are_refused_by_name(tmp_path) -> None:
    with pytest.raises(ConfigError, match="form must be one of"):
        processor(Mode.SHADOW, tmp_path).__class__(processor(Mode.SHADOW, tmp_path).compactor, "auto")
    with pytest.raises(ConfigError, match=r"trigger must be \('messages', n\)"):
        processor(Mode.SHADOW, tmp_path, trigger=("turns", 3))


def test_each_conversation_s_sync_calls_run_on_its_own_loop_which_closes_when_it_is_let_go() -> None:
    """`process_sync` runs on the loop of its conversation's session: conversations do not share one, and a
    conversation no longer among the newest `conversations` has its loop (and any judge connections on it)
    closed with it."""
    from conftest import reference_messages

    from jev import formats
    compactor = Compactor(ReplayJudge({}, default=0.9), reference_config(), ExecutionOptions(Mode.SHADOW, 5.0, "t"))
    processor = HistoryProcessor(compactor, "jev", trigger=("messages", 1), conversation=lambda host: host,
                                 conversations=2)
    history = formats.dump(reference_messages(), "jev")
    processor.process_sync(history, "x")
    processor.process_sync(history, "y")
    x, y = (processor.conversation_of(key).compactor.runner for key in ("x", "y"))
    assert x is not y and x._loop is not y._loop and x.started and y.started
    assert processor.conversation_of("x").last_decision is not None  # planned on that loop
    loop = x._loop
    del x
    processor.process_sync(history, "z")  # x is let go: the oldest of three
    assert processor.conversation_of("x") is None and loop.is_closed() and y.started
