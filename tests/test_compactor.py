"""The compactor end to end: the reference suite's 16 behaviours (jev-java-behavior.md §9.1), rewritten
for this API, plus concurrency, refusals and invalid answers."""

from __future__ import annotations

import asyncio
import copy

import pytest
from conftest import (
    SCOPE,
    CountingArchive,
    ScriptedJudge,
    call,
    compactor,
    msg,
    reference_config,
    reference_messages,
    result,
    text,
)

from archive import FileArchive, Scope
from jev import (
    Action,
    ArchiveError,
    Compactor,
    ConfigError,
    ExecutionOptions,
    Mode,
    Origin,
    OtherBlock,
    Reason,
    Status,
    canonical_json,
)
from jev.applying.apply import truncation_marker
from jev.judges import Answers, Judge, ReplayJudge


def dual(qid: str) -> float:
    return 0.01 if qid.endswith("t1") or qid == "result_t2" else 0.99


def test_dual_decisions_archive_and_restore_verbatim(archive: CountingArchive) -> None:
    messages = reference_messages()
    before = canonical_json(messages)
    judge = ScriptedJudge(dual)
    decision = compactor(judge, archive=archive).plan_sync(messages, scope=SCOPE)
    assert (decision.status, decision.reason) == (Status.DECIDED, Reason.ARCHIVED_PROPOSAL)
    plan = decision.plan
    assert plan.decisions == {"t1": Action.DROP_PAIR, "t2": Action.TRUNCATE_RESULT, "t3": Action.KEEP}
    assert [m.id for m in plan.messages] == ["first", "c-preview", "r-preview", "c-needed", "r-needed", "last"]
    assert "do not re-execute" in canonical_json(list(plan.messages)).decode()
    assert archive.restore(SCOPE, plan.archive_reference) == messages
    assert canonical_json(messages) == before  # input not mutated
    assert plan.pairs == {"t1": ("old", "read"), "t2": ("preview", "read"), "t3": ("needed", "read")}
    assert (plan.input_tokens, plan.output_tokens, plan.requests) == (3, 1, 1)
    assert decision.recommendation["pairs_removed"] == "1" and decision.recommendation["results_truncated"] == "1"


def test_recent_pairs_and_ineligible_tools_stay_pinned(archive: CountingArchive) -> None:
    messages = reference_messages()
    messages[1] = msg("c-old", "assistant", call("old", "write"))
    messages[2] = msg("r-old", "tool", result("old", name="write"))
    judge = ScriptedJudge(0.01)
    decision = compactor(judge, reference_config(recent=2), archive=archive).plan_sync(messages, scope=SCOPE)
    assert [q.id for q in judge.requests[0].questions] == ["call_t2", "result_t2"]
    assert decision.plan.decisions["t1"] is Action.KEEP and decision.plan.decisions["t3"] is Action.KEEP
    assert decision.plan.scores["t1"].reason == "PINNED" and decision.plan.scores["t3"].reason == "PINNED"
    assert decision.plan.messages[0] is messages[0]


def test_preserve_recent_pairs_keeps_the_newest_candidates_after_every_other_pin(archive: CountingArchive) -> None:
    messages = reference_messages()
    messages.insert(-1, msg("c-write", "assistant", call("write", "write")))  # newest, but not eligible
    messages.insert(-1, msg("r-write", "tool", result("write", name="write")))
    judge = ScriptedJudge(0.01)
    config = reference_config(recent=1, preserve_recent_pairs=2)
    decision = compactor(judge, config, archive=archive).plan_sync(messages, scope=SCOPE)
    # t4 (write) is pinned by its tool, so the window holds the two newest candidates, t3 and t2
    assert [q.id for q in judge.requests[0].questions] == ["call_t1", "result_t1"]
    plan = decision.plan
    assert plan.decisions == {"t1": Action.DROP_PAIR, "t2": Action.KEEP, "t3": Action.KEEP, "t4": Action.KEEP}
    assert {k: plan.scores[k].reason for k in ("t2", "t3", "t4")} == dict.fromkeys(("t2", "t3", "t4"), "PINNED")
    with pytest.raises(ConfigError, match="preserve_recent_pairs must be an integer >= 0"):
        reference_config(preserve_recent_pairs=-1)


def test_text_inside_mixed_messages_and_pending_calls_survive(archive: CountingArchive) -> None:
    messages = reference_messages()
    messages[1] = msg("c-old", "assistant", text("Reading the old file first."), call("old"))
    messages.append(msg("pending", "assistant", text("One more look."), call("later")))
    judge = ScriptedJudge(lambda q: 0.01 if q.endswith("t1") else 0.99)
    decision = compactor(judge, archive=archive).plan_sync(messages, scope=SCOPE)
    kept = {m.id: m for m in decision.plan.messages}
    assert [b.text for b in kept["c-old"].content] == ["Reading the old file first."]
    assert "r-old" not in kept
    assert kept["pending"] is messages[-1]


def test_uncertain_answers_keep_everything_and_do_not_archive(archive: CountingArchive) -> None:
    messages = reference_messages()
    out = compactor(ScriptedJudge(0.5), archive=archive).compact_sync(messages, scope=SCOPE)
    assert out == messages and all(a is b for a, b in zip(out, messages, strict=True))
    assert archive.saves == 0


def test_off_and_shadow_never_replace_inputs_or_write_archive(archive: CountingArchive) -> None:
    judge = ScriptedJudge(0.01)
    records: list = []
    assert compactor(judge, mode=Mode.OFF, archive=archive, records=records).compact_sync(reference_messages()) is None
    assert compactor(judge, mode=Mode.SHADOW, archive=archive, records=records).compact_sync(reference_messages()) is None
    assert judge.calls == 1 and archive.saves == 0
    assert [(r.status, r.reason) for r in records] == [("SKIPPED", "DISABLED"), ("DECIDED", "SHADOW_PROPOSAL")]


def test_batches_reuse_complete_state_and_never_partially_apply(archive: CountingArchive) -> None:
    messages = reference_messages()
    judge = ScriptedJudge(0.01, fail_on=2)
    config = reference_config(questions=2, max_concurrent_requests=1)
    out = compactor(judge, config, archive=archive).compact_sync(messages, scope=SCOPE)
    assert out == messages and judge.calls == 2 and archive.saves == 0
    assert judge.requests[0].state == judge.requests[1].state
    assert [len(r.questions) for r in judge.requests] == [2, 2]


@pytest.mark.parametrize("reply", [Answers({}), None, Answers({"call_t1": 0.1})])
def test_malformed_replies_keep_original(archive: CountingArchive, reply: object) -> None:
    class Malformed:
        async def ask(self, request: object) -> object:
            return reply
    assert isinstance(Malformed(), Judge)  # the double is a judge, as the protocol sees one
    decision = compactor(Malformed(), archive=archive).plan_sync(reference_messages(), scope=SCOPE)
    assert (decision.status, decision.reason, decision.error_kind) == (Status.ERROR, Reason.CALL_OR_RESPONSE_ERROR,
                                                                      "JudgeProtocolError")
    assert archive.saves == 0


def test_archive_failure_keeps_original(tmp_path) -> None:
    failing = CountingArchive(tmp_path, fail="disk full")
    messages = reference_messages()
    records: list = []
    c = compactor(ScriptedJudge(0.01), archive=failing, records=records)
    assert c.compact_sync(messages, scope=SCOPE) == messages
    assert failing.saves == 1 and records[0].status == "ERROR" and "disk full" not in str(records[0].to_dict())


def test_archive_failure_keeps_the_judgments_in_the_record(tmp_path) -> None:
    records: list = []
    c = compactor(ScriptedJudge(0.01), archive=CountingArchive(tmp_path, fail="disk full"), records=records)
    decision = c.plan_sync(reference_messages(), scope=SCOPE)
    assert (decision.status, decision.reason, decision.error_kind) == (Status.ERROR, Reason.CALL_OR_RESPONSE_ERROR,
                                                                      "ArchiveError")
    assert [p.key for p in records[0].pairs] == ["t1", "t2", "t3"]  # the judge answered: calibration may use them


@pytest.mark.parametrize("mode", [Mode.SHADOW, Mode.ENFORCE])
def test_a_bug_is_an_internal_error_not_a_judge_failure(archive: CountingArchive, monkeypatch, caplog,
                                                        mode: Mode) -> None:
    """An unexpected exception (here apply's own internal-error assertion) still ends the plan as ERROR —
    one record, ENFORCE hands back the original history, nothing archived — but says what it was."""

    def broken(*_args, **_kwargs):
        raise RuntimeError("internal error: result 'x' would survive without its call")

    messages, records = reference_messages(), []
    c = compactor(ScriptedJudge(0.01), mode=mode, archive=archive, records=records)
    monkeypatch.setattr(c, "_applier", broken)
    with caplog.at_level("ERROR", logger="jev"):
        decision = c.plan_sync(messages, scope=SCOPE)
    assert (decision.status, decision.reason, decision.error_kind) == (Status.ERROR, Reason.INTERNAL_ERROR,
                                                                      "RuntimeError")
    assert "would survive without its call" in decision.detail
    logged = [r for r in caplog.records if r.name == "jev" and r.exc_info]
    assert logged and logged[0].exc_info[0] is RuntimeError  # the traceback is in the log
    assert [(r.status, r.reason, r.error) for r in records] == [("ERROR", "INTERNAL_ERROR", "RuntimeError")]
    assert "survive" not in str(records[0].to_dict())  # records carry the kind, never the text
    if mode is Mode.ENFORCE:
        assert c.compact_sync(messages, scope=SCOPE) == messages and archive.saves == 0


def test_state_limit_does_not_remove_constraints_to_fit(archive: CountingArchive) -> None:
    judge = ScriptedJudge(0.01)
    decision = compactor(judge, reference_config(state=1), archive=archive).plan_sync(reference_messages(), scope=SCOPE)
    assert decision.status is Status.ERROR and decision.reason is Reason.STATE_BUDGET_EXCEEDED
    assert "pair t1 (read) does not fit in one judge request even alone beside the task" in decision.detail
    assert judge.calls == 0


def test_timeout_and_cancellation_stop_pending_work(archive: CountingArchive) -> None:
    judge = ScriptedJudge(0.01, delay=60)
    records: list = []
    c = compactor(judge, reference_config(questions=2), archive=archive, budget=0.3, records=records)
    messages = reference_messages()
    assert c.compact_sync(messages, scope=SCOPE) == messages
    assert (records[-1].status, records[-1].reason) == ("ERROR", "TIMEOUT")
    assert judge.cancelled == 3  # every in-flight call was cancelled (3 batches, 4 allowed in flight)

    async def cancel_midway() -> None:
        task = asyncio.create_task(compactor(judge, archive=archive, records=records).plan(messages, scope=SCOPE))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(cancel_midway())
    assert (records[-1].status, records[-1].reason) == ("CANCELLED", "CANCELLED")
    assert judge.cancelled == 4 and archive.saves == 0


def test_rejected_budget_and_concurrent_changes_never_commit(archive: CountingArchive) -> None:
    messages = reference_messages()

    def append_newer(request: object) -> None:
        messages.append(msg("newer", "user", text("a newer message")))
    c = compactor(ScriptedJudge(0.01, hook=append_newer), archive=archive)
    decision = c.plan_sync(messages, scope=SCOPE)
    assert (decision.status, decision.reason) == (Status.INCONCLUSIVE, Reason.TRANSCRIPT_CHANGED)
    assert archive.saves == 0 and messages[-1].id == "newer"
    rebuilt = messages[:-1] + [messages[-1]]  # the host's own list: the hook keeps appending to the other one
    out = c.compact_sync(rebuilt, scope=SCOPE)
    assert archive.saves == 1 and len(out) < len(rebuilt)  # judged on its own, archived and compacted


def test_concurrent_plans_have_independent_scopes_and_results(tmp_path) -> None:
    archive = FileArchive(tmp_path)
    one, two = Scope("u", "a", "one"), Scope("u", "a", "two")
    base = reference_messages()
    second = base[:-1] + [msg("last", "user", text("A different follow-up."))]
    judges = ScriptedJudge(0.01), ScriptedJudge(0.01)

    async def both():
        c1 = compactor(judges[0], reference_config(questions=2), archive=archive)
        c2 = compactor(judges[1], reference_config(questions=2), archive=archive)
        return await asyncio.gather(c1.plan(base + [msg("x", "user", text("x"))], scope=one), c2.plan(second, scope=two))
    d1, d2 = asyncio.run(both())
    assert judges[0].calls == 3 and judges[1].calls == 3
    assert d1.plan.archive_reference != d2.plan.archive_reference
    assert len(archive.restore(one, d1.plan.archive_reference)) == 9
    with pytest.raises(ArchiveError):
        archive.restore(one, d2.plan.archive_reference)


def test_nested_input_mutation_during_judgment_cannot_be_committed(archive: CountingArchive) -> None:
    messages = reference_messages()
    messages[1] = msg("c-old", "assistant", call("old", input={"paths": ["a.txt"]}))

    def mutate(request: object) -> None:
        messages[1].content[0].input["paths"].append("b.txt")
    decision = compactor(ScriptedJudge(0.01, hook=mutate), archive=archive).plan_sync(messages, scope=SCOPE)
    assert decision.reason is Reason.TRANSCRIPT_CHANGED and archive.saves == 0


@pytest.mark.parametrize("where", ["message metadata", "result metadata", "list item replaced", "beside an origin",
                                   "key added beside an origin", "pending call input", "block inside a result"])
def test_every_mutable_part_is_guarded(archive: CountingArchive, where: str) -> None:
    """The guard compares frozen values by identity and serializes the mutable parts: each kind is seen; a
    converter's bookkeeping rides in the message's frozen `origin`, and the host's metadata beside it is
    compared by content."""
    messages = reference_messages()
    messages[4] = msg("r-preview", "tool", result("preview", metadata={"source": "disk"}), name="reader",
                      metadata={"k": 1})
    messages[3] = messages[3].replace(metadata={"host": {"n": [1]}}, origin=Origin("x", {"kept": 1}))
    image = OtherBlock({"type": "image", "source": {"data": "aGk="}})
    messages[6] = msg(messages[6].id, "tool", result(messages[6].content[0].id, output=(text("shot"), image)))
    messages.append(msg("c-pending", "assistant", call("pending", input={"q": [1]})))

    def mutate(request: object) -> None:
        if where == "pending call input":
            messages[-1].content[0].input["q"].append(2)
        elif where == "block inside a result":
            image.data["source"]["data"] = "Ynll"
        elif where == "message metadata":
            messages[4].metadata["k"] = 2
        elif where == "beside an origin":
            messages[3].metadata["host"]["n"].append(2)
        elif where == "key added beside an origin":
            messages[3].metadata["other"] = 1
        elif where == "result metadata":
            messages[4].content[0].metadata["source"] = "net"
        else:  # an equal copy is still another object: conservatively a change
            messages[4] = messages[4].replace()
    decision = compactor(ScriptedJudge(0.01, hook=mutate), archive=archive).plan_sync(messages, scope=SCOPE)
    assert decision.reason is Reason.TRANSCRIPT_CHANGED and archive.saves == 0


def test_enforce_requires_archive_and_scope(archive: CountingArchive) -> None:
    with pytest.raises(ConfigError, match="ENFORCE requires durable archive"):
        Compactor(ScriptedJudge(), reference_config(), ExecutionOptions(Mode.ENFORCE))
    judge = ScriptedJudge(0.01)
    decision = compactor(judge, archive=archive).plan_sync(reference_messages(), scope=None)
    assert decision.status is Status.ERROR and "scope" in decision.detail and judge.calls == 0


def test_no_candidates_makes_no_judge_call() -> None:
    judge = ScriptedJudge(0.01)
    config = reference_config(eligible_tools=frozenset({"search"}))
    decision = compactor(judge, config, mode=Mode.SHADOW).plan_sync(reference_messages())
    assert (decision.status, decision.reason, judge.calls) == (Status.SKIPPED, Reason.NO_CANDIDATES, 0)
    assert compactor(judge, mode=Mode.SHADOW).plan_sync([]).reason is Reason.NO_CANDIDATES


def test_insufficient_reduction_carries_original_messages_and_judgments() -> None:
    messages = reference_messages()
    judge = ScriptedJudge(0.99)
    decision = compactor(judge, mode=Mode.SHADOW).plan_sync(messages)
    assert (decision.status, decision.reason) == (Status.INCONCLUSIVE, Reason.INSUFFICIENT_REDUCTION)
    assert list(decision.plan.messages) == messages and decision.plan.archive_reference == ""
    assert decision.plan.reduction == 0.0 and set(decision.plan.scores) == {"t1", "t2", "t3"}
    # a real reduction that is still below the configured minimum
    small = compactor(ScriptedJudge(dual), reference_config(minimum_reduction=0.9), mode=Mode.SHADOW).plan_sync(messages)
    assert small.reason is Reason.INSUFFICIENT_REDUCTION and 0 < small.plan.reduction < 0.9


def test_refusal_keeps_the_pair_with_reason_refused() -> None:
    judge = ReplayJudge({"call_t1": 0.01, "result_t1": "refusal", "call_t2": 0.01, "result_t2": 0.01}, default=0.99)
    decision = compactor(judge, mode=Mode.SHADOW).plan_sync(reference_messages())
    assert decision.plan.decisions["t1"] is Action.KEEP and decision.plan.scores["t1"].reason == "REFUSED"
    assert decision.plan.scores["t1"].keep_result is None
    assert decision.plan.decisions["t2"] is Action.DROP_PAIR


@pytest.mark.parametrize("bad", [-1, 1.01, float("nan"), float("inf"), float("-inf"), "x", True, None, [0.5]])
def test_invalid_probabilities_reject_the_whole_plan(bad: object) -> None:
    messages = reference_messages()
    snapshot = copy.deepcopy(canonical_json(messages))
    judge = ScriptedJudge(lambda q: bad if q == "result_t2" else 0.01)
    decision = compactor(judge, mode=Mode.SHADOW).plan_sync(messages)
    assert decision.status is Status.ERROR and decision.plan is None
    assert canonical_json(messages) == snapshot


@pytest.mark.parametrize("edge", [0, 1, 0.0, 1.0])
def test_probability_bounds_are_accepted(edge: float) -> None:
    decision = compactor(ScriptedJudge(edge), mode=Mode.SHADOW).plan_sync(reference_messages())
    assert decision.status in (Status.DECIDED, Status.INCONCLUSIVE)


def test_extra_answer_ids_are_rejected() -> None:
    class Extra:
        async def ask(self, request):
            return Answers({**{q.id: 0.01 for q in request.questions}, "call_t99": 0.5})
    assert isinstance(Extra(), Judge)
    decision = compactor(Extra(), mode=Mode.SHADOW).plan_sync(reference_messages())
    assert (decision.status, decision.error_kind) == (Status.ERROR, "JudgeProtocolError")
    assert "answer keys do not match request keys (missing [], extra ['call_t99'])" in decision.detail


def test_concurrency_is_bounded_and_first_failure_cancels_the_rest() -> None:
    in_flight = peak = 0

    class Gauge(ScriptedJudge):
        async def ask(self, request):
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            try:
                return await super().ask(request)
            finally:
                in_flight -= 1
    messages = reference_messages()[:1]
    for i in range(12):
        messages += [msg(f"c{i}", "assistant", call(f"k{i}")), msg(f"r{i}", "tool", result(f"k{i}"))]
    messages.append(msg("end", "user", text("go on")))
    judge = Gauge(0.01, delay=0.05)
    decision = compactor(judge, reference_config(questions=2, max_concurrent_requests=3), mode=Mode.SHADOW).plan_sync(messages)
    assert decision.status is Status.DECIDED and judge.calls == 12 and peak == 3

    failing = Gauge(0.01, delay=0.05, fail_on=1)
    decision = compactor(failing, reference_config(questions=2, max_concurrent_requests=3), mode=Mode.SHADOW).plan_sync(messages)
    assert decision.status is Status.ERROR and failing.calls == 3  # queued batches never sent


def test_observer_exceptions_never_change_the_outcome() -> None:
    def broken(ctx, record):
        raise RuntimeError("observer down")
    c = Compactor(ScriptedJudge(dual), reference_config(), ExecutionOptions(Mode.SHADOW, 2, "v", broken))
    assert c.plan_sync(reference_messages()).status is Status.DECIDED


def test_records_carry_metadata_only_and_per_pair_scores() -> None:
    records: list = []
    messages = reference_messages()
    messages[1] = msg("c-old", "assistant", call("old", input={"path": "secret-input.txt"}))
    compactor(ScriptedJudge(dual), mode=Mode.SHADOW, records=records).plan_sync(messages, context={"run": 1})
    record = records[0].to_dict()
    blob = str(record)
    for forbidden in ("evidence-", "Never edit", "secret-input"):
        assert forbidden not in blob
    assert record["purpose"] == "context_compaction" and record["version"] == "test"
    assert [p["key"] for p in record["pairs"]] == ["t1", "t2", "t3"]
    assert record["pairs"][0] == {"key": "t1", "call_id": "old", "tool": "read", "keep_call": 0.01, "keep_result": 0.01,
                                  "action": "DROP_PAIR", "reason": "DROP_PAIR", "result_chars": len("evidence-old " * 500),
                                  # what each let-go would remove: the whole result (no tombstone in this config),
                                  # or all but the 30-character head, a newline and the marker naming call "old"
                                  "truncate_saves": 6500 - 30 - 1 - len(truncation_marker("old", reference_config())),
                                  "drop_saves": 6500}
    assert record["judge"] == "ScriptedJudge"


def test_errors_name_the_culprit_and_records_only_the_kind() -> None:
    records: list = []
    messages = reference_messages() + [msg("first", "user", text("dup"))]
    decision = compactor(ScriptedJudge(), mode=Mode.SHADOW, records=records).plan_sync(messages)
    assert decision.status is Status.ERROR and "duplicate message id 'first'" in decision.detail
    assert records[0].error == "TranscriptError" and "first" not in str(records[0].to_dict())


def test_transcript_limit() -> None:
    judge = ScriptedJudge()
    decision = compactor(judge, reference_config(max_transcript_chars=100), mode=Mode.SHADOW).plan_sync(reference_messages())
    assert decision.status is Status.ERROR and "transcript limit" in decision.detail and judge.calls == 0


def test_the_transcript_limit_is_reported_before_what_analysis_finds() -> None:
    """SPEC §2's order: an over-long history with a duplicate id or an unpaired result says "transcript
    limit" (the analysis that finds the others runs first, so its error must not win)."""
    messages = reference_messages()
    duplicate = [*messages, messages[1]]
    unpaired = [*messages, messages[2].replace(id="again")]  # a result answering nothing open
    for bad in (duplicate, unpaired):
        small = compactor(ScriptedJudge(), reference_config(), mode=Mode.SHADOW).plan_sync(bad)
        assert small.status is Status.ERROR and "transcript limit" not in small.detail
        big = compactor(ScriptedJudge(), reference_config(max_transcript_chars=100), mode=Mode.SHADOW).plan_sync(bad)
        assert big.status is Status.ERROR and "transcript limit" in big.detail


def test_truncated_result_keeps_identity_fields() -> None:
    messages = reference_messages()
    messages[4] = msg("r-preview", "tool", result("preview", metadata={"source": "disk"}), name="reader",
                      timestamp="2026-11-29T10:00:00Z", metadata={"k": 1})
    decision = compactor(ScriptedJudge(lambda q: 0.01 if q == "result_t2" else 0.99), mode=Mode.SHADOW).plan_sync(messages)
    kept = {m.id: m for m in decision.plan.messages}["r-preview"]
    block = kept.content[0]
    assert (kept.name, kept.timestamp, kept.metadata) == ("reader", "2026-11-29T10:00:00Z", {"k": 1})
    assert (block.id, block.name, block.state, block.metadata) == ("preview", "read", "success", {"source": "disk"})
    assert block.text == ("evidence-preview " * 2)[:29] + "\u2026\n" + truncation_marker("preview", reference_config())


def test_mutation_into_unserializable_content_is_a_change(archive: CountingArchive) -> None:
    messages = reference_messages()
    messages[1] = msg("c-old", "assistant", call("old", input={"paths": ["a.txt"]}))

    def mutate(request: object) -> None:
        messages[1].content[0].input["paths"].append(object())
    decision = compactor(ScriptedJudge(0.01, hook=mutate), archive=archive).plan_sync(messages, scope=SCOPE)
    assert decision.reason is Reason.TRANSCRIPT_CHANGED and archive.saves == 0


def test_tool_free_and_pending_only_transcripts_make_no_requests() -> None:
    judge = ScriptedJudge(0.01)
    c = compactor(judge, mode=Mode.SHADOW)
    assert c.plan_sync([msg("a", "user", text("hi")), msg("b", "assistant", text("hello"))]).reason is Reason.NO_CANDIDATES
    pending = [msg("a", "user", text("hi"))] + [msg(f"c{i}", "assistant", call(f"p{i}")) for i in range(5)]
    assert c.plan_sync(pending + [msg("z", "user", text("end"))]).reason is Reason.NO_CANDIDATES
    assert judge.calls == 0


def test_plan_works_from_inside_a_running_loop() -> None:
    async def host() -> object:
        return compactor(ScriptedJudge(dual), mode=Mode.SHADOW).plan_sync(reference_messages())
    assert asyncio.run(host()).status is Status.DECIDED


def test_repeated_compaction_keeps_earlier_tombstones_and_markers_and_restores_each_snapshot(tmp_path) -> None:
    from archive import FileArchive
    from jev import ToolResultBlock
    from jev.model.markers import is_tombstone, is_truncated
    archive = FileArchive(tmp_path)
    config = reference_config(tombstones=True, restore_tool="restore_archived_result")
    judge = ScriptedJudge(lambda q: 0.99 if q.startswith("call_") or q == "result_t3" else 0.01)
    first = compactor(judge, config, archive=archive).plan_sync(reference_messages(), scope=SCOPE)
    assert first.status is Status.DECIDED
    history = [*first.plan.messages, msg("c-more", "assistant", call("more")),
               msg("r-more", "tool", result("more", "evidence-more " * 200)), msg("last2", "user", text("go on"))]
    second = compactor(ScriptedJudge(lambda q: 0.01), config, archive=archive).plan_sync(history, scope=SCOPE)
    assert second.status is Status.DECIDED
    out = second.plan.messages
    stones = [m.text for m in out if is_tombstone(m.text)]
    # the first plan's lines are still there, and the new drops added theirs; none was judged as a pair
    assert len(stones) == len(set(stones)) >= 2 and all("restore_archived_result(call_id=" in s for s in stones)
    assert all(m in out for m in first.plan.messages if is_tombstone(m.text))  # the same objects, untouched
    cut = [b for m in first.plan.messages for b in m.content if isinstance(b, ToolResultBlock) and is_truncated(b)]
    assert cut and all(f'call "{b.id}"' in b.text for b in cut)  # the first plan's markers name their calls
    for decision, original in ((first, reference_messages()), (second, history)):
        assert archive.restore(SCOPE, decision.plan.archive_reference) == list(original)  # each snapshot, exact


def test_the_pairs_table_joins_every_fact_and_says_why_a_pair_was_pinned() -> None:
    from jev.reading.analysis import analyze
    messages = reference_messages()
    messages.insert(5, msg("c-other", "assistant", call("other", "write", {"path": "out.txt", "text": "x" * 200})))
    messages.insert(6, msg("r-other", "tool", result("other", "ok", name="write")))
    decision = compactor(ScriptedJudge(lambda q: 0.01 if q.endswith("t1") else 0.5),
                         reference_config(recent=2), mode=Mode.SHADOW).plan_sync(messages)
    table = {v.key: v for v in decision.plan.pairs_table()}
    assert list(table) == [p.key for p in analyze(messages).pairs]  # every pair, in key order
    old = table["t1"]
    assert (old.call_id, old.tool, old.action, old.reason, old.pinned) == ("old", "read", Action.DROP_PAIR,
                                                                           "DROP_PAIR", "")
    assert old.result_chars == len(analyze(messages).pairs[0].result.text) and old.keep_result == 0.01
    other = next(v for v in table.values() if v.call_id == "other")
    assert other.pinned == "its tool is not eligible" and other.reason == "PINNED"
    assert other.input_head.startswith('{"path":"out.txt","text":"xxx') and len(other.input_head) <= 80
    last = next(v for v in table.values() if v.call_id == "needed")
    assert last.pinned == "in the recent window"
    assert set(old.as_dict()) == {"key", "call_id", "tool", "input_head", "result_chars", "keep_call", "keep_result",
                                  "scaled_result",
                                  "action", "reason", "pinned"}


def test_the_test_doubles_satisfy_the_protocols_they_stand_in_for(tmp_path) -> None:
    from archive import Archive
    from jev.judges import Judge
    assert isinstance(ScriptedJudge(), Judge) and isinstance(CountingArchive(tmp_path), Archive)


@pytest.mark.parametrize("mode", [Mode.SHADOW, Mode.ENFORCE])
def test_a_lone_surrogate_is_refused_before_judging_naming_message_and_field(archive, mode) -> None:
    """Issue 35 item 3: "ok \\udcff" (what errors="surrogateescape" makes) in visible text ended a plan as
    INTERNAL_ERROR/TypeError with a judge sent the state, and as an unnamed ArchiveError in ENFORCE."""
    history = reference_messages()
    history[3] = msg(history[3].id, "user", text("ok \udcff"))
    judge = ScriptedJudge(0.01)
    decision = compactor(judge, mode=mode, archive=archive).plan_sync(history, scope=SCOPE)
    assert (decision.status, decision.error_kind) == (Status.ERROR, "TranscriptError")
    assert decision.detail == "messages[3].content[0].text: a lone surrogate (U+DCFF at character 3) has no UTF-8 form"
    assert judge.requests == [] and archive.saves == 0


def test_one_setup_serves_many_sessions_each_with_its_own_history(tmp_path) -> None:
    """A `CompactorSetup` is checked once and frozen; each session on it keeps its own last history, so
    sessions planning different histories in turn — on threads too — decide exactly as a fresh compactor
    would, and share nothing but the setup."""
    import dataclasses
    import threading

    from conftest import long_history

    from jev import CompactionConfig, CompactorSetup
    from jev.judges import LocalJudge
    config = CompactionConfig(eligible_tools=frozenset({"read"}), minimum_reduction=0.0)
    setup = CompactorSetup(LocalJudge(), config, ExecutionOptions(Mode.SHADOW, 10.0))
    assert setup.config.size_exponent == LocalJudge().size_exponent  # the judge's own, resolved once
    with pytest.raises(dataclasses.FrozenInstanceError):
        setup.config = config  # type: ignore[misc]
    histories = [long_history(40, "Reading the parser. "), long_history(40, "Checking the lexer tables. ")]
    growing = [[h[: 20 + 8 * k] for k in range(8)] for h in histories]
    fresh = [[Compactor(LocalJudge(), config, ExecutionOptions(Mode.SHADOW, 10.0)).plan_sync(p).plan.rows
              for p in prefixes] for prefixes in growing]
    sessions = [setup.session(), setup.session()]
    assert sessions[0].setup is sessions[1].setup is setup and sessions[0] is not sessions[1]
    for k in range(8):  # in turn: each session reads its own history on from where it ended
        for s, session in enumerate(sessions):
            assert session.plan_sync(growing[s][k]).plan.rows == fresh[s][k]
    seen: dict[int, list] = {}

    def run(s: int) -> None:
        session = Compactor.from_setup(setup)
        seen[s] = [session.plan_sync(p).plan.rows for p in growing[s]]

    threads = [threading.Thread(target=run, args=(s,)) for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {0: fresh[0], 1: fresh[1]}
    with pytest.raises(ConfigError, match=r"setup must be a jev\.CompactorSetup"):
        Compactor.from_setup(config)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="ENFORCE requires durable archive"):
        CompactorSetup(LocalJudge(), config, ExecutionOptions(Mode.ENFORCE))
