"""Both dev sets (../shared/data): every trajectory loads (format auto-detected), round-trips exactly, and
plans with the default config — every full history and every prefix at 8-pair steps, never ERROR."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import orjson
import pytest
from conftest import CLAUDE_CODE, DEV_DATA, needs_data

from jev import CompactionConfig, Compactor, ExecutionOptions, Mode, Reason, Status, formats
from jev.judges import LocalJudge, ReplayJudge
from jev.model.transcript import ToolResultBlock
from jev.reading.analysis import analyze

DATA = DEV_DATA
SETS = {"swebench": DATA / "mini-swe-agent-swebench-dev.tar.xz", "deepseek": DATA / "mini-swe-agent-deepseek-dev.tar.xz"}
pytestmark = pytest.mark.slow  # whole dev sets: out of the fast subset
needs_sets = needs_data(*SETS.values())
DEFAULT = CompactionConfig(eligible_tools=frozenset({"bash"}))  # the defaults, with the one tool these agents have


@pytest.fixture(scope="module")
def raw() -> dict[str, list[tuple[str, bytes]]]:
    from calibration.dataset import raw_trajectories
    return {name: list(raw_trajectories(path)) for name, path in SETS.items()}


@needs_sets
def test_every_trajectory_is_detected_and_round_trips_exactly(raw) -> None:
    pairs = Counter()
    for name, items in raw.items():
        for _session, data in items:
            doc = orjson.loads(data)
            assert formats.detect(doc) == "mini-swe-agent"
            messages = formats.load(doc)
            assert orjson.dumps(formats.dump(messages, "mini-swe-agent")) == orjson.dumps(doc)  # key order too
            pairs[name] += len(analyze(messages).pairs)
    assert len(raw["deepseek"]) == 121 and len(raw["swebench"]) == 368
    assert pairs["deepseek"] == 9334  # 9 223 tool messages and 111 submitting calls answered by `exit`


@needs_sets
def test_deepseek_sessions_are_told_apart_by_run(raw) -> None:
    from calibration.dataset import group_of
    sessions = [s for s, _ in raw["deepseek"]]
    assert len(set(sessions)) == 121 and len({group_of(s) for s in sessions}) == 23


@pytest.mark.slow
@needs_sets
def test_every_history_and_every_8_pair_prefix_plans_without_error(raw) -> None:
    compactor = Compactor(LocalJudge(), DEFAULT, ExecutionOptions(Mode.SHADOW, budget=30))
    outcomes = Counter()
    for _name, items in raw.items():
        for session, data in items:
            messages = formats.load(orjson.loads(data))
            ends = [i + 1 for i, m in enumerate(messages) if any(isinstance(b, ToolResultBlock) for b in m.content)]
            for end in [*ends[7::8], len(messages)]:
                decision = compactor.plan_sync(messages[:end])
                assert decision.status is not Status.ERROR, (session, end, decision.detail)
                outcomes[decision.status] += 1
                outcomes[decision.reason] += decision.reason is Reason.UNPROFITABLE
    proposed = outcomes[Status.DECIDED] + outcomes[Reason.UNPROFITABLE]  # the table proposed; the gate weighed it
    assert proposed > 0.3 * sum(outcomes.values()) and outcomes[Status.DECIDED] > 0  # the defaults propose something


@needs_sets
def test_a_remote_judge_plans_every_full_history_in_windows_where_needed(raw) -> None:
    compactor = Compactor(ReplayJudge({}, default=0.1), DEFAULT, ExecutionOptions(Mode.SHADOW, budget=30))
    windowed = 0
    for _name, items in raw.items():
        for session, data in items:
            decision = compactor.plan_sync(formats.load(orjson.loads(data)))
            assert decision.status is not Status.ERROR, (session, decision.detail)
            windowed += bool(decision.plan and decision.plan.windows)
    assert windowed > 20  # the long histories that used to end in "state exceeds budget"


FORMS = ("jev", "openai-chat", "openai-responses", "anthropic", "langchain", "agentscope")


def _answers(messages) -> dict[str, float]:
    """Fixed answers by pair key (the same in every form): drop, truncate and keep in turn."""
    out = {}
    for k, pair in enumerate(analyze(messages).pairs):
        out[f"call_{pair.key}"], out[f"result_{pair.key}"] = ((0.05, 0.05), (0.95, 0.05), (0.95, 0.95))[k % 3]
    return out


@needs_sets
def test_the_same_plan_reports_the_same_reduction_from_every_form_and_keeps_no_payload_twice(raw) -> None:
    from jev import canonical_json
    from jev.model.transcript import TextBlock, ToolUseBlock
    config = CompactionConfig(eligible_tools=frozenset({"bash"}), preserve_recent_messages=0, minimum_reduction=0.0,
                              cost_gate=False)  # where the edits begin depends on the form's message boundaries
    for _session, data in raw["swebench"][:3] + raw["deepseek"][:2]:
        base = formats.load(orjson.loads(data))
        compactor = Compactor(ReplayJudge(_answers(base)), config, ExecutionOptions(Mode.SHADOW, budget=30))
        reductions = {}
        for form in FORMS:
            messages = formats.load(formats.dump(base, form), form)
            decision = compactor.plan_sync(messages)
            assert decision.status is Status.DECIDED, (form, decision.detail)
            reductions[form] = decision.plan.reduction
            if form == "jev":
                continue
            for message in messages:  # what the blocks hold is not kept a second time in the metadata
                kept = canonical_json(message.metadata or {})
                for block in message.content:
                    texts = [block.text] if isinstance(block, TextBlock) else [  # an input as JSON and as arguments
                        canonical_json(block.input).decode(), orjson.dumps(block.input).decode()] if isinstance(
                        block, ToolUseBlock) else [block.text] if isinstance(block, ToolResultBlock) else []
                    for text in texts:
                        if len(text) >= 40:
                            assert canonical_json(text)[1:-1] not in kept, (form, message.id)
        assert max(reductions.values()) - min(reductions.values()) <= 0.01 * max(reductions.values()), reductions


def _claude_code_sessions() -> list[tuple[str, bytes]]:
    import tarfile
    with tarfile.open(CLAUDE_CODE, "r|*") as tar:
        return sorted((m.name, tar.extractfile(m).read()) for m in tar if m.isfile() and m.name.endswith(".jsonl"))


@needs_sets
def test_every_trajectory_comes_back_byte_for_byte_through_the_archive(raw, tmp_path) -> None:
    """Issue 35 item 1: archive -> restore -> dump is the trajectory as mini-swe-agent wrote it, key order
    inside `extra`, the raw responses and the envelope included (the snapshot sorts; it records the order)."""
    from archive import FileArchive, Scope
    archive, scope = FileArchive(tmp_path), Scope("u", "a", "s")
    for _name, items in raw.items():
        for session, data in items:
            doc = orjson.loads(data)
            back = archive.restore(scope, archive.save(scope, formats.load(doc)))
            assert orjson.dumps(formats.dump(back, "mini-swe-agent")) == orjson.dumps(doc), session


@needs_data(CLAUDE_CODE)
def test_every_claude_code_session_plans_and_writes_back_what_it_holds(tmp_path) -> None:
    """Issue 35 item 6: all 110 dev sessions plan (none ends in ERROR: pasted images pin their message,
    carried-over results are pinned pairs) and their Anthropic messages come back exactly from the archive.
    Each stretch between Claude Code's own compactions is a conversation of its own (`load` reads the last):
    together they hold every main-thread block, in order."""
    from archive import FileArchive, Scope
    from jev.formats import claude_code
    compactor = Compactor(LocalJudge(), CompactionConfig(eligible_tools=frozenset(
        {"Read", "Bash", "Grep", "Glob"})), ExecutionOptions(Mode.SHADOW, budget=30))
    archive, scope = FileArchive(tmp_path), Scope("u", "a", "s")
    sessions = _claude_code_sessions()
    outcomes, stretches = Counter(), Counter()
    for name, data in sessions:
        entries = formats.parse(data)
        assert formats.detect(entries) == "claude-code", name
        every = claude_code.stretches(entries)
        assert formats.load(entries) == every[-1], name
        assert not claude_code.rewound(entries), name  # parallel work off the parent chain is no rewind
        stretches[len(every)] += 1
        written = b""
        for messages in every:
            decision = compactor.plan_sync(messages)
            assert decision.status is not Status.ERROR, (name, decision.detail)
            outcomes[decision.status] += 1
            one = orjson.dumps(formats.dump(messages, "anthropic"))
            back = archive.restore(scope, archive.save(scope, messages))
            assert orjson.dumps(formats.dump(back, "anthropic")) == one, name
            written += one
        for line in entries:  # what Claude Code sent is what is written: every main-thread block, in order
            if line.get("type") == "assistant" and not line.get("isSidechain"):
                for block in line["message"]["content"]:
                    assert orjson.dumps(block) in written, name
    assert len(sessions) == 110 and outcomes[Status.DECIDED] > 0
    assert stretches == {1: 107, 2: 3}  # three sessions Claude Code compacted once on its own


@needs_sets
@needs_data(CLAUDE_CODE)
def test_a_plans_token_counts_stay_within_one_percent_of_measuring_every_message(raw) -> None:
    """The counts the cost gate prices a plan with (`HistoryTokens`: each role sampled at its own rate,
    media measured whole, every message measured under the sample's size) against SPEC §4's estimate of
    every message, on every dev session and Claude Code stretch: within 1 % of the whole history's, and
    each message's own count wherever the history is under twice `SAMPLE_CHARS` (every message sampled).
    Before: up to 21 % off (a mini-swe-agent session sampled on its calls alone) and 29 % (a Claude Code
    session whose pasted images entered the rate)."""
    from jev.deciding.cost import SAMPLE_CHARS, HistoryTokens, tokens_each
    from jev.formats import claude_code
    histories = [formats.load(orjson.loads(data)) for items in raw.values() for _session, data in items]
    histories += [s for _name, data in _claude_code_sessions() for s in claude_code.stretches(formats.parse(data))]
    worst, sampled = 0.0, 0
    for messages in histories:
        transcript = analyze(messages)
        estimated, measured = HistoryTokens(transcript).of_history(), tokens_each(messages)
        if sum(transcript.sizes) < 2 * SAMPLE_CHARS:
            assert estimated == measured
        else:
            sampled += 1
            worst = max(worst, abs(sum(estimated) / sum(measured) - 1))
    assert len(histories) == 602 and sampled >= 5 and worst < 0.01, (sampled, worst)


@needs_sets
@needs_data(CLAUDE_CODE)
def test_the_no_compaction_replay_bills_what_the_providers_billed_once_the_prefix_is_in(raw) -> None:
    """The README's check against the bill: every dev transcript records its calls' usage (Claude Code's
    Anthropic usage, mini-swe-agent's responses'); fitted per set, the prefix and the estimate's scale, and
    the no-compaction replay with that prefix against what was billed — DeepSeek and Claude Code (on its
    hour-long cache) within a few percent, cache reads too; Gemini's implicit cache read far less than a
    replay that reads every shared prefix, so there the replay bills about half."""
    from jev.billing import NoCompaction, replay
    from jev.billing.usage import calls_billed, check, fitted_prefix
    sets = {name: [(d, m) for _s, data in items for d in [orjson.loads(data)] for m in formats.conversations(d)]
            for name, items in raw.items()}
    sets["claude-code"] = [(d, m) for _n, data in _claude_code_sessions() for d in [formats.parse(data)]
                           for m in formats.conversations(d)]
    found = {}
    for name, conversations in sets.items():
        known = [(m, calls) for d, m in conversations if (calls := calls_billed(d, m)) is not None]
        fit = fitted_prefix(known)
        profile = "anthropic-1h" if name == "claude-code" else "openai"
        said = check([(calls, replay(m, [NoCompaction()], profile, prefix=fit.tokens)["no compaction"])
                      for m, calls in known], fit, profile)
        found[name] = (len(known), fit, said)
    (n_swe, swe, swe_said), (n_ds, ds, ds_said), (n_cc, cc, cc_said) = (found[k] for k in ("swebench", "deepseek",
                                                                                          "claude-code"))
    assert (n_swe, n_ds, n_cc) == (368, 116, 113)
    assert 0.9 < swe.scale < 1.0 and 0.9 < ds.scale < 1.0 and 1.1 < cc.scale < 1.2  # Claude's tokens run 15 % more
    assert 25_000 < cc.tokens < 32_000 and ds.tokens < 2_000 and swe.tokens < 1_000
    assert 0.95 < ds_said.replayed / ds_said.billed < 1.05 and abs(ds_said.read_share - ds_said.replayed_read_share) < 0.02
    assert 0.95 < cc_said.replayed / cc_said.billed < 1.10 and abs(cc_said.read_share - cc_said.replayed_read_share) < 0.02
    assert cc_said.replayed_without_prefix / cc_said.billed < 0.65  # the history alone: well under half the bill
    assert cc_said.hour_long_writes > 0.9 and ds_said.hour_long_writes == 0  # Claude Code's cache: anthropic-1h
    assert swe_said.replayed / swe_said.billed < 0.6 and swe_said.read_share < 0.9 < swe_said.replayed_read_share


def _independently_accepted(sent: list, proposed: list) -> list[str]:
    """A preserved-thinking model's rules, checked here without `jev.providers`: no thinking block after the
    first message that changed; every result after its call (but those the session carried over, which had
    none when sent), every call answered (but the newest assistant message's); results right after their
    call's message."""
    problems = []
    first = next((i for i, (a, b) in enumerate(zip(sent, proposed, strict=False)) if a != b),
                 min(len(sent), len(proposed)))
    for i, message in enumerate(proposed[first + 1:], first + 1):
        if any(b.type in ("thinking", "redacted_thinking") for b in message.content):
            problems.append(f"thinking at messages[{i}] after the first change at messages[{first}]")
    called: set[str] = set()
    carried = set()
    for message in sent:
        for b in message.content:
            if b.type == "tool_use":
                called.add(b.id)
            elif isinstance(b, ToolResultBlock) and b.id not in called:
                carried.add(b.id)
    open_calls: dict[str, int] = {}
    newest = max((i for i, m in enumerate(proposed) if m.role == "assistant"), default=-1)
    for i, message in enumerate(proposed):
        for b in message.content:
            if isinstance(b, ToolResultBlock):
                if open_calls.pop(b.id, None) is None and b.id not in carried:
                    problems.append(f"result {b.id!r} at messages[{i}] without its call")
            elif b.type == "tool_use":
                open_calls[b.id] = i
        calls = {b.id for b in message.content if b.type == "tool_use"}
        if calls and i != newest and i + 1 < len(proposed) and not any(
                isinstance(b, ToolResultBlock) and b.id in calls for b in proposed[i + 1].content):
            problems.append(f"messages[{i + 1}] comes between the calls of messages[{i}] and their results")
    problems += [f"call {c!r} without its result" for c, i in open_calls.items() if i != newest]
    return problems


@needs_data(CLAUDE_CODE)
def test_claude_code_sessions_sent_to_a_preserved_thinking_model_get_plans_it_accepts() -> None:
    """Issue 61: every session cut at four points, budget mode in ENFORCE with --model claude-fable-5-1 under
    each thinking policy; every adopted plan passes the independent check above (and `jev.providers.check`),
    and at least half are adopted under the default policy."""
    from archive import MemoryStore, Scope, StoreArchive
    from jev.providers import check
    tools = frozenset({"Read", "Bash", "Grep", "Glob"})
    adopted: Counter = Counter()
    plans = 0
    judge = LocalJudge()  # one judge for every plan, as one setup shares it across sessions
    for k, (_name, data) in enumerate(_claude_code_sessions()):
        messages = formats.load(formats.parse(data))
        for share in (0.25, 0.5, 0.75, 1.0):
            cut = messages[:max(2, round(len(messages) * share))]
            plans += 1
            for policy in ("strip", "drop-block", "append-only", "made for claude-opus-4-6"):
                config = CompactionConfig(eligible_tools=tools, target_reduction=0.5, model=policy.split()[-1],
                                          thinking_policy="strip") if policy.startswith("made") else \
                    CompactionConfig(eligible_tools=tools, target_reduction=0.5, model="claude-fable-5-1",
                                     thinking_policy=policy)
                compactor = Compactor(judge, config, ExecutionOptions(Mode.ENFORCE, 60.0), StoreArchive(MemoryStore()))
                decision = compactor.plan_sync(cut, scope=Scope("u", "a", f"s{k}"))
                if decision.reason is not Reason.ARCHIVED_PROPOSAL:
                    assert decision.status is not Status.ERROR, decision.detail
                    continue
                adopted[policy] += 1
                proposed = list(decision.plan.messages)
                if policy.startswith("made"):  # the plans made before the providers' rules, sent to Fable 5.1
                    refused = not check(cut, proposed, "claude-fable-5-1").passes
                    assert refused == bool(_independently_accepted(cut, proposed)), (k, share)
                    adopted["refused"] += refused
                    continue
                assert check(cut, proposed, "claude-fable-5-1", policy).passes
                if policy != "drop-block":  # drop-block keeps what the API then drops: the check above says so
                    assert _independently_accepted(cut, proposed) == [], (k, share, policy)
    assert adopted["strip"] >= plans / 2 and adopted["drop-block"] >= plans / 2, (adopted, plans)
    assert adopted["append-only"] < adopted["strip"]  # it holds everything up to the last thinking
    assert adopted["refused"] >= adopted["made for claude-opus-4-6"] / 2, adopted  # what issue 61 measured


@needs_data(CLAUDE_CODE)
def test_jev_cost_prices_each_claude_code_session_within_ten_percent_of_its_bill(tmp_path) -> None:
    """Issue 63 item 1: each session's own prefix, what its first request found cached, and each write at the
    lifetime its usage records — then `jev cost` is within ±10 % of the recorded bill on most dev sessions
    (81 % on the day this was written; 29 % with one pooled prefix and a cold first request)."""
    from conftest import cli
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name, data in _claude_code_sessions():
        (folder / Path(name).name).write_bytes(data)
    ran = cli(["cost", str(folder), "--eligible-tools", "Read,Bash,Grep,Glob", "--prefix-tokens", "auto",
               "--no-labels", "--price-as-recorded", "-q"], text=True)
    said = json.loads(ran.stdout)["checked_against_billed"]
    assert said["sessions"]["conversations"] == 113 and said["sessions"]["within_10_percent"] >= 0.6, said["sessions"]
    assert 0.9 < said["replay_over_billed"] < 1.05
