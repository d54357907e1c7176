"""`query_traces` on the hand-written snapshot tests/backends/traces_env, through the CLI as a user and a model
call it: span, edge and stats refs with exact numbers, every filter, what an unknown service, a snapshot
without traces and bad parameters state, and a claim citing an edge recorded, gated, re-derived against the
snapshot, and refused once its ref or its source is changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evcli.agents.executor import tool_schemas
from evcli.contracts import SessionConfig, StageOutput
from evcli.store.db import TraceStore
from evcli.tools import registry
from tests.cli._util import assert_clean_error, evcli

ENV = Path(__file__).resolve().parent.parent / "backends" / "traces_env"
TRACE = "0af7651916cd43dd8448eb211c80319c"


def query(*args: Any, env: Path = ENV) -> dict[str, Any]:
    run = evcli("tool", "query_traces", "--env", env, "--json", *args)
    assert run.exit_code == 0, run
    return run.json()


def refs(invocation: dict[str, Any]) -> dict[str, str]:
    return {ref["raw_path"]: ref["text"] for ref in invocation["retrieval_details"]["evidence_refs"]}


def test_who_calls_payment_is_an_edge_with_exact_calls_errors_and_percentiles():
    found = refs(query("--service", "payment"))
    assert found["$.edges[0]"] == "edge checkout → payment: calls=3 errors=2 p50=60ms p90=800ms p99=800ms"
    assert found["$.spans[0]"] == (
        'span payment "charge" start=2026-05-04T18:40:00.020000+02:00 duration=800ms status=error '
        f"parent_service=checkout trace_id={TRACE} span_id=d7ad6b7169203331 (traces/collector.jsonl:3)"
    )
    assert found["$.stats"] == (
        "stats: 3 spans in 3 traces in 2026-05-04T18:40:00+02:00..2026-05-04T18:45:00.200000+02:00 (whole snapshot); "
        "errors 2; duration p50=60ms p90=800ms p99=800ms; first 2026-05-04T18:40:00.020000+02:00, "
        "last 2026-05-04T18:42:00.020000+02:00; filters: service=payment"
    )


def test_the_call_graph_of_the_snapshot_has_every_format_and_no_edge_to_an_orphan():
    output = query()["output"]
    edges = {(edge["caller"], edge["callee"]): (edge["calls"], edge["errors"]) for edge in output["edges"]}
    assert edges == {
        ("gateway", "checkout"): (3, 0),  # OTLP, checkout named by its pod
        ("checkout", "payment"): (3, 2),
        ("frontend", "catalog"): (1, 1),  # Jaeger, catalog by its alias catalog-svc
        ("checkout", "inventory"): (1, 1),  # Zipkin, the shared server span
        ("gateway", "search"): (1, 0),  # CSV pods; GET /suggest's parent ffee is read nowhere
    }
    assert [(edge["caller"], edge["callee"]) for edge in output["edges"][:2]] == [
        ("checkout", "payment"),  # the most errors first
        ("checkout", "inventory"),
    ]
    assert output["stats"]["spans"] == 17 and output["stats"]["orphans"] == 1
    assert output["digests"].keys() == {
        "traces/collector.jsonl",
        "traces/jaeger-export.json",
        "traces/spans.csv",
        "traces/zipkin.json",
    }


def test_a_service_is_found_by_its_alias_or_a_pod_name_and_its_edges_on_either_side():
    by_alias = query("--service", "catalog-svc")["output"]
    assert [span["service"] for span in by_alias["spans"]] == ["catalog"]
    by_pod = query("--service", "checkout-7c9f6d8b5-x2k4q")["output"]
    assert {(edge["caller"], edge["callee"]) for edge in by_pod["edges"]} == {
        ("gateway", "checkout"),
        ("checkout", "payment"),
        ("checkout", "inventory"),
    }


def test_filters_operation_min_duration_errors_range_and_count_by():
    slow = query("--min-duration", "300ms", "--count-by", "service")["output"]
    assert [span["duration_ms"] for span in slow["spans"]] == [900, 850, 800, 400, 350, 300, 300]
    assert slow["stats"]["by_service"] == {"checkout": 3, "gateway": 1, "payment": 1, "frontend": 1, "inventory": 1}
    errors = query("--errors-only", "--count-by", "operation")["output"]
    assert {span["span_id"] for span in errors["spans"]} == {
        "d7ad6b7169203331",
        "d7ad6b7169203333",
        "1d4d9e3b2a6c7f80",
        "b3fb4a1d1a96d313",
        "aa03",
    }
    assert errors["stats"]["errors"] == 5 and errors["stats"]["by_operation"]["charge"] == 2
    operation = query("--operation", "post /")["output"]
    assert {span["operation"] for span in operation["spans"]} == {"POST /checkout", "post /reserve"}
    ranged = query("--since", "2026-05-04 18:41", "--until", "2026-05-04 18:42:30")["output"]
    assert ranged["stats"]["spans"] == 6 and ranged["stats"]["range"].startswith("2026-05-04T18:41:00+02:00")
    assert {(edge["caller"], edge["callee"], edge["calls"]) for edge in ranged["edges"]} == {
        ("gateway", "checkout", 2),
        ("checkout", "payment", 2),
    }
    window = query("--window", "1m")["output"]  # the last minute of the snapshot's clock: the CSV trace
    assert {span["service"] for span in window["spans"]} == {"gateway", "search"}


def test_a_trace_id_returns_its_spans_in_start_order_with_or_without_leading_zeros():
    output = query("--trace-id", TRACE.lstrip("0").upper())["output"]
    assert [(span["service"], span["parent_service"]) for span in output["spans"]] == [
        ("gateway", None),
        ("checkout", "gateway"),
        ("payment", "checkout"),
    ]
    assert output["stats"]["traces"] == 1


def test_an_unknown_service_is_no_evidence_and_a_snapshot_without_traces_a_failure(tmp_path):
    unknown = query("--service", "paymnt")
    assert unknown["retrieval_details"]["evidence_status"] == "no_evidence"
    assert "services in the traces: catalog, checkout" in unknown["output"]["message"]
    none = query("--service", "search", "--errors-only", "--operation", "index")
    assert none["retrieval_details"]["evidence_status"] == "no_evidence"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "web.log").write_text("2026-05-04T16:40:00Z ERROR boom\n")
    failed = evcli("tool", "query_traces", "--env", tmp_path)
    assert failed.exit_code == 1 and "the snapshot has no traces/ files" in failed.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--min-duration", "fast"), "query_traces: min_duration: cannot read duration 'fast'"),
        (("--trace-id", "not-hex"), "query_traces: trace_id:"),
        (("--count-by", "pod"), "query_traces: count_by:"),
        (("--limit", "0"), "query_traces: limit:"),
        (("--window", "1h", "--since", "10:00"), "give either window or since/until"),
    ],
)
def test_bad_parameters_are_a_usage_error(args, message):
    assert_clean_error(evcli("tool", "query_traces", "--env", ENV, *args), 2, message)


def test_the_tool_is_registered_for_the_cli_and_the_models_schema_with_its_parameters_explained():
    assert "query_traces" in registry.names("backend")
    schema = next(s for s in tool_schemas() if s["function"]["name"] == "query_traces")["function"]
    properties = schema["parameters"]["properties"]
    assert set(properties) == {
        "service",
        "operation",
        "since",
        "until",
        "window",
        "min_duration",
        "errors_only",
        "trace_id",
        "limit",
        "count_by",
    }
    assert all(properties[name].get("description") for name in properties)
    assert "$.edges[i]" in schema["description"]
    helped = evcli("tool", "query_traces", "--help")
    assert helped.exit_code == 0 and "--min-duration" in helped.stdout and "--errors-only" in helped.stdout


# --- a claim citing an edge: recorded, gated, re-derived ------------------------------------------------

EDGE = "edge checkout → payment: calls=3 errors=2 p50=60ms p90=800ms p99=800ms"


def _claim(text: str, raw_path: str, excerpt: str) -> dict[str, Any]:
    binding = {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": "query_traces",
        "source_invocation_id": 1,
        "raw_path": raw_path,
        "evidence_excerpt": excerpt,
    }
    return {
        "claim_id": "c1",
        "claim_type": "observation",
        "claim_text": text,
        "support_level": "direct",
        "evidence_bindings": [binding],
    }


CLAIM = _claim("checkout calls payment: 3 calls, 2 errors, p99=800ms", "$.edges[0]", EDGE)


def _gated_session(db: Path, env: Path, claim: dict[str, Any] = CLAIM) -> str:
    with TraceStore(db) as store:
        config = SessionConfig.model_validate({"task_scope": "broad", "env": {"env_dir": str(env)}})
        session_id = store.create_session("who calls payment?", config=config).session_id
    recorded = evcli("tool", "query_traces", "--service", "payment", "--session", session_id, "--db", db)
    assert recorded.exit_code == 0, recorded
    document = {"answer_version": "executor_evidence_v2", "claims": [claim]}
    document |= {"hypotheses": [], "recommended_actions": [], "missing_info": []}
    with TraceStore(db) as store:
        store.record_stage_output(session_id, StageOutput(stage="execute", output=document))
    return session_id


def test_a_claim_citing_an_edge_passes_the_gate_and_re_derives_from_the_snapshot(tmp_path):
    env, db = Path(shutil.copytree(ENV, tmp_path / "env")), tmp_path / "trace.db"
    session_id = _gated_session(db, env)
    passed = evcli("gate", session_id, "--db", db, "--json")
    assert passed.exit_code == 0, passed
    assert passed.json()["result"]["status"] == "pass"
    against = evcli("gate", session_id, "--db", db, "--against", env, "--json")
    assert against.exit_code == 0, against

    # the span file changes under the session: payment's first call no longer failed
    collector = env / "traces" / "collector.jsonl"
    collector.write_text(collector.read_text().replace('"status":{"code":2}', '"status":{"code":1}'))
    changed = evcli("gate", session_id, "--db", db, "--against", env, "--json")
    assert changed.exit_code == 4, changed
    assert "provenance.source_matches" in changed.json()["result"]["failed_rules"]


def test_a_tampered_edge_ref_or_a_wrong_count_is_rejected(tmp_path):
    db = tmp_path / "trace.db"
    session_id = _gated_session(db, ENV)
    exported = tmp_path / "session.json"
    assert evcli("export", session_id, "--output", exported, "--db", db).exit_code == 0
    document = json.loads(exported.read_text())
    (invocation,) = document["invocations"]
    for ref in invocation["retrieval_details"]["evidence_refs"]:
        if ref["raw_path"] == "$.edges[0]":
            ref["text"] = ref["text"].replace("errors=2", "errors=0")
    exported.write_text(json.dumps(document))
    tampered = evcli("gate", exported, "--json")
    assert tampered.exit_code == 4, tampered
    assert "invocation.refs_derivable" in tampered.json()["result"]["failed_rules"]

    wrong = _claim("checkout calls payment: 3 calls, 0 errors", "$.edges[0]", EDGE.replace("errors=2", "errors=0"))
    rejected = evcli("gate", _gated_session(tmp_path / "other.db", ENV, wrong), "--db", tmp_path / "other.db", "--json")
    assert rejected.exit_code == 4, rejected
