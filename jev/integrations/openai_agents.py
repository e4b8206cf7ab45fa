"""OpenAI Agents SDK: `JevSession`, a `Session` wrapper over any session that compacts the stored items,
and `input_filter`, a `RunConfig.call_model_input_filter` that compacts the per-call view only.

`JevSession` checks after each `add_items`: when the stored items reach the trigger it plans over them;
in ENFORCE, on DECIDED, and only if the stored items are still exactly what was judged, it replaces them
with the compacted items (the full history is in the archive first). Replacing is `clear_session` then
`add_items` on the underlying session: not atomic, which is why the archive write comes first, and why a
failed write of the compacted items puts the judged ones back before the error goes on.

With `target_tokens=N` either one plans in budget mode, sized to bring the items under N tokens. The SDK
has no token counter of its own, so `token_counter` defaults to jev's deterministic estimate (SPEC §4)
of the items' JSON; pass your model's tokenizer for an exact count.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
from agents.memory import SessionABC
from agents.run import CallModelData, ModelInputData

from archive import Scope, restore_latest
from archive.tool import DESCRIPTION, NAME, SCHEMA

from .. import formats
from ..compactor import Compactor
from ..decision import Decision, Mode, Status
from ..errors import ConfigError
from ..state import estimate_tokens
from ..token_target import check_target_tokens

FORMAT = "openai-responses"


def estimated_tokens(items: list[Any]) -> int:
    """jev's deterministic token estimate of the items as JSON: the default counter, the SDK having none."""
    return estimate_tokens(orjson.dumps(items, default=str).decode())


def _sized(compactor: Compactor, items: list[Any], judged: list[Any], target_tokens: int | None,
           token_counter: Callable[[list[Any]], int]) -> Compactor:
    if target_tokens is None:
        return compactor
    return compactor.for_tokens(judged, token_counter(items), target_tokens)


def _adopted(compactor: Compactor, decision: Decision) -> bool:
    return compactor.options.mode is Mode.ENFORCE and decision.status is Status.DECIDED and decision.plan is not None


class JevSession(SessionABC):
    """Any Agents SDK session, with judged compaction of its stored items."""

    def __init__(self, underlying: Any, compactor: Compactor, *, trigger_items: int = 50,
                 scope: Scope | None = None, target_tokens: int | None = None,
                 token_counter: Callable[[list[Any]], int] = estimated_tokens) -> None:
        if isinstance(trigger_items, bool) or not isinstance(trigger_items, int) or trigger_items < 1:
            raise ConfigError(f"trigger_items must be an integer >= 1 (got {trigger_items!r})")
        self.underlying = underlying
        self.compactor = compactor
        self.trigger_items = trigger_items
        self.scope = scope
        self.target_tokens = check_target_tokens(target_tokens)
        self.token_counter = token_counter
        self.session_id = underlying.session_id
        self.session_settings = getattr(underlying, "session_settings", None)
        self.decisions: list[Decision] = []
        self.references: list[tuple[Scope, str]] = []

    def restore_tool(self) -> Any:
        """An Agents SDK function tool that brings back an archived call and result by call id."""
        return _restore_function_tool(self.compactor, self.references)

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
        if len(items) < self.trigger_items or self.compactor.options.mode is Mode.OFF:
            return
        judged = formats.load(items, FORMAT)
        compactor = _sized(self.compactor, items, judged, self.target_tokens, self.token_counter)
        decision = await compactor.plan(judged, scope=self.scope, context={"session_id": self.session_id})
        self.decisions.append(decision)
        if not _adopted(self.compactor, decision):
            return
        if await self.underlying.get_items() != items:  # the stored history moved on: keep it
            return
        compacted = formats.dump(list(decision.plan.messages), FORMAT)  # type: ignore[union-attr]
        if self.scope is not None:
            self.references.append((self.scope, decision.plan.archive_reference))  # type: ignore[union-attr]
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
                 token_counter: Callable[[list[Any]], int] = estimated_tokens) -> Callable[[CallModelData[Any]], Any]:
    """A `call_model_input_filter`: each model call gets the compacted input on DECIDED in ENFORCE, the input
    unchanged otherwise (SHADOW only records). The session's stored history is never touched."""
    check_target_tokens(target_tokens)

    async def compact_input(data: CallModelData[Any]) -> ModelInputData:
        items = list(data.model_data.input)
        judged = formats.load(items, FORMAT)
        decision = await _sized(compactor, items, judged, target_tokens, token_counter).plan(judged, scope=scope)
        if decisions is not None:
            decisions.append(decision)
        if _adopted(compactor, decision):
            items = formats.dump(list(decision.plan.messages), FORMAT)  # type: ignore[union-attr]
        return ModelInputData(input=items, instructions=data.model_data.instructions)

    return compact_input


def _restore_function_tool(compactor: Compactor, references: list[tuple[Scope, str]]) -> Any:
    from agents import FunctionTool

    if compactor.archive is None:
        raise ConfigError("restore_tool needs a compactor with an archive")

    async def invoke(_context: Any, arguments: str) -> str:
        call_id = orjson.loads(arguments or "{}").get("call_id", "")
        return await restore_latest(compactor.archive, references, call_id)

    return FunctionTool(name=NAME, description=DESCRIPTION, params_json_schema=SCHEMA, on_invoke_tool=invoke)
