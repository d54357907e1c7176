"""evcli.report.model: what a report shows, read from a session document only."""

from __future__ import annotations

from itertools import pairwise

from evcli.contracts import MatchedFact
from evcli.report.model import report_model
from evcli.store.db import TraceStore
from tests.cli._util import evcli, import_sample
from tests.conftest import sample
from tests.report.conftest import SAMPLES, load


def test_citations_are_the_answers_markers_with_full_ref_text_excerpt_and_source(hostile_session):
    report = report_model(load(hostile_session))
    assert report.verdict == "PASS" and report.gate_severity == "none"
    assert [c.number for c in report.citations] == list(range(1, len(report.citations) + 1))
    assert all(f"[{c.number}]" in report.answer for c in report.citations)
    logs = [e for c in report.citations for e in c.evidence if e.kind == "logs"]
    assert logs and all(e.source and e.source.startswith("logs/web.log:") for e in logs)
    for evidence in logs:
        start, end = evidence.excerpt_at
        assert evidence.ref_text[start:end].casefold() == evidence.excerpt.casefold()
    script = next(e for e in logs if "<script>" in e.ref_text)
    assert script.source == "logs/web.log:2" and script.time == "2026-05-01T10:05:00.000+00:00"


def test_series_citation_carries_every_sample_and_the_cited_values(hostile_session):
    report = report_model(load(hostile_session))
    charts = [e.chart for c in report.citations for e in c.evidence if e.chart]
    assert len(charts) == 1
    chart = charts[0]
    assert (chart.service, chart.metric, chart.unit, chart.points, len(chart.samples)) == (
        "web",
        "cpu_usage",
        "%",
        SAMPLES,
        SAMPLES,
    )
    assert {label for label, _, _ in chart.marked} == {"min", "max", "last"}
    assert ("max", "2026-05-01T10:30:00+00:00", 85.0) in chart.marked


def test_timeline_orders_cited_lines_on_the_incident_clock(hostile_session):
    report = report_model(load(hostile_session))
    times = [entry.time for entry in report.timeline]
    cited_lines = {
        (e.invocation_id, e.raw_path) for c in report.citations for e in c.evidence if e.kind in ("logs", "alerts")
    }
    assert times == sorted(times) and len(times) == len(cited_lines) >= 2
    assert all(time.endswith("+00:00") for time in times)
    assert report.timeline[0].text.count("<script>") == 1


def test_scope_plan_tools_gate_verifier_prompts_and_models_are_all_there(hostile_session):
    report = report_model(load(hostile_session))
    assert ("services", "web") in report.asked
    assert report.plan and len(report.invocations) >= 3
    assert any(i.range and i.range.startswith("2026-05-01T10:00:00+00:00") for i in report.invocations)
    assert report.gates and report.gates[-1].status == "pass"
    assert {check.verification for check in report.claim_checks} == {"direct_support"}
    assert ("executor", "executor-v10") in report.prompts and report.models["composer"] == "offline"


def test_a_rejected_session_reports_its_failed_rules_and_no_citation(tmp_path):
    db = tmp_path / "x.db"
    session_id = import_sample(sample("fault-fabricated-invocation-id"), db)
    assert evcli("gate", session_id, "--db", db).exit_code == 4
    report = report_model(TraceStore(db).load(session_id))
    assert report.gates[-1].severity == "reject" and "binding.invocation_exists" in report.gates[-1].failed_rules
    assert report.gates[-1].findings and report.citations == [] and report.answer == ""


def test_cited_evidence_carries_the_facts_the_gate_matched_located_in_the_ref_text():
    document = load(sample("broad-order-service"))
    checked = {(b.claim_id, b.raw_path): b.facts for b in document.gate_results[-1].result.checked_bindings}
    report = report_model(document)

    for citation in report.citations:
        for evidence in citation.evidence:
            matched = checked[(citation.claim_id, evidence.raw_path)]
            assert [(f.claim, f.field, f.evidence, f.ok) for f in evidence.facts] == [
                (f.claim, f.field, f.evidence, f.ok) for f in matched
            ]
            spans = sorted(f.at for f in evidence.facts if f.at)
            assert all(a[1] <= b[0] for a, b in pairwise(spans))  # never overlapping
            start, end = evidence.excerpt_at
            assert all(start <= a and b <= end for a, b in spans)  # inside the excerpt, which spans the ref here
    alert = report.citations[0].evidence[0]
    shown = {f.field: alert.ref_text[f.at[0] : f.at[1]] for f in alert.facts}
    assert shown == {"$.alerts[0].state": "firing", "$.alerts[0].value": "91%", "$.alerts[0].duration": "18m"}
    series = report.citations[1].evidence[0]
    assert [series.ref_text[f.at[1] - 9 : f.at[1]] for f in series.facts if f.evidence == "3.8GB"] == [
        "max=3.8GB",
        "ast=3.8GB",
    ]  # one value twice in the ref: each fact marks its own occurrence


def test_a_fact_not_written_in_the_ref_text_is_listed_without_a_place(tmp_path):
    document = load(sample("broad-order-service"))
    binding = document.gate_results[-1].result.checked_bindings[0]
    binding.facts = [MatchedFact(claim="91 percent", field="$.alerts[0].value", evidence="91 pc", ok=True)]

    facts = report_model(document).citations[0].evidence[0].facts

    assert [(f.claim, f.ok, f.at) for f in facts] == [("91 percent", True, None)]


def test_a_claim_with_a_fact_that_failed_is_never_cited():
    # (under a rule severity lowered to warn: the gate passes, the claim is still not allowed material)
    document = load(sample("broad-order-service"))
    binding = document.gate_results[-1].result.checked_bindings[0]
    binding.facts = [MatchedFact(claim="resolved", field="$.alerts[0].state", evidence="firing", ok=False)]

    cited = {c.claim_id for c in report_model(document).citations}

    assert binding.claim_id not in cited and cited


def test_a_session_gated_before_facts_has_no_facts():
    document = load(sample("broad-order-service"))
    for binding in document.gate_results[-1].result.checked_bindings:
        binding.facts = []

    report = report_model(document)

    assert report.citations and all(e.facts == [] for c in report.citations for e in c.evidence)
