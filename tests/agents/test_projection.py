from __future__ import annotations

import copy

from evcli.agents.projection import allowed_claims, verified_claims
from evcli.contracts import GateResult
from evcli.gatekeeper.rules import load_rules
from evcli.gatekeeper.service import gate_document
from evcli.store.documents import read_document
from tests.cli._util import rules_with
from tests.conftest import sample


def _project(name, rules, mutate=None):
    document = read_document(sample(name))
    output = copy.deepcopy(document.latest_stage("execute").output)
    if mutate:
        mutate(output)
        document.latest_stage("execute").output = output
    result = gate_document(document, rules).result
    return verified_claims(output, result), result


def test_only_bindings_that_passed_reach_the_verifier(rules):
    def break_claim_two(output):
        output["claims"][1]["evidence_bindings"][0]["evidence_excerpt"] = "max=9.8GB"
        output["hypotheses"] = ["something the verifier must not see"]

    claims, result = _project("broad-order-service", rules, break_claim_two)
    assert result.severity == "reject"
    assert [c.claim_id for c in claims] == ["claim-1", "claim-3", "claim-4", "claim-5", "claim-6"]
    assert "something the verifier must not see" not in str(claims)
    first = claims[0].verified_evidence[0].model_dump()
    assert set(first) == {"source_invocation_id", "tool_name", "raw_path", "matched_text", "evidence_excerpt", "facts"}
    assert first["matched_text"].startswith("HighMemoryUsage, service=order-service")


def test_a_claim_with_a_fact_its_field_disagrees_with_is_not_projected_whatever_the_rule_severity(rules, tmp_path):
    def duration_in_hours(output):
        output["claims"][0]["claim_text"] = output["claims"][0]["claim_text"].replace("25 minutes", "25 hours")

    warned = load_rules(rules_with(tmp_path, "claim.facts_match", severity="warning"))
    claims, result = _project("narrow-payment-highcpu", warned, duration_in_hours)
    assert result.severity == "none" and result.checked_bindings[0].status == "pass"
    assert claims == []
    rejected, result = _project("narrow-payment-highcpu", rules, duration_in_hours)
    assert result.severity == "reject" and rejected == []


def test_the_verified_evidence_carries_the_facts_that_matched(rules):
    [claim], result = _project("narrow-payment-highcpu", rules)
    facts = [fact.model_dump() for fact in claim.verified_evidence[0].facts]
    assert facts == [fact.model_dump(exclude={"ok"}) for fact in result.checked_bindings[0].facts]
    assert {"field": "$.alerts[0].value", "claim": "92%", "evidence": "92.0%"} in facts


def test_a_gate_result_from_before_facts_projects_as_before(rules):
    document = read_document(sample("broad-order-service"))
    output = document.latest_stage("execute").output
    result = gate_document(document, rules).result
    stored = result.model_dump(mode="json")
    for binding in stored["checked_bindings"]:
        del binding["facts"]
    before = [claim.model_dump() for claim in verified_claims(output, GateResult.model_validate(stored))]
    now = [claim.model_dump() for claim in verified_claims(output, result)]
    assert any(item["facts"] for claim in now for item in claim["verified_evidence"])
    for claim in now:
        for item in claim["verified_evidence"]:
            item["facts"] = []
    assert before == now


def test_back_filled_bindings_are_matched_on_the_resolved_id(rules):
    def drop_id(output):
        del output["claims"][0]["evidence_bindings"][0]["source_invocation_id"]

    claims, result = _project("narrow-payment-highcpu", rules, drop_id)
    assert result.severity == "none" and result.checked_bindings[0].backfilled
    assert claims[0].verified_evidence[0].source_invocation_id == 1


def test_a_negative_observation_rests_on_no_evidence(rules):
    claims, _ = _project("negative-inventory-hikaricp", rules)
    assert claims[0].rests_on_no_evidence
    positive, _ = _project("narrow-payment-highcpu", rules)
    assert not positive[0].rests_on_no_evidence


def test_unparseable_output_projects_to_nothing(rules):
    claims, _ = _project("narrow-payment-highcpu", rules)
    result = gate_document(read_document(sample("narrow-payment-highcpu")), rules).result
    assert verified_claims("not a document", result) == []
    assert verified_claims({"claims": "nope"}, result) == []
    assert claims  # the unmutated sample does project


def test_allowed_claims_are_the_directly_supported_ones_numbered_in_order(rules):
    document = read_document(sample("broad-order-service"))
    output = document.latest_stage("execute").output
    result = gate_document(document, rules).result
    checks = {
        "claim_checks": [
            {"claim_id": "claim-2", "verification": "direct_support"},
            {"claim_id": "claim-3", "verification": "indirect_support"},
            {"claim_id": "claim-5", "verification": "direct_support"},
            "not a check",
        ]
    }
    allowed = allowed_claims(output, result, checks)
    assert [(c.citation, c.claim_id, c.no_evidence) for c in allowed] == [(1, "claim-2", False), (2, "claim-5", True)]
    assert allowed[0].evidence[0].model_dump() == {
        "tool_name": "query_metrics",
        "source_invocation_id": 1,
        "raw_path": "$.series[0]",
        "text": allowed[0].evidence[0].text,
    }
    assert allowed[0].evidence[0].text and "max=3.8GB" in allowed[0].evidence[0].text
