"""Reading a grown history from where the last plan ended (issue 37): `jev.reading.analysis.extend` gives what
`analyze` gives on the whole list — on real sessions, cut anywhere, a pending call or a reused call id
across the cut included — and a compactor planning a growing history decides as a fresh one would, and
reads a history whose earlier messages changed afresh."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from conftest import CLAUDE_CODE, call, msg, needs_data, result, text

from jev import Action, CompactionConfig, Compactor, ExecutionOptions, Mode, TranscriptError, formats
from jev.judges import LocalJudge
from jev.reading.analysis import Transcript, analyze, extend

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "data" / "swebench-sample.tar.xz"


def _sessions(path: Path, suffix: str, limit: int) -> list[list]:
    with tarfile.open(path, "r|*") as tar:
        found = sorted((m.name, tar.extractfile(m).read()) for m in tar if m.isfile() and m.name.endswith(suffix))
    return [formats.load(formats.parse(data)) for _name, data in found[:limit]]


def _same(a: Transcript, b: Transcript) -> None:
    assert a.messages == b.messages and a.pairs == b.pairs and dict(a.places) == dict(b.places)
    assert (a.pending, a.thinking, a.opaque, a.mixed_results, a.sizes, a.self_pinned) == (
        b.pending, b.thinking, b.opaque, b.mixed_results, b.sizes, b.self_pinned)
    assert (a.order, a.calls, a.texts) == (b.order, b.calls, b.texts)  # what the local judge reads
    assert len(a.mutable) == len(b.mutable) and all(x is y for x, y in zip(a.mutable, b.mutable, strict=True))


def _check_every_cut(messages: list, step: int) -> None:
    for end in range(1, len(messages) + 1, step):
        whole = analyze(messages[:end])
        for cut in range(1, end, max(1, end // 4)):
            _same(extend(analyze(messages[:cut]), messages[:end]), whole)


def test_extend_reads_real_sessions_as_analyze_does() -> None:
    for messages in _sessions(SAMPLE, ".traj.json", 12):
        _check_every_cut(messages, 7)


@needs_data(CLAUDE_CODE)
def test_extend_reads_claude_code_sessions_as_analyze_does() -> None:
    """Thinking blocks, pasted images (opaque), results carried over from an earlier file."""
    for messages in _sessions(CLAUDE_CODE, ".jsonl", 8):
        _check_every_cut(messages, 23)


def test_a_pending_call_and_a_reused_id_across_the_cut() -> None:
    messages = [msg("u", "user", text("go")), msg("c1", "assistant", call("x")),  # cut here: x pending
                msg("r1", "tool", result("x", "one")), msg("c2", "assistant", call("x")),  # x reused
                msg("r2", "tool", result("x", "two"))]
    for cut in range(1, len(messages)):
        _same(extend(analyze(messages[:cut]), messages), analyze(messages))
    with pytest.raises(TranscriptError, match="duplicate message id 'c1' at messages\\[5\\]"):
        extend(analyze(messages), [*messages, msg("c1", "user", text("again"))])
    carried = [msg("o0", "tool", result("k", "from an earlier file")), msg("o1", "tool", result("k", "again"))]
    for history in (carried, messages[:1] + carried):  # a second result for a carried-over id: refused alike
        with pytest.raises(TranscriptError, match="its call already has a result") as whole:
            analyze(history)
        with pytest.raises(TranscriptError, match="its call already has a result") as resumed:
            extend(analyze(history[:-1]), history)
        assert str(resumed.value) == str(whole.value)
    stray = [*messages, msg("o9", "tool", result("z", "no call made it"))]  # after calls: no carry-over
    with pytest.raises(TranscriptError, match="unpaired result 'z'"):
        extend(analyze(messages), stray)
    with pytest.raises(TranscriptError, match="ambiguous call id 'y'"):
        extend(analyze(messages[:1]), [messages[0], msg("a", "assistant", call("y")), msg("b", "assistant", call("y"))])


def test_a_compactor_planning_a_growing_history_decides_as_a_fresh_one() -> None:
    messages = _sessions(SAMPLE, ".traj.json", 1)[0]
    config = CompactionConfig(eligible_tools=frozenset({"bash"}), cost_gate=False, minimum_reduction=0.0)
    warm = Compactor(LocalJudge(), config, ExecutionOptions(Mode.SHADOW, 60))
    for end in range(8, len(messages) + 1, 5):
        grown, fresh = warm.plan_sync(messages[:end]), Compactor(LocalJudge(), config,
                                                                 ExecutionOptions(Mode.SHADOW, 60)).plan_sync(messages[:end])
        assert (grown.status, grown.reason, grown.detail) == (fresh.status, fresh.reason, fresh.detail)
        if fresh.plan is not None:
            assert grown.plan.views == fresh.plan.views and grown.plan.messages == fresh.plan.messages
            assert grown.plan.cost == fresh.plan.cost  # the history's tokens: sampled messages measured once
            assert grown.plan.reduction == fresh.plan.reduction  # what it made: measured once, while it lasts


def test_a_made_message_sharing_a_part_the_host_changed_is_measured_again() -> None:
    """A message a plan made keeps the blocks it did not change by reference: when the host edits one in
    place, the next plan's sizes are a fresh plan's, not the last plan's."""
    from jev.judges import ReplayJudge
    kept = {"path": "y.txt"}
    messages = [msg("u", "user", text("go")), msg("a", "assistant", call("x"), call("y", input=kept)),
                msg("rx", "tool", result("x")), msg("ry", "tool", result("y")),
                *(msg(f"m{k}", "user", text(f"step {k}")) for k in range(8))]
    judge = ReplayJudge({"call_t1": 0.05, "result_t1": 0.05, "call_t2": 0.95, "result_t2": 0.95}, default=0.5)
    config = CompactionConfig(eligible_tools=frozenset({"read"}), cost_gate=False, minimum_reduction=0.0,
                              preserve_recent_messages=2)

    def plans(history: list) -> tuple:
        warm_plan = warm.plan_sync(history).plan
        fresh_plan = Compactor(judge, config, ExecutionOptions(Mode.SHADOW, 60)).plan_sync(history).plan
        return warm_plan, fresh_plan

    warm = Compactor(judge, config, ExecutionOptions(Mode.SHADOW, 60))
    first, _ = plans(messages)
    assert [v.action for v in first.views] == [Action.DROP_PAIR, Action.KEEP]  # message "a" remade, call y kept
    kept["path"] = "a much longer path, " * 40  # the host edits the kept call's input in place
    grown, fresh = plans([*messages, msg("end", "user", text("and"))])
    assert grown.reduction == fresh.reduction and grown.cost == fresh.cost


def test_a_history_whose_earlier_messages_changed_is_read_afresh(monkeypatch) -> None:
    import jev.reading.history
    whole, extended = [], []
    real, real_extend = jev.reading.history.analyze, jev.reading.history.extend
    monkeypatch.setattr(jev.reading.history, "analyze", lambda m: whole.append(len(m)) or real(m))
    monkeypatch.setattr(jev.reading.history, "extend", lambda p, m: extended.append(len(m)) or real_extend(p, m))
    inputs = {"path": "a.py"}
    messages = [msg("u", "user", text("go")), msg("c1", "assistant", call("x", input=inputs)),
                msg("r1", "tool", result("x", "one" * 400)), msg("end", "user", text("next"))]
    compactor = Compactor(LocalJudge(), CompactionConfig(eligible_tools=frozenset({"read"})),
                          ExecutionOptions(Mode.SHADOW, 60))
    compactor.plan_sync(messages)
    compactor.plan_sync([*messages, msg("more", "user", text("and more"))])  # grown: the new message alone
    assert (whole, extended) == ([4], [5])
    inputs["path"] = "b.py"  # a host edited an earlier call's input in place
    compactor.plan_sync([*messages, msg("more", "user", text("and more")), msg("last", "user", text("!"))])
    assert (whole, extended) == ([4, 6], [5])  # read afresh, not extended from a history that is gone


def _reads_as_fresh(messages: list, step: int, scan: int = 120, lines: bool = False) -> int:
    """A feature reader fed each growth of the history in turn (each transcript extended from the last)
    gives the rows a first reading gives; returns how many grown readings it checked."""
    import numpy as np

    from jev.judges.features import FeatureReader, feature_matrix
    reader, transcript, checked = FeatureReader(scan, lines), None, 0
    for end in range(1, len(messages) + 1, step):
        transcript = analyze(messages[:end]) if transcript is None else extend(transcript, messages[:end])
        keys, X = reader(transcript)
        fresh_keys, fresh = feature_matrix(analyze(messages[:end]), scan, lines)
        assert keys == fresh_keys
        np.testing.assert_array_equal(X, fresh)  # NaN where lines are not counted, equal alike
        checked += transcript.extends is not None and bool(keys)
    return checked


def test_the_judges_features_of_a_grown_history_are_a_first_readings() -> None:
    """Real sessions read in growing steps (new results, calls and task text each time), with lines and
    at another scan depth too: the rows equal a fresh reading's, bit for bit."""
    for k, messages in enumerate(_sessions(SAMPLE, ".traj.json", 6)):
        assert _reads_as_fresh(messages, 1 + k % 4, scan=(120, 300)[k % 2], lines=k % 3 == 0) > 3


@needs_data(CLAUDE_CODE)
def test_the_judges_features_of_a_grown_claude_code_history_are_a_first_readings() -> None:
    """Parallel calls, results carried over from an earlier file, JSON inputs of many tools."""
    for messages in _sessions(CLAUDE_CODE, ".jsonl", 6):
        _reads_as_fresh(messages, 9)


def test_a_feature_reader_reads_afresh_what_did_not_grow_from_its_last_reading() -> None:
    import numpy as np

    from jev.judges.features import FeatureReader, feature_matrix
    messages = _sessions(SAMPLE, ".traj.json", 2)
    reader = FeatureReader()
    first = analyze(messages[0][:12])
    reader(first)
    other = extend(analyze(messages[1][:10]), messages[1][:14])  # grown, but from a history it never read
    np.testing.assert_array_equal(reader(other)[1], feature_matrix(analyze(messages[1][:14]))[1])
    grown = extend(first, messages[0][:16])  # grown from the first, read after another: afresh too
    np.testing.assert_array_equal(reader(grown)[1], feature_matrix(analyze(messages[0][:16]))[1])
    # the same reader at another depth never reuses what it read at this one
    deep = FeatureReader(scan_chars=400)
    deep(first)
    np.testing.assert_array_equal(deep(extend(first, messages[0][:16]))[1],
                                  feature_matrix(analyze(messages[0][:16]), 400)[1])


@pytest.mark.parametrize("source", ["swebench", "claude-code"])
def test_an_applier_reusing_last_plans_messages_writes_what_a_fresh_apply_writes(source: str) -> None:
    """One applier fed a growing real history with shifting let-gos (some pairs kept, truncated, then
    dropped, with tombstones and without) writes exactly what `apply_actions` writes afresh; a message
    changed the same way as last time is the one made then, and a change of the cut is made anew. The
    Claude Code session has messages holding several calls, dropped together or one of them."""
    import dataclasses

    from jev.applying.apply import Applier, apply_actions
    from jev.deciding.decision import Action
    if source == "claude-code" and not CLAUDE_CODE.exists():
        pytest.skip(f"dev Claude Code sessions not found at {CLAUDE_CODE}")
    messages = (_sessions(SAMPLE, ".traj.json", 1)[0] if source == "swebench" else
                max(_sessions(CLAUDE_CODE, ".jsonl", 12), key=lambda ms: sum(  # the most parallel calls
                    sum(b.type == "tool_use" for b in m.content) > 1 for m in ms)))
    applier, config = Applier(), CompactionConfig(eligible_tools=frozenset({"bash"}))
    cycle = (Action.KEEP, Action.TRUNCATE_RESULT, Action.DROP_PAIR)
    last: dict = {}
    shared = 0  # let-gos of several pairs in one message
    for step, end in enumerate(range(6, len(messages) + 1, 4)):
        transcript = analyze(messages[:end])
        decisions = {pair.key: cycle[(k + step // 3) % 3] for k, pair in enumerate(transcript.pairs)}
        acting = [p.call_message for p in transcript.pairs if decisions[p.key] is Action.DROP_PAIR]
        shared += len(acting) - len(set(acting))
        if step % 5 == 4:
            config = dataclasses.replace(config, tombstones=not config.tombstones)
        out = applier(transcript, decisions, config)
        assert out == apply_actions(transcript, decisions, config)
        made = {m.id: m for m in out if all(m is not original for original in transcript.messages)}
        assert made or not transcript.pairs
        for id_, message in made.items():
            if id_ in last and last[id_][0] == (decisions, config.tombstones) and "~dropped~" not in id_:
                assert message is last[id_][1]  # made once, taken from the last plan since
        last = {id_: ((decisions, config.tombstones), m) for id_, m in made.items()}
    assert shared or source == "swebench"
    shorter = dataclasses.replace(config, truncate_head_chars=config.truncate_head_chars // 2)
    assert applier(transcript, decisions, shorter) == apply_actions(transcript, decisions, shorter)
    assert applier(transcript, decisions, shorter) != apply_actions(transcript, decisions, config)


def test_remeasured_measures_only_what_its_last_call_did_not() -> None:
    from jev.reading.history import Remeasured, sizes_each
    asked: list[int] = []
    remeasured = Remeasured(lambda ms: asked.append(len(ms)) or sizes_each(ms))
    a, b, c = msg("a", "user", text("one")), msg("b", "user", text("three")), msg("c", "user", text("fifteen"))
    assert remeasured([a, b]) == [3, 5] and remeasured([b, c, b]) == [5, 7, 5] and remeasured([a]) == [3]
    assert asked == [2, 1, 1]  # a was let go by the second call: measured again
    assert remeasured([]) == [] and asked == [2, 1, 1]


def test_a_message_the_host_pins_between_plans_is_pinned_in_the_next() -> None:
    """Which messages pin themselves is read by the analysis; a host setting `jev_pinned` on an earlier
    message in place changes its metadata, so the next plan reads the history afresh and pins it."""
    from jev.model.transcript import PINNED_METADATA_KEY
    meta: dict = {"note": "kept"}
    messages = [msg("u", "user", text("go")), msg("c1", "assistant", call("x")),
                msg("r1", "tool", result("x"), metadata=meta), msg("c2", "assistant", call("y")),
                msg("r2", "tool", result("y")), *(msg(f"m{k}", "user", text(f"step {k}")) for k in range(8))]
    config = CompactionConfig(eligible_tools=frozenset({"read"}), preserve_recent_messages=2)
    compactor = Compactor(LocalJudge(), config, ExecutionOptions(Mode.SHADOW, 60))
    first = compactor.plan_sync(messages)
    assert all(v.pinned != "pinned by its metadata" for v in first.plan.views)
    meta[PINNED_METADATA_KEY] = True
    grown = compactor.plan_sync([*messages, msg("end", "user", text("and"))])
    assert grown.plan.views[0].pinned == "pinned by its metadata"


def test_let_go_sizes_read_on_are_let_go_of_the_pairs() -> None:
    """A compactor sizes a grown history's let-gos from the last plan's (the same `Pair` objects) and the
    new pairs: the same sizes as `let_go` afresh, in the same order — also when the cut, the tombstones
    or the restore tool changed in between, which size every pair again."""
    from jev.applying.apply import LetGoSizes, let_go
    messages = _sessions(SAMPLE, ".traj.json", 1)[0]
    sizes, before = LetGoSizes(), None
    configs = [CompactionConfig(), CompactionConfig(truncate_head_chars=50), CompactionConfig(tombstones=False),
               CompactionConfig(restore_tool="fetch_back")]
    for step, end in enumerate(range(4, len(messages) + 1, 3)):
        transcript = analyze(messages[:end]) if before is None else extend(before, messages[:end])
        pairs, config = list(transcript.pairs)[1:], configs[step // 3 % len(configs)]
        got, want = sizes(pairs, config), let_go(pairs, config)
        assert (list(got.truncate.items()), list(got.drop.items())) == (list(want.truncate.items()),
                                                                       list(want.drop.items())), end
        before = transcript
