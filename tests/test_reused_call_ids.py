"""Reused call ids: GPT-4o sessions (tau-bench's airline domain is one source) use a call id again in a
later turn once the earlier call has its result. Providers accept these histories, so do we: pairing is
by order, keys stay unique, ids are written back exactly, restore names which occurrence it returns."""

from __future__ import annotations

import copy
import json

import pytest

from archive import FileArchive, Scope, restore_tool
from calibration.labels import later_reuse, pair_uses
from jev import Action, CompactionConfig, Compactor, ExecutionOptions, Mode, Status, TranscriptError, formats
from jev.judges import ReplayJudge
from jev.reading.analysis import analyze

SCOPE = Scope("u", "airline", "s")
REUSED = "call_HGnX2BtmOKsCZ1Ycl6vAe3QD"


def _call(name: str, arguments: dict) -> dict:
    return {"id": REUSED, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def chat() -> list[dict]:
    """An OpenAI chat history in the shape tau-bench records: the system policy, `tool` messages that
    also carry the tool's `name`, `content: null` beside tool calls, and one id used by two calls."""
    flights = [{"flight_number": f"HAT{n:03d}", "origin": "JFK", "destination": "SEA", "price": 200 + n}
               for n in range(40)]
    return [
        {"role": "system", "content": "# Airline Agent Policy\nYou can help users book flights."},
        {"role": "user", "content": "I want to fly from New York to Seattle on May 20."},
        {"role": "assistant", "content": None,
         "tool_calls": [_call("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"})]},
        {"role": "tool", "tool_call_id": REUSED, "name": "search_direct_flight", "content": json.dumps(flights)},
        {"role": "assistant", "content": "There are direct flights. Would you like one-stop options too?"},
        {"role": "user", "content": "Yes, show one-stop flights as well."},
        {"role": "assistant", "content": None,
         "tool_calls": [_call("search_onestop_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"})]},
        {"role": "tool", "tool_call_id": REUSED, "name": "search_onestop_flight", "content": json.dumps(flights[:5])},
        {"role": "assistant", "content": "Here are the one-stop flights."},
        {"role": "user", "content": "Thanks."},
    ]


def test_a_reused_id_starts_a_new_pair_and_round_trips_exactly() -> None:
    doc = chat()
    messages = formats.load(copy.deepcopy(doc), "auto")
    t = analyze(messages)
    assert [(p.key, p.call_id, p.tool) for p in t.pairs] == [("t1", REUSED, "search_direct_flight"),
                                                            ("t2", REUSED, "search_onestop_flight")]
    assert not t.pending and t.call_pair(2, REUSED).key == "t1" and t.result_pair(7, REUSED).key == "t2"
    assert formats.dump(messages, "openai-chat") == doc
    uses = pair_uses(t)
    assert set(uses) == {"t1", "t2"} and set(later_reuse(t)) == {"t1", "t2"}


def test_two_calls_open_at_once_with_one_id_are_ambiguous() -> None:
    doc = chat()
    del doc[3]  # the first call now has no result when the second one with its id is made
    with pytest.raises(TranscriptError, match=r"ambiguous call id .*messages\[2\] with this id has no result"):
        analyze(formats.load(doc, "openai-chat"))
    doc = chat()
    doc.insert(4, copy.deepcopy(doc[3]))  # a second result for a call that already has one
    doc[4]["content"] = "again"
    with pytest.raises(TranscriptError, match="its call already has a result"):
        analyze(formats.load(doc, "openai-chat"))


def test_enforce_drops_one_occurrence_and_restores_it_by_occurrence(tmp_path) -> None:
    import asyncio
    doc = chat()
    archive = FileArchive(tmp_path)
    config = CompactionConfig(cost_gate=False, eligible_tools=frozenset({"search_direct_flight", "search_onestop_flight"}),
                              preserve_recent_messages=2, minimum_reduction=0.05)
    judge = ReplayJudge({"call_t1": 0.01, "result_t1": 0.01}, default=0.99)
    compactor = Compactor(judge, config, ExecutionOptions(Mode.ENFORCE), archive)
    decision = compactor.plan_sync(formats.load(copy.deepcopy(doc)), scope=SCOPE)
    assert decision.status is Status.DECIDED, decision.detail
    assert decision.plan.decisions == {"t1": Action.DROP_PAIR, "t2": Action.KEEP}
    compacted = formats.dump(list(decision.plan.messages), "openai-chat")
    stone = {"role": "assistant", "content": f'[JEV dropped call "{REUSED}" (search_direct_flight {{"date":"2024-05-20",'
             f'"destination":"SEA","origin":"JFK"}}) and its result; ask the host to restore call "{REUSED}"; do not '
             're-execute this tool for recovery.]'}
    assert compacted == doc[:2] + [stone] + doc[4:]  # only the first pair left, and it says so where it was
    ref = decision.plan.archive_reference
    assert formats.dump(archive.restore(SCOPE, ref), "openai-chat") == doc  # byte-exact, both occurrences
    latest = archive.restore_pair(SCOPE, ref, REUSED)
    first = archive.restore_pair(SCOPE, ref, REUSED, occurrence=1)
    assert [m.id for m in latest] == ["m6", "m7"] and [m.id for m in first] == ["m2", "m3"]  # loader ids: m{index}
    assert latest[0].content[0].name == "search_onestop_flight" and first[0].content[0].name == "search_direct_flight"
    assert "HAT039" in first[1].content[0].text and "HAT039" not in latest[1].content[0].text
    with pytest.raises(Exception, match=r"occurrence must be 1\.\.2"):
        archive.restore_pair(SCOPE, ref, REUSED, occurrence=3)
    text = asyncio.run(restore_tool(archive, SCOPE, ref).call(call_id=REUSED))
    assert "search_onestop_flight; the latest of 2 calls with this id" in text


def test_cli_restore_picks_an_occurrence(tmp_path) -> None:
    import subprocess
    import sys
    source = tmp_path / "tau.json"
    source.write_text(json.dumps(chat()))
    base = [sys.executable, "-m", "jev.cli.main"]
    archive_dir = tmp_path / "archive"
    proc = subprocess.run(base + ["compact", str(source), "--mode", "enforce", "--archive", str(archive_dir),
                                  "--user", "u", "--agent", "airline", "--session", "s", "--judge", "local",
                                  "--eligible-tools", "search_direct_flight,search_onestop_flight",
                                  # what the judge deems needed is beside the point here: a high keep threshold
                                  "--target-reduction", "0.5", "--keep-threshold", "0.99",
                                  "--out", str(tmp_path / "plan.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    ref = json.loads((tmp_path / "plan.json").read_text())["archive_reference"]
    common = ["--archive", str(archive_dir), "--user", "u", "--agent", "airline", "--session", "s", "--format",
              "openai-chat"]
    out = subprocess.run(base + ["restore", ref, "--call-id", REUSED, "--occurrence", "1", *common,
                                 "--out", str(tmp_path / "first.json")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first = json.loads((tmp_path / "first.json").read_text())
    assert first["occurrence"] == 1 and first["messages"][0]["tool_calls"][0]["function"]["name"] == "search_direct_flight"
    bad = subprocess.run(base + ["restore", ref, "--occurrence", "1", *common], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "--occurrence needs --call-id" in bad.stderr + bad.stdout


def test_label_joins_each_occurrence_to_its_own_later_use(tmp_path) -> None:
    from calibration.join import label
    doc = chat()
    doc.insert(8, {"role": "assistant", "content": "Flight HAT039 is the cheapest direct one."})  # uses t1 only
    (tmp_path / "s.json").write_text(json.dumps(doc))
    pairs = [{"key": k, "call_id": REUSED, "tool": t, "keep_call": 0.5, "keep_result": 0.5, "action": "KEEP",
              "reason": "UNCERTAIN", "result_chars": 1} for k, t in (("t1", "search_direct_flight"),
                                                                    ("t2", "search_onestop_flight"))]
    record = {"session_id": "s", "history_messages": 8, "pairs": pairs}
    (tmp_path / "r.jsonl").write_text(json.dumps(record) + "\n")
    rows = {r["key"]: r for r in label(str(tmp_path / "r.jsonl"), str(tmp_path), format="openai-chat")}
    assert rows["t1"]["needed_result"] is True and rows["t2"]["needed_result"] is False
    # a record from a compacted history (its keys renumbered) still finds the latest pair with that id
    record["pairs"] = [dict(pairs[1], key="t1")]
    (tmp_path / "r.jsonl").write_text(json.dumps(record) + "\n")
    rows = list(label(str(tmp_path / "r.jsonl"), str(tmp_path), format="openai-chat"))
    assert [r["tool"] for r in rows] == ["search_onestop_flight"] and rows[0]["needed_result"] is False
