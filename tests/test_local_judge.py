"""The embedded local judge: JSON weights, decision-time features only, the AUROC bar on held-out sessions."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import DEEPSEEK, SWEBENCH, call, msg, needs_data, other_tools_history, result, text

from jev import ConfigError, JudgeError, ThinkingBlock, formats
from jev.judges import JudgeRequest, LocalJudge
from jev.judges.features import CATEGORIES, FEATURE_NAMES, category, transcript_features
from jev.judges.local import MODEL, load_model
from jev.judges.questions import questions_for
from jev.reading.analysis import analyze

ROOT = Path(__file__).resolve().parents[1]
DATA = SWEBENCH
needs_sets = needs_data(SWEBENCH, DEEPSEEK)


@pytest.fixture(scope="session")
def rows():
    """The rows the shipped judge is trained on: both dev sets, read in this process (beside the other test
    worker, a pool of readers would only add their start-ups: ~5 CPU-seconds)."""
    from calibration.dataset import TrainingRows, build_rows
    from calibration.train_local import READ_DEPTH
    return TrainingRows.concat([build_rows(path, scan_chars=READ_DEPTH, workers=1) for path in (DATA, DEEPSEEK)])


@pytest.fixture(scope="session")
def sessions():
    from calibration.dataset import trajectories
    return list(trajectories(DATA))


def test_weights_are_json_and_match_the_features() -> None:
    path = ROOT / "jev" / "judges" / "local_model.json"
    model = json.loads(path.read_text())  # plain JSON: no pickle anywhere
    assert set(model["features"]) <= set(FEATURE_NAMES) and set(model["heads"]) == {"keep_call", "keep_result"}
    assert load_model() == model


def test_a_model_for_other_features_is_refused(tmp_path: Path) -> None:
    model = json.loads((ROOT / "jev" / "judges" / "local_model.json").read_text())
    model["features"][0] = "a_feature_this_version_lacks"
    bad = tmp_path / "model.json"
    bad.write_text(json.dumps(model))
    with pytest.raises(ConfigError, match="features must name distinct features this version computes"):
        LocalJudge(str(bad))


def test_the_judge_holds_no_history_after_a_plan() -> None:
    import gc
    import weakref
    judge = LocalJudge()
    t = analyze([msg("0", "user", text("Fix a.py")), msg("c", "assistant", call("x")), msg("r", "tool", result("x"))])
    first = _ask(judge, t.messages)
    assert _ask(judge, t.messages) == first and judge.scores(t) is judge.scores(t)  # one scoring per transcript
    held = weakref.ref(t)
    del t
    gc.collect()
    assert held() is None


@pytest.mark.parametrize(("change", "error"), [
    (lambda m: m["heads"].pop("keep_result"), "heads.keep_result must be an object"),
    (lambda m: m["heads"]["keep_call"]["linear"]["coef"].pop(), r"heads.keep_call.linear.coef must be a list of \d+ "),
    (lambda m: m["heads"]["keep_call"]["linear"]["mean"].__setitem__(0, "1"), r"heads.keep_call.linear.mean must be"),
    (lambda m: m["heads"]["keep_call"]["linear"]["scale"].__setitem__(0, 0), "linear.scale must not contain 0"),
    (lambda m: m["heads"]["keep_call"]["linear"].pop("intercept"), "keep_call.linear.intercept must be a number"),
    (lambda m: m["heads"]["keep_call"]["linear"]["isotonic"]["y"].pop(), "keep_call.linear.isotonic must hold"),
    (lambda m: m["heads"]["keep_call"]["linear"]["isotonic"]["x"].reverse(), "keep_call.linear.isotonic must"),
    (lambda m: m["heads"]["keep_call"].update(blend=1.5), r"heads.keep_call.blend must be a number in \[0, 1\]"),
    (lambda m: m["heads"]["keep_result"]["mixture"].update(parts=[]),
     "heads.keep_result.mixture.parts must be a non-empty list"),
    (lambda m: m["heads"]["keep_result"]["mixture"]["parts"][1].update(weight=0),
     r"heads.keep_result.mixture.parts\[1\].weight must be a number > 0"),
    (lambda m: m["heads"]["keep_result"]["mixture"]["parts"][0]["trees"].pop("baseline"),
     r"heads.keep_result.mixture.parts\[0\].trees must be an object with a numeric baseline"),
    (lambda m: m["heads"]["keep_result"]["mixture"]["link"].update(slope="1"),
     "heads.keep_result.mixture.link must hold a numeric slope and intercept"),
    (lambda m: m.update(size_exponent=5), r"size_exponent must be a number in \[0, 4\]"),
    (lambda m: m.pop("size_exponent"), r"size_exponent must be a number in \[0, 4\]"),
    (lambda m: m["rarity"]["common_words"].reverse(), r"rarity.common_words must be distinct integers in \[0, 2\*\*40\)"),
    (lambda m: m["rarity"]["common_words"].append(2 ** 40), "rarity.common_words must be distinct integers"),
    (lambda m: m["heads"]["keep_call"]["trees"].pop("baseline"), "heads.keep_call.trees must be an object"),
    (lambda m: m["heads"]["keep_call"]["trees"]["value"].pop(), "must hold feature, threshold and value, one row"),
    (lambda m: m["heads"]["keep_call"]["trees"]["feature"][3].__setitem__(0, 999),
     r"heads.keep_call.trees.feature\[3\] must be 7 feature indices below \d+"),
    (lambda m: m["heads"]["keep_call"]["trees"]["threshold"][0].pop(), r"trees.threshold\[0\] and value\[0\] must be"),
    (lambda m: m["features"].append("no_such_feature"), "features must name distinct features"),
    (lambda m: m["features"].append(["a", "list"]), "features must name distinct features"),  # not a TypeError
    (lambda m: m.update(version=4), "unknown format or version"),
    (lambda m: m.update(scan_chars=0), "scan_chars must be an integer >= 1"),
    (lambda m: m.update(scan_chars="600"), "scan_chars must be an integer >= 1"),
    (lambda m: m.update(scan_chars=True), "scan_chars must be an integer >= 1"),
    (lambda m: m.update(scan_chars=1.5), "scan_chars must be an integer >= 1"),
])
def test_a_broken_model_is_refused_naming_the_field(tmp_path: Path, change, error: str) -> None:
    model = json.loads((ROOT / "jev" / "judges" / "local_model.json").read_text())
    change(model)
    bad = tmp_path / "model.json"
    bad.write_text(json.dumps(model))
    with pytest.raises(ConfigError, match=error):
        LocalJudge(str(bad))


def test_an_unreadable_or_non_json_model_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        LocalJudge(str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not JSON"):
        LocalJudge(str(tmp_path / "bad.json"))


def _ask(judge: LocalJudge, messages) -> dict[str, float]:
    t = analyze(messages)
    questions = tuple(q for p in t.pairs for q in questions_for(p))
    return dict(asyncio.run(judge.ask(JudgeRequest({}, questions, t))).probabilities)


def test_a_question_about_no_pair_of_the_transcript_is_refused_by_name() -> None:
    from jev.judges.questions import Question
    t = analyze(other_tools_history())
    questions = (*questions_for(t.pairs[0]), Question("result_t999", "?"))
    with pytest.raises(JudgeError, match="cannot answer question 'result_t999'"):
        asyncio.run(LocalJudge().ask(JudgeRequest({}, questions, t)))


def test_a_model_is_scored_reading_the_depth_it_names(tmp_path: Path) -> None:
    """`scan_chars` in the file sets how much of each result end the features read: an identifier 300
    characters into a long result is seen at the shipped 600, not at 120."""
    from jev.judges.features import feature_matrix
    from jev.judges.local import score
    filler = "x " * 150
    messages = [msg("0", "user", text("Fix the bug.")),
                msg("1", "assistant", call("a", "bash", {"command": "cat big.log"})),
                msg("2", "tool", result("a", filler + "culprit_function_v2 " + filler * 4, name="bash")),
                msg("3", "assistant", call("b", "bash", {"command": "ls"})),
                msg("4", "tool", result("b", "a.py", name="bash"))]
    t = analyze(messages)
    held = FEATURE_NAMES.index("held_words")
    assert feature_matrix(t)[1][0, held] == 0 and feature_matrix(t, 600)[1][0, held] > 0
    model = json.loads((ROOT / "jev" / "judges" / "local_model.json").read_text())
    assert model["scan_chars"] == 800 and LocalJudge().scan_chars == 800
    model["scan_chars"] = 120
    (tmp_path / "shallow.json").write_text(json.dumps(model))
    shallow = LocalJudge(str(tmp_path / "shallow.json"))
    common = np.asarray(model["rarity"]["common_words"], dtype=np.uint64)
    X = feature_matrix(t, 120, common=common)[1][:, [FEATURE_NAMES.index(f) for f in model["features"]]]
    expected = score(model["heads"]["keep_result"], X, model["version"])
    assert shallow.scan_chars == 120
    assert [shallow.scores(t)[k][1] for k in ("t1", "t2")] == [round(p, 4) for p in expected.tolist()]
    assert shallow.scores(t) != LocalJudge().scores(analyze(messages))


def test_scores_are_probabilities_and_deterministic() -> None:
    messages = [msg("0", "user", text("Fix src/app_main.py")),
                msg("1", "assistant", call("a", "bash", {"command": "cat src/app_main.py"})),
                msg("2", "tool", result("a", "def handler_v1(): pass", name="bash")),
                msg("3", "assistant", call("b", "bash", {"command": "cat src/app_main.py"})),
                msg("4", "tool", result("b", "def handler_v2(): pass", name="bash")),
                msg("5", "user", text("Now rename handler_v2 everywhere."))]
    first = _ask(LocalJudge(), messages)
    assert set(first) == {"call_t1", "result_t1", "call_t2", "result_t2"}
    assert all(0 <= p <= 1 for p in first.values())
    assert _ask(LocalJudge(), messages) == first
    assert first["result_t1"] < first["result_t2"]  # t1 was superseded by the identical later read


def _named(features: list[float]) -> dict[str, float]:
    return dict(zip(FEATURE_NAMES, features, strict=True))


def test_features_mean_what_their_names_say() -> None:
    """Each feature on a small history where its answer is known: the vectorised words, groups and
    categories against facts a reader can check by eye."""
    bash = lambda cid, command: call(cid, "bash", {"command": command})  # noqa: E731
    out = lambda cid, output, state="success": result(cid, output, name="bash", state=state)  # noqa: E731
    messages = [
        msg("0", "user", text("Fix the failing check in src/app_main.py")),
        msg("1", "assistant", bash("a", "cat src/app_main.py")),
        msg("2", "tool", out("a", "<returncode>0</returncode>\ndef handler_v1(): return TOKEN_ALPHA_42")),
        msg("3", "assistant", bash("b", "python run_checks.py --fast")),
        msg("4", "tool", out("b", "<returncode>1</returncode>\nTraceback (most recent call last):\n"
                                  "ValueError: broken in lib/other_module.py", state="error")),
        msg("5", "assistant", bash("c", "grep -n handler_v1 lib/other_module.py")),
        msg("6", "tool", out("c", "lib/other_module.py:3: handler_v1()\n" + "x" * 900)),
        msg("7", "assistant", bash("d", "sed -i s/handler_v1/handler_v2/ lib/other_module.py")),
        msg("8", "tool", out("d", "")),
        msg("9", "assistant", bash("e", "cat src/app_main.py")),
        msg("10", "tool", out("e", "def handler_v2(): return TOKEN_BETA_77")),
    ]
    f = {key: _named(v) for key, v in transcript_features(analyze(messages)).items()}
    t1, t2, t3, t4, t5 = (f[k] for k in ("t1", "t2", "t3", "t4", "t5"))
    assert t1["superseded"] == 1 and t5["superseded"] == 0  # t5 runs t1's command again
    assert t1["path_reread"] == 1 and t3["path_edited"] == 1 and t1["path_edited"] == 0
    assert t1["category_read"] == 1 and t2["category_run"] == 1 and t3["category_search"] == 1
    assert t4["category_edit"] == 1 and t1["edits_since"] == pytest.approx(np.log1p(1))
    assert t4["edits_since"] == 0 and t5["history_edits"] == pytest.approx(np.log1p(1))
    assert t2["returncode_nonzero"] == 1 and t1["returncode_nonzero"] == 0
    assert t2["error_marker"] == 1 and t1["error_marker"] == 0 and t2["state_error"] == 1
    # t1 showed handler_v1 and TOKEN_ALPHA_42 first; the agent wrote handler_v1 in later commands
    assert t1["result_referenced"] == 1 and t1["result_refs"] == pytest.approx(np.log1p(1))
    # novel: returncode, /returncode (the closing tag), handler_v1, TOKEN_ALPHA_42; later results show all
    # but the last again, so one is live, and nobody wrote it: one unsaid
    assert t1["novel_words"] == pytest.approx(np.log1p(4))
    assert t1["live_words"] == pytest.approx(np.log1p(1))
    assert t1["live_unsaid_words"] == pytest.approx(np.log1p(1)) and t1["live_unsaid_share"] == 0.25
    assert t1["input_referenced"] == 1  # src/app_main.py written again after t1's result
    assert t2["novel_words"] > 0 and t2["result_referenced"] == 1  # lib/other_module.py, edited by t4
    assert t5["result_referenced"] == 0 and t5["age_pairs"] == 0 and t5["position"] == 1
    assert t3["result_chars"] == pytest.approx(np.log1p(len(messages[6].content[0].text)))
    assert t3["result_lines"] == pytest.approx(np.log1p(1))
    # the newest three pairs (t3, t4, t5) are the recent window: of t1's four words only handler_v1 shows
    # there (t3's call and result); t1's path is read again by t5's call; t5's own words count nowhere else
    assert t1["recent_overlap"] == pytest.approx(np.log1p(1)) and t1["recent_share"] == 0.25
    assert t1["call_recent_overlap"] == pytest.approx(np.log1p(1)) and t2["call_recent_overlap"] == 0
    assert t5["recent_overlap"] == 0
    # ranks place each pair among the history's: t3's result is the largest, t4's the smallest
    assert t3["rank_result_chars"] == 1 and t4["rank_result_chars"] == 0
    # held: the words a result is the latest to show. t1 still holds TOKEN_ALPHA_42 (t3 shows handler_v1
    # again); t2 holds both returncode tags, Traceback and ValueError; t3 handler_v1, the path and its two
    # runs of x (one per end read); nobody wrote the tags, the x runs or the tokens
    held = {k: (v["held_words"], v["held_unsaid"]) for k, v in f.items()}
    assert held == {k: (pytest.approx(np.log1p(a)), pytest.approx(np.log1p(b)))
                    for k, (a, b) in {"t1": (1, 1), "t2": (4, 4), "t3": (4, 2), "t4": (0, 0), "t5": (2, 2)}.items()}
    assert t2["held_unsaid_paths"] == pytest.approx(np.log1p(1)) and t1["held_unsaid_paths"] == 0  # /returncode
    assert t2["held_unsaid_repeated"] == pytest.approx(np.log1p(2)) and t5["held_unsaid_repeated"] == 0
    t1_chars = len(messages[2].content[0].text)
    assert t1["held_unsaid_per_char"] == pytest.approx(np.log1p(1000 / t1_chars))
    # credits: t3's call is the first to write handler_v1 (shown by t1) and lib/other_module.py (shown by t2);
    # src/app_main.py is the task's, so no read of it earns one
    assert t1["credits"] == t2["credits"] == pytest.approx(np.log1p(1)) and t3["credits"] == t5["credits"] == 0
    assert t1["credit_age"] == pytest.approx(np.log1p(len(messages) - 1 - 5))
    assert t3["credit_age"] > t1["credit_age"]  # never credited reads as older than any credit
    # readers: t5's call is now the latest to name src/app_main.py (t1's is not); t3's grep the latest
    # non-edit to name lib/other_module.py, which t4 edits
    assert t1["reader_paths"] == 0 and t5["reader_paths"] == pytest.approx(np.log1p(1))
    assert t3["reader_paths_edited"] == pytest.approx(np.log1p(1)) and t2["reader_paths_edited"] == 0
    assert t1["latest_run"] == 0 and t5["latest_run"] == pytest.approx(np.log1p(2))


def test_the_agents_own_words_and_line_numbers_mean_what_their_names_say() -> None:
    """The agent's text and thinking are read apart from calls: a result's words it wrote since, those its
    newest words name, and the unsaid counts with its words counted as said; line numbers a result showed
    and the later calls whose line ranges cover them."""
    bash = lambda cid, command: call(cid, "bash", {"command": command})  # noqa: E731
    out = lambda cid, output: result(cid, output, name="bash")  # noqa: E731
    messages = [
        msg("0", "user", text("Fix the parser")),
        msg("1", "assistant", bash("a", "grep -n parse_row lib/rows.py")),
        msg("2", "tool", out("a", "41:def parse_row(line):\n57:    return split_cells(line)")),
        msg("3", "assistant", text("parse_row calls split_cells; I'll read lines 40 to 60."),
            bash("b", "sed -n '40,60p' lib/rows.py")),
        msg("4", "tool", out("b", "    40\tdef parse_row(line):\n    41\t    cells = other_fn_9(line)")),
        msg("5", "assistant", ThinkingBlock("other_fn_9 must be the culprit"), bash("c", "ls")),
        msg("6", "tool", out("c", "lib README.md")),
        msg("7", "assistant", bash("d", "ls lib")),
        msg("8", "tool", out("d", "rows.py")),
        msg("9", "assistant", bash("e", "ls -a")),
        msg("10", "tool", out("e", "lib")),
    ]
    f = {key: _named(v) for key, v in transcript_features(analyze(messages), 600).items()}
    t1, t2 = f["t1"], f["t2"]
    # of t1's words only split_cells was first shown by it (its call wrote parse_row and the path); the agent's
    # text wrote it after
    assert t1["agent_refs"] == pytest.approx(np.log1p(1))
    assert t1["agent_ref_age"] == pytest.approx(np.log1p(len(messages) - 1 - 3))
    # t2 introduced other_fn_9; the agent's thinking (message 5) wrote it: held and introduced words it wrote
    assert t2["intro_agent"] == pytest.approx(np.log1p(1)) and t2["held_agent"] >= np.log1p(1)
    assert t2["intro_unique_unsaid"] == pytest.approx(np.log1p(1))  # no call wrote it
    assert t2["intro_unwritten"] == 0  # but the agent did
    # the newest three pairs (t3, t4, t5) and the agent's words among them: the thinking names other_fn_9
    assert t2["agent_recent"] == pytest.approx(np.log1p(1)) and t1["agent_recent"] == 0
    # line numbers: t1 showed 41 and 57; t2's sed covers 40..60 (both), after t1's result
    assert t1["line_numbers"] == pytest.approx(np.log1p(2)) and t1["line_used"] == pytest.approx(np.log1p(2))
    assert t1["line_use_age"] == pytest.approx(np.log1p(len(messages) - 1 - 3))
    assert t2["line_numbers"] == pytest.approx(np.log1p(2)) and t2["line_used"] == 0  # nothing after covers them
    # reading neither leaves those columns 0 and every other column as it was
    from jev.judges.features import AGENT_FEATURES, LINE_NUMBER_FEATURES, feature_matrix
    t = analyze(messages)
    _keys, full = feature_matrix(t, 600)
    _keys, lean = feature_matrix(t, 600, agent=False, numbers=False)
    skipped = [FEATURE_NAMES.index(n) for n in AGENT_FEATURES | LINE_NUMBER_FEATURES]
    assert np.array_equal(np.delete(lean, skipped, axis=1), np.delete(full, skipped, axis=1))
    # read as if the agent wrote nothing and no line number showed: no uses, ages of "never" (older than any
    # message), and the unwritten counts those of the words no call wrote
    never = np.log1p(2 * len(messages) - 1)
    for name in ("agent_refs", "agent_recent", "held_agent", "intro_agent", "line_numbers", "line_used"):
        assert not lean[:, FEATURE_NAMES.index(name)].any()
    for name in ("agent_ref_age", "line_use_age"):
        assert (lean[:, FEATURE_NAMES.index(name)] == never).all()
    for unwritten, unsaid in (("live_unwritten", "live_unsaid_words"), ("intro_unwritten", "intro_unique_unsaid")):
        assert np.array_equal(lean[:, FEATURE_NAMES.index(unwritten)], lean[:, FEATURE_NAMES.index(unsaid)])


def test_line_numbers_shown_and_addressed_in_the_shapes_tools_print() -> None:
    from jev.judges.features import line_numbers, line_ranges
    from jev.judges.words import Buffer

    shown = Buffer.of(["<returncode>0</returncode>\n12:def f\n13-  x\npath/a.py:44:foo\n   55\tbar\n"
                       "   66\u2192x\n 1.5 x 2023", "  7:x"])
    segment, number = line_numbers(shown)
    assert segment.tolist() == [0, 0, 0, 0, 0, 1] and number.tolist() == [12, 13, 44, 55, 66, 7]
    addressed = Buffer.of(["sed -n '120,140p' a.py && sed -i '123s/x/y/' b.py; 1.2,3", "{\"file_path\":\"a\","
                           "\"limit\":30,\"offset\":100}", "sed 44d f; head -n 20 x"])
    segment, first, last = line_ranges(addressed)
    assert sorted(zip(segment.tolist(), first.tolist(), last.tolist(), strict=True)) == [
        (0, 120, 140), (0, 123, 123), (1, 100, 130), (2, 44, 44)]


def test_calls_of_any_tool_are_read_by_their_whole_input() -> None:
    """Nothing hinges on bash: a tool's category comes from its verb and name, two calls are the same
    command only when their inputs agree (two editor `view`s of two files are two reads; a shell command
    run again with another description is a re-run), and a file named by `file_path` is edited later."""
    f = {key: _named(v) for key, v in transcript_features(analyze(other_tools_history())).items()}
    categories = {key: next(c for c in CATEGORIES if v[f"category_{c}"]) for key, v in f.items()}
    assert categories == {"t1": "read", "t2": "read", "t3": "read", "t4": "test", "t5": "edit", "t6": "test",
                          "t7": "read", "t8": "other"}
    assert f["t2"]["superseded"] == 0 and f["t2"]["repeats"] == 0  # alpha.py was viewed once
    assert f["t3"]["superseded"] == 1 and f["t7"]["repeats"] == pytest.approx(np.log1p(1))  # beta.py twice
    assert f["t4"]["superseded"] == 1 and f["t6"]["repeats"] == pytest.approx(np.log1p(1))
    assert f["t1"]["path_edited"] == 1 and f["t2"]["path_edited"] == 0 and f["t3"]["path_reread"] == 1
    assert f["t8"]["history_edits"] == pytest.approx(np.log1p(1))  # the Edit; a to-do list's write is none
    # a shell tool is read by its command whatever else its input holds
    assert category("bash", {"command": "cat a.py", "cwd": "/repo"}) == "read"
    assert category("shell", {"command": ["bash", "-lc", "git status"], "workdir": "/repo"}) == "git"
    assert category("execute_bash", {"command": "grep -rn x .", "is_input": "false"}) == "search"
    assert category("str_replace_editor", {"file_path": "a.py", "old_string": "x", "new_string": "y"}) == "edit"


def test_a_word_the_task_gives_earns_no_credit() -> None:
    """Credits follow labels-v1: the agent's first writing of a word credits the result that held it, unless
    the task's text shows the word (the agent could have it from there)."""
    messages = [msg("0", "user", text("Fix TOKEN_X_1 in lib/a_mod.py")),
                msg("1", "assistant", call("a", "bash", {"command": "cat lib/a_mod.py"})),
                msg("2", "tool", result("a", "uses TOKEN_X_1 and helper_fn_2", name="bash")),
                msg("3", "assistant", call("b", "bash", {"command": "grep -rn helper_fn_2 TOKEN_X_1 ."})),
                msg("4", "tool", result("b", "nothing found", name="bash"))]
    t1 = _named(transcript_features(analyze(messages))["t1"])
    assert t1["credits"] == pytest.approx(np.log1p(1))  # helper_fn_2 only: TOKEN_X_1 is the task's
    assert t1["credit_age"] == pytest.approx(np.log1p(len(messages) - 1 - 3))


def test_a_history_that_opens_with_results_carried_over_is_judged() -> None:
    """A Claude Code session resumed in a new file opens with results whose calls are in the earlier file:
    the judge reads each as answering a stand-in call (category other, at message -1) and scores every
    pair; it used to fail the plan with a KeyError."""
    from jev import CompactionConfig, Compactor, ExecutionOptions, Mode
    messages = [msg("earlier", "user", result("old", "src/carried_over_file.py " * 40, name="bash")),
                msg("u", "user", text("fix the bug"))]
    for i in range(10):
        messages += [msg(f"c{i}", "assistant", call(f"k{i}", "bash", {"command": f"cat mod_{i}.py"})),
                     msg(f"r{i}", "tool", result(f"k{i}", f"def fn_{i}(): pass\n" * 60, name="bash"))]
    transcript = analyze(messages)
    assert transcript.pairs[0].call_message == -1
    features = {key: dict(zip(FEATURE_NAMES, row, strict=True))
                for key, row in transcript_features(transcript).items()}
    carried = features[transcript.pairs[0].key]
    assert carried["category_other"] == 1 and carried["superseded"] == 0
    assert features["t2"]["category_read"] == 1  # the history's own calls keep their numbers
    decision = Compactor(LocalJudge(), CompactionConfig(eligible_tools=frozenset({"bash"}), preserve_recent_messages=2,
                                                        minimum_reduction=0.0), ExecutionOptions(Mode.SHADOW)
                         ).plan_sync(messages)
    assert decision.status.value != "ERROR", decision.detail
    assert decision.plan is not None and decision.plan.views[0].reason == "PINNED"


def test_needs_the_in_process_transcript() -> None:
    with pytest.raises(JudgeError, match="needs the in-process transcript"):
        asyncio.run(LocalJudge().ask(JudgeRequest({}, ())))


@needs_sets
def test_features_use_nothing_after_the_decision_point(sessions) -> None:
    """Training rows are what the judge computes on the prefix it is given, and judging a longer history
    first never changes what it says about an earlier point (no state carries the future over)."""
    from calibration.dataset import session_rows
    for session, messages in sessions[:12]:
        full = analyze(messages)
        rows = session_rows(session, messages)
        points = sorted({r[5] for r in rows})
        for s in points:
            fresh = transcript_features(analyze(messages[: s + 1]))
            for row in (r for r in rows if r[5] == s):  # (features, ..., session, key, point, ...)
                assert row[0] == fresh[row[4]]
        s = points[0]
        judge = LocalJudge()
        before = judge.scores(analyze(messages[: s + 1]))
        judge.scores(full)
        assert judge.scores(analyze(messages[: s + 1])) == before


@pytest.mark.slow
@needs_sets
def test_mini_swe_agent_round_trip_on_every_dev_trajectory() -> None:
    from calibration.dataset import raw_trajectories
    for _session, data in raw_trajectories(DATA):
        doc = json.loads(data)
        assert formats.dump(formats.load(doc, "auto"), "mini-swe-agent") == doc


@needs_sets
@pytest.mark.slow  # a full training run with its grouped cross-validated choice, ~2 min
@pytest.mark.timeout(600)
def test_training_reproduces_the_shipped_weights(rows) -> None:
    """`python -m calibration.train_local` on both dev sets gives the shipped weights: the same choice
    (capacity, shares, size exponent) and the same numbers (the rows are built with the shipped
    common words, which training computes from these sessions)."""
    from threadpoolctl import threadpool_limits

    from calibration.train_local import READ_DEPTH, train
    shipped = load_model()
    # beside another test worker, scikit-learn's OpenMP threads would wait on each other for a core: one
    # thread then (a tree's histograms are summed feature by feature, so the weights are the same; the
    # linear fit pins BLAS to one thread itself)
    with threadpool_limits(1 if os.environ.get("PYTEST_XDIST_WORKER") else None, user_api="openmp"):
        model = train(rows, rarity=shipped["rarity"])
    assert model["features"] == shipped["features"] and model["scan_chars"] == shipped["scan_chars"] == READ_DEPTH
    assert model["size_exponent"] == shipped["size_exponent"]
    assert model["card"]["keep_result"]["chosen"] == shipped["card"]["keep_result"]["chosen"]
    assert model["card"]["keep_result"]["auroc"] >= 0.75 and model["card"]["keep_call"]["auroc"] >= 0.8
    call, theirs = model["heads"]["keep_call"], shipped["heads"]["keep_call"]
    for key in ("mean", "scale", "coef"):
        np.testing.assert_allclose(call["linear"][key], theirs["linear"][key], rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(call["linear"]["isotonic"]["y"], theirs["linear"]["isotonic"]["y"], atol=1e-6)
    mine, theirs = model["heads"]["keep_result"]["mixture"], shipped["heads"]["keep_result"]["mixture"]
    for k, v in mine["link"].items():
        assert v == pytest.approx(theirs["link"][k], rel=1e-6)
    for trees, shipped_trees in [(call["trees"], shipped["heads"]["keep_call"]["trees"])] + [
            (a["trees"], b["trees"]) for a, b in zip(mine["parts"], theirs["parts"], strict=True)]:
        assert trees["feature"] == shipped_trees["feature"]
        for key in ("threshold", "value"):
            np.testing.assert_allclose(trees[key], shipped_trees[key], rtol=1e-6, atol=1e-9)


def test_jev_local_4_stays_loadable_with_local_file(tmp_path: Path) -> None:
    """The weights this release replaced (`jev-local-4`, version 2, vendored as shipped) load through
    `local:FILE` and score with the columns they name; they name no size exponent, so budget mode ranks
    them at 1.0, as before."""
    from jev.cli.compact import judge_from
    path = Path(__file__).parent / "data" / "local_model-jev-local-4.json"
    assert json.loads(path.read_text())["version"] == 2
    judge = judge_from(f"local:{path}", None, None)
    assert isinstance(judge, LocalJudge) and judge.model == f"{MODEL}:local_model-jev-local-4.json"
    assert judge.size_exponent == 1.0
    messages = [msg("0", "user", text("Fix a.py")), msg("c", "assistant", call("x")), msg("r", "tool", result("x"))]
    scores = _ask(judge, messages)
    assert set(scores) == {"call_t1", "result_t1"} and all(0 <= p <= 1 for p in scores.values())


def test_the_0_3_0_weights_still_load_and_score(tmp_path: Path) -> None:
    """0.3.0's own shipped file (vendored as it was released: version 1, its 41 features) loads although
    this version computes more features, and scores with the columns it names."""
    path = Path(__file__).parent / "data" / "local_model-0.3.0.json"
    old = json.loads(path.read_text())
    assert old["version"] == 1 and len(old["features"]) < len(FEATURE_NAMES)
    messages = [msg("0", "user", text("Fix a.py")), msg("c", "assistant", call("x")), msg("r", "tool", result("x"))]
    scores = _ask(LocalJudge(str(path)), messages)
    assert set(scores) == {"call_t1", "result_t1"} and all(0 <= p <= 1 for p in scores.values())
    (tmp_path / "unknown.json").write_text(json.dumps(dict(old, features=[*old["features"][:-1], "no_such_feature"])))
    with pytest.raises(ConfigError, match="features must name distinct features this version computes"):
        LocalJudge(str(tmp_path / "unknown.json"))


def test_a_version_1_model_still_runs(tmp_path: Path) -> None:
    """Weights retrained with 0.3.0 (one linear head per question over every feature) still load and
    score: the linear part of the shipped call head (the result head is a mixture of trees now), written
    in the old layout over all features for both questions."""
    shipped = load_model()
    keep = [FEATURE_NAMES.index(f) for f in shipped["features"]]
    old = {"format": "jev-local-judge", "version": 1, "features": list(FEATURE_NAMES), "heads": {}}
    for head in ("keep_call", "keep_result"):
        linear = shipped["heads"]["keep_call"]["linear"]
        full = {"mean": [0.0] * len(FEATURE_NAMES), "scale": [1.0] * len(FEATURE_NAMES),
                "coef": [0.0] * len(FEATURE_NAMES), "intercept": linear["intercept"], "isotonic": linear["isotonic"]}
        for k, column in enumerate(keep):
            for key in ("mean", "scale", "coef"):
                full[key][column] = linear[key][k]
        old["heads"][head] = full
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(old))
    messages = [msg("0", "user", text("Fix a.py")), msg("c", "assistant", call("x")), msg("r", "tool", result("x"))]
    linear_only = json.loads(json.dumps(shipped))
    for head in ("keep_call", "keep_result"):  # the linear part alone, in the new layout
        linear_only["heads"][head] = dict(shipped["heads"]["keep_call"], blend=1.0)
    (tmp_path / "v2.json").write_text(json.dumps(linear_only))
    scores = _ask(LocalJudge(str(path)), messages)
    assert set(scores) == {"call_t1", "result_t1"}
    assert scores == pytest.approx(_ask(LocalJudge(str(tmp_path / "v2.json")), messages), abs=1e-4)


@pytest.mark.slow
@needs_sets
def test_example_rollout_runs(tmp_path) -> None:
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "examples/calibrate_thresholds.py", "--sessions", "60", "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    assert "1. SHADOW: 60 sessions" in out and "2. labelled" in out and "3. " in out
    assert (tmp_path / "report.md").exists()


@pytest.mark.slow
@needs_sets
def test_example_shadow_evaluation_runs(tmp_path) -> None:
    import subprocess
    import sys
    records = tmp_path / "r.jsonl"
    proc = subprocess.run([sys.executable, "examples/shadow_evaluation.py", "--sessions", "5", "--records",
                           str(records)], cwd=ROOT, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    lines = records.read_text().splitlines()
    assert lines and all(json.loads(line)["mode"] == "SHADOW" for line in lines)
    assert b"plans over 5 sessions" in proc.stdout


def test_result_lines_are_counted_only_for_weights_that_read_them() -> None:
    """Counting lines is the one pass over whole results: `lines=False` skips it (that column NaN, the
    others unchanged), the shipped weights do without it, and 0.3.0's, which read it, still get it."""
    from jev.judges.features import feature_matrix
    t = analyze(other_tools_history())
    col = FEATURE_NAMES.index("result_lines")
    keys, full = feature_matrix(t)
    lean_keys, lean = feature_matrix(t, lines=False)
    assert lean_keys == keys and np.isnan(lean[:, col]).all() and not np.isnan(full).any()
    assert np.array_equal(np.delete(lean, col, axis=1), np.delete(full, col, axis=1))
    assert "result_lines" not in load_model()["features"]
    old = LocalJudge(str(Path(__file__).parent / "data" / "local_model-0.3.0.json"))
    assert all(np.isfinite(p) for pair in old.scores(t).values() for p in pair)


def test_exported_trees_score_as_scikit_learn_does_on_and_between_thresholds() -> None:
    """The judge packs each tree's splits into one code and looks its leaf up; scikit-learn walks the tree.
    TrainingRows sitting exactly on a threshold go left in both."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from calibration.train_local import TREES, fit_trees
    from jev.judges.local import score_trees
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 6))
    X[:, 0] = rng.integers(0, 6, X.shape[0])
    y = X[:, 0] + X[:, 1] * X[:, 2] - np.abs(X[:, 3]) + rng.normal(size=X.shape[0]) > 1.5
    trees = fit_trees(X, y)
    probe = rng.normal(size=(2000, 6)) * 2
    for k in range(probe.shape[0]):  # every row: one feature set exactly on some split's threshold
        tree, split = rng.integers(len(trees["feature"])), rng.integers(7)
        if trees["threshold"][tree][split] < 1e300:  # not a split below a leaf
            probe[k, trees["feature"][tree][split]] = trees["threshold"][tree][split]
    expected = HistGradientBoostingClassifier(**TREES).fit(X, y).predict_proba(probe)[:, 1]
    np.testing.assert_allclose(score_trees(trees, probe), expected, rtol=0, atol=1e-9)


def test_words_hash_alike_wherever_they_sit_and_only_tracked_words_count() -> None:
    from jev.judges.words import Buffer, find_words
    segments = ["alpha_1 beta_22 plain", "zz beta_22 alpha_1 alpha_1", "gamma_333 abc longenough"]
    words = find_words(Buffer.of(segments))
    by_segment: dict[int, set[int]] = {}
    for h, seg in zip(words.hash.tolist(), words.segment.tolist(), strict=True):
        by_segment.setdefault(seg, set()).add(h)
    assert by_segment[0] == by_segment[1]  # the same two words, in other places and repeated
    assert len(by_segment[2]) == 2 and not by_segment[2] & by_segment[0]  # "plain", "zz", "abc" are not tracked
    assert list(words.hash) == sorted(words.hash.tolist())  # sorted, each word's first segment leading


def test_words_match_a_plain_reading_of_the_rule_on_random_texts() -> None:
    """`find_words` against the rule read plainly (a regex per segment over its UTF-8), on random texts of
    word bytes, separators, non-ASCII and short words that hold only `/` or `.` (a history of those once
    broke the run-based reading): the same words, segments, path flags and distinctive flags (a letter and
    a byte that is no letter)."""
    import random
    import re

    from jev.judges.words import Buffer, find_words
    word = re.compile(rb"[A-Za-z0-9_./\x80-\xff-]+")
    letter, other = re.compile(rb"[A-Za-z]"), re.compile(rb"[^A-Za-z]")

    def plain(segments: list[str]) -> list[tuple[tuple[int, bool, bool], ...]]:
        seen: dict[bytes, list[tuple[int, bool, bool]]] = {}
        for k, segment in enumerate(segments):
            for w in dict.fromkeys(m.group() for m in word.finditer(segment.encode())):
                if len(w) >= 8 or (len(w) >= 4 and not w.isalpha()):
                    seen.setdefault(w, []).append((k, b"/" in w or b"." in w,
                                                   bool(letter.search(w) and other.search(w))))
        return sorted(tuple(v) for v in seen.values())

    def found(segments: list[str]) -> list[tuple[tuple[int, bool, bool], ...]]:
        words = find_words(Buffer.of(segments))
        groups: dict[int, list[tuple[int, bool, bool]]] = {}
        for h, k, is_path, distinctive in zip(words.hash.tolist(), words.segment.tolist(), words.path.tolist(),
                                              words.distinctive.tolist(), strict=True):
            groups.setdefault(h, []).append((k, is_path, distinctive))
        return sorted(tuple(v) for v in groups.values())

    rng = random.Random(7)
    alphabet = list("abcXY019_./- \n:()") + ["é", "→", "."]
    cases = [[], [""], ["a/b", "ok ."], ["./..", "x/y/z"], ["c→ X→"]]  # the last two differ in their first byte only
    cases += [["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(rng.randint(0, 6))]
              for _ in range(1500)]
    for segments in cases:
        assert found(segments) == plain(segments), segments


def test_words_read_on_from_an_earlier_reading_are_the_words_of_one_reading() -> None:
    """A grown history's words are put in place among the last reading's sorted keys (`KeyedWords.then`):
    the same words as one reading of every segment — within the same key layout, and across the growth
    that needs another bit for the segment number (7 -> 9 segments), which sorts afresh."""
    import random

    from jev.judges.words import Buffer, KeyedWords, find_words, raw_words
    rng = random.Random(3)
    vocabulary = ["alpha_1", "beta/x.py", "gamma_333", "Delta9", "x", "longenough", "repeat_me"]
    segments = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 12))) for _ in range(20)]
    for first, end in ((2, 3), (5, 7), (7, 9), (3, 20), (0, 4)):
        earlier = KeyedWords.of(raw_words(Buffer.of(segments[:first])), first)
        grown = earlier.then(raw_words(Buffer.of(segments[first:end])), end)
        assert np.array_equal(grown.keys, KeyedWords.of(grown.raw, end).keys), (first, end)
        whole, got = find_words(Buffer.of(segments[:end])), grown.words()
        for field in ("hash", "segment", "path", "distinctive"):
            assert np.array_equal(getattr(got, field), getattr(whole, field)), (first, end, field)


def test_portable_hashes_name_a_word_alike_in_any_buffer() -> None:
    """A shipped table of words (the common ones) is looked up by `portable` hashes: the same word reads
    the same wherever it sits and however many segments its history has, and other words read apart."""
    from jev.judges.words import Buffer, find_words, portable

    def table(segments: list[str]) -> dict[int, int]:
        words = find_words(Buffer.of(segments))
        return dict(zip(portable(words).tolist(), words.segment.tolist(), strict=True))

    small = table(["see django/db/models.py"])
    large = table([f"filler_{k}" for k in range(3000)] + ["x", "django/db/models.py here", "setup.cfg"])
    assert len(small) == 1 and set(small) < set(large)
    assert len(large) == 3002  # every filler word, the path and setup.cfg: no two collide


def test_a_word_hashes_alike_across_the_hashing_rows_and_in_a_partial_last_row() -> None:
    """Bytes are hashed in rows of 2**16: a word that straddles a row's end, sits in the partial last row,
    or in a buffer shorter than one row reads as the same hash."""
    from jev.judges.words import Buffer, find_words, portable
    alone = portable(find_words(Buffer.of(["alpha_12345"]))).tolist()
    for row in (1, 2):
        for offset in range(-14, 3, 3):  # the word ends before, across and after the row's end
            padding = " " * (row * 2 ** 16 + offset)
            words = find_words(Buffer.of([padding, "alpha_12345", "tail"]))
            assert portable(words).tolist() == alone and words.segment.tolist() == [1]


def test_training_refuses_a_depth_below_one(tmp_path: Path, capsys) -> None:
    from calibration.train_local import main
    with pytest.raises(SystemExit) as exit_:
        main(["--out", str(tmp_path / "m.json"), "--scan-chars", "0"])
    assert exit_.value.code == 2 and "--scan-chars must be an integer >= 1 (got 0)" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()
