"""evcli.evals.trace_suite: trace answers scored from the query_traces items their claims cite, checked on the
invocations `evcli tool query_traces` records on a generated incident; and `evcli eval incidents --traces`
end to end."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from evcli.evals.incidents import Incident, generate, suite
from evcli.evals.incidents.spans import traces_of
from evcli.evals.incidents.world import plan
from evcli.evals.trace_suite import answered_callers, answered_origin, named_services, score, service_names
from tests.cli._util import evcli

INVOCATION = 7  # the id the hand-made answers cite the recorded invocation by


@functools.cache
def _seed() -> int:
    """The cheapest tune incident whose spans show a slow origin (not an entry) and that asks who calls a service."""
    for seed in sorted(suite(120, split="tune"), key=lambda seed: len(plan(seed).graph.services)):
        world = plan(seed)
        traces = traces_of(world)
        origin = traces.facts.slow_origin if traces else None
        if origin and world.graph.service(origin).role != "entry" and traces and traces.facts.callers:
            return seed
    raise AssertionError("no cheap incident shows a slow origin")


@pytest.fixture(scope="module")
def incident(tmp_path_factory) -> tuple[Incident, Path]:
    directory = tmp_path_factory.mktemp("trace-suite") / "incident"
    return generate(_seed(), directory), directory


def _recorded(directory: Path, *args: str) -> dict[str, Any]:
    """The output of one query_traces call as the tool records it."""
    run = evcli("tool", "query_traces", "--env", directory, "--json", *args)
    assert run.exit_code == 0, run
    return run.json()["output"]


def _claim(claim_type: str, text: str, raw_path: str, tool: str = "query_traces") -> dict[str, Any]:
    evidence = {"tool_name": tool, "source_invocation_id": INVOCATION, "raw_path": raw_path}
    return {"claim_type": claim_type, "claim_text": text, "evidence": [evidence]}


def _edge_text(edge: dict[str, Any]) -> str:
    return f"edge {edge['caller']} → {edge['callee']}: calls={edge['calls']} errors={edge['errors']} p99={edge['p99_ms']}ms"


def _question(truth: Incident, kind: str) -> Any:
    return next(question for question in truth.trace_questions if question.kind == kind)


def test_an_origin_is_the_service_the_first_trace_claim_names_among_those_its_cited_edges_name(incident):
    truth, directory = incident
    output = _recorded(directory)
    outputs, names, root = {INVOCATION: output}, service_names(truth), truth.root_cause
    question = _question(truth, "slow_origin")
    assert question.expected == (root,)
    edges = output["edges"]
    into = next(index for index, edge in enumerate(edges) if edge["callee"] == root)
    other = next(index for index, edge in enumerate(edges) if root not in (edge["caller"], edge["callee"]))
    stated = _claim("root_cause", f"The time likely goes in {root}: {_edge_text(edges[into])}", f"$.edges[{into}]")
    observed = _claim("observation", _edge_text(edges[other]), f"$.edges[{other}]")

    assert score(question, {"verdict": "PASS", "claims": [observed, stated]}, outputs, names) == {
        "verdict": "PASS",
        "named": [root],
        "correct": True,
    }
    assert not score(question, {"verdict": "LOW_CONFID", "claims": [stated]}, outputs, names)["correct"]
    # without a root-cause claim, the first trace claim's first service: the caller of the edge it cites
    only_edge = _claim("observation", _edge_text(edges[into]), f"$.edges[{into}]")
    assert answered_origin([only_edge], outputs, names) == edges[into]["caller"] != root
    # a service no cited item names does not count, nor a claim citing another tool, nor an index not recorded
    unbacked = _claim("root_cause", f"The time goes in {root}; see {_edge_text(edges[other])}", f"$.edges[{other}]")
    assert answered_origin([unbacked], outputs, names) == edges[other]["caller"]
    assert answered_origin([_claim("root_cause", f"{root} is slow", "$.logs[0]", "query_logs")], outputs, names) is None
    assert answered_origin([_claim("root_cause", f"{root} is slow", f"$.edges[{len(edges)}]")], outputs, names) is None


def test_a_service_is_named_by_a_whole_name_or_an_alias_in_either_language():
    names = {"payment-svc": "payment-svc", "payment": "payment-svc", "支付服务": "payment-svc"}
    names |= {"email": "email", "email-worker": "email-worker"}
    text = "Calls from email-workers to payment wait on email-worker. PAYMENT-SVC again"
    assert named_services(text, names) == ["payment-svc", "email-worker"]
    assert named_services("错误可能来自支付服务（待确认的假设）", names) == ["payment-svc"]
    assert named_services("耗时可能在 email（待确认的假设）", names) == ["email"]


def test_callers_are_the_callers_the_cited_edges_and_spans_show(incident):
    truth, directory = incident
    question = _question(truth, "callers")
    output = _recorded(directory, "--service", question.subject)
    outputs, names = {INVOCATION: output}, service_names(truth)
    into = [index for index, edge in enumerate(output["edges"]) if edge["callee"] == question.subject]
    out = [index for index, edge in enumerate(output["edges"]) if edge["caller"] == question.subject]
    claims = [_claim("observation", _edge_text(output["edges"][i]), f"$.edges[{i}]") for i in out + into]
    report = {"verdict": "PASS", "claims": claims}
    assert sorted(answered_callers(claims, outputs, question.subject)) == sorted(question.expected)
    assert score(question, report, outputs, names)["correct"]
    missing = {"verdict": "PASS", "claims": claims[:-1]}  # one caller not cited
    assert not score(question, missing, outputs, names)["correct"]
    spans = [
        index
        for index, span in enumerate(output["spans"])
        if span["service"] == question.subject and span["parent_service"] in question.expected
    ]
    cited = _claim("observation", "a span", f"$.spans[{spans[0]}]")
    assert answered_callers([cited], outputs, question.subject) == [output["spans"][spans[0]]["parent_service"]]


def test_the_trace_suite_scores_each_answer_from_its_claims_per_split_kind_and_language():
    # seeds 4-7 are of the tune split: a test never reads the held-out incidents
    args = ("eval", "incidents", "--traces", "--first-seed", "4", "--count", "4", "--split", "tune")
    run = evcli(*args, "--json")
    assert run.exit_code == 0, run
    report = run.json()
    assert report["results"] and {result["kind"] for result in report["results"]} <= {
        "slow_origin",
        "error_origin",
        "callers",
    }
    for result in report["results"]:
        assert result["error"] is None and result["split"] == "tune"
        named, expected = result["named"], result["expected"]
        answered = set(named) == set(expected) if result["kind"] == "callers" else named == expected
        assert result["correct"] == (result["verdict"] == "PASS" and bool(named) and answered), result
    totals = report["totals"]
    assert totals["questions"] == len(report["results"])
    assert totals["correct"] == round(sum(r["correct"] for r in report["results"]) / totals["questions"], 4)
    assert set(report["by_split"]) == {"tune", "holdout"} and report["by_split"]["holdout"]["questions"] == 0
    assert set(report["by_kind"]) == {"slow_origin", "error_origin", "callers"}
    assert sum(row["questions"] for row in report["by_language"].values()) == totals["questions"]
    above = min(1.0, totals["correct"] + 0.01)
    missed = evcli(*args, "--fail-under", above)
    assert missed.exit_code == (1 if totals["correct"] < above else 0), missed
    assert "trace questions" in missed.stdout
