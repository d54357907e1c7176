from __future__ import annotations

import pytest

from evcli.aiops import alert_question, diagnose_payload, parse_alert_payload, rule_evaluation
from evcli.core.errors import BadInput
from evcli.gatekeeper.rules import load_rules
from evcli.pipeline import AskResult, Pipeline
from evcli.store.db import TraceStore
from tests.conftest import REPO

MEMORY = {"alertname": "HighMemoryUsage", "service": "order-service", "severity": "critical"}
SUMMARY = {"summary": "Memory usage of order-service is 91%"}
WEBHOOK = {
    "version": "4",
    "status": "firing",
    "receiver": "evcli",
    "groupLabels": {},
    "commonLabels": {},
    "commonAnnotations": {},
    "externalURL": "",
    "alerts": [
        {
            "status": "firing",
            "labels": MEMORY,
            "annotations": SUMMARY,
            "startsAt": "2026-07-08T22:53:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "",
            "fingerprint": "a1",
        },
        {
            "status": "resolved",
            "labels": {"alertname": "HighCPUUsage", "service": "payment-service"},
            "annotations": {},
            "startsAt": "2026-07-08T20:00:00Z",
            "endsAt": "2026-07-08T20:30:00Z",
            "generatorURL": "",
            "fingerprint": "b2",
        },
    ],
}
AM_LIST = [
    {"labels": MEMORY, "annotations": SUMMARY, "startsAt": "2026-07-08T22:53:00Z", "status": {"state": "active"}},
    {"labels": {"alertname": "Noisy", "job": "batch"}, "annotations": {}, "status": {"state": "unprocessed"}},
]
PROM = {
    "status": "success",
    "data": {
        "alerts": [
            {
                "labels": MEMORY,
                "annotations": SUMMARY,
                "state": "firing",
                "activeAt": "2026-07-08T22:53:00Z",
                "value": "91",
            }
        ]
    },
}


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    return Pipeline(
        store=TraceStore(tmp_path_factory.mktemp("aiops") / "evcli.db"), rules=load_rules(REPO / "rules.toml")
    )


@pytest.mark.parametrize(
    ("payload", "states"),
    [(WEBHOOK, ["firing", "resolved"]), (AM_LIST, ["firing", "pending"]), (PROM, ["firing"])],
    ids=["webhook", "alertmanager-v2", "prometheus"],
)
def test_every_payload_shape_is_recognised(payload, states):
    alerts = parse_alert_payload(payload)
    assert [a.state for a in alerts] == states
    assert (alerts[0].alertname, alerts[0].service, alerts[0].annotations) == (
        "HighMemoryUsage",
        "order-service",
        SUMMARY,
    )


def test_job_label_stands_in_for_a_missing_service():
    assert parse_alert_payload(AM_LIST)[1].service == "batch"


@pytest.mark.parametrize("payload", [{"x": 1}, [1, 2], "text", {"version": "4", "alerts": [{"labels": {}}]}])
def test_anything_else_names_the_expected_shapes(payload):
    with pytest.raises(BadInput, match="Alertmanager webhook payload .* Prometheus /api/v1/alerts"):
        parse_alert_payload(payload, "x.json")


def test_the_question_is_seeded_with_the_alert():
    alert = parse_alert_payload(PROM)[0]
    assert (
        alert_question(alert)
        == "Diagnose the alert HighMemoryUsage on order-service: Memory usage of order-service is 91%"
    )


def test_each_firing_alert_gets_a_cited_report_and_a_stored_rule_evaluation(pipeline):
    (report,) = diagnose_payload(pipeline, WEBHOOK)  # the resolved alert is not diagnosed
    assert report["alert"]["alertname"] == "HighMemoryUsage"
    assert report["verdict"] == "PASS" and report["fallback"] is None
    cited = [e["text"] for c in report["claims"] for e in c["evidence"]]
    assert any("HighMemoryUsage" in text and "current=91%" in text for text in cited)
    evaluation = report["aiops_rule_evaluation"]
    assert evaluation["passed"] and evaluation["knowledge_consulted"] and evaluation["no_other_alert_promoted"]
    assert "lookup_knowledge" in evaluation["tools_called"]
    assert set(evaluation["other_active_alerts"]) >= {"HighCPUUsage", "SlowResponse", "DiskSpaceLow"}

    session = pipeline.store.load(report["session_id"])
    assert session.run.mode == "aiops"
    assert session.run.config.aiops_alert["alertname"] == "HighMemoryUsage"
    assert session.run.self_evaluation["aiops_rule_evaluation"] == evaluation
    assert "verifier_evaluation" in session.run.self_evaluation


def test_the_rule_evaluation_catches_a_report_about_another_alert(pipeline):
    (report,) = diagnose_payload(pipeline, PROM)
    session = pipeline.store.load(report["session_id"])
    alert = parse_alert_payload(PROM)[0]
    result = AskResult.model_validate(report)  # the report is the AskResult's JSON plus the alert and evaluation

    def answered(**answer):
        return result.model_copy(update={"answer": result.answer.model_copy(update=answer)})

    drifted = answered(answer_summary="payment-service HighCPUUsage is the main problem.")
    active = session.run.config.environment.alerts
    evaluation = rule_evaluation(alert, drifted, session, active)
    assert evaluation["promoted_alerts"] == ["HighCPUUsage"] and not evaluation["passed"]
    empty = answered(user_facing_answer=" ", answer_summary="")
    empty_evaluation = rule_evaluation(alert, empty, session, active)
    assert not empty_evaluation["report_exists"] and not empty_evaluation["stays_on_input_alert"]
