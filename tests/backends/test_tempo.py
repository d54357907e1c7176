"""`query_traces` on a live Grafana Tempo (`--tempo URL`): real HTTP to the loopback Tempo of
tests/backends/trace_servers.py, which serves the same known traces as the Jaeger tests in the shapes Tempo's
API answers (search summaries, then each trace as OTLP JSON under `batches` with base64 ids).

The values are those computed by hand in `trace_servers.dataset`; the service is searched with TraceQL where
Tempo has it and with a tag search on Tempo 1; ids are read as hex; a trace gone between the search and its
fetch is stated; failures are one line and a failed call; doctor reads Tempo's version (or its echo);
`gate --against URL` re-derives a stored session from Tempo and catches the source changing under it.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from evcli.backends.tempo import hex_id
from evcli.core.time import parse_range_text
from tests.backends.trace_servers import (
    TraceServer,
    dataset,
    failed,
    gate,
    gated_session,
    query,
    refs,
    serving,
)
from tests.cli._util import evcli

TRACE_4 = "4bf92f3577b34da6a3ce929d0e0e4704"
PAYMENT_EDGE = "edge checkout → payment: calls=5 errors=2 p50=80ms p90=900ms p99=900ms"


@pytest.fixture
def tempo() -> Iterator[TraceServer]:
    with serving(TraceServer("tempo", dataset(int(time.time() * 1_000_000)))) as server:
        yield server


def test_payment_spans_stats_and_its_caller_edge_have_the_hand_computed_values(tempo):
    found = refs(query("tempo", tempo.url, "--service", "payment"))

    assert found["$.edges[0]"] == PAYMENT_EDGE and "$.edges[1]" not in found
    assert found["$.spans[0]"].endswith(  # Tempo's base64 ids, read as hex
        f"duration=900ms status=error parent_service=checkout trace_id={TRACE_4} span_id=040300f067aa0ba9 (tempo)"
    )
    stats = found["$.stats"]
    assert stats.startswith("stats: 5 spans in 5 traces in ") and "(live default 1h); errors 2;" in stats
    assert "duration p50=80ms p90=900ms p99=900ms" in stats


def test_the_search_is_traceql_over_the_last_hour_in_seconds_then_each_trace_is_fetched(tempo):
    invocation = query("tempo", tempo.url, "--service", "inventory")

    searched = parse_range_text(invocation["retrieval_details"]["range"])
    start, end = searched.start, searched.end
    assert start is not None and end is not None
    assert end - start == timedelta(hours=1)
    (search,) = [request for request in tempo.requests if request["path"] == "/api/search"]
    assert search["params"] == {
        "limit": "100",
        "q": '{ resource.service.name = "inventory" || resource.service.name = "inventory-5d8b9c7f4-x2k4q" }',
        "start": str(int(start.timestamp())),  # rounded down
        "end": str(int(end.timestamp()) + (end.microsecond > 0)),  # rounded up
    }
    fetched = sorted(request["path"] for request in tempo.requests if request["path"].startswith("/api/traces/"))
    assert fetched == ["/api/traces/4bf92f3577b34da6a3ce929d0e0e4700", "/api/traces/4bf92f3577b34da6a3ce929d0e0e4703"]
    assert refs(invocation)["$.edges[0]"] == "edge checkout → inventory: calls=2 errors=0 p50=20ms p90=30ms p99=30ms"
    digested = sorted(invocation["output"]["digests"])
    assert digested[0].startswith(f"{tempo.url}/api/search?limit=100&q=") and digested[1:] == sorted(
        tempo.url + path for path in fetched
    )


def test_tempo_1_has_no_traceql_so_the_service_is_a_tag_search(tempo):
    tempo.tempo_version = None  # no /api/status/buildinfo; a `q` would be ignored and match every trace

    found = refs(query("tempo", tempo.url, "--service", "payment"))

    (search,) = [request for request in tempo.requests if request["path"] == "/api/search"]
    assert search["params"]["tags"] == "service.name=payment" and "q" not in search["params"]
    assert found["$.edges[0]"] == PAYMENT_EDGE


def test_the_call_graph_of_every_service_is_one_search(tempo):
    output = query("tempo", tempo.url)["output"]

    assert [(e["caller"], e["callee"], e["calls"], e["errors"]) for e in output["edges"]] == [
        ("checkout", "payment", 5, 2),
        ("gateway", "checkout", 5, 0),
        ("checkout", "inventory", 2, 0),
    ]
    (search,) = [request for request in tempo.requests if request["path"] == "/api/search"]
    assert "q" not in search["params"] and "tags" not in search["params"]


def test_a_trace_gone_between_search_and_fetch_is_stated_and_the_others_read(tempo):
    tempo.gone = {TRACE_4}

    invocation = query("tempo", tempo.url, "--service", "payment")

    assert (
        f"Tempo at {tempo.url}/api/traces/{TRACE_4} answered HTTP 404: the trace is gone"
        in (invocation["output"]["message"])
    )
    assert refs(invocation)["$.edges[0]"] == "edge checkout → payment: calls=4 errors=1 p50=60ms p90=700ms p99=700ms"


def test_base64_ids_are_hex_and_hex_ids_stay():
    assert hex_id(base64.b64encode(bytes.fromhex(TRACE_4)).decode()) == TRACE_4
    assert hex_id(base64.b64encode(bytes.fromhex("040300f067aa0ba9")).decode()) == "040300f067aa0ba9"
    assert hex_id(TRACE_4) == TRACE_4 and hex_id("040300f067aa0ba9") == "040300f067aa0ba9"
    assert hex_id("") == "" and hex_id("not base64!") == "not base64!"


# --- failures ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "fragment"),
    [
        (500, None, "answered HTTP 500: internal error: querier unavailable"),
        (None, b"{truncated", "returned invalid JSON"),
        (None, b'["not", "a", "search"]', "answered no search result (traces, metrics)"),
    ],
)
def test_a_failing_tempo_is_one_line_and_a_failed_call(tempo, status, body, fragment):
    tempo.status, tempo.body = status, body

    message = failed("tempo", tempo.url)

    assert fragment in message and tempo.url in message


def test_a_trace_of_another_shape_and_an_unknown_trace_are_one_line(tempo, closed_url):
    tempo.body = b'{"batches": "none"}'
    assert failed("tempo", tempo.url, "--trace-id", TRACE_4) == (
        f"Tempo at {tempo.url}/api/traces/{TRACE_4} answered 'batches' that is not a list: none"
    )
    tempo.body = None
    unknown = "0123456789abcdef"
    assert (
        failed("tempo", tempo.url, "--trace-id", unknown) == f"Tempo at {tempo.url} has no trace {unknown} (HTTP 404)"
    )
    assert "connection refused" in failed("tempo", closed_url)


def test_a_token_tempo_requires_is_http_401_when_missing(tempo):
    tempo.token = "tempo-secret"

    assert "answered HTTP 401" in failed("tempo", tempo.url, "--service", "payment")


# --- doctor and gate ---------------------------------------------------------------------------------------


def test_doctor_reads_tempos_version_or_its_echo(tempo):
    run = evcli("doctor", "--tempo", tempo.url, "--no-model-call", "--json")
    tempo.tempo_version = None
    older = evcli("doctor", "--tempo", tempo.url, "--no-model-call", "--json")

    assert run.exit_code == older.exit_code == 0, (run, older)
    row = next(row for row in run.json()["checks"] if row["check"] == "tempo")
    assert row["status"] == "ok" and row["detail"].startswith("version 2.6.1, ")
    row = next(row for row in older.json()["checks"] if row["check"] == "tempo")
    assert row["status"] == "ok" and row["detail"].startswith("ready (version unknown), ")
    assert tempo.requests[-1]["path"] == "/api/echo"


def test_a_stored_session_holds_against_tempo_until_its_traces_change(tempo, db_path):
    session_id = gated_session(db_path, "tempo", tempo.url, [("--service", "payment")])
    assert gate(session_id, "--db", db_path)[0] == 0

    code, report = gate(session_id, "--against", tempo.url, "--db", db_path)
    assert code == 0, report["result"]["errors"]
    assert report["sources_rechecked"] is True

    tempo.rows = [row for row in tempo.rows if row.trace_id != TRACE_4]  # a failed payment is gone from Tempo
    code, report = gate(session_id, "--against", tempo.url, "--db", db_path)

    assert code == 4
    errors = report["result"]["errors"]
    assert [(error["rule"], error["claim_id"]) for error in errors] == [("provenance.source_matches", "c1")]
    assert "the source has '…edge checkout → payment: calls=4 errors=1" in errors[0]["message"]
