"""traces/ of a snapshot: each format read from the hand-written files of tests/backends/traces_env (OTLP
file-exporter lines, a Jaeger UI export, Zipkin v2, a CSV span table), pods and aliases mapped to their
service, what is wrong with spans counted and never turned into an edge, exact percentiles on a generated
file, and `env check` per file with the same 90% rule as for logs."""

from __future__ import annotations

import json
import math
import random
import shutil
from datetime import UTC
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from evcli.backends import snapshot_traces
from evcli.backends.envcheck import check_env
from evcli.backends.snapshot import SnapshotBackend
from evcli.backends.trace_graph import SpanGraph, SpanSource, TraceQuery, answer, percentile
from evcli.backends.traceformats import Span, TraceFileError, read_spans
from tests.cli._util import evcli

ENV = Path(__file__).resolve().parent / "traces_env"
T0_NS = 1_777_912_800 * 10**9  # 2026-05-04T16:40:00Z


def _span(span_id: str, parent: str, service: str, start_ms: int, duration_ms: int) -> Span:
    return Span("t1", span_id, parent, service, "op", T0_NS + start_ms * 10**6, duration_ms * 10**6, "ok", 1)


def _graph(*spans: Span) -> SpanGraph:
    return SpanGraph(SpanSource(span, "traces/x.jsonl") for span in spans)


# --- formats ----------------------------------------------------------------------------------------


def test_each_format_is_detected_from_its_content_and_read_whole():
    traces = SnapshotBackend(ENV).traces
    read = {file.relative: file.found for file in traces.files}
    assert {path: found.format for path, found in read.items() if found} == {
        "traces/collector.jsonl": "otlp",
        "traces/jaeger-export.json": "jaeger",
        "traces/spans.csv": "csv",
        "traces/zipkin.json": "zipkin",
    }
    assert {path: (len(found.spans), found.records) for path, found in read.items() if found} == {
        "traces/collector.jsonl": (9, 9),
        "traces/jaeger-export.json": (2, 2),
        "traces/spans.csv": (3, 3),
        "traces/zipkin.json": (3, 3),
    }
    assert all(file.digest.startswith("sha256:") for file in traces.files)


def test_pods_and_aliases_are_named_by_their_service():
    # checkout-7c9f6d8b5-x2k4q (an OTLP service.name) → checkout, catalog-svc (a Jaeger process, an
    # env.toml alias) → catalog, gateway-6b8f9c7d5-q2w4r and search-5d4f8b7c9-x2k4q (CSV pods) → gateway, search
    services = SnapshotBackend(ENV).traces.services()
    assert services == ["catalog", "checkout", "frontend", "gateway", "inventory", "payment", "search"]


def test_otlp_status_codes_and_nanosecond_times_are_read_exactly():
    line = (ENV / "traces" / "collector.jsonl").read_bytes().splitlines()[2]
    found = read_spans(line)
    assert [span.status for span in found.spans] == ["error", "ok", "error"]  # 2, 1, "STATUS_CODE_ERROR"
    assert [span.duration_ns for span in found.spans] == [800_000_000, 50_000_000, 60_000_000]
    assert found.spans[0].start_ns == T0_NS + 20_000_000
    assert found.spans[0].trace_id == "0af7651916cd43dd8448eb211c80319c"  # as written, leading zero kept


def test_a_csv_table_in_microseconds_iso_times_and_http_statuses():
    micro = read_spans((ENV / "traces" / "spans.csv").read_bytes(), csv_name=True)
    assert micro.spans[1].start_ns == (1_777_913_100_005_000) * 1_000  # exact, no float rounding
    assert micro.spans[1].duration_ns == 190_000_000
    table = (
        "traceId,spanId,parentSpanId,service,name,start_time,duration (ms),status_code\n"
        "ab,01,,web,GET /,2026-05-04 18:40:00.250,12.5,503\n"
        "ab,02,01,api,load,2026-05-04T16:40:00.3Z,4,200\n"
    )
    found = read_spans(table.encode(), csv_name=True, tz=ZoneInfo("Europe/Berlin"))
    assert [(span.start_ns - T0_NS, span.duration_ns, span.status) for span in found.spans] == [
        (250_000_000, 12_500_000, "error"),  # no zone: the environment's (18:40 Berlin = 16:40Z)
        (300_000_000, 4_000_000, "ok"),
    ]


def test_an_unknown_shape_or_a_table_without_ids_is_an_error_naming_what_is_missing():
    with pytest.raises(TraceFileError, match="unknown shape"):
        read_spans(b'{"spans": []}')
    with pytest.raises(TraceFileError, match="has no trace, span"):
        read_spans(b"time,value\n1,2\n", csv_name=True)
    with pytest.raises(TraceFileError, match="not JSON"):
        read_spans(b'{"data": [\n')


def test_a_line_that_is_not_json_or_of_no_known_shape_is_an_unread_record_of_a_json_lines_file():
    lines = (ENV / "traces" / "collector.jsonl").read_bytes().splitlines()
    found = read_spans(b"\n".join([lines[0], b'{"resourceSpans": [', lines[1], b'{"hello": 1}', lines[2]]))
    assert (found.format, len(found.spans), found.records) == ("otlp", 9, 11)
    assert found.unread_reasons[0] == "line 2 is not JSON"
    assert found.unread_reasons[1].startswith("line 4: JSON of an unknown shape")
    jaeger = json.loads((ENV / "traces" / "jaeger-export.json").read_text())
    per_line = read_spans((json.dumps(jaeger) + "\n" + json.dumps(jaeger["data"][0]) + "\n").encode())
    assert (per_line.format, len(per_line.spans)) == ("jaeger", 4)


# --- the graph --------------------------------------------------------------------------------------


def test_bad_spans_are_counted_and_never_turned_into_an_edge():
    graph = _graph(
        _span("a", "", "web", 0, 100),
        _span("b", "a", "api", -5, 50),  # starts before its parent: clock skew
        _span("c", "zz", "db", 10, 20),  # parent read nowhere: orphan
        _span("d", "d", "db", 10, 20),  # its own parent
        _span("b", "a", "api", 1, 10),  # a repeated span id
        _span("e", "a", "", 2, 10),  # no service
    )
    assert graph.quality.orphans == 2
    assert graph.quality.skewed == 1
    assert graph.quality.duplicates == 1
    assert graph.quality.without_service == 1
    edges = answer(graph, TraceQuery(), UTC).edges
    # the repeated span b is no second call (issue 25's bad input: a duplicate id is not counted twice)
    assert [(edge["caller"], edge["callee"], edge["calls"]) for edge in edges] == [("web", "api", 1)]


def test_zipkin_shared_span_is_the_callee_half_of_its_clients_call():
    found = read_spans((ENV / "traces" / "zipkin.json").read_bytes())
    server = found.spans[2]
    assert server.shared and server.service == "inventory" and server.error
    graph = _graph(*found.spans)
    assert graph.quality.orphans == 0 and graph.quality.duplicates == 0
    assert graph.edge_of(2) == ("checkout", "inventory")
    assert graph.edge_of(1) is None  # checkout's client span under checkout's server span: no edge


def test_a_child_of_a_shared_zipkin_id_runs_in_the_server_half(tmp_path):
    """Brave's default: the client span and the server span share one id, and what the server does next is
    its child under that id. The child's caller is the server's service (checkout → postgres), never the
    client's (gateway → postgres): in the index and in memory alike."""
    trace = "5af7183fb1d4cf5f"

    def span(span_id, parent, service, kind, start, duration, shared=False):
        found = {"traceId": trace, "id": span_id, "name": "op", "kind": kind, "timestamp": start, "duration": duration}
        found |= {"localEndpoint": {"serviceName": service}} | ({"parentId": parent} if parent else {})
        return found | ({"shared": True} if shared else {})

    base = 1_777_913_040_000_000
    spans = [
        span("aaaa000000000001", "", "gateway", "SERVER", base, 900_000),
        span("aaaa000000000002", "aaaa000000000001", "gateway", "CLIENT", base + 1_000, 800_000),
        span("aaaa000000000002", "aaaa000000000001", "checkout", "SERVER", base + 2_000, 790_000, shared=True),
        span("aaaa000000000004", "aaaa000000000002", "postgres", "SERVER", base + 4_000, 490_000),  # no client span
    ]
    env = tmp_path / "env"
    (env / "traces").mkdir(parents=True)
    (env / "traces" / "zipkin.json").write_text(json.dumps(spans), encoding="utf-8")
    expected = [("checkout", "postgres", 1), ("gateway", "checkout", 1)]
    indexed = SnapshotBackend(env).traces.query(TraceQuery()).answer.edges
    assert sorted((edge["caller"], edge["callee"], edge["calls"]) for edge in indexed) == expected
    in_memory = answer(_graph(*read_spans(json.dumps(spans).encode()).spans), TraceQuery(), UTC).edges
    assert sorted((edge["caller"], edge["callee"], edge["calls"]) for edge in in_memory) == expected


def test_percentiles_are_exact_nearest_rank_on_a_generated_file(tmp_path):
    """2,000 calls gateway → api with random durations, written as OTLP lines: p50/p90/p99 of the edge and of
    the stats are the data's own values, with at least p% of the calls at or below and fewer below."""
    rng = random.Random(11)
    durations = [rng.randint(1, 5_000) for _ in range(2_000)]
    lines = []
    for index, duration in enumerate(durations):
        trace = f"{index + 1:032x}"
        parent = {"traceId": trace, "spanId": f"{2 * index + 1:016x}", "name": "GET /", "status": {}}
        parent |= {"startTimeUnixNano": str(T0_NS + index), "endTimeUnixNano": str(T0_NS + index + 10**10)}
        child = {"traceId": trace, "spanId": f"{2 * index + 2:016x}", "parentSpanId": parent["spanId"], "name": "q"}
        child |= {"startTimeUnixNano": str(T0_NS + index), "endTimeUnixNano": str(T0_NS + index + duration * 1000)}
        child["status"] = {"code": 2 if duration > 4_500 else 0}
        for service, span in (("gateway", parent), ("api", child)):
            resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
            lines.append(json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}))
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "big.jsonl").write_text("\n".join(lines) + "\n")
    result = SnapshotBackend(tmp_path).traces.query(TraceQuery(service="api"))
    (edge,) = result.answer.edges
    ordered = sorted(durations)
    assert edge["calls"] == 2_000 and edge["errors"] == sum(duration > 4_500 for duration in durations)
    for share in (50, 90, 99):
        value = edge[f"p{share}_ms"]
        micros = round(value * 1_000)
        assert micros in durations
        assert (
            sum(d <= micros for d in durations) >= math.ceil(share / 100 * 2_000) > sum(d < micros for d in durations)
        )
        assert result.answer.stats[f"p{share}_ms"] == value
    assert percentile(ordered, 100) == ordered[-1] and percentile(ordered, 1) == ordered[19]


# --- the snapshot and env check ---------------------------------------------------------------------


def test_the_snapshot_lists_traces_and_its_clock_reaches_the_last_span_end():
    backend = SnapshotBackend(ENV)
    assert "traces" in backend.capabilities()
    assert backend.now().isoformat() == "2026-05-04T16:45:00.200000+00:00"  # the CSV trace's root ends last


def test_env_check_reports_each_file_with_its_format_spans_services_range_and_share():
    report = check_env(ENV)
    assert report.ok, report.problems
    by_path = {info.path: info for info in report.trace_files}
    collector = by_path["traces/collector.jsonl"]
    assert (collector.format, collector.spans, collector.traces, collector.read_share) == ("otlp", 9, 3, 1.0)
    assert collector.services == ["checkout", "gateway", "payment"]
    assert (collector.first, collector.last) == (
        "2026-05-04T18:40:00.000000+02:00",
        "2026-05-04T18:42:00.020000+02:00",
    )
    assert by_path["traces/spans.csv"].services == ["gateway", "search"]
    assert [(p.severity, p.path, p.message) for p in report.problems] == [
        ("warning", "traces/", "1 orphan spans (their parent span is in no file): no edge to them")
    ]
    assert {service.name: service.sources for service in report.services}["catalog"] == ["env.toml", "traces"]


def test_env_check_errors_below_ninety_percent_read_and_on_an_unreadable_file(tmp_path):
    directory = Path(shutil.copytree(ENV, tmp_path / "env"))
    good = "t,s{0},,web,op,{1},{2}\n"
    rows = "".join(good.format(index, 1_777_912_800_000 + index, 1_777_912_800_005 + index) for index in range(8))
    header = "trace_id,span_id,parent_id,service,operation,start_ms,end_ms\n"
    (directory / "traces" / "most.csv").write_text(header + rows + "t,x1,,web,op,,\nt,x2,,web,op,soon,\n")
    (directory / "traces" / "nearly.csv").write_text(header + rows * 3 + "t,x1,,web,op,,\n")
    (directory / "traces" / "other.json").write_text('{"hello": "world"}')
    (directory / "traces" / "notes.txt").write_text("not a span file")
    report = check_env(directory)
    problems = {(p.path, p.severity): p.message for p in report.problems}
    assert not report.ok
    assert problems[("traces/most.csv", "error")] == (
        "only 80% of the 10 span records were read (at least 90% are needed; the detected format is csv); "
        "e.g. line 10: no trace id, span id or readable start"
    )
    assert problems[("traces/nearly.csv", "warning")] == "1 of 25 span records were not read"
    assert problems[("traces/other.json", "error")].startswith("line 1: JSON of an unknown shape")
    assert problems[("traces/other.json", "error")].endswith("known formats: otlp, jaeger, zipkin, csv")
    assert problems[("traces/notes.txt", "warning")].startswith("ignored: not a .json or .jsonl")
    cli = evcli("env", "check", directory)
    assert cli.exit_code != 0 and "traces/most.csv: csv, 8 spans in 1 trace, read 80%" in cli.stdout


def test_a_file_over_the_size_limit_is_refused_and_stated_the_others_still_read(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot_traces, "MAX_TRACE_FILE_BYTES", 1_000)
    directory = Path(shutil.copytree(ENV, tmp_path / "env"))
    report = check_env(directory)
    problems = {(p.path, p.severity): p.message for p in report.problems}
    assert problems[("traces/collector.jsonl", "error")].startswith("refused: larger than 1000 bytes")
    assert [info.path for info in report.trace_files] == ["traces/spans.csv", "traces/zipkin.json"]


def test_a_snapshot_with_only_traces_has_evidence(tmp_path):
    (tmp_path / "traces").mkdir()
    shutil.copy(ENV / "traces" / "zipkin.json", tmp_path / "traces")
    report = check_env(tmp_path)
    assert report.ok, report.problems
