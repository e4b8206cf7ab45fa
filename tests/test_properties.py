"""Property-based: over generated transcripts with parallel calls, pending calls, mixed text and pins."""

from __future__ import annotations

import tempfile

from conftest import SCOPE, ScriptedJudge, compactor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archive import FileArchive
from jev import (
    Action,
    CompactionConfig,
    Message,
    Mode,
    Reason,
    Status,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    canonical_json,
)
from jev.deciding.policy import pinned_message_indices
from jev.model.markers import is_tombstone
from jev.reading.analysis import analyze
from jev.reading.history import size

TOOLS = ["read", "search", "write"]


@st.composite
def transcripts(draw) -> list[Message]:
    """Histories as hosts send them: parallel and pending calls, pins, error results, results carried over
    from an earlier file (before the first call), and call ids reused once their pair completed."""
    messages = [Message("m0", "user", (TextBlock("the task"),))]
    pending: list[tuple[str, str]] = []
    completed: list[str] = []  # ids whose pair is complete: a host may use one again
    n = 0
    carried = draw(st.integers(0, 2))
    if carried:  # a resumed session: results whose calls are in the earlier file
        n += 1
        messages.append(Message(f"m{n}", "user", tuple(
            ToolResultBlock(f"old{k}", draw(st.sampled_from(TOOLS)), "y" * draw(st.integers(0, 300)))
            for k in range(carried))))
    for turn in range(draw(st.integers(1, 8))):
        blocks: list = []
        if draw(st.booleans()):
            blocks.append(TextBlock(draw(st.text(max_size=20))))
        calls = [(f"call{turn}_{k}", draw(st.sampled_from(TOOLS))) for k in range(draw(st.integers(1, 3)))]
        if completed and draw(st.integers(0, 4)) == 0:  # one id used again
            calls[0] = (completed.pop(draw(st.integers(0, len(completed) - 1))), calls[0][1])
        blocks += [ToolUseBlock(cid, tool, {"q": draw(st.text(max_size=10))}) for cid, tool in calls]
        meta = draw(st.sampled_from([None, None, None, {"jev.context.pinned": True}, "note"]))
        if meta == "note":  # metadata that is carried, not a pin: rebuilt messages keep it
            meta = {"note": draw(st.text(max_size=12))}
        n += 1
        messages.append(Message(f"m{n}", "assistant", tuple(blocks), metadata=meta))
        answered = [c for c in calls if draw(st.integers(0, 4)) > 0]
        pending += [c for c in calls if c not in answered]
        completed += [cid for cid, _tool in answered]
        if answered:
            results = [ToolResultBlock(cid, tool, "x" * draw(st.integers(0, 900)),
                                       draw(st.sampled_from(["success"] * 4 + ["error"])))
                       for cid, tool in answered]
            n += 1
            messages.append(Message(f"m{n}", "tool", tuple(results)))
        if draw(st.booleans()):
            n += 1
            messages.append(Message(f"m{n}", "user", (TextBlock(draw(st.text(max_size=15))),)))
    return messages


probabilities = st.sampled_from([0.0, 0.1, 0.2, 0.5, 0.8, 0.9, 1.0])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts(), st.data(), st.integers(0, 4))
def test_compaction_invariants(messages: list[Message], data: st.DataObject, recent: int) -> None:
    before = canonical_json(messages)
    answers = data.draw(st.dictionaries(st.from_regex(r"(call|result)_t[1-9]", fullmatch=True), probabilities))
    judge = ScriptedJudge(lambda q: answers.get(q, 0.0))
    config = CompactionConfig(preserve_recent_messages=recent, eligible_tools=frozenset({"read", "search"}),
                              minimum_reduction=0.0, truncate_head_chars=50)
    decision = compactor(judge, config, mode=Mode.SHADOW).plan_sync(messages)
    assert canonical_json(messages) == before  # never mutated
    if decision.status is not Status.DECIDED:
        return
    out = list(decision.plan.messages)
    visible = lambda ms: sum(size(m) for m in ms)  # noqa: E731 - model-visible characters
    assert decision.plan.reduction == 1.0 - visible(out) / visible(messages)
    transcript = analyze(messages)
    by_id = {m.id: m for m in out}
    for i in pinned_message_indices(transcript, config):  # pinned messages come out as the same objects
        assert by_id[messages[i].id] is messages[i]
    seen: set[str] = set()
    for m in out:  # every surviving result keeps its call
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                seen.add(b.id)
            elif isinstance(b, ToolResultBlock):
                assert b.id in seen
    surviving = {(type(b), b.id) for m in out for b in m.content if isinstance(b, (ToolUseBlock, ToolResultBlock))}
    for pair in transcript.pairs:  # DROP_PAIR removes exactly its two blocks; others stay
        dropped = decision.plan.decisions[pair.key] is Action.DROP_PAIR
        assert ((ToolUseBlock, pair.call_id) in surviving) is not dropped
        assert ((ToolResultBlock, pair.call_id) in surviving) is not dropped
    for cid in transcript.pending:
        assert (ToolUseBlock, cid) in surviving
    texts = [b.text for m in messages for b in m.content if isinstance(b, TextBlock)]
    # every text survives, in order; the only new text is one tombstone per dropped pair, naming it
    assert texts == [b.text for m in out for b in m.content if isinstance(b, TextBlock) and not is_tombstone(b.text)]
    stones = [b.text for m in out for b in m.content if isinstance(b, TextBlock) and is_tombstone(b.text)]
    gone = [p.call_id for p in transcript.pairs if decision.plan.decisions[p.key] is Action.DROP_PAIR]
    assert len(stones) == len(gone) and all(f'call "{cid}"' in s for cid, s in zip(gone, stones, strict=True))


@settings(max_examples=60, deadline=None)
@given(transcripts())
def test_restore_of_save_is_identity(messages: list[Message]) -> None:
    with tempfile.TemporaryDirectory() as root:
        archive = FileArchive(root)
        ref = archive.save(SCOPE, messages)
        assert archive.restore(SCOPE, ref) == messages
        assert archive.save(SCOPE, messages) == ref


MUTATIONS = ["none", "input", "metadata", "replace", "append", "pop", "swap"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts(), st.sampled_from(MUTATIONS), st.data())
def test_the_change_guard_sees_every_change_while_judging_and_nothing_else(messages: list[Message], mutation: str,
                                                                          data: st.DataObject) -> None:
    """Whatever the host changes in place while the judge runs — a tool input, a metadata mapping, the list
    itself — the plan ends TRANSCRIPT_CHANGED; with no change it never does."""
    inputs = [b.input for m in messages for b in m.content if isinstance(b, ToolUseBlock)]
    metadata = [m.metadata for m in messages if m.metadata is not None]
    if (mutation == "metadata" and not metadata) or (mutation == "swap" and len(messages) < 2):
        mutation = "input"
    index = data.draw(st.integers(0, len(messages) - 1))
    # planned before, on a prefix: the plan then reads the history grown from there (its guard's JSON of the
    # earlier parts joined to the new ones'), and a change anywhere must still be seen
    planned_before = data.draw(st.integers(0, len(messages) - 1))
    done: list[bool] = []
    armed: list[bool] = []

    def mutate(request: object) -> None:
        if done or not armed:
            return
        done.append(True)
        if mutation == "input":
            data.draw(st.sampled_from(inputs))["q"] += "!"
        elif mutation == "metadata":
            data.draw(st.sampled_from(metadata))["added"] = 1
        elif mutation == "replace":  # an equal copy is another object: conservatively a change
            messages[index] = messages[index].replace()
        elif mutation == "append":
            messages.append(Message("late", "user", (TextBlock("late"),)))
        elif mutation == "pop":
            messages.pop()
        elif mutation == "swap":
            messages[0], messages[-1] = messages[-1], messages[0]
    config = CompactionConfig(preserve_recent_messages=0, eligible_tools=frozenset(TOOLS), minimum_reduction=0.0)
    planner = compactor(ScriptedJudge(0.0, hook=mutate), config, mode=Mode.SHADOW)
    if planned_before:
        planner.plan_sync(messages[:planned_before])
    armed.append(True)
    decision = planner.plan_sync(messages)
    if not done:  # no candidates, so the judge never ran
        return
    changed = decision.reason is Reason.TRANSCRIPT_CHANGED
    assert changed is (mutation != "none"), (mutation, decision.reason, decision.detail)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts())
def test_the_local_judge_scores_every_pair_of_any_history(messages: list[Message]) -> None:
    """Any valid history — parallel and pending calls, non-ASCII text and inputs — gets a probability
    pair for each of its pairs, the same on every call, whatever else the judge has seen."""
    from jev.judges import LocalJudge
    transcript = analyze(messages)
    scores = LocalJudge().scores(transcript)
    assert list(scores) == [p.key for p in transcript.pairs]
    assert all(0.0 <= p <= 1.0 for pair in scores.values() for p in pair)
    other = LocalJudge()
    other.scores(analyze(messages + [Message("later", "user", (TextBlock("ünïcödé later text 42/x.py"),))]))
    assert other.scores(analyze(messages)) == scores
