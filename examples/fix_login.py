"""The seed scenario: an agent fixing a failing count test has read an obsolete file and the current test.

ENFORCE with a file archive and the reference's recorded judge answers (pair t1 -> 0.01, everything else
0.99): one judge call drops the obsolete pair, the next model step sees the constraint and the current
evidence but not the obsolete contents, and the archive restores the six original messages.

Run: python examples/fix_login.py [WORKDIR]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import jev
from archive import FileArchive, Scope
from jev.judges import ReplayJudge
from jev.running import scenario


async def main(workdir: Path) -> None:
    history = scenario.messages()  # six messages; see jev/running/scenario.py
    archive = FileArchive(workdir / "archive", max_bytes=1_000_000)
    judge = ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99)
    records: list[jev.Record] = []
    compactor = jev.Compactor(
        judge,
        jev.CompactionConfig(preserve_recent_messages=1, truncate_head_chars=100, minimum_reduction=0.05,
                             eligible_tools=frozenset({"read"}), size_exponent=0.0),  # the reference's table
        jev.ExecutionOptions(jev.Mode.ENFORCE, budget=3.0, version="offline-demo",
                             observer=lambda _ctx, record: records.append(record)),
        archive,
    )
    scope = Scope("demo", "compaction-demo", "context-demo")

    # the host expects about 20 more model calls: dropping the obsolete read re-bills the rest of the history
    # once at the cache-write price and saves its tokens on every later call; it pays after ~7 (jev.deciding.cost)
    compacted = await compactor.compact(history, scope=scope, horizon=20)  # the history the host uses now
    assert compacted is not None and judge.calls == 1, "one judge call, one adopted plan"
    print("record:", records[-1].status, records[-1].reason, records[-1].recommendation["pairs_removed"],
          "pair(s) removed")
    print("kept messages:", [m.id for m in compacted])

    answer = scenario.ScriptedModel()(compacted)  # fails on obsolete contents or lost evidence
    print("model:", answer)

    reference = records[-1].recommendation["archive_reference"]
    restored = archive.restore(scope, reference)
    assert restored == history, "restore returns the six original messages"
    print(f"restored {len(restored)} messages from {reference}")


if __name__ == "__main__":
    if len(sys.argv) > 1:  # a folder you name is kept
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory(prefix="fix-login-") as workdir:  # nothing left behind in /tmp
            asyncio.run(main(Path(workdir)))
