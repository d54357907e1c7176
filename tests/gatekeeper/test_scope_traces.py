"""Negative observations on query_traces (evcli/gatekeeper/scope.py): a `$.no_evidence` of a trace search, or a
zero count of its `$.stats`, claims no more than that search searched: its service, operation, range and
errors_only, as a log search's negative claims no more than its service, level and range.

Every invocation is a real query_traces call on tests/backends/traces_env."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from evcli.contracts import Query, ToolInvocation
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.rules import load_rules

ENV = Path(__file__).resolve().parent.parent / "backends" / "traces_env"
SERVICES = ("gateway", "checkout", "payment", "inventory", "frontend", "catalog", "search")
REFUND = {"service": "payment", "operation": "refund", "errors_only": True}


@cache
def _call(invocation_id: int, **params: Any) -> ToolInvocation:
    from evcli.tools.context import build_environment
    from evcli.tools.runner import run_tool

    invocation = run_tool("query_traces", dict(params), build_environment(ENV))
    return invocation.model_copy(update={"invocation_id": invocation_id})


def _ref(invocation: ToolInvocation, raw_path: str) -> str:
    return next(r.text for r in invocation.retrieval_details.evidence_refs if r.raw_path == raw_path)


def _gate(
    claim_type: str, text: str, invocation: ToolInvocation, raw_path: str, *others: ToolInvocation, asked="payment"
):
    binding = {
        "tool_name": "query_traces",
        "source_invocation_id": invocation.invocation_id,
        "raw_path": raw_path,
        "evidence_excerpt": _ref(invocation, raw_path),
    }
    claim = {"claim_id": "c1", "claim_type": claim_type, "claim_text": text, "evidence_bindings": [binding]}
    output = {"answer_version": "executor_evidence_v2", "claims": [claim]}
    scope = Query(services=[asked], task_scope="narrow")
    return gate(output, [invocation, *others], load_rules(), scope=scope, services=SERVICES)


def _widened(result) -> list[str]:
    return [f.message for f in result.errors if f.rule == "scope.negative_within_searched"]


def test_the_refund_search_finds_nothing():
    assert _call(1, **REFUND).retrieval_details.evidence_status == "no_evidence"


@pytest.mark.parametrize(
    "text",
    [
        "payment had no failed refund spans in the snapshot's range.",
        "This query of payment's failing refund spans found no matching evidence.",
        "payment 的 refund 没有失败的 span。",
    ],
)
def test_a_negative_within_its_trace_search_passes(text):
    result = _gate("negative_observation", text, _call(1, **REFUND), "$.no_evidence")
    assert result.severity == "none", [e.message for e in result.errors]


@pytest.mark.parametrize(
    ("text", "claimed"),
    [
        ("payment had no refund spans.", "every status (searched errors_only)"),  # the search read errors only
        ("payment had no failed spans.", "every operation (searched operation refund)"),
        ("payment had no failed refund spans in the last 24 hours.", '"last 24 hours"'),
        ("payment never failed a refund.", '"never"'),
        ("payment logged no failed refund.", '"logged" (a query_traces search read no logs)'),
    ],
)
def test_a_negative_wider_than_its_trace_search_is_caught(text, claimed):
    result = _gate("negative_observation", text, _call(1, **REFUND), "$.no_evidence")
    assert any(claimed in message for message in _widened(result)), [e.message for e in result.errors]


def test_a_negative_naming_another_searched_service_is_caught():
    other = _call(2, service="checkout")
    result = _gate(
        "negative_observation", "checkout had no failed refund spans.", _call(1, **REFUND), "$.no_evidence", other
    )
    assert any("service checkout" in message for message in _widened(result)), [e.message for e in result.errors]


def test_a_zero_count_of_the_stats_claims_no_more_than_its_search():
    gateway = _call(3, service="gateway")
    assert _ref(gateway, "$.stats").startswith("stats: 4 spans") and "errors 0" in _ref(gateway, "$.stats")
    honest = _gate("observation", "gateway had 0 errors in 4 spans", gateway, "$.stats", asked="gateway")
    assert honest.severity == "none", [e.message for e in honest.errors]
    for widened, claimed in (
        ("gateway had 0 errors in 4 spans all day", '"all day"'),
        ("gateway never had errors: 0 errors in 4 spans", '"never"'),
    ):
        result = _gate("observation", widened, gateway, "$.stats", asked="gateway")
        assert any(claimed in message for message in _widened(result)), [e.message for e in result.errors]
