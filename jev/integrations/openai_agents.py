"""OpenAI Agents SDK: `JevSession`, a `Session` wrapper over any session that compacts the stored items,
and `input_filter`, a `RunConfig.call_model_input_filter` that compacts the per-call view only.

`JevSession` checks after each `add_items`: when the stored items reach the trigger it plans over them;
in ENFORCE, on DECIDED, and only if the stored items are still exactly what was judged, it replaces them
with the compacted items (the full history is in the archive first). Replacing is `clear_session` then
`add_items` on the underlying session: not atomic, which is why the archive write comes first, and why a
failed write of the compacted items puts the judged ones back before the error goes on.

With `target_tokens=N` either one plans in budget mode, sized to bring the items under N tokens. The SDK
has no token counter of its own, so `token_counter` defaults to jev's deterministic estimate (SPEC §4)
of the items' JSON; pass your model's tokenizer for an exact count. `JevSession` keeps its last
`keep_decisions` decisions (`last_decision`, `recent_decisions`), never every plan it made.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from typing import Any

import orjson
from agents.memory import SessionABC
from agents.run import CallModelData, ModelInputData

from ..applying.archived_pair import DESCRIPTION, NAME, SCHEMA
from ..deciding.decision import Decision
from ..errors import ConfigError
from ..model.scope import Scope
from ..reading.state import estimate_tokens
from ..running.compactor import Compactor
from .core import HostCompaction
from .processor import HistoryProcessor

FORMAT = "openai-responses"


def estimated_tokens(items: list[Any]) -> int:
    """jev's deterministic token estimate of the items as JSON: the default counter, the SDK having none."""
    return estimate_tokens(orjson.dumps(items, default=str).decode())


class JevSession(HistoryProcessor, SessionABC):
    """Any Agents SDK session, with judged compaction of its stored items (`trigger=("messages", n)`: its items;
    `("tokens", n)`: `token_counter` of them; `trigger_items=n` is the old spelling of `("messages", n)`)."""

    def __init__(self, underlying: Any, compactor: Compactor, *, trigger: tuple[str, int] | None = None,
                 scope: Scope | Callable[[Any], Scope | None] | None = None, target_tokens: int | None = None,
                 token_counter: Callable[[list[Any]], int] = estimated_tokens, keep_decisions: int = 1,
                 horizon: int | Callable[[Any], int | None] | None = None, trigger_items: int | None = None) -> None:
        if trigger_items is not None:
            if trigger is not None:
                raise ConfigError("give trigger or trigger_items (its old spelling), not both")
            warnings.warn('trigger_items=n is deprecated: trigger=("messages", n)', DeprecationWarning, stacklevel=2)
            trigger = ("messages", trigger_items)
        super().__init__(compactor, FORMAT, trigger=trigger or ("messages", 50), units=("messages", "tokens"),
                         scope=scope, target_tokens=target_tokens, token_counter=token_counter,
                         keep_decisions=keep_decisions, horizon=horizon)
        self.underlying = underlying
        self.session_id = underlying.session_id
        self.session_settings = getattr(underlying, "session_settings", None)

    def restore_tool(self) -> Any:
        """An Agents SDK function tool that brings back an archived call and result by call id."""
        return _restore_function_tool(self.host)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return await self.underlying.get_items(limit)

    async def add_items(self, items: list[Any]) -> None:
        await self.underlying.add_items(items)
        await self._maybe_compact()

    async def pop_item(self) -> Any:
        return await self.underlying.pop_item()

    async def clear_session(self) -> None:
        await self.underlying.clear_session()

    async def _maybe_compact(self) -> None:
        items = await self.underlying.get_items()

        async def unchanged(_judged: Any) -> bool:
            return await self.underlying.get_items() == items

        compacted = await self.process(items, self, unchanged=unchanged, context={"session_id": self.session_id})
        if compacted is items:  # not adopted, or the session moved on: keep it
            return
        await self.underlying.clear_session()
        try:
            await self.underlying.add_items(compacted)
        except BaseException:
            # An emptied session would cost the agent its run: put the judged items back (shielded, so a
            # second cancellation cannot stop it half-way), then let the failure through.
            await asyncio.shield(self._put_back(items))
            raise

    async def _put_back(self, items: list[Any]) -> None:
        await self.underlying.clear_session()
        await self.underlying.add_items(items)


def input_filter(compactor: Compactor, *, trigger: tuple[str, int] = ("messages", 1),
                 scope: Scope | Callable[[Any], Scope | None] | None = None, decisions: list[Decision] | None = None,
                 target_tokens: int | None = None, token_counter: Callable[[list[Any]], int] = estimated_tokens,
                 keep_decisions: int = 1, horizon: int | Callable[[Any], int | None] | None = None
                 ) -> Callable[[CallModelData[Any]], Any]:
    """A `call_model_input_filter`: each model call gets the compacted input on DECIDED in ENFORCE, the input
    unchanged otherwise (SHADOW only records). The session's stored history is never touched. By default it
    plans at every model call whose input grew (`trigger`). `decisions`, when given, holds the last
    `keep_decisions` decisions (it grew with every model call before)."""
    processor = HistoryProcessor(compactor, FORMAT, trigger=trigger, units=("messages", "tokens"), scope=scope,
                                 target_tokens=target_tokens, token_counter=token_counter,
                                 keep_decisions=keep_decisions, horizon=horizon)

    async def compact_input(data: CallModelData[Any]) -> ModelInputData:
        items = list(data.model_data.input)
        before = processor.last_decision
        out = await processor.process(items, data)  # the call's own input: nothing else can change it
        if decisions is not None and processor.last_decision is not before and processor.last_decision is not None:
            decisions.append(processor.last_decision)  # the caller's list, bounded as every adapter's
            del decisions[:-keep_decisions]
        return ModelInputData(input=out, instructions=data.model_data.instructions)

    compact_input.processor = processor  # type: ignore[attr-defined]
    return compact_input


def _restore_function_tool(host: HostCompaction) -> Any:
    from agents import FunctionTool

    host.archive()  # a restore tool needs one

    async def invoke(_context: Any, arguments: str) -> str:
        return await host.restore(orjson.loads(arguments or "{}").get("call_id", ""))

    return FunctionTool(name=NAME, description=DESCRIPTION, params_json_schema=SCHEMA, on_invoke_tool=invoke)
