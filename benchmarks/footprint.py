"""What a host pays before and between plans: the time of `import jev` (and which heavy stacks it loads),
and the memory a long-running agent's middleware keeps as plans accumulate.

Import: a fresh interpreter per run (median of 11), bytecode compiled first as an installed package has
it; beside it, in the same run, the interpreter doing nothing and importing asyncio and numpy, for scale.
Memory: the LangChain middleware in SHADOW planning the same small history N times; the memory still
held after a collection (tracemalloc), with the default `keep_decisions=1` against `keep_decisions=N` —
what the old unbounded `decisions` list held — measured in the same run.

    python benchmarks/footprint.py
"""

from __future__ import annotations

import argparse
import compileall
import gc
import os
import statistics
import subprocess
import sys
import tracemalloc

from bench import ROOT

RUNS = 11
HEAVY = ("numpy", "httpx", "httpx2", "fsspec", "openai", "sklearn", "langchain_core", "archive", "asyncio")
_TIMED = "import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"


def fresh(stmt: str) -> float:
    """Median seconds `stmt` takes in a fresh interpreter."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return statistics.median(float(subprocess.run([sys.executable, "-c", _TIMED.format(stmt=stmt)], env=env,
                                                  check=True, capture_output=True, text=True).stdout)
                             for _ in range(RUNS))


def loaded_by_import() -> list[str]:
    out = subprocess.run([sys.executable, "-c", f"import sys, jev; print(' '.join(m for m in {HEAVY!r} "
                                                "if m in sys.modules))"], check=True, capture_output=True, text=True)
    return out.stdout.split()


def held_after(plans: int, keep: int) -> int:
    """Bytes still allocated after `plans` SHADOW plans through the LangChain middleware (collected)."""
    from langchain.agents.middleware import ModelRequest
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from jev import CompactionConfig, Compactor, ExecutionOptions, Mode
    from jev.integrations.langchain import JevCompactionMiddleware
    from jev.judges import ReplayJudge

    compactor = Compactor(ReplayJudge({}, default=0.01), CompactionConfig(eligible_tools={"read_file"},
                                                                          preserve_recent_messages=1),
                          ExecutionOptions(Mode.SHADOW, 5.0, "footprint"))
    middleware = JevCompactionMiddleware(compactor, trigger=("messages", 1), keep_decisions=keep)
    messages = [HumanMessage("Read the files.", id="h")]
    for i in range(8):
        messages += [AIMessage("", id=f"a{i}", tool_calls=[{"name": "read_file", "args": {"path": f"f{i}.py"},
                                                            "id": f"c{i}", "type": "tool_call"}]),
                     ToolMessage("line of text\n" * 300, tool_call_id=f"c{i}", name="read_file", id=f"t{i}")]
    request = ModelRequest(model=GenericFakeChatModel(messages=iter([])), messages=messages)
    middleware.wrap_model_call(request, lambda _r: None)  # warm: imports and caches outside the count
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(plans):
        middleware.wrap_model_call(request, lambda _r: None)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(middleware.recent_decisions) == min(keep, plans + 1)
    return held


def main() -> None:
    compileall.compile_dir(str(ROOT / "jev"), quiet=1)
    nothing, jev, asyncio_, numpy_ = (fresh(s) for s in ("pass", "import jev", "import asyncio", "import numpy"))
    print(f"import jev: {jev * 1000:.0f} ms (median of {RUNS} fresh interpreters; goal <= 100 ms); for scale, "
          f"same run: nothing {nothing * 1000:.1f} ms, import asyncio {asyncio_ * 1000:.0f} ms, "
          f"import numpy {numpy_ * 1000:.0f} ms")
    print(f"heavy stacks loaded by import jev: {', '.join(loaded_by_import()) or 'none'} (of {', '.join(HEAVY)})")
    for plans in (100, 1000):
        bounded, unbounded = held_after(plans, 1), held_after(plans, plans)
        print(f"after {plans} plans: the middleware holds {bounded / 1e6:.2f} MB more with keep_decisions=1, "
              f"{unbounded / 1e6:.2f} MB with keep_decisions={plans} (every plan, as the old list did): "
              f"{bounded / max(unbounded, 1):.3f}x")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    main()
