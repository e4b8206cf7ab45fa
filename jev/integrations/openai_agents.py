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
from collections.abc import Callable
from typing import Any

import orjson
from agents.memory import SessionABC
from agents.run import CallModelData, ModelInputData

from .. import formats
from ..archived_pair import DESCRIPTION, NAME, SCHEMA
from ..compactor import Compactor
from ..decision import Decision, Mode
from ..scope import Scope
from ..state import estimate_tokens
from .core import Adapter, HostCompaction, check_count, counted_as

FORMAT = "openai-responses"


def estimated_tokens(items: list[Any]) -> int:
    """jev's deterministic token estimate of the items as JSON: the default counter, the SDK having none."""
    return estimate_tokens(orjson.dumps(items, default=str).decode())


class JevSession(Adapter, SessionABC):
    """Any Agents SDK session, with judged compaction of its stored items."""

    def __init__(self, underlying: Any, compactor: Compactor, *, trigger_items: int = 50,
                 scope: Scope | None = None, target_tokens: int | None = None,
                 token_counter: Callable[[list[Any]], int] = estimated_tokens, keep_decisions: int = 1,
                 horizon: int | Callable[[Any], int | None] | None = None) -> None:
        self.trigger_items = check_count("trigger_items", trigger_items)
        self.host = HostCompaction(compactor, scope=scope, target_tokens=target_tokens,
                                   keep_decisions=keep_decisions, trigger=self.trigger_items, horizon=horizon)
        self.underlying = underlying
        self.compactor = compactor
        self.scope = scope
        self.token_counter = token_counter
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
        self.host.tick()
        if not self.host.due(len(items)) or self.compactor.options.mode is Mode.OFF:
            return
        judged = self.host.read(lambda: formats.load(items, FORMAT))
        if judged is None:
            self.host.planned(len(items))
            return
        compactor = self.host.sized(judged, lambda: self.token_counter(items), counted_as(self.token_counter, FORMAT))
        if compactor is None:  # the host's counter failed: an ERROR decision kept, the session as it is
            self.host.planned(len(items))
            return
        decision = self.host.keep(await compactor.plan(judged, scope=self.scope, context={"session_id": self.session_id},
                                                       horizon=self.host.horizon_for(self), idle_seconds=self.host.idle))
        async def unchanged() -> bool:
            return await self.underlying.get_items() == items

        adopted = await self.host.acommit(decision, self.scope, unchanged)
        if adopted is None:  # not adopted, or the session moved on: keep it
            self.host.planned(len(items))
            return
        compacted = formats.dump(list(adopted), FORMAT)
        self.host.planned(len(compacted))
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


def input_filter(compactor: Compactor, *, scope: Scope | None = None, decisions: list[Decision] | None = None,
                 target_tokens: int | None = None,
                 token_counter: Callable[[list[Any]], int] = estimated_tokens,
                 keep_decisions: int = 1) -> Callable[[CallModelData[Any]], Any]:
    """A `call_model_input_filter`: each model call gets the compacted input on DECIDED in ENFORCE, the input
    unchanged otherwise (SHADOW only records). The session's stored history is never touched. `decisions`,
    when given, holds the last `keep_decisions` decisions (it grew with every model call before)."""
    host = HostCompaction(compactor, scope=scope, target_tokens=target_tokens, keep_decisions=keep_decisions)

    async def compact_input(data: CallModelData[Any]) -> ModelInputData:
        items = list(data.model_data.input)
        host.tick()  # each model call's own input: the clock the cost gate reads
        judged = host.read(lambda: formats.load(items, FORMAT))
        if judged is None:  # left as it is
            return ModelInputData(input=items, instructions=data.model_data.instructions)
        compactor = host.sized(judged, lambda: token_counter(items), counted_as(token_counter, FORMAT))
        if compactor is None:  # the host's counter failed: an ERROR decision kept, the input as it is
            return ModelInputData(input=items, instructions=data.model_data.instructions)
        decision = await compactor.plan(judged, scope=scope, idle_seconds=host.idle)
        if decisions is not None:  # the caller's list, bounded as every adapter's: the last keep_decisions
            decisions.append(decision)
            del decisions[:-keep_decisions]
        adopted = host.commit(decision, None, lambda: True)  # the call's own input: nothing else can change it
        if adopted is not None:
            items = formats.dump(list(adopted), FORMAT)
        return ModelInputData(input=items, instructions=data.model_data.instructions)

    return compact_input


def _restore_function_tool(host: HostCompaction) -> Any:
    from agents import FunctionTool

    host.archive()  # a restore tool needs one

    async def invoke(_context: Any, arguments: str) -> str:
        return await host.restore(orjson.loads(arguments or "{}").get("call_id", ""))

    return FunctionTool(name=NAME, description=DESCRIPTION, params_json_schema=SCHEMA, on_invoke_tool=invoke)
