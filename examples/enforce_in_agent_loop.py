"""ENFORCE inside a LangChain agent loop: a real `create_agent` with real tools, a scripted chat model
standing in for the LLM, the judged compaction middleware, a file archive, and the restore tool.

The agent reads four files; once the history reaches 8 messages the middleware judges it (recorded
answers here: the first read, a large obsolete file, is not needed), checks that dropping it pays under
prompt caching within the calls the host expects (`horizon=10`: it re-bills the rest of the history
once and saves the file's tokens on every later call), archives the full history, and replaces the graph
state with the compacted one. The next model call sees the compacted history; the restore tool brings the archived
read back without re-running it.

Run: python examples/enforce_in_agent_loop.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

import jev
from archive import FileArchive, Scope
from jev.integrations.langchain import JevCompactionMiddleware
from jev.judges import ReplayJudge

FILES = {"old_config.py": "DEBUG = True\n" * 3000, "settings.py": "TIMEOUT = 30\n" * 150,
         "app.py": "def main(): ...\n" * 150, "test_app.py": "def test_main(): assert main()\n" * 150}


@tool
def read_file(path: str) -> str:
    """Read a file from the project."""
    return FILES.get(path, "no such file")


class ScriptedModel(GenericFakeChatModel):
    """Stands in for the LLM: reads each file in turn, then answers. Prints what it is shown."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        reads = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
        print(f"  model call sees {len(messages)} messages; tool results present: {reads}")
        return super()._generate(messages, stop, run_manager, **kwargs)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="jev-agent-") as workdir:  # nothing left behind in /tmp
        run(Path(workdir))


def run(workdir: Path) -> None:
    turns = [AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": p}, "id": f"read_{i}",
                                        "type": "tool_call"}]) for i, p in enumerate(FILES)]
    model = ScriptedModel(messages=iter([*turns, AIMessage("app.py and its test are consistent.")]))
    archive = FileArchive(workdir / "archive")
    compactor = jev.Compactor(
        ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99),  # recorded answers: read_0 is obsolete
        jev.CompactionConfig(eligible_tools={"read_file"}, preserve_recent_messages=2),
        jev.ExecutionOptions(jev.Mode.ENFORCE, budget=5.0, version="example"),
        archive,
    )
    # the host expects about 10 more model calls: the cost gate (jev.deciding.cost) adopts a plan only if it pays by then
    middleware = JevCompactionMiddleware(compactor, trigger=("messages", 8), scope=Scope("demo", "coder", "s1"),
                                         keep_decisions=10, horizon=10)  # the last 10 plans (1 by default)
    agent = create_agent(model, tools=[read_file, middleware.restore_tool()], middleware=[middleware])
    state = agent.invoke({"messages": [{"role": "user", "content": "Check app.py against its test."}]})
    print("final state holds results of:", [m.tool_call_id for m in state["messages"] if isinstance(m, ToolMessage)])
    for decision in middleware.recent_decisions:
        cost = decision.plan.cost if decision.plan else None
        print("decision:", decision.status.value, decision.reason.value, decision.detail,
              f"pays after {cost.break_even:.1f} later calls (net {cost.net:,.0f} tokens over {cost.horizon})"
              if cost else "")
    restored = asyncio.run(middleware.restore_tool().ainvoke({"call_id": "read_0"}))
    print("restore tool, read_0:", restored.splitlines()[0], "…")


if __name__ == "__main__":
    main()
