"""evcli/evals/mutations/traces.py on the trace bases of tests/backends/traces_env (evcli/evals/mutations/tracebases.py):
real query_traces calls, the offline chain's answers to trace questions and a faithful writer's claims on every kind
of trace item. Every hostile class is caught by the rule it names, every honest paraphrase passes, and each class
makes the rewrite it says."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path

import pytest

from evcli.evals.gatekeeper import run_traces
from evcli.evals.mutations import TRACE_MUTATIONS, traces
from evcli.evals.mutations.tracebases import trace_bases

ENV = Path(__file__).resolve().parents[2] / "backends" / "traces_env"


@cache
def bases():
    return tuple(trace_bases(ENV))


@cache
def report():
    from evcli.gatekeeper.rules import load_rules

    found = run_traces(load_rules(), [ENV])
    assert found is not None
    return found


def test_every_base_passes_the_gate_unmutated():
    assert len(report()["base_sessions"]) == len(bases()) == 4
    assert report()["skipped_bases"] == []


def test_every_trace_class_has_cases_and_is_caught_or_passed_as_it_names():
    rows = {row["class"]: row for row in report()["classes"]}
    assert set(rows) == {mutation.name for mutation in TRACE_MUTATIONS}
    for mutation in TRACE_MUTATIONS:
        row = rows[mutation.name]
        assert row["cases"] > 0 and row["ok"] == row["cases"], (mutation.name, row["misses"])
        if not mutation.benign:
            assert row["observed_severity"] == {mutation.expected_severity: row["cases"]}, mutation.name
            assert row["rules_fired"][mutation.expected_rule] == row["cases"], mutation.name
    assert report()["targets_met"]
    assert report()["false_in_pass_answers"] == {"passed_gate": 0, "in_pass_answer": 0}


def rewritten(mutate) -> dict[str, str]:
    """Each case's description and the first claim it changed (or its first changed binding's path)."""
    found = {}
    for base in bases():
        original = base.latest_stage("execute").output
        for case in mutate(base, copy.deepcopy(original)):
            changed = [(c, o) for c, o in zip(case.output["claims"], original["claims"], strict=True) if c != o]
            found[case.description] = changed[0][0]["claim_text"]
    return found


@pytest.mark.parametrize(
    ("mutate", "description", "text"),
    [
        (traces.trace_edge_flipped, "e0: checkout → payment told the other way", "payment calls checkout: 3 calls"),
        (
            traces.trace_edge_flipped,
            "claim-1: checkout → payment told the other way",
            "edge payment → checkout: calls=3",
        ),
        (traces.trace_percentile_swapped, "p99: p99 called p90", "gateway → checkout has a p90 of 850ms"),
        (traces.trace_percentile_swapped, "stats: 850ms -> 900ms (p99's)", "p90 900ms, p99 900ms"),
        (traces.trace_calls_errors_swapped, "e0: 3 <-> 2", "checkout calls payment: 2 calls, 3 errors"),
        (traces.trace_calls_errors_swapped, "stats: 17 <-> 5", "5 spans in 6 traces, 17 errors"),
        (traces.trace_unit_error, "s2: 800ms -> 800s", "payment's charge span took 800s from"),
        (
            traces.trace_slowest_second,
            "slowest: the second slowest $.edges[0] called the slowest",
            "is checkout → payment (p99 800ms)",
        ),
        (traces.trace_caller_as_subject, "s2: payment's span told of checkout", "checkout's charge span took 800ms"),
        (
            traces.trace_negative_widened,
            "negative: errors dropped",
            "payment had no refund spans in the searched range.",
        ),
        (
            traces.trace_negative_widened,
            "negative: refund dropped",
            "payment had no failed spans in the searched range.",
        ),
        (traces.benign_trace_in_seconds, "s2: 800ms -> 0.8 s", "payment's charge span took 0.8 s from"),
        (traces.benign_trace_rounded, "slowest: 850ms -> about 0.9 s", "(p99 about 0.9 s)"),
        (traces.benign_trace_microseconds, "p99: 850ms -> 850,000 µs", "has a p99 of 850,000 µs"),
        (traces.benign_trace_called_by, "e0: payment is called by checkout", "payment is called by checkout: 3 calls"),
    ],
)
def test_a_class_makes_the_rewrite_it_names(mutate, description, text):
    cases = rewritten(mutate)
    assert description in cases, sorted(cases)
    assert text in cases[description]


def test_the_second_slowest_edge_is_cited_with_its_own_ref():
    (base,) = [b for b in bases() if b.run.session_id == "traces-claims"]
    original = base.latest_stage("execute").output
    (case,) = traces.trace_slowest_second(base, copy.deepcopy(original))
    (claim,) = [c for c in case.output["claims"] if c["claim_id"] == "slowest"]
    (binding,) = claim["evidence_bindings"]
    assert binding["raw_path"] == "$.edges[0]"
    assert binding["evidence_excerpt"] == "edge checkout → payment: calls=3 errors=2 p50=60ms p90=800ms p99=800ms"
