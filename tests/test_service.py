"""The tenant service config (SPEC §8): nothing built when off, unsafe keys refused, every rule named."""

from __future__ import annotations

import orjson
import pytest
from conftest import ScriptedJudge, reference_messages

from archive import FileArchive
from jev import Compactor, ConfigError, Mode
from jev.running import service

EXAMPLE = {"mode": "SHADOW", "version": "context-v1", "budgetMillis": 3000, "threshold": 0.8,
           "rejectionThreshold": 0.2, "eligibleTools": ["read_file", "search"], "preserveRecentMessages": 6,
           "maxStateTokens": 25000, "maxRequestTokens": 30000, "maxQuestions": 128, "truncateHeadChars": 300,
           "minimumReduction": 0.1}


def doc(**changes: object) -> str:
    body = {**EXAMPLE, **changes}
    return orjson.dumps({"jev": {"compaction": {k: v for k, v in body.items() if v is not ...}}}).decode()


@pytest.mark.parametrize("overrides", [None, "", "  ", "{}", '{"jev": {}}', doc(mode="OFF"), doc(mode=...)])
def test_off_builds_nothing_and_needs_no_credentials(overrides: str | None, monkeypatch) -> None:
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    monkeypatch.delenv("JEV_API_KEY", raising=False)
    assert service.parse(overrides) is None
    assert service.load(overrides) is None


def test_the_documented_example_parses_and_is_part_of_build_identity() -> None:
    a = service.parse(doc())
    assert a.mode is Mode.SHADOW and a.version == "context-v1" and a.budget_millis == 3000
    assert a.config.keep_threshold == 0.8 and a.config.discard_threshold == 0.2
    assert a.config.eligible_tools == {"read_file", "search"} and a.config.max_transcript_chars == 5_000_000
    assert a == service.parse(doc()) and hash(a) == hash(service.parse(doc()))
    assert a != service.parse(doc(threshold=0.85))


@pytest.mark.parametrize("changes, message", [
    ({"apiKey": "sk"}, "Unknown compaction setting 'apiKey'"),
    ({"archivePath": "/tmp"}, "Unknown compaction setting 'archivePath'"),
    ({"endpoint": "http://x"}, "Unknown compaction setting 'endpoint'"),
    ({"threshold": ...}, "explicit compaction thresholds required: threshold"),
    ({"rejectionThreshold": "0.2"}, "explicit compaction thresholds required: rejectionThreshold"),
    ({"threshold": 0.1}, "keep_threshold must be > discard_threshold"),
    ({"mode": "shadow"}, "mode must be one of OFF, SHADOW, ENFORCE"),
    ({"mode": []}, "mode must be one of OFF, SHADOW, ENFORCE \\(got \\[\\]\\)"),
    ({"mode": {"x": 1}}, "mode must be one of OFF, SHADOW, ENFORCE"),
    ({"budgetMillis": 0}, "service limits: budgetMillis must be an integer in 1..30000"),
    ({"budgetMillis": 30001}, "compaction budget exceeds service limits"),
    ({"budgetMillis": 1.5}, "budgetMillis must be an integer"),
    ({"maxStateTokens": 25001}, "compaction budget exceeds service limits: maxStateTokens"),
    ({"maxRequestTokens": 30001}, "compaction budget exceeds service limits: maxRequestTokens"),
    ({"preserveRecentMessages": 6.0}, "preserveRecentMessages must be an integer"),
    ({"maxQuestions": True}, "maxQuestions must be an integer"),
    ({"eligibleTools": ...}, "eligibleTools must be a list of non-blank tool names"),
    ({"eligibleTools": ["read", " "]}, "eligibleTools must be a list"),
    ({"eligibleTools": "read"}, "eligibleTools must be a list"),
    ({"version": " "}, "version must be a non-blank string"),
    ({"minimumReduction": 1}, r"minimumReduction must be a number in \[0, 1\)"),
])
def test_rules_name_the_setting(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        service.parse(doc(**changes))


@pytest.mark.parametrize("text, message", [("{", "Invalid compaction configuration"), ("[]", "must be a JSON object"),
                                           ('{"jev": {"compaction": 1}}', "compaction must be an object")])
def test_malformed_overrides(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        service.parse(text)


def test_a_parsed_object_is_refused_with_what_to_pass_instead() -> None:
    with pytest.raises(ConfigError, match=r"overrides must be JSON text, str or bytes \(got dict; pass orjson.dumps"):
        service.parse({"jev": {"compaction": {"mode": "SHADOW"}}})  # type: ignore[arg-type]


def test_enforce_needs_a_host_archive(tmp_path) -> None:
    with pytest.raises(ConfigError, match="ENFORCE requires durable archive"):
        service.load(doc(mode="ENFORCE"), judge=ScriptedJudge())
    compactor = service.load(doc(mode="ENFORCE"), judge=ScriptedJudge(), archive=FileArchive(tmp_path))
    assert isinstance(compactor, Compactor) and compactor.options.mode is Mode.ENFORCE


def test_shadow_records_without_content_and_changes_nothing() -> None:
    records: list = []
    judge = ScriptedJudge(lambda q: 0.01 if q.endswith("t1") else 0.99)
    compactor = service.load(doc(eligibleTools=["read"], preserveRecentMessages=1, minimumReduction=0.01),
                             judge=judge, observer=lambda ctx, r: records.append(r))
    assert compactor.compact_sync(reference_messages(), horizon=50) is None
    assert records[0].purpose == "context_compaction" and records[0].status == "DECIDED"
    assert "evidence-" not in str(records[0].to_dict())


def test_enabled_without_judge_builds_system_one_from_env(monkeypatch) -> None:
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    monkeypatch.delenv("JEV_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="TYPESAFE_API_KEY"):
        service.load(doc())
    monkeypatch.setenv("JEV_API_KEY", "k")
    assert service.load(doc()).judge.endpoint == "https://api.typesafe.ai/v1/systemone"
