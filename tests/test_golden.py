"""Behaviour is unchanged by refactors (issue 37): on every real session in ../shared/data — both
mini-swe-agent dev sets and the Claude Code sessions — the decisions, scores, records, snapshots and the
compacted history are byte-identical to the ones `tests/data/golden-decisions.json` froze before the
core was rebuilt. One SHA-256 per session and mode; a change names the sessions it touched. Frozen again
since, each for a behaviour change meant: the three Claude Code sessions Claude Code compacted itself
(2026-12-05: the reader takes them from their last compaction on); 41 sessions whose plans the cost gate
priced with token counts now measured per message or per role (2026-12-06: `HistoryTokens` no longer
samples one role alone, nor lets pasted images into the rate); the Claude Code sessions' ENFORCE snapshots
(2026-12-06, issue 61: each assistant turn keeps the model that wrote it, which selects the provider's rules)
and three of their SHADOW plans (a dropped parallel call's tombstone now follows its message's results);
every session (2026-12-06, issue 64: the local judge's weights are `jev-local-6`, whose scores differ);
every session (2026-12-07, issue 64: `jev-local-7`, two parts reading 600 characters of each result end);
168 sessions' scores and records (2026-12-07: `jev-local-7` refitted with BLAS on one thread, its call
scores moved by up to 4.5e-4; every status, reason, decision and reduction was checked unchanged);
every session (2026-12-07, issue 64: `jev-local-8`, the same recipe reading 800 characters of each result end).

Rewrite the file only when a behaviour change is meant (say so in the commit):
    python tests/test_golden.py --write
"""

from __future__ import annotations

import hashlib
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from conftest import DEV_DATA, needs_data

ROOT = Path(__file__).resolve().parents[1]
DATA = DEV_DATA
SOURCES = {"swebench": DATA / "mini-swe-agent-swebench-dev.tar.xz",
           "deepseek": DATA / "mini-swe-agent-deepseek-dev.tar.xz",
           "claude-code": DATA / "claude-code-sessions-dev.tar.xz"}
GOLDEN = ROOT / "tests" / "data" / "golden-decisions.json"
# what the Claude Code sessions' tools are judged for, as in test_dev_data
TOOLS = {"claude-code": frozenset({"Read", "Bash", "Grep", "Glob"})}
HORIZON = 40  # later calls the host expects: enough that many plans pay and are archived
pytestmark = pytest.mark.slow


def sessions(name: str) -> Iterator[tuple[str, bytes]]:
    """(file name, bytes) of every session of one source, in name order."""
    with tarfile.open(SOURCES[name], "r|*") as tar:
        files = sorted((m.name, tar.extractfile(m).read()) for m in tar if m.isfile()
                       and (m.name.endswith(".jsonl") if name == "claude-code" else m.name.endswith(".json")))
    yield from files


def _digest(value: object) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:24]


def fingerprints(name: str, tmp: Path) -> dict[str, dict[str, str]]:
    """Per session: a digest of what a SHADOW plan decides and records, and of what an ENFORCE plan
    archives and returns (cost gate on, as shipped), with the local judge."""
    from archive import FileArchive, Scope
    from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, Record, formats
    from jev.judges import LocalJudge

    config = CompactionConfig(eligible_tools=TOOLS.get(name, frozenset({"bash"})))
    out: dict[str, dict[str, str]] = {}
    for file, data in sessions(name):
        doc = formats.parse(data)
        form = formats.detect(doc)
        form = "anthropic" if form == "claude-code" else form  # claude-code is read-only: written back as Anthropic
        messages = formats.load(doc)
        seen: list[dict] = []

        def observer(_context: object, record: Record) -> None:
            seen.append(record.to_dict())

        row: dict[str, str] = {}
        for mode in (Mode.SHADOW, Mode.ENFORCE):
            archive = FileArchive(tmp / name / file.replace("/", "_") / mode.value)
            compactor = Compactor(LocalJudge(), config, ExecutionOptions(mode, budget=60, observer=observer),
                                  archive=archive if mode is Mode.ENFORCE else None)
            seen.clear()
            decision = compactor.plan_sync(messages, scope=Scope("u", "a", "s"), horizon=HORIZON)
            plan = decision.plan
            records = [{k: v for k, v in r.items() if k not in ("elapsed_ms", "timestamp")} for r in seen]
            snapshot = sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in archive.root.rglob("*")
                              if p.is_file()) if mode is Mode.ENFORCE else []
            row[mode.value] = _digest({
                "status": decision.status.value, "reason": decision.reason.value,
                "recommendation": dict(decision.recommendation),
                "decisions": {k: a.value for k, a in plan.decisions.items()} if plan else None,
                "scores": {k: [repr(s.keep_call), repr(s.keep_result)] for k, s in plan.scores.items()} if plan else None,
                "reduction": repr(plan.reduction) if plan else None,
                "records": records, "snapshots": snapshot,
                "output": formats.dump(list(plan.messages), form) if plan else None})
        out[file] = row
    return out


@needs_data(*SOURCES.values())
@pytest.mark.parametrize("name", list(SOURCES))
def test_decisions_records_and_snapshots_are_byte_identical_to_the_frozen_ones(name: str, tmp_path: Path) -> None:
    frozen = orjson.loads(GOLDEN.read_bytes())[name]
    now = fingerprints(name, tmp_path)
    assert now.keys() == frozen.keys()
    changed = sorted(f for f in now if now[f] != frozen[f])
    assert not changed, f"{len(changed)} of {len(now)} sessions changed, e.g. {changed[:5]}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    import tempfile
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.write_bytes(orjson.dumps({n: fingerprints(n, Path(tmp)) for n in SOURCES},
                                        option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2))
    print(f"wrote {GOLDEN}")
