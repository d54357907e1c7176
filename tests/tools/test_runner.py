"""run_tool end to end on the packaged demo snapshot and on failing live backends: result shapes,
evidence refs and status, no-evidence vs failed vs truncated, knowledge dedup, unknown services
and aliases, and secret masking all the way into the SQLite file."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import socket
import sqlite3
import threading
import time
import tomllib
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evcli.backends.snapshot import demo_env_dir
from evcli.contracts import NO_EVIDENCE_PATH, ToolInvocation
from evcli.core.redaction import ENV_EXTRA_PATTERNS, Redactor
from evcli.store.db import TraceStore
from evcli.tools.context import build_environment
from evcli.tools.fetch import TRUNCATION_MARK
from evcli.tools.runner import SessionView, ToolSettings, run_tool
from evcli.tools.view import model_view

DEMO = demo_env_dir()
DEMO_NOW = datetime(2026, 7, 8, 23, 10, tzinfo=UTC)  # env.toml `now`
LOG_KEYS = {"timestamp", "level", "level_derived", "service", "instance", "message", "line", "source"}
# issue 13: "samples" ([unix seconds, value] per point) so a report can chart the series
SERIES_KEYS = {
    "service",
    "metric",
    "range",
    "points",
    "min",
    "min_at",
    "max",
    "max_at",
    "last",
    "last_at",
    "unit",
    "samples",
}
ALERT_KEYS = {
    "alertname",
    "service",
    "instance",
    "severity",
    "state",
    "value",
    "unit",
    "active_at",
    "duration",
    "summary",
    "labels",
}
BLOCK_KEYS = {"doc", "title", "heading", "text", "relevance_level", "score", "layer"}
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))?")


# --- helpers -------------------------------------------------------------------------------


@pytest.fixture
def demo():
    return build_environment()


@pytest.fixture
def store(db_path):
    with TraceStore(db_path) as trace_store:
        yield trace_store


def as_json(invocation: ToolInvocation) -> str:
    return json.dumps(invocation.model_dump(mode="json"), ensure_ascii=False)


def refs_of(invocation: ToolInvocation) -> list[tuple[str, str]]:
    return [(ref.raw_path, ref.text) for ref in invocation.retrieval_details.evidence_refs]


def quoted(text: str) -> str:
    return text.replace("<", "‹").replace(">", "›")


def expected_log_matches(name: str, keyword: str, window: timedelta) -> list[tuple[datetime, str]]:
    """Lines of a demo .log holding the keyword inside the window; stack-trace lines take the time
    of the line before them. Worked out from the file, independently of the backend."""
    start = DEMO_NOW - window
    matches, current = [], None
    for line in (DEMO / "logs" / name).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        stamp = _STAMP.match(line)
        if stamp:
            current = datetime.fromisoformat(f"{stamp[1]}T{stamp[2]}+00:00")
        if keyword.lower() in line.lower() and current is not None and start <= current <= DEMO_NOW:
            matches.append((current, line))
    return matches


def csv_stats(service: str, column: str, window: timedelta) -> tuple[float, float, float]:
    start = DEMO_NOW - window
    with (DEMO / "metrics" / f"{service}.csv").open(encoding="utf-8") as handle:
        rows = [(datetime.fromisoformat(row["timestamp"]), float(row[column])) for row in csv.DictReader(handle)]
    values = [value for moment, value in rows if start <= moment <= DEMO_NOW]
    return min(values), max(values), values[-1]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def hanging_server():
    """A loopback HTTP server that accepts requests and does not answer until teardown."""
    release = threading.Event()

    class Hang(BaseHTTPRequestHandler):
        def do_GET(self):
            release.wait(20)
            self.send_response(503)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hang)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


# --- result shapes -------------------------------------------------------------------------------


def test_query_logs_result_shape_and_refs(demo):
    invocation = run_tool("query_logs", {"service": "order-service", "query": "HikariPool", "window": "30m"}, demo)
    expected = expected_log_matches("order-service.log", "HikariPool", timedelta(minutes=30))
    assert len(expected) > 5

    output = invocation.output
    assert set(output) == {
        "logs", "stats", "patterns", "total", "truncated", "message", "searched_range", "digests"
    }  # fmt: skip
    assert output["total"] == len(expected) == len(output["logs"])
    assert output["truncated"] is False
    assert output["message"] == f"{len(expected)} matching lines"
    for log in output["logs"]:
        assert set(log) == LOG_KEYS
        assert log["service"] == "order-service"
        assert re.fullmatch(r"2026-07-08T\d\d:\d\d:\d\d\.\d{3}\+00:00", log["timestamp"])
        assert "hikaripool" in log["message"].lower()
        # provenance: the cited line is the line of the file (grep finds it)
        source_lines = (DEMO / log["source"]["path"]).read_text(encoding="utf-8").splitlines()
        assert Redactor().mask_text(source_lines[log["source"]["line"] - 1]) == log["line"]  # secrets stay masked
    assert [log["timestamp"] for log in output["logs"]] == sorted(log["timestamp"] for log in output["logs"])

    first_error = next(log for log in output["logs"] if log["timestamp"] == "2026-07-08T23:05:28.114+00:00")
    assert first_error["level"] == "ERROR"
    assert first_error["instance"] == "order-service-5c8d7f9b-qm4tz"
    assert "HikariPool-1 - Connection is not available" in first_error["message"]

    details = invocation.retrieval_details
    assert details.evidence_status == "supported"
    assert invocation.success and invocation.error_message is None
    # one ref per line (provenance, time with zone, the original line), then the stats and the patterns
    paths = [path for path, _ in refs_of(invocation)]
    assert paths == [f"$.logs[{i}]" for i in range(len(output["logs"]))] + ["$.stats"] + [
        f"$.patterns[{i}]" for i in range(len(output["patterns"]))
    ]
    index = output["logs"].index(first_error)
    assert refs_of(invocation)[index][1] == (
        f"logs/order-service.log:{first_error['source']['line']} 2026-07-08T23:05:28.114+00:00 ERROR "
        "2026-07-08 23:05:28.114 ERROR [order-service-5c8d7f9b-qm4tz] "
        "com.zaxxer.hikari.pool.HikariPool - HikariPool-1 - Connection is not available, request timed out after "
        "30000ms (total=50, active=50, idle=0, waiting=23)"
    )
    stats = dict(refs_of(invocation))["$.stats"]
    assert stats.startswith(  # 9 records: the first timeout's exception and two frames belong to its line
        f"stats: {len(expected)} matching lines in 9 records, in 2026-07-08T22:40:00+00:00..2026-07-08T23:10:00+00:00"
        " (question/call); "
    )
    assert stats.endswith('; filters: service=order-service keywords="HikariPool"')
    # the query scope, with the absolute range searched
    assert (details.service, details.keywords, details.window, details.limit, details.truncated) == (
        "order-service",
        ["HikariPool"],
        "30m",
        50,
        False,
    )
    assert (details.range, details.range_origin) == (
        "2026-07-08T22:40:00+00:00..2026-07-08T23:10:00+00:00",
        "question/call",
    )
    assert output["searched_range"] == details.range
    assert output["digests"] == {
        "logs/order-service.log": "sha256:"
        + hashlib.sha256((DEMO / "logs" / "order-service.log").read_bytes()).hexdigest()
    }
    assert invocation.input_params == {"service": "order-service", "query": "HikariPool", "window": "30m", "limit": 50}


def test_query_logs_quoted_phrase_is_one_keyword(demo):
    invocation = run_tool(
        "query_logs", {"service": "order-service", "query": '"Connection is not available" waiting=25'}, demo
    )
    assert invocation.retrieval_details.keywords == ["Connection is not available", "waiting=25"]
    messages = [log["message"] for log in invocation.output["logs"]]
    assert messages and all("Connection is not available" in m and "waiting=25" in m for m in messages)


def test_query_logs_level_is_a_minimum(demo):
    errors = run_tool("query_logs", {"service": "order-service", "level": "ERROR", "window": "1h", "limit": 500}, demo)
    warnings = run_tool("query_logs", {"service": "order-service", "level": "WARN", "window": "1h", "limit": 500}, demo)
    assert {log["level"] for log in errors.output["logs"]} <= {"ERROR", "FATAL"}
    assert {log["level"] for log in warnings.output["logs"]} >= {"WARN", "ERROR"}
    assert warnings.output["total"] > errors.output["total"] > 0


def test_query_metrics_result_shape_and_refs(demo):
    invocation = run_tool("query_metrics", {"service": "payment-service", "window": "30m"}, demo)
    output = invocation.output
    assert {"alerts", "series", "total", "truncated", "message"} <= set(output)

    assert len(output["alerts"]) == 1
    alert = output["alerts"][0]
    assert set(alert) == ALERT_KEYS
    assert (alert["alertname"], alert["service"], alert["state"], alert["value"], alert["unit"], alert["duration"]) == (
        "HighCPUUsage",
        "payment-service",
        "firing",
        92.0,
        "%",
        "25m",
    )

    with (DEMO / "metrics" / "payment-service.csv").open(encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert [series["metric"] for series in output["series"]] == [re.sub(r"\[.*\]$", "", h) for h in header[1:]]
    for series in output["series"]:
        assert set(series) == SERIES_KEYS
        assert series["service"] == "payment-service"
        assert series["range"] == "2026-07-08T22:40:00+00:00..2026-07-08T23:10:00+00:00"
    cpu = output["series"][0]
    low, high, last = csv_stats("payment-service", "cpu_usage[%]", timedelta(minutes=30))
    assert (cpu["metric"], cpu["min"], cpu["max"], cpu["last"], cpu["unit"]) == ("cpu_usage", low, high, last, "%")
    assert output["total"] == 1 + len(output["series"])

    refs = refs_of(invocation)
    assert [path for path, _ in refs] == ["$.alerts[0]"] + [f"$.series[{i}]" for i in range(len(output["series"]))]
    assert refs[0][1] == (
        "HighCPUUsage, service=payment-service, instance=payment-service-7d9f8b6c4-x2k9p, severity=warning, "
        "state=firing, current=92%, duration=25m, active_at=2026-07-08T22:45:00Z, "
        "summary=CPU usage of payment-service is 92% (threshold 80%)"
    )
    assert refs[1][1] == (
        f"payment-service cpu_usage range=2026-07-08T22:40:00+00:00..2026-07-08T23:10:00+00:00 points={cpu['points']} "
        f"min={low:g}% at {cpu['min_at']} max={high:g}% at {cpu['max_at']} last={last:g}% at {cpu['last_at']}"
    )
    details = invocation.retrieval_details
    assert details.evidence_status == "supported"
    assert (details.service, details.keywords, details.window, details.truncated) == (
        "payment-service",
        [],
        "30m",
        False,
    )
    assert (details.range, details.range_origin) == (
        "2026-07-08T22:40:00+00:00..2026-07-08T23:10:00+00:00",
        "question/call",
    )


def test_query_metrics_alertname_and_metric_filter(demo):
    invocation = run_tool(
        "query_metrics", {"alertname": "HighMemoryUsage", "metric": "heap_used", "window": "1h"}, demo
    )
    assert [alert["alertname"] for alert in invocation.output["alerts"]] == ["HighMemoryUsage"]
    assert {series["metric"] for series in invocation.output["series"]} == {"heap_used"}
    assert invocation.retrieval_details.keywords == ["HighMemoryUsage", "heap_used"]
    assert invocation.retrieval_details.window == "1h"


def test_lookup_knowledge_result_shape_and_refs(demo):
    invocation = run_tool("lookup_knowledge", {"query": "heap dump OOMKilled"}, demo)
    blocks = invocation.output["evidence_blocks"]
    assert 0 < len(blocks) <= 5
    for block in blocks:
        assert set(block) == BLOCK_KEYS  # where the index found it is not evidence
        assert block["relevance_level"] in ("PRECISE", "HIGHLY_RELEVANT", "REFERENCE")
        assert block["layer"] in ("L0", "L1")
        assert isinstance(block["score"], float)
    assert blocks[0]["doc"] == "runbooks/high-memory.md"
    assert invocation.output["total"] == len(blocks)
    assert invocation.output["layers"] == {
        "L0": sum(b["layer"] == "L0" for b in blocks),
        "L1": sum(b["layer"] == "L1" for b in blocks),
    }
    assert [block["score"] for block in blocks] == sorted((block["score"] for block in blocks), reverse=True)
    refs = refs_of(invocation)
    assert refs == [
        (f"$.evidence_blocks[{i}]", f"{b['doc']} › {b['heading']}: {b['text']}") for i, b in enumerate(blocks)
    ]
    order = ("PRECISE", "HIGHLY_RELEVANT", "REFERENCE")
    assert invocation.relevance_level == min((b["relevance_level"] for b in blocks), key=order.index)
    details = invocation.retrieval_details
    assert (details.evidence_status, details.keywords, details.limit, details.window) == (
        "supported",
        ["heap", "dump", "OOMKilled"],
        5,
        None,
    )


def test_lookup_knowledge_alert_hint_is_l0_precise(demo):
    invocation = run_tool("lookup_knowledge", {"query": "what to check", "alertname": "HighCPUUsage"}, demo)
    first = invocation.output["evidence_blocks"][0]
    assert (first["doc"], first["layer"], first["relevance_level"]) == ("runbooks/high-cpu.md", "L0", "PRECISE")
    assert invocation.relevance_level == "PRECISE"


def test_model_view_shows_every_ref_and_no_raw_output(demo):
    invocation = run_tool("query_metrics", {"service": "order-service"}, demo)
    view = model_view(invocation)
    lines = view.splitlines()
    assert lines[0] == '<evidence invocation="unrecorded" tool="query_metrics" status="supported">'
    assert lines[1] == "call: query_metrics(service='order-service')"
    assert lines[2:-1] == [f"{path}: {quoted(text)}" for path, text in refs_of(invocation)]
    assert lines[-1] == "</evidence>"
    assert '"labels"' not in view and "namespace" not in view  # raw output fields stay out


# --- no evidence, failed, truncated ------------------------------------------------------------


def test_zero_hits_is_no_evidence_with_one_ref_naming_tool_query_scope_and_total(demo):
    invocation = run_tool("query_logs", {"service": "inventory-service", "query": "HikariCP", "window": "30m"}, demo)
    assert invocation.success
    assert invocation.output["logs"] == [] and invocation.output["total"] == 0
    assert invocation.output["truncated"] is False
    details = invocation.retrieval_details
    assert details.evidence_status == "no_evidence"
    assert (details.service, details.keywords, details.window, details.limit, details.truncated) == (
        "inventory-service",
        ["HikariCP"],
        "30m",
        50,
        False,
    )
    [(path, text)] = refs_of(invocation)
    assert path == NO_EVIDENCE_PATH
    assert text.startswith("query_logs returned no evidence; evidence_status=no_evidence; ")
    assert (details.range, details.range_origin) == (
        "2026-07-08T22:40:00+00:00..2026-07-08T23:10:00+00:00",
        "question/call",
    )
    for fragment in (
        "query=inventory-service HikariCP",
        "window=30m; range=2026-07-08T22:40:00+00:00..2026-07-08T23:10:00+00:00 (question/call)",
        "total=0",
    ):
        assert fragment in text
    assert f"{NO_EVIDENCE_PATH}: {text}" in model_view(invocation)
    assert 'status="no_evidence"' in model_view(invocation)


@pytest.mark.parametrize(
    ("tool", "params", "fragment"),
    [
        (  # absolute times with zone also when nothing matched (issue 9): the demo's first line..its clock
            "query_metrics",
            {"alertname": "RedisLatencyHigh"},
            "query=RedisLatencyHigh; range=2026-07-08T22:30:00+00:00..2026-07-08T23:10:00+00:00 (whole snapshot); total=0",
        ),
        ("lookup_knowledge", {"query": "zzqqxxyy"}, "query=zzqqxxyy; total=0"),
        (
            "query_logs",
            {"service": "payment-service", "level": "FATAL", "query": "Redis"},
            "query=payment-service Redis",
        ),
    ],
)
def test_each_tool_reports_zero_hits_as_no_evidence(demo, tool, params, fragment):
    invocation = run_tool(tool, params, demo)
    assert invocation.retrieval_details.evidence_status == "no_evidence"
    [(path, text)] = refs_of(invocation)
    assert path == NO_EVIDENCE_PATH
    assert text.startswith(f"{tool} returned no evidence")
    assert fragment in text and "total=0" in text


@pytest.mark.parametrize(
    ("tool", "params", "backend", "path"),
    [
        ("query_metrics", {"service": "payment-service"}, "prometheus", "/api/v1/"),
        ("query_metrics", {"alertname": "HighCPUUsage"}, "alertmanager", "/api/v2/alerts"),
        ("query_logs", {"service": "payment-service", "query": "timeout"}, "loki", "/loki/api/v1/query_range"),
    ],
)
def test_unreachable_backend_is_failed_never_no_evidence(store, tool, params, backend, path):
    port = closed_port()
    env = build_environment(**{backend: f"http://127.0.0.1:{port}"})
    invocation = run_tool(tool, params, env)
    assert invocation.success is False
    assert invocation.retrieval_details.evidence_status == "failed"
    assert invocation.retrieval_details.evidence_refs == []
    assert f"127.0.0.1:{port}{path}" in invocation.error_message
    assert "connection refused" in invocation.error_message
    assert invocation.output == {"error": invocation.error_message}
    assert "no_evidence" not in as_json(invocation)
    view = model_view(invocation)
    assert 'status="failed"' in view and f"error: {invocation.error_message}" in view
    assert NO_EVIDENCE_PATH not in view
    # and it is stored that way
    session = store.create_session("failed backend").session_id
    stored = store.record_invocation(session, invocation)
    assert store.load(session).invocations == [stored]
    assert stored.retrieval_details.evidence_refs == []


def test_backend_that_does_not_answer_times_out_as_failed(hanging_server):
    env = build_environment(prometheus=hanging_server, settings=ToolSettings(timeout_s=0.3))
    started = time.monotonic()
    invocation = run_tool("query_metrics", {"service": "payment-service"}, env)
    assert time.monotonic() - started < 5
    assert invocation.success is False
    assert invocation.error_message == "timed out after 0.3s"
    assert invocation.retrieval_details.evidence_status == "failed"
    assert invocation.retrieval_details.evidence_refs == []
    assert NO_EVIDENCE_PATH not in model_view(invocation)


def test_truncated_query_is_supported_and_never_no_evidence(demo):
    expected = expected_log_matches("order-service.log", "HikariPool", timedelta(minutes=30))
    params = {"service": "order-service", "query": "HikariPool", "limit": 1, "window": "30m"}
    invocation = run_tool("query_logs", params, demo)
    output = invocation.output
    assert output["total"] == len(expected) > 1
    assert output["truncated"] is True
    assert len(output["logs"]) == 1
    newest_time, newest_line = expected[-1]
    assert output["logs"][0]["timestamp"].startswith(newest_time.strftime("%Y-%m-%dT%H:%M:%S"))
    assert output["logs"][0]["message"] in newest_line
    assert output["message"] == f"{len(expected)} matching lines (newest 1 returned)"
    details = invocation.retrieval_details
    assert details.evidence_status == "supported"
    assert details.truncated is True and details.limit == 1
    assert [path for path, _ in refs_of(invocation)][:2] == ["$.logs[0]", "$.stats"]
    assert NO_EVIDENCE_PATH not in as_json(invocation)
    assert "truncated: true" in model_view(invocation)


def test_item_cap_truncates_metrics(demo):
    env = build_environment(settings=ToolSettings(max_items=2))
    invocation = run_tool("query_metrics", {"service": "payment-service"}, env)
    assert invocation.output["total"] == 5
    assert invocation.output["truncated"] is True and invocation.retrieval_details.truncated is True
    assert [path for path, _ in refs_of(invocation)] == ["$.alerts[0]", "$.series[0]"]
    assert invocation.retrieval_details.evidence_status == "supported"


def test_over_long_text_is_cut_and_flagged():
    env = build_environment(settings=ToolSettings(max_text_chars=40))
    invocation = run_tool("query_logs", {"service": "order-service", "query": "HikariPool"}, env)
    messages = [log["message"] for log in invocation.output["logs"]]
    assert messages and all(len(m) <= 40 + len(TRUNCATION_MARK) for m in messages)
    assert any(m.endswith(TRUNCATION_MARK) for m in messages)
    assert invocation.output["truncated"] is True
    assert invocation.retrieval_details.truncated is True
    assert invocation.retrieval_details.evidence_status == "supported"


def test_a_truncated_query_with_nothing_returned_is_not_no_evidence():
    env = build_environment(settings=ToolSettings(max_items=0))
    invocation = run_tool("query_metrics", {"service": "payment-service"}, env)
    assert invocation.output["truncated"] is True
    assert invocation.retrieval_details.evidence_status != "no_evidence"
    assert NO_EVIDENCE_PATH not in as_json(invocation)


# --- knowledge dedup ---------------------------------------------------------------------------------


def test_blocks_already_returned_in_the_session_come_back_deduped(demo, store):
    session = store.create_session("dedup").session_id
    store.record_invocation(session, run_tool("query_metrics", {"service": "order-service"}, demo))
    earlier = store.record_invocation(session, run_tool("lookup_knowledge", {"query": "heap dump OOMKilled"}, demo))
    assert earlier.invocation_id == 2
    view = SessionView(invocations=store.load(session).invocations)

    again = run_tool("lookup_knowledge", {"query": "OOMKilled heap dump"}, demo, view)
    assert again.success
    assert again.retrieval_details.evidence_status == "deduped"
    assert again.output["evidence_blocks"] == []
    assert again.retrieval_details.evidence_refs == []  # no refs, and certainly no $.no_evidence
    assert NO_EVIDENCE_PATH not in as_json(again)
    for block in earlier.output["evidence_blocks"]:
        assert f"{block['doc']} › {block['heading']} already returned by invocation #2" in again.dedup_reason
    assert (
        again.output["message"]
        == f"0 blocks, {len(earlier.output['evidence_blocks'])} already returned in this session"
    )
    assert f"deduped: {again.dedup_reason}" in model_view(again)
    assert 'status="deduped"' in model_view(again)

    stored = store.record_invocation(session, again)
    assert store.load(session).invocations[-1].dedup_reason == stored.dedup_reason


def test_only_new_blocks_are_returned_when_some_were_seen(demo, store):
    session = store.create_session("dedup").session_id
    earlier = store.record_invocation(session, run_tool("lookup_knowledge", {"query": "heap dump OOMKilled"}, demo))
    seen = {(b["doc"], b["heading"], b["text"]) for b in earlier.output["evidence_blocks"]}
    wider = run_tool(
        "lookup_knowledge", {"query": "heap dump OOMKilled", "limit": 10}, demo, SessionView(invocations=[earlier])
    )
    fresh = wider.output["evidence_blocks"]
    assert fresh, "the wider lookup should find blocks not returned before"
    assert not {(b["doc"], b["heading"], b["text"]) for b in fresh} & seen
    assert wider.retrieval_details.evidence_status == "supported"
    assert "already returned by invocation #1" in wider.dedup_reason
    assert [path for path, _ in refs_of(wider)] == [f"$.evidence_blocks[{i}]" for i in range(len(fresh))]


def test_no_dedup_without_the_earlier_invocation(demo):
    first = run_tool("lookup_knowledge", {"query": "heap dump OOMKilled"}, demo)
    second = run_tool("lookup_knowledge", {"query": "OOMKilled heap dump"}, demo)
    assert second.retrieval_details.evidence_status == "supported"
    assert second.output["evidence_blocks"] == first.output["evidence_blocks"]
    assert second.dedup_reason is None


def test_a_block_masked_when_first_returned_is_still_deduped(tmp_path, store):
    runbooks = tmp_path / "snapshot" / "runbooks"
    runbooks.mkdir(parents=True)
    (runbooks / "db.md").write_text(
        "# Database credentials rotation\n\n## Steps\n\n"
        "Rotate the pool user in the vault; the new setting is password=changeme and the old one expires.\n",
        encoding="utf-8",
    )
    env = build_environment(tmp_path / "snapshot")
    session = store.create_session("dedup masked").session_id
    first = store.record_invocation(session, run_tool("lookup_knowledge", {"query": "rotate vault"}, env))
    assert "password=***" in first.output["evidence_blocks"][0]["text"]
    again = run_tool("lookup_knowledge", {"query": "vault rotation"}, env, SessionView(invocations=[first]))
    assert again.retrieval_details.evidence_status == "deduped"


# --- services: unknown and aliases ------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["query_logs", "query_metrics"])
def test_unknown_service_is_no_evidence_naming_close_matches(demo, tool):
    invocation = run_tool(tool, {"service": "inventry-service"}, demo)
    assert invocation.success
    details = invocation.retrieval_details
    assert details.evidence_status == "no_evidence"
    assert details.model_dump().get("unknown_service") is True
    message = invocation.output["message"]
    assert message.startswith("unknown service 'inventry-service'")
    assert "inventory-service" in message.removeprefix("unknown service 'inventry-service'")
    [(path, text)] = refs_of(invocation)
    assert path == NO_EVIDENCE_PATH
    assert "unknown service 'inventry-service'" in text and "close names: inventory-service" in text


def test_unknown_service_without_close_match(demo):
    invocation = run_tool("query_logs", {"service": "billing-gateway"}, demo)
    assert invocation.retrieval_details.evidence_status == "no_evidence"
    assert invocation.output["message"].startswith("unknown service 'billing-gateway'")
    assert "close names" not in invocation.output["message"]


def _ascii_aliases() -> list[tuple[str, str]]:
    config = tomllib.loads((DEMO / "env.toml").read_text(encoding="utf-8"))
    pairs = [(alias, service) for service, table in config["services"].items() for alias in table["aliases"]]
    assert len(pairs) >= 10
    return [(alias, service) for alias, service in pairs if alias.isascii()]


@pytest.mark.parametrize(("alias", "service"), _ascii_aliases())
def test_aliases_of_env_toml_resolve(demo, alias, service):
    logs = run_tool("query_logs", {"service": alias, "window": "1h", "limit": 5}, demo)
    assert logs.retrieval_details.evidence_status == "supported"
    assert {log["service"] for log in logs.output["logs"]} == {service}
    metrics = run_tool("query_metrics", {"service": alias}, demo)
    assert {series["service"] for series in metrics.output["series"]} == {service}


def test_service_names_are_case_insensitive(demo):
    invocation = run_tool("query_metrics", {"service": "PAYMENT-Service"}, demo)
    assert [alert["service"] for alert in invocation.output["alerts"]] == ["payment-service"]


def test_chinese_alias_of_env_toml_resolves(demo):
    invocation = run_tool("query_logs", {"service": "支付服务", "query": "timeout"}, demo)
    assert {log["service"] for log in invocation.output["logs"]} == {"payment-service"}


# --- secrets ---------------------------------------------------------------------------------------

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJwYXltZW50LXNlcnZpY2UiLCJzY29wZSI6ImNoYXJnZSIsImV4cCI6"
    "MTc4MzU1MjgwMH0.Zm9yLWRlbW8tb25seS1ub3QtYS1yZWFsLXNpZ25hdHVyZQ"
)
SECRETS = ("hunter2", "s3cr3t", JWT, JWT.split(".")[0], JWT.split(".")[1], JWT.split(".")[2])
SECRET_QUERIES = [
    ({"service": "order-service", "query": "HikariDataSource Starting", "window": "1h"}, "password=***"),
    ({"service": "user-service", "query": "reconnecting", "window": "1h"}, "jdbc:mysql://app:***@mysql-primary-01"),
    ({"service": "payment-service", "query": "GatewayClient", "window": "1h"}, "Authorization: Bearer ***"),
]


def test_demo_files_really_hold_the_secrets():
    text = "".join(path.read_text(encoding="utf-8") for path in (DEMO / "logs").iterdir())
    for secret in SECRETS:
        assert secret in text


def stored_bytes(db: Path) -> bytes:
    return b"".join(path.read_bytes() for path in (db, Path(f"{db}-wal")) if path.exists())


def all_rows_text(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return repr([conn.execute(f"SELECT * FROM [{table}]").fetchall() for table in tables])


@pytest.mark.parametrize(("params", "masked"), SECRET_QUERIES)
def test_secrets_are_masked_in_output_refs_view_and_store(demo, db_path, params, masked):
    invocation = run_tool("query_logs", params, demo)
    assert invocation.retrieval_details.evidence_status == "supported"
    ref_texts = [text for _, text in refs_of(invocation)]
    assert any(masked in text for text in ref_texts), ref_texts  # the line was found, with the secret masked

    shown = [as_json(invocation), invocation.output_preview, model_view(invocation), *ref_texts]
    for secret in SECRETS:
        for text in shown:
            assert secret not in text

    with TraceStore(db_path) as trace_store:
        session = trace_store.create_session("secrets").session_id
        recorded = trace_store.record_invocation(session, invocation)
        on_disk = stored_bytes(db_path)  # WAL still open: the rows are there
        loaded = trace_store.load(session).invocations[0]
    assert loaded == recorded
    on_disk += stored_bytes(db_path)
    rows = all_rows_text(db_path)
    assert masked in rows
    for secret in SECRETS:
        assert secret.encode() not in on_disk
        assert secret not in rows


def test_extra_secret_patterns_from_the_environment(monkeypatch, db_path):
    monkeypatch.setenv(ENV_EXTRA_PATTERNS, json.dumps(["PAY-[0-9]{6}"]))
    env = build_environment()
    invocation = run_tool("query_logs", {"service": "payment-service", "query": "authorized", "window": "1h"}, env)
    messages = [log["message"] for log in invocation.output["logs"]]
    assert messages and all("payment *** authorized" in m for m in messages)
    payment_id = re.compile(r"PAY-\d{6}")
    assert not payment_id.search(as_json(invocation))
    assert not payment_id.search(model_view(invocation))
    with TraceStore(db_path) as trace_store:
        trace_store.record_invocation(trace_store.create_session("extra").session_id, invocation)
        assert not payment_id.search(stored_bytes(db_path).decode("utf-8", "replace"))
    # the built-in patterns still apply alongside
    bearer = run_tool("query_logs", {"service": "payment-service", "query": "GatewayClient", "window": "1h"}, env)
    assert JWT.split(".")[0] not in as_json(bearer)


def test_backend_error_messages_are_masked(monkeypatch):
    port = closed_port()
    monkeypatch.setenv(ENV_EXTRA_PATTERNS, json.dumps([f"127\\.0\\.0\\.1:{port}"]))
    invocation = run_tool(
        "query_logs", {"service": "payment-service"}, build_environment(loki=f"http://127.0.0.1:{port}")
    )
    assert invocation.retrieval_details.evidence_status == "failed"
    assert f"127.0.0.1:{port}" not in as_json(invocation)
    assert "***" in invocation.error_message


@pytest.mark.parametrize("service", ["order-service", "inventory-service"])
def test_secrets_in_query_parameters_are_masked_everywhere(demo, db_path, service):
    invocation = run_tool("query_logs", {"service": service, "query": "password=hunter2"}, demo)
    assert invocation.input_params["query"] == "password=***"
    with TraceStore(db_path) as trace_store:
        trace_store.record_invocation(trace_store.create_session("q").session_id, invocation)
        on_disk = stored_bytes(db_path)
    assert "hunter2" not in model_view(invocation)
    assert "hunter2" not in as_json(invocation)
    assert b"hunter2" not in on_disk
