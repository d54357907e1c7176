"""`query_traces` on a live Jaeger (`--jaeger URL`): real HTTP to the loopback Jaeger query service of
tests/backends/trace_servers.py, which serves a known set of traces in the shape Jaeger's query API answers.

Spans, stats and edges carry the values computed by hand in `trace_servers.dataset`; a call naming no time
searches the last hour (the two-hour-old failure is outside it) and records that range; a pod is its service;
every answer read is digested by URL; the token reaches Jaeger and nothing else; TLS takes a CA bundle;
every failure is one line and a failed call, never "no spans"; doctor checks Jaeger; `ask --jaeger` records
its trace calls; `gate --against URL` re-derives a stored session from Jaeger and catches a forged count.
"""

from __future__ import annotations

import hashlib
import json
import ssl
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from evcli.backends.jaeger import build
from evcli.backends.trace_graph import TraceQuery
from evcli.contracts import BackendSpec
from evcli.core.errors import BackendError
from evcli.core.time import parse_range_text
from evcli.store.db import TraceStore
from tests.backends.test_prometheus_secured import _self_signed
from tests.backends.trace_servers import (
    SpanRow,
    TraceServer,
    dataset,
    failed,
    gate,
    gated_session,
    query,
    refs,
    serving,
)
from tests.cli._util import evcli, import_sample

TRACE_3, TRACE_4 = "4bf92f3577b34da6a3ce929d0e0e4703", "4bf92f3577b34da6a3ce929d0e0e4704"
TOKEN_ENV = "EVCLI_TEST_JAEGER_TOKEN"
TOKEN = "jaeger-t0ken-5ecret"


@pytest.fixture
def jaeger() -> Iterator[TraceServer]:
    with serving(TraceServer("jaeger", dataset(int(time.time() * 1_000_000)))) as server:
        yield server


def test_payment_spans_stats_and_its_caller_edge_have_the_hand_computed_values(jaeger):
    found = refs(query("jaeger", jaeger.url, "--service", "payment"))

    assert found["$.edges[0]"] == "edge checkout → payment: calls=5 errors=2 p50=80ms p90=900ms p99=900ms"
    assert "$.edges[1]" not in found
    assert found["$.spans[0]"].startswith('span payment "charge" start=')
    assert found["$.spans[0]"].endswith(
        f"duration=900ms status=error parent_service=checkout trace_id={TRACE_4} span_id=040300f067aa0ba9 (jaeger)"
    )
    stats = found["$.stats"]
    assert stats.startswith("stats: 5 spans in 5 traces in ") and "(live default 1h); errors 2;" in stats
    assert "duration p50=80ms p90=900ms p99=900ms" in stats and stats.endswith("filters: service=payment")


def test_no_time_named_is_the_last_hour_recorded_and_asked_of_jaeger_in_microseconds(jaeger):
    before = datetime.now(UTC)
    invocation = query("jaeger", jaeger.url, "--service", "payment")
    after = datetime.now(UTC)

    details = invocation["retrieval_details"]
    searched = parse_range_text(details["range"])
    start, end = searched.start, searched.end
    assert start is not None and end is not None
    assert details["range_origin"] == "live default 1h" and end - start == timedelta(hours=1)
    assert before <= end <= after
    (search,) = [request for request in jaeger.requests if request["path"] == "/api/traces"]
    assert search["params"] == {
        "service": "payment",
        "limit": "100",
        "start": str(int(start.timestamp()) * 1_000_000 + start.microsecond),
        "end": str(int(end.timestamp()) * 1_000_000 + end.microsecond),
    }


def test_a_named_range_reaches_the_two_hour_old_failure(jaeger):
    found = refs(query("jaeger", jaeger.url, "--service", "payment", "--since", "-3h"))

    assert found["$.edges[0]"] == "edge checkout → payment: calls=6 errors=3 p50=80ms p90=5000ms p99=5000ms"
    assert "6 spans in 6 traces" in found["$.stats"] and "(question/call)" in found["$.stats"]


def test_the_call_graph_of_every_service_counts_each_trace_once(jaeger):
    output = query("jaeger", jaeger.url)["output"]

    assert [(e["caller"], e["callee"], e["calls"], e["errors"], e["p50_ms"], e["p99_ms"]) for e in output["edges"]] == [
        ("checkout", "payment", 5, 2, 80.0, 900.0),  # the most errors first
        ("gateway", "checkout", 5, 0, 150.0, 1000.0),  # then the slowest p99
        ("checkout", "inventory", 2, 0, 20.0, 30.0),  # one of the two from a pod of inventory
    ]
    assert output["stats"]["spans"] == 17 and output["stats"]["traces"] == 5  # each trace found by 4 searches
    searched = sorted(r["params"]["service"] for r in jaeger.requests if r["path"] == "/api/traces")
    assert searched == ["checkout", "gateway", "inventory", "inventory-5d8b9c7f4-x2k4q", "payment"]


def test_a_pod_name_is_its_service_and_every_name_of_it_is_searched(jaeger):
    found = refs(query("jaeger", jaeger.url, "--service", "inventory-5d8b9c7f4-x2k4q"))

    assert found["$.edges[0]"] == "edge checkout → inventory: calls=2 errors=0 p50=20ms p90=30ms p99=30ms"
    assert found["$.stats"].startswith("stats: 2 spans in 2 traces in ")
    searched = [r["params"]["service"] for r in jaeger.requests if r["path"] == "/api/traces"]
    assert searched == ["inventory", "inventory-5d8b9c7f4-x2k4q"]


def test_a_trace_id_is_its_spans_in_start_order(jaeger):
    output = query("jaeger", jaeger.url, "--trace-id", TRACE_3, "--since", "-2h")["output"]

    assert [(s["service"], s["parent_service"]) for s in output["spans"]] == [
        ("gateway", None),
        ("checkout", "gateway"),
        ("inventory", "checkout"),  # a pod of inventory
        ("payment", "checkout"),
    ]
    assert [r["path"] for r in jaeger.requests if r["path"].startswith("/api/traces")] == [f"/api/traces/{TRACE_3}"]


def test_each_answer_read_is_digested_by_its_url(jaeger):
    digests = query("jaeger", jaeger.url, "--service", "payment")["output"]["digests"]

    assert sorted(digests) == [
        f"{jaeger.url}/api/services",
        next(url for url in digests if url.startswith(f"{jaeger.url}/api/traces?service=payment&limit=100&start=")),
    ]
    for url, digest in digests.items():  # the same answers asked again: the server's data has not changed
        with urllib.request.urlopen(url, timeout=5) as response:
            assert digest == "sha256:" + hashlib.sha256(response.read()).hexdigest()


def test_the_trace_limit_makes_the_counts_a_lower_bound(jaeger):
    now = int(time.time() * 1_000_000)
    jaeger.rows = [
        SpanRow(f"{number + 1:032x}", f"{number + 1:016x}", "", "payment", "charge", now - number * 10**6, 5)
        for number in range(101)
    ]
    invocation = query("jaeger", jaeger.url, "--service", "payment")

    stats = refs(invocation)["$.stats"]
    assert stats.startswith("stats: at least 100 spans in 100 traces in ")
    assert "(a lower bound: the backend's trace limit was reached)" in stats
    assert invocation["output"]["truncated"] is True
    assert "Jaeger returned its limit of 100 traces for payment" in invocation["output"]["message"]


# --- failures: one line, a failed call, never "no spans" ----------------------------------------------


PAYMENT = ("--service", "payment")


@pytest.mark.parametrize(
    ("status", "body", "args", "fragment"),
    [
        (500, None, PAYMENT, "answered HTTP 500: internal error: querier unavailable"),
        (None, b"<html>not json", PAYMENT, "returned invalid JSON"),
        (None, b'{"data": {"traces": 1}}', PAYMENT, "answered 'data' that is not a list"),
        (None, b'{"data": null, "errors": [{"msg": "storage down"}]}', PAYMENT, "answered an error: storage down"),
        (None, b'{"data": [{"traceID": "ab", "spans": ["x"]}]}', ("--trace-id", "ab"), "spans of an unexpected shape"),
    ],
)
def test_a_failing_jaeger_is_one_line_and_a_failed_call(jaeger, status, body, args, fragment):
    jaeger.status, jaeger.body = status, body

    message = failed("jaeger", jaeger.url, *args)

    assert fragment in message and jaeger.url in message


def test_an_unreachable_jaeger_and_an_unknown_trace_are_one_line(jaeger, closed_url):
    assert "connection refused" in failed("jaeger", closed_url, "--service", "payment")
    unknown = "0123456789abcdef0123456789abcdef"
    assert (
        failed("jaeger", jaeger.url, "--trace-id", unknown)
        == f"Jaeger at {jaeger.url} has no trace {unknown} (HTTP 404)"
    )


def test_without_a_trace_backend_the_call_says_which_options_serve_traces(tmp_path):
    run = evcli("tool", "query_traces", "--loki", "http://127.0.0.1:9", "--json")

    assert run.exit_code == 1
    assert run.json()["error_message"] == "no trace backend configured: pass --jaeger or --tempo"


# --- auth and TLS ----------------------------------------------------------------------------------------


def _config(tmp_path, url: str) -> str:
    path = tmp_path / "evcli.toml"
    path.write_text(
        f'[backends.jaeger]\nurl = "{url}"\n[backends.jaeger.auth]\nkind = "bearer"\ntoken_env = "{TOKEN_ENV}"\n'
    )
    return str(path)


def test_the_token_reaches_jaeger_and_neither_the_output_nor_the_store(jaeger, tmp_path, monkeypatch, db_path):
    jaeger.token = TOKEN
    monkeypatch.setenv(TOKEN_ENV, TOKEN)

    invocation = query("jaeger", jaeger.url, "--config", _config(tmp_path, jaeger.url), "--service", "payment")
    asked = evcli("ask", "Who calls payment?", "--config", _config(tmp_path, jaeger.url), "--json")

    assert asked.exit_code in (0, 3), asked
    assert {request["authorization"] for request in jaeger.requests} == {f"Bearer {TOKEN}"}
    assert refs(invocation)["$.edges[0]"].startswith("edge checkout → payment: calls=5 errors=2")
    assert TOKEN not in json.dumps(invocation) and TOKEN not in asked.stdout
    stored = b"".join(path.read_bytes() for path in db_path.parent.glob(db_path.name + "*"))
    assert TOKEN.encode() not in stored and TOKEN_ENV.encode() in stored  # the variable's name, not its value


def test_a_wrong_token_is_http_401_in_one_line_with_the_token_masked(jaeger, tmp_path, monkeypatch):
    jaeger.token = TOKEN
    monkeypatch.setenv(TOKEN_ENV, "wrong-" + TOKEN)

    message = failed("jaeger", jaeger.url, "--config", _config(tmp_path, jaeger.url), "--service", "payment")

    assert "answered HTTP 401" in message and TOKEN not in message


def test_url_credentials_are_basic_auth_and_stay_out_of_the_recorded_urls(jaeger):
    with_password = jaeger.url.replace("http://", "http://oncall:pa55word@")

    invocation = query("jaeger", with_password, "--service", "payment")

    assert {request["authorization"] for request in jaeger.requests} == {"Basic b25jYWxsOnBhNTV3b3Jk"}
    assert "pa55word" not in json.dumps(invocation)
    assert all(url.startswith(jaeger.url + "/api/") for url in invocation["output"]["digests"])


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return _self_signed(tmp_path_factory.mktemp("jaeger-tls"))


def test_https_takes_the_ca_bundle_or_insecure_skip_verify_and_says_what_to_set(certificate):
    cert, key = certificate
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    payment = TraceQuery(service="payment", start_ns=0, end_ns=2**62)
    with serving(TraceServer("jaeger", dataset(int(time.time() * 1_000_000))), tls) as server:
        trusted = build(BackendSpec(url=server.url, ca_bundle=str(cert))).query(payment)
        skipped = build(BackendSpec(url=server.url, insecure_skip_verify=True)).query(payment)
        with pytest.raises(BackendError, match="TLS failed: .*set ca_bundle, or insecure_skip_verify = true"):
            build(BackendSpec(url=server.url)).query(payment)
        with pytest.raises(BackendError, match="the CA bundle .*missing.pem does not exist"):
            build(BackendSpec(url=server.url, ca_bundle=str(cert.parent / "missing.pem"))).query(payment)

    assert trusted.answer.total == skipped.answer.total == 6  # every payment span, the old failure too


# --- doctor, ask and gate ---------------------------------------------------------------------------------


def test_doctor_lists_jaegers_services_or_says_what_to_fix(jaeger, closed_url):
    run = evcli("doctor", "--jaeger", jaeger.url, "--no-model-call", "--json")
    down = evcli("doctor", "--jaeger", closed_url, "--no-model-call", "--json")

    assert run.exit_code == 0, run
    row = next(row for row in run.json()["checks"] if row["check"] == "jaeger")
    assert row["status"] == "ok" and row["target"] == jaeger.url
    assert row["detail"].startswith("5 services: checkout, gateway, inventory, inventory-5d8b9c7f4-x2k4q, payment, ")
    assert down.exit_code == 1
    failed_row = next(row for row in down.json()["checks"] if row["check"] == "jaeger")
    assert failed_row["status"] == "fail" and failed_row["remedy"] == (
        "start jaeger or fix backends.jaeger.url (EVCLI_JAEGER, --jaeger)"
    )


def test_ask_with_jaeger_records_its_trace_calls_served_by_jaeger(jaeger, db_path):
    asked = evcli("ask", "Which service is slow? payment fails", "--jaeger", jaeger.url, "--json")

    assert asked.exit_code in (0, 3), asked
    with TraceStore(db_path) as store:
        document = store.load(asked.json()["session_id"])
    assert document.run.config.env == {"jaeger": jaeger.url}
    traced = [invocation for invocation in document.invocations if invocation.tool_name == "query_traces"]
    assert traced and all(invocation.success for invocation in traced)
    texts = [
        ref["text"] for invocation in traced for ref in invocation.model_dump()["retrieval_details"]["evidence_refs"]
    ]
    assert "edge checkout → payment: calls=5 errors=2 p50=80ms p90=900ms p99=900ms" in texts
    assert all(url.startswith(jaeger.url) for invocation in traced for url in invocation.output["digests"])


def test_a_stored_session_holds_against_jaeger_and_a_forged_count_does_not(jaeger, db_path, tmp_path):
    """One call naming no time (re-run on the clock it ran on) and one naming a range (re-run pinned to it)."""
    calls = [("--service", "payment"), ("--service", "checkout", "--since", "-40m")]
    session_id = gated_session(db_path, "jaeger", jaeger.url, calls)
    assert gate(session_id, "--db", db_path)[0] == 0
    jaeger.requests.clear()

    code, report = gate(session_id, "--against", jaeger.url, "--db", db_path)

    assert code == 0, report["result"]["errors"]
    assert report["sources_rechecked"] is True and report["against"] == jaeger.url
    assert [binding["status"] for binding in report["result"]["checked_bindings"]] == ["pass", "pass"]
    with TraceStore(db_path) as store:
        recorded = [invocation.output["digests"] for invocation in store.load(session_id).invocations]
    asked_again = {
        f"{jaeger.url}/api/traces?" + "&".join(f"{key}={value}" for key, value in request["params"].items())
        for request in jaeger.requests
        if request["path"] == "/api/traces"
    }
    assert asked_again == {url for digests in recorded for url in digests if "/api/traces?" in url}

    exported = tmp_path / "session.json"
    assert evcli("export", session_id, "-o", exported, "--db", db_path).exit_code == 0
    document = json.loads(exported.read_text(encoding="utf-8"))
    invocation = document["invocations"][0]
    invocation["output"]["edges"][0]["errors"] = 1
    honest = invocation["retrieval_details"]["evidence_refs"]
    ref = next(ref for ref in honest if ref["raw_path"] == "$.edges[0]")
    ref["text"] = ref["text"].replace("errors=2", "errors=1")
    executed = next(stage for stage in document["stage_outputs"] if stage["stage"] == "execute")["output"]
    binding = executed["claims"][0]["evidence_bindings"][0]
    binding["evidence_excerpt"] = ref["text"]
    executed["claims"][0]["claim_text"] = executed["claims"][0]["claim_text"].replace("2 errors", "1 errors")
    document["run"]["session_id"] = "forged-" + session_id
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    stored = import_sample(forged, db_path)

    assert gate(stored, "--db", db_path)[0] == 0  # consistent in itself
    code, report = gate(stored, "--against", jaeger.url, "--db", db_path)

    assert code == 4
    errors = report["result"]["errors"]
    assert [(error["rule"], error["claim_id"]) for error in errors] == [("provenance.source_matches", "c1")]
    assert f"$.edges[0] does not match its source at {jaeger.url}" in errors[0]["message"]


def test_calls_made_after_the_session_are_outside_the_hour_it_re_derives(jaeger, db_path):
    """The call named no time: it is re-run on the clock it ran on, not on the hour before the gate runs."""
    session_id = gated_session(db_path, "jaeger", jaeger.url, [("--service", "payment")])
    later = int(time.time() * 1_000_000) + 1_000
    jaeger.rows += [  # checkout → payment once more, failing, after the call
        SpanRow("e" * 32, "e" * 16, "", "checkout", "POST /checkout", later, 1500),
        SpanRow("e" * 32, "f" * 16, "e" * 16, "payment", "charge", later + 10, 1400, True),
    ]
    assert refs(query("jaeger", jaeger.url, "--service", "payment"))["$.edges[0]"].startswith(
        "edge checkout → payment: calls=6 errors=3"
    )

    assert gate(session_id, "--against", jaeger.url, "--db", db_path)[0] == 0
