"""What the provider billed, as transcripts record it (`jev.billing.usage`): each usage shape read, each call of a
replay matched with its usage in a Claude Code session and a mini-swe-agent trajectory (the shipped real
sample), the prefix fitted by least squares, and the replay checked against the bill."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import call, msg, result, text
from hypothesis import given, settings
from hypothesis import strategies as st

from jev import formats
from jev.billing import NoCompaction, calls_of, replay
from jev.billing.usage import Billed, billed, calls_billed, check, fitted_prefix
from jev.deciding.cost import tokens_each

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "data" / "django__django-11163.traj.json"  # a real mini-swe-agent trajectory


@pytest.mark.parametrize(("usage", "expected"), [
    ({"input_tokens": 3, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 30_000, "output_tokens": 9},
     Billed(30_000, 200, 3)),  # Anthropic: the three are apart
    ({"input_tokens": 12, "output_tokens": 1}, Billed(0, 0, 12)),  # Anthropic with no caching
    ({"input_tokens": 1, "cache_creation_input_tokens": 500, "cache_read_input_tokens": 9,
      "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 400}},
     Billed(9, 500, 1, 400)),  # Anthropic's split of the writes by their lifetime
    ({"prompt_tokens": 1622, "completion_tokens": 184, "prompt_tokens_details": {"cached_tokens": 1024}},
     Billed(1024, 0, 598)),  # OpenAI chat completions: the cached ones are among the prompt's
    ({"prompt_tokens": 1560, "prompt_tokens_details": {"cached_tokens": 320}, "prompt_cache_hit_tokens": 320,
      "prompt_cache_miss_tokens": 1240}, Billed(320, 0, 1240)),  # DeepSeek
    ({"input_tokens": 900, "input_tokens_details": {"cached_tokens": 512}, "output_tokens": 5},
     Billed(512, 0, 388)),  # OpenAI Responses: `input_tokens` counts the cached ones too
    ({"prompt_tokens": 10}, Billed(0, 0, 10)),
])
def test_every_usage_shape_reads_as_reads_writes_and_the_rest(usage, expected) -> None:
    assert billed(usage) == expected and billed(usage).tokens == expected.read + expected.written + expected.uncached


@pytest.mark.parametrize("usage", [None, [], {}, {"output_tokens": 4}, {"prompt_tokens": "12"},
                                   {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 11}},
                                   {"input_tokens": 5, "cache_read_input_tokens": -1},
                                   {"input_tokens": 5, "cache_creation_input_tokens": "2"}])
def test_what_is_no_usage_reads_as_none(usage) -> None:
    assert billed(usage) is None


def test_a_calls_cost_prices_reads_and_writes_at_the_profile_and_the_rest_at_the_base() -> None:
    assert Billed(1000, 100, 10).cost("anthropic-1h") == pytest.approx(1000 * 0.1 + 100 * 2.0 + 10)
    assert Billed(1000, 0, 10).cost("openai") == pytest.approx(1000 * 0.1 + 10)


def test_each_replayed_call_of_a_real_trajectory_has_the_usage_its_response_recorded() -> None:
    document = json.loads(SAMPLE.read_text())
    messages = formats.load(document)
    calls = calls_billed(document, messages)
    assert calls is not None and len(calls) == len(calls_of(messages)) == 13
    prompts = [m["extra"]["response"]["usage"]["prompt_tokens"] for m in document["messages"]
               if m["role"] == "assistant"]
    assert [c.tokens for c in calls] == prompts[:13]
    del document["messages"][4]["extra"]["response"]["usage"]  # one call without: no figures for the conversation
    assert calls_billed(document, messages) is None


def test_a_claude_code_sessions_calls_are_matched_by_their_lines() -> None:
    from test_claude_code import session
    entries = session()
    usage = {"input_tokens": 4, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 21_000}
    for e in entries:
        if e["type"] == "assistant" and e["message"]["id"] == "msg_2":
            e["message"]["usage"] = usage
    messages = formats.load(entries)
    calls = calls_billed(entries, messages)
    assert calls is not None and len(calls) == len(calls_of(messages))
    turn = [messages[k].id for k in calls_of(messages)].index("a5")  # the call that wrote msg_2
    assert calls[turn] == Billed(21_000, 900, 4)


def history(n: int) -> list:
    messages = [msg("task", "user", text("Find why the parser drops the last field. " * 5))]
    for k in range(n):
        messages += [msg(f"a{k}", "assistant", text(f"Reading part {k}."), call(f"r{k}")),
                     msg(f"o{k}", "tool", result(f"r{k}", f"line {k}: value_{k} = compute({k})\n" * (20 + k)))]
    return messages + [msg("end", "assistant", text("Done."))]


def test_the_prefix_is_the_least_squares_intercept_and_the_replay_with_it_bills_what_was_billed() -> None:
    """Usage made exactly as a replay with a 2 000-token prefix bills, at 1.5 provider tokens an estimated
    token: the fit finds both, and the no-compaction replay with the fitted prefix, scaled, bills what the
    provider did; without the prefix, less."""
    messages = history(12)
    before = [sum(tokens_each(messages[:k])) for k in calls_of(messages)]
    calls = [Billed(read=round(1.5 * (2000 + (before[n - 1] if n else -2000))), written=0,
                    uncached=round(1.5 * (2000 + before[n])) - round(1.5 * (2000 + (before[n - 1] if n else -2000))))
             for n in range(len(before))]
    fit = fitted_prefix([(messages, calls)])
    assert fit is not None and fit.tokens == 2000 and fit.scale == pytest.approx(1.5, rel=1e-3) and fit.calls == len(calls)
    bill = replay(messages, [NoCompaction()], "openai", prefix=fit.tokens)["no compaction"]
    checked = check([(calls, bill)], fit, "openai")
    assert checked.replayed / checked.billed == pytest.approx(1.0, abs=0.01)
    assert checked.replayed_without_prefix < checked.replayed and checked.read_share == pytest.approx(
        checked.replayed_read_share, abs=0.01)
    assert fitted_prefix([]) is None and fitted_prefix([(messages[:3], calls[:1])]) is None
    nothing = check([([Billed(0, 0, 0)] * len(calls), bill)], fit, "openai").as_dict()  # nothing billed: no ratio
    assert nothing["replay_over_billed"] is None and nothing["replay_without_prefix_over_billed"] is None


def test_jev_cost_fits_the_prefix_from_the_billed_usage_and_checks_the_replay_against_it(tmp_path) -> None:
    import shutil

    from conftest import cli, long_history
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "a.traj.json")
    proc = cli(["cost", str(folder), "--eligible-tools", "bash", "--prefix-tokens", "auto", "--no-labels",
                "--pricing", "openai", "--out", str(tmp_path / "r.json")])
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["prefix_fit"]["calls"] == 13 and report["prefix_tokens"] == report["prefix_fit"]["tokens"]
    said = report["checked_against_billed"]
    assert said["profile"] == "openai" and said["replay_over_billed"] > 0 and 0 < said["cache_read_share"] <= 1
    assert "prefix fitted from 13 calls' billed usage" in " ".join(proc.stderr.decode().split())
    none = tmp_path / "none"
    none.mkdir()
    (none / "c.json").write_text(json.dumps(formats.dump(long_history(10), "openai-chat")))
    bad = cli(["cost", str(none), "--prefix-tokens", "auto"])
    assert bad.returncode == 2 and b"no transcript records the billed usage" in bad.stderr
    unreadable = tmp_path / "unreadable"
    unreadable.mkdir()
    (unreadable / "d.json").write_text("not json")
    bad = cli(["cost", str(unreadable), "--prefix-tokens", "auto"])
    assert bad.returncode == 2 and b"no session could be read (1 unreadable)" in bad.stderr
    bad = cli(["cost", str(none), "--prefix-tokens", "lots"])
    assert bad.returncode == 2 and b"--prefix-tokens must be an integer >= 0 or auto (got 'lots')" in bad.stderr


def test_jev_cost_says_when_the_provider_cached_for_an_hour_and_the_profile_does_not(tmp_path) -> None:
    """Claude Code writes hour-long cache entries (a write at 2x): fitted from such usage, `jev cost` says
    which profile prices the sessions as they were billed, and only when the profile in use does not."""
    from conftest import cli
    from test_claude_code import session
    entries = session()
    for n, e in enumerate(x for x in entries if x["type"] == "assistant" and not x.get("isSidechain")):
        e["message"]["usage"] = {"input_tokens": 3, "cache_read_input_tokens": 20_000 + 500 * n,
                                 "cache_creation_input_tokens": 300,
                                 "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 300}}
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "s.jsonl").write_text("\n".join(json.dumps(e) for e in entries))
    said = {}
    for pricing in ("anthropic-5m", "anthropic-1h"):
        proc = cli(["cost", str(folder), "--eligible-tools", "Read,Bash", "--prefix-tokens", "auto", "--no-labels",
                    "--pricing", pricing, "--out", str(tmp_path / f"{pricing}.json")])
        assert proc.returncode == 0, proc.stderr
        said[pricing] = " ".join(proc.stderr.decode().split())
        checked = json.loads((tmp_path / f"{pricing}.json").read_text())["checked_against_billed"]
        assert checked["hour_long_cache_writes"] == 1.0
    assert "--pricing anthropic-1h prices these sessions as they were billed" in said["anthropic-5m"]
    assert "--pricing anthropic-1h" not in said["anthropic-1h"]


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=8)
_FIELDS = st.sampled_from(["input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation",
                           "ephemeral_1h_input_tokens", "input_tokens_details", "cached_tokens", "prompt_tokens",
                           "prompt_tokens_details", "prompt_cache_hit_tokens", "output_tokens"])
_USAGE = st.recursive(st.integers(-5, 10**6) | st.none() | st.booleans() | st.floats(allow_nan=False),
                      lambda inner: st.dictionaries(_FIELDS, inner, max_size=5), max_leaves=10)


@settings(max_examples=400, deadline=None, database=None)
@given(st.one_of(_JSON, _USAGE))
def test_any_value_reads_as_whole_counts_or_none_and_never_raises(usage) -> None:
    found = billed(usage)
    if found is not None:
        values = (found.read, found.written, found.uncached, found.written_for_an_hour)
        assert all(type(v) is int and v >= 0 for v in values) and found.written_for_an_hour <= found.written


_SLOT = st.one_of(st.tuples(st.just("other"), _JSON), st.tuples(st.just("usage"), _USAGE))


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(_SLOT, min_size=6, max_size=6), st.booleans())
def test_a_document_of_any_shape_gives_every_calls_usage_or_none(slots, as_lines) -> None:
    """Whatever a document holds where usage is looked for, `calls_billed` answers, never raises: each
    call's usage read from the document message of its place (ids `m<index>`, as mini-swe-agent's), or
    None when one of them has none."""
    raw = [{"extra": {"response": {"usage": value}}} if kind == "usage" else value for kind, value in slots]
    messages = [msg("m0", "user", text("go"))]
    for k in (1, 3):
        messages += [msg(f"m{k}", "assistant", call(f"r{k}")), msg(f"m{k + 1}", "tool", result(f"r{k}", "out"))]
    messages.append(msg("m5", "assistant", text("done")))
    found = calls_billed(raw if as_lines else {"messages": raw}, messages)
    if as_lines:  # a list is read as Claude Code's lines: these have no `uuid`s to match
        assert found is None
        return
    usage = [billed(value) if kind == "usage" else None for kind, value in (slots[k] for k in (1, 3, 5))]
    assert found == (None if None in usage else usage)


def test_a_write_is_priced_at_its_own_lifetime_and_a_session_at_its_recorded_mix() -> None:
    """Issue 63: 44 % of the real cache writes were hour-long; priced with each write's own lifetime."""
    from jev.billing.usage import recorded_profile
    from jev.deciding.cost import PROFILES
    call_ = Billed(read=1000, written=400, uncached=10, written_for_an_hour=100)
    assert call_.as_billed == pytest.approx(1000 * 0.1 + 300 * 1.25 + 100 * 2.0 + 10)
    mostly_hour = [Billed(0, 100, 0, 80), Billed(50, 100, 0, 80)]
    profile = recorded_profile(mostly_hour, "anthropic-5m")
    assert profile.cache_write == pytest.approx(1.25 + 0.8 * 0.75) and profile.lifetime == 3600.0
    assert recorded_profile([Billed(0, 100, 0, 10)], "anthropic-5m").lifetime == 300.0
    assert recorded_profile([Billed(90, 0, 10)], "openai") is PROFILES["openai"]  # no writes recorded: the base


def test_the_first_request_reads_what_it_found_cached_and_a_session_fits_its_own_prefix() -> None:
    from jev.billing import replayed
    from jev.billing.usage import Prefix, session_prefix, usage_points, warm_tokens
    messages = history(6)
    run = replayed(messages, [NoCompaction()], "anthropic-5m")["no compaction"]
    cold, warm = run.priced(3000), run.priced(3000, warm=3000)
    assert warm.read - cold.read == 3000 and warm.billed < cold.billed  # the prefix found, not written
    assert run.priced(3000, warm=10**9).read - cold.read == run.sent[0] + 3000  # never more than it sent
    pooled = Prefix(5000, 5000.0, 1.0, 99)
    calls = [Billed(read=4000, written=100, uncached=0)] + [Billed(4000, 100, 0)] * (len(run.sent) - 1)
    assert warm_tokens(calls, Prefix(1, 1.0, 2.0, 2)) == 2000
    assert session_prefix(usage_points(messages, calls), pooled) is pooled  # one estimate for many bills: no fit
    grown = [Billed(0, 1000 + round(1.5 * x), 0) for x, _y in usage_points(messages, calls)]
    own = session_prefix(usage_points(messages, grown), pooled)
    assert own is not pooled and own.scale == pytest.approx(1.5, rel=1e-3) and own.tokens == 667
    steep = [Billed(0, 1000 + 3 * x, 0) for x, _y in usage_points(messages, calls)]
    assert session_prefix(usage_points(messages, steep), pooled) is pooled  # 3x the pooled slope: noise


def test_sessions_are_checked_one_by_one_and_those_outside_named() -> None:
    from jev.billing import Bill
    from jev.billing.usage import sessions_check
    def bill(cost: float) -> Bill:
        return Bill(billed=cost)
    rows = [("near", [Billed(0, 0, 100)], bill(105.0), 1.0), ("far", [Billed(0, 0, 100)], bill(150.0), 1.0),
            ("scaled", [Billed(0, 0, 100)], bill(50.0), 2.0), ("nothing", [Billed(0, 0, 0)], bill(5.0), 1.0)]
    checked = sessions_check(rows)
    assert checked.count == 3 and checked.within == pytest.approx(2 / 3) and checked.outside == (("far", 1.5),)
    assert checked.as_dict()["outside"] == {"far": 1.5}


def test_jev_cost_prices_sessions_as_recorded_and_checks_each_against_its_bill(tmp_path) -> None:
    import shutil

    from conftest import cli
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "a.traj.json")
    proc = cli(["cost", str(folder), "--eligible-tools", "bash", "--prefix-tokens", "auto", "--no-labels",
                "--price-as-recorded", "-q"], text=True)
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout)["checked_against_billed"]
    assert said["priced_as_recorded"] is True and said["sessions"]["conversations"] == 1
    assert set(said["sessions"]["outside"]) <= {"a"} and 0 <= said["sessions"]["within_10_percent"] <= 1
