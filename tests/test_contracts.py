"""Contracts: the ordered verdict and severity enums and the typed session config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from evcli.contracts import ROLES, Query, RunRecord, SessionConfig, Severity, Verdict
from evcli.core.canonical import canonical_json


def test_severity_is_ordered_by_meaning_not_by_spelling():
    assert Severity.NONE < Severity.LOW_CONFID < Severity.REJECT
    assert max([Severity.NONE, Severity.LOW_CONFID]) == Severity.LOW_CONFID  # "none" > "low_confid" as text
    assert max([Severity.REJECT, Severity.LOW_CONFID, Severity.NONE]) == "reject"
    assert Severity.REJECT > "low_confid" and Severity.NONE <= "none"


def test_verdict_is_ordered_best_first():
    assert Verdict.PASS < Verdict.LOW_CONFID < Verdict.REJECT  # "PASS" > "LOW_CONFID" as text
    assert max(Verdict("PASS"), Verdict("LOW_CONFID")) == Verdict.LOW_CONFID
    with pytest.raises(TypeError):
        _ = Verdict.PASS < "MAYBE"


def test_a_severity_caps_the_verdict():
    assert [severity.ceiling for severity in Severity] == [Verdict.PASS, Verdict.LOW_CONFID, Verdict.REJECT]


def test_enums_store_as_their_plain_values():
    assert json.dumps({"v": Verdict.REJECT, "s": Severity.NONE}) == '{"v": "REJECT", "s": "none"}'
    assert f"{Verdict.LOW_CONFID}" == "LOW_CONFID"


PIPELINE_CONFIG = {
    "models": {role: "offline" for role in ROLES},
    "env": {"env_dir": "/srv/snapshot"},
    "task_scope": "narrow",
    "language": "zh",
    "intent": {"services": ["payment-service"], "alertnames": [], "terms": ["Redis"], "window": "30m"},
    "environment": {
        "services": ["payment-service"],
        "aliases": {"payment-service": ["pay"]},
        "alerts": [{"alertname": "HighCPUUsage", "service": "payment-service", "state": "firing"}],
        "skills": [],
    },
    "max_steps": 8,
    "aiops_alert": {"alertname": "HighCPUUsage"},
    "replay_of": {"session_id": "20260101T000000-abcdef", "from": "verify"},
}


def test_a_pipeline_config_round_trips_byte_for_byte():
    config = SessionConfig.model_validate(PIPELINE_CONFIG)
    assert config.replay_of is not None and config.replay_of.from_stage == "verify"
    assert canonical_json(config.model_dump(mode="json")) == canonical_json(PIPELINE_CONFIG)


def test_what_was_asked_has_one_type_the_stored_intent_is_a_view_of_the_query():
    import evcli.contracts as contracts

    assert not hasattr(contracts, "IntentConfig")  # the Query is the one reading of the question
    scope = Query(services=["nginx"], phrases=["session expired"], tokens=["502"], terms=["timeout", "502"])
    config = SessionConfig(language="en", scope=scope, max_steps=8)
    dumped = config.model_dump(mode="json")
    assert list(dumped) == ["language", "intent", "scope", "max_steps"]  # where sessions have always had it
    assert dumped["intent"] == {
        "services": ["nginx"],
        "alertnames": [],
        "terms": ["session expired", "502", "timeout"],
        "window": None,
    }
    # what a session stored is kept as written, also when it differs from its scope's view
    stored = {"language": "en", "intent": {"services": ["a"], "alertnames": [], "terms": [], "window": "5m"}}
    assert SessionConfig.model_validate(stored | {"scope": dumped["scope"]}).intent["services"] == ["a"]
    with pytest.raises(ValueError, match="intent"):
        SessionConfig.model_validate({"intent": {"services": [], "mood": "curious"}})


def test_only_the_fields_a_writer_set_are_stored():
    assert SessionConfig().model_dump(mode="json") == {}
    assert RunRecord(session_id="s1").model_dump(mode="json")["config"] == {}
    assert SessionConfig(task_scope="narrow").model_dump(mode="json") == {"task_scope": "narrow"}


def test_the_first_sample_shape_is_upgraded():
    config = SessionConfig.model_validate({"model": "offline", "env": "demo"})
    assert config.model_dump(mode="json") == {"models": {role: "offline" for role in ROLES}, "env": {}}
    assert SessionConfig.model_validate({"model": "m", "env": "/srv/env"}).env == {"env_dir": "/srv/env"}


def test_an_environment_with_several_runbooks_directories_is_stored_and_read_back():
    # issue 12: `--runbooks` is repeatable; EnvironmentSpec.as_config stores several as a list
    from evcli.backends.spec import EnvironmentSpec

    spec = EnvironmentSpec(runbooks=(Path("/srv/a"), Path("/srv/b")), backends={"prometheus": {"url": "http://p:9090"}})
    config = SessionConfig.model_validate(json.loads(json.dumps({"env": spec.as_config()})))

    assert config.env["runbooks"] == ["/srv/a", "/srv/b"]
    assert EnvironmentSpec.from_config(config.model_dump(mode="json")["env"]) == spec


def test_an_unknown_config_key_is_refused():
    with pytest.raises(ValidationError, match="tasks_cope"):
        SessionConfig.model_validate({"tasks_cope": "narrow"})
