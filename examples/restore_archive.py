"""Archive and restore: ENFORCE a compaction into an archive, then bring back the whole snapshot, one pair,
and the verified document — from the local directory and from an in-memory object store (any fsspec URL
works the same way: s3://, gs://, az://) and a SQLite key-value store.

Run: python examples/restore_archive.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jev
from archive import Scope, open_archive, restore_tool
from jev.judges import ReplayJudge
from jev.running import scenario


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="jev-restore-") as workdir:  # nothing left behind in /tmp
        run(Path(workdir))


def run(workdir: Path) -> None:
    scope = Scope("demo", "compaction-demo", "context-demo")
    history = scenario.messages()
    for location in (workdir / "files", "memory://jev-example/archive", f"sqlite:///{workdir}/archive.db"):
        archive = open_archive(location)
        compactor = jev.Compactor(ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99), scenario.CONFIG,
                                  jev.ExecutionOptions(jev.Mode.ENFORCE, 3.0, "example"), archive)
        decision = compactor.plan_sync(history, scope=scope)
        ref = decision.plan.archive_reference
        restored = archive.restore(scope, ref)
        pair = archive.restore_pair(scope, ref, "obsolete")
        document = archive.restore_bytes(scope, ref)
        tool_text = asyncio.run(restore_tool(archive, scope, ref).call(call_id="obsolete"))
        print(f"{type(archive).__name__:<20} {str(location)[-32:]:<34} ref {ref[:12]}…  "
              f"restored {len(restored)} messages (equal: {restored == history}), pair {[m.id for m in pair]}, "
              f"{len(document)} bytes verified, tool: {tool_text.splitlines()[0]}")
    try:
        open_archive(workdir / "files").restore(Scope("someone", "else", "entirely"), ref)
    except jev.ArchiveError as exc:
        print("another scope:", exc)


if __name__ == "__main__":
    main()
