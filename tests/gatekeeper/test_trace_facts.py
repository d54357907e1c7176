"""Typed facts of query_traces items (issue 22): a claim citing a span, a call edge or the stats is matched field
by field, as claims citing alerts, series and log lines are.

The items are the tool's own output on tests/backends/traces_env (run here through the tool runner) and, where a
number needs digits the snapshot does not have, a span shaped as the tool records it. Each false claim names the
field it disagrees with; each honest paraphrase passes.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from evcli.contracts import ToolInvocation
from evcli.gatekeeper import typed, typed_model
from evcli.gatekeeper.engine import gate

ENV = Path(__file__).resolve().parent.parent / "backends" / "traces_env"
SERVICES = ("gateway", "checkout", "payment", "inventory", "frontend", "catalog", "search")

# A span as query_traces records it, with digits the snapshot's spans do not have.
SPAN = {
    "duration_ms": 1234.5,
    "operation": "charge",
    "parent_service": "checkout",
    "service": "payment",
    "source": {"line": 3, "path": "traces/collector.jsonl"},
    "span_id": "d7ad6b7169203331",
    "start": "2026-05-04T18:40:00.020000+02:00",
    "status": "ok",
    "trace_id": "0af7651916cd43dd8448eb211c80319c",
}
EDGE = {"caller": "checkout", "callee": "payment", "calls": 340, "errors": 12, "p50_ms": 60.0, "p90_ms": 700.0}
EDGE |= {"p99_ms": 850.0}


@cache
def traced(**params: Any) -> ToolInvocation:
    """One real query_traces call on the snapshot (invocation 1)."""
    from evcli.tools.context import build_environment
    from evcli.tools.runner import run_tool

    invocation = run_tool("query_traces", dict(params), build_environment(ENV))
    return invocation.model_copy(update={"invocation_id": 1})


def output() -> dict[str, Any]:
    return traced(count_by="service").output


def check(text: str, raw_path: str, item: Any = None, field: str = "", found: Any = None) -> typed_model.ClaimCheck:
    """The typed check of a claim citing `raw_path` of the snapshot's output (or `item`), or one field of it."""
    found = found or output()
    if item is None:
        item = typed.item_at(found, raw_path)
    array = found.get(raw_path[2:].split("[", 1)[0]) if "[" in raw_path else None
    cited = typed_model.Cited(0, raw_path, typed.item_values(item, raw_path), array or [], raw_path + field, item)
    return typed.check_claim(text, [cited], SERVICES)


def edge_at(caller: str, callee: str) -> str:
    index = next(i for i, e in enumerate(output()["edges"]) if (e["caller"], e["callee"]) == (caller, callee))
    return f"$.edges[{index}]"


def span_at(service: str, operation: str) -> str:
    spans = output()["spans"]
    index = next(i for i, s in enumerate(spans) if (s["service"], s["operation"]) == (service, operation))
    return f"$.spans[{index}]"


def fails(checked: typed_model.ClaimCheck, named: str) -> bool:
    return any(named in problem for problem in checked.problems)


# --- spans ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "payment's charge span took 1.23 s",
        "payment's charge span took 1234.5 ms",
        "payment's charge span took about 1.2 seconds",
        "payment's charge span took 1,234,500 µs",
        "payment's charge span started at 18:40:00 and succeeded",
        "payment's charge span started at 2026-05-04T18:40:00.020+02:00",
    ],
)
def test_an_honest_span_claim_passes(text):
    checked = check(text, "$.spans[0]", SPAN)
    assert checked.problems == [], checked.facts


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("payment's charge span took 1.2 ms", "claim says duration 1.2 ms; $.spans[0].duration_ms is 1234.5ms"),
        ("payment's charge span lasted 1234.5 s", "$.spans[0].duration_ms"),
        ("payment's charge span took 12.3 s", "$.spans[0].duration_ms"),
        ("payment's charge span started at 18:41:00", "$.spans[0].start"),
        ("payment's charge span failed", "claim says failed; $.spans[0].status is ok"),
        ("checkout's charge span took 1.23 s", "claim speaks of checkout; $.spans[0].service is payment"),
    ],
)
def test_a_false_span_claim_fails_naming_the_field(text, named):
    assert fails(check(text, "$.spans[0]", SPAN), named), check(text, "$.spans[0]", SPAN).problems


def test_a_span_claim_names_its_own_operation():
    charge = span_at("payment", "charge")
    assert check("payment's charge span took 800 ms and failed", charge).problems == []
    moved = check("payment's POST /checkout span took 800 ms", charge)
    assert fails(moved, f"claim says operation POST /checkout; {charge}.operation is charge"), moved.problems


def test_the_status_a_span_records_is_the_status_a_claim_may_state():
    failed, unset = span_at("payment", "charge"), span_at("gateway", "GET /checkout")
    assert check("payment's charge span failed (status=error)", failed).problems == []
    assert check("gateway's GET /checkout span succeeded", unset).problems == []  # unset: no error recorded
    assert fails(check("gateway's GET /checkout span failed", unset), f"{unset}.status is unset")


# --- edges ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "checkout calls payment: 3 calls, 2 errors, p50 60ms, p90 800ms, p99 800ms",
        "checkout → payment: calls=3 errors=2 p50=60ms p90=800ms p99=800ms",
        "payment is called by checkout: 2 errors in 3 calls",
        "checkout calls payment with a p99 of 0.8 s",
        "checkout calls payment: p50 60ms p90 800ms p99 800ms",  # a percentile's word is before its value
        "checkout 调用 payment：3 次调用，p99 为 800 毫秒",
    ],
)
def test_an_honest_edge_claim_passes(text):
    checked = check(text, edge_at("checkout", "payment"))
    assert checked.problems == [], checked.problems


def test_a_word_written_before_its_value_does_not_take_the_number_before_it():
    line = {"service": "order-service", "message": "POST /api/v1/orders status=503 took 30017ms"}
    text = "order-service logged: POST /api/v1/orders status=503 took 30017ms"
    assert check(text, "$.logs[0]", line).problems == []
    assert fails(check("order-service logged: status=503 took 30018ms", "$.logs[0]", line), "$.logs[0].message")


def test_caller_and_callee_are_directional():
    flipped = check("payment calls checkout: 3 calls, 2 errors", edge_at("checkout", "payment"))
    assert fails(flipped, "claim says caller payment; $.edges[0].caller is checkout"), flipped.problems
    backward = check("checkout is called by payment", edge_at("checkout", "payment"))
    assert fails(backward, "claim says caller payment"), backward.problems
    other = check("gateway calls payment 3 times", edge_at("checkout", "payment"))
    assert fails(other, "claim says caller gateway; $.edges[0].caller is checkout"), other.problems


def test_calls_and_errors_are_not_swapped():
    assert check("checkout calls payment: 12 errors in 340 calls", "$.edges[0]", EDGE).problems == []
    swapped = check("checkout calls payment: 340 errors in 12 calls", "$.edges[0]", EDGE)
    assert fails(swapped, "$.edges[0].errors is 12"), swapped.problems


def test_each_percentile_is_its_own_field():
    assert check("checkout calls payment with a p99 of 0.85 s", "$.edges[0]", EDGE).problems == []
    assert fails(check("checkout calls payment, p99 700 ms", "$.edges[0]", EDGE), "$.edges[0].p99_ms is 850.0ms")
    assert fails(check("checkout calls payment, p90 850 ms", "$.edges[0]", EDGE), "$.edges[0].p90_ms is 700.0ms")
    # p90 and p99 are both 850 ms on gateway → checkout: the claim says p99, the binding cites p90
    gateway = edge_at("gateway", "checkout")
    assert check("gateway calls checkout, p99 850 ms", gateway, field=".p99_ms").problems == []
    cited_p90 = check("gateway calls checkout, p99 850 ms", gateway, field=".p90_ms")
    assert fails(cited_p90, f"claim cites {gateway}.p90_ms but does not state it"), cited_p90.problems


def test_the_slowest_call_is_the_edge_with_the_highest_p99():
    top, second = edge_at("gateway", "checkout"), edge_at("checkout", "payment")
    assert check("the slowest call is gateway → checkout (p99 850ms)", top).problems == []
    named_second = check("the slowest call is checkout → payment (p99 800ms)", second)
    assert fails(named_second, f"claim says slowest call; {second}.p99_ms is 800.0ms, another item's p99_ms is 850"), (
        named_second.problems
    )
    # a superlative within a part of the graph (one service's own calls, a chain) is not the graph's
    assert check("its own slowest call takes less (edge checkout → payment p99=800ms)", second).problems == []


def test_the_slowest_span_is_the_longest_of_its_array():
    assert check("the slowest span is gateway's GET /checkout (900 ms)", "$.spans[0]").problems == []
    assert fails(check("the slowest span is checkout's POST /checkout (850 ms)", "$.spans[1]"), "$.spans[1]")


# --- stats ----------------------------------------------------------------------------------------------------


def test_stats_counts_and_percentiles_each_match_their_field():
    assert check("17 spans in 6 traces, 5 errors; p50 200ms, p90 850ms, p99 900ms", "$.stats").problems == []
    assert fails(check("6 spans in 17 traces", "$.stats"), "$.stats.spans is 17")
    assert fails(check("17 spans, p99 850ms", "$.stats"), "$.stats.p99_ms is 900.0ms")
    assert fails(check("17 spans, 6 errors", "$.stats"), "$.stats.errors is 5")


def test_a_count_by_entry_is_the_count_of_the_name_it_is_stated_for():
    assert check("checkout had 5 spans and payment 3", "$.stats").problems == []
    assert check("by service: checkout 5, gateway 4, payment 3", "$.stats").problems == []
    wrong = check("checkout had 3 spans", "$.stats")  # payment's count
    assert fails(wrong, "claim says spans 3; $.stats.by_service.checkout is 5"), wrong.problems
    by_operation = traced(count_by="operation").output
    assert check("POST /checkout had 3 spans, charge 3", "$.stats", found=by_operation).problems == []
    stock = check("get /stock had 3 spans", "$.stats", found=by_operation)  # charge's and POST /checkout's count
    assert fails(stock, "claim says spans 3; $.stats.by_operation['get /stock'] is 2"), stock.problems


# --- through the gate, on the recorded invocation ------------------------------------------------------------


def gated(text: str, raw_path: str) -> list[str]:
    invocation = traced(count_by="service")
    ref = next(r.text for r in invocation.retrieval_details.evidence_refs if raw_path.startswith(r.raw_path))
    binding = {"tool_name": "query_traces", "source_invocation_id": 1, "raw_path": raw_path, "evidence_excerpt": ref}
    claim = {"claim_id": "c1", "claim_type": "observation", "claim_text": text, "evidence_bindings": [binding]}
    output = {"answer_version": "executor_evidence_v2", "claims": [claim]}
    from evcli.gatekeeper.rules import load_rules

    result = gate(output, [invocation], load_rules(), services=SERVICES)
    return [f"{e.rule}: {e.message}" for e in result.errors]


def test_the_gate_rejects_a_flipped_edge_and_passes_the_honest_one():
    path = edge_at("checkout", "payment")
    assert gated("checkout calls payment: 3 calls, 2 errors, p99 800ms", path) == []
    flipped = gated("payment calls checkout: 3 calls, 2 errors, p99 800ms", path)
    assert flipped and flipped[0].startswith("claim.facts_match"), flipped
    assert "claim says caller payment" in flipped[0]


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("frontend → checkout p99 was 2,072,180 µs", True),  # the ref shows 2072.18ms: converted as shown
        ("frontend → checkout p99 was 2.07218 s", True),
        ("frontend → checkout p99 was 2,072,176 µs", True),
        ("frontend → checkout p99 was 2,072,200 µs", False),  # beyond what the shown digits allow
    ],
)
def test_a_value_converted_from_its_shown_digits_agrees(text, ok):
    """Refs show six significant digits (2072.176 ms as 2072.18ms): a claim converting the shown value to
    another unit is honest; one beyond the shown digits is not."""
    from evcli.gatekeeper import typed

    item = {"caller": "frontend", "callee": "checkout", "calls": 103, "errors": 3, "p50_ms": 304.861}
    item |= {"p90_ms": 741.604, "p99_ms": 2072.176}
    cited = typed_model.Cited(0, "$.edges[0]", typed.item_values(item, "$.edges[0]"), [item])
    assert (typed.check_claim(text, [cited], ("frontend", "checkout")).problems == []) is ok
