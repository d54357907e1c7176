"""The packaged `mesh` environment (evcli/envs/mesh, written by scripts/build_mesh_env.py): the script
rebuilds it byte-identically, `env check` reads every file whole, and the spans, read through the
snapshot backend as a query reads them, tell the story: bank-gateway slows down and times out from
14:02Z, the errors pass up to frontend in the same traces, search is slow all hour, catalog's and
search's Jaeger spans join frontend's OTLP traces, and the pods name their service."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from evcli.backends.base import LogQuery
from evcli.backends.envcheck import check_env
from evcli.backends.snapshot import SnapshotBackend
from evcli.backends.spec import packaged_env_dir
from evcli.backends.trace_graph import TraceQuery
from evcli.backends.traceformats import Span
from evcli.core.time import TimeRange
from evcli.gatekeeper.excerpt import normalize
from tests.cli._util import evcli
from tests.conftest import REPO

MESH = REPO / "evcli" / "envs" / "mesh"
ONSET = datetime(2026, 11, 20, 14, 2, tzinfo=UTC)
ONSET_NS = int(ONSET.timestamp()) * 10**9
SERVICES = ["bank-gateway", "catalog", "checkout", "frontend", "inventory", "payment", "postgres-inventory", "search"]


@pytest.fixture
def backend() -> SnapshotBackend:
    return SnapshotBackend(MESH)  # its trace index is built in the test's own EVCLI_HOME


@pytest.fixture
def spans(backend) -> list[Span]:
    return [span for file in backend.traces.files if file.found for span in file.found.spans]


def _edge(backend: SnapshotBackend, caller: str, callee: str, start_ns: int | None = None, end_ns: int | None = None):
    answer = backend.traces.query(TraceQuery(service=callee, start_ns=start_ns, end_ns=end_ns, limit=1)).answer
    (edge,) = [edge for edge in answer.edges if (edge["caller"], edge["callee"]) == (caller, callee)]
    return edge


# --- the directory --------------------------------------------------------------------------------


def test_the_script_rebuilds_the_directory_byte_identically(tmp_path):
    out = tmp_path / "mesh"
    script = REPO / "scripts" / "build_mesh_env.py"
    subprocess.run([sys.executable, script, "--out", out], check=True, cwd=tmp_path, timeout=120)
    built = {path.relative_to(out): path.read_bytes() for path in out.rglob("*") if path.is_file()}
    shipped = {path.relative_to(MESH): path.read_bytes() for path in MESH.rglob("*") if path.is_file()}
    assert sorted(built) == sorted(shipped)
    assert [path for path in built if built[path] != shipped[path]] == []
    assert sum(len(data) for data in shipped.values()) < 600_000


def test_the_script_replaces_no_directory_it_did_not_write(tmp_path):
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    script = REPO / "scripts" / "build_mesh_env.py"
    run = subprocess.run([sys.executable, script, "--out", tmp_path], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "neither empty nor the mesh environment" in run.stderr
    assert [path.name for path in tmp_path.iterdir()] == ["notes.txt"]


def test_env_check_reads_every_file_whole():
    assert packaged_env_dir("mesh") == MESH
    report = check_env(MESH)
    assert report.problems == []
    assert [(info.path, info.timestamp_share, info.level_share) for info in report.log_files] == [
        (f"logs/{name}", 1.0, 1.0) for name in ("catalog.log", "checkout.jsonl", "inventory.log", "payment.log")
    ]
    assert [(info.path, info.format, info.read_share) for info in report.trace_files] == [
        ("traces/catalog-jaeger.json", "jaeger", 1.0),
        ("traces/collector.jsonl", "otlp", 1.0),
    ]
    assert [(info.path, info.parseable_share) for info in report.metric_files] == [("metrics/frontend.csv", 1.0)]
    assert [info.title for info in report.runbooks] == ["Upstream latency on payment"]
    assert sorted(service.name for service in report.services) == SERVICES


def test_the_runbook_carries_no_overstatement_phrase(rules):
    text = normalize((MESH / "runbooks" / "upstream-latency-payment.md").read_text(encoding="utf-8"))
    assert [phrase for phrase in rules.overstatement_phrases if normalize(phrase) in text] == []


# --- the spans ------------------------------------------------------------------------------------


def test_pods_are_named_by_their_service_and_the_topology_is_the_spans_call_graph(backend):
    collector = (MESH / "traces" / "collector.jsonl").read_text(encoding="utf-8")
    for pod in ("checkout-7c9f6d8b5-x2k4q", "checkout-7c9f6d8b5-m8w2n", "payment-5f7d9c8b4-qz7wn"):
        assert f'"stringValue":"{pod}"' in collector
        assert backend.traces.resolve(pod) == pod.split("-")[0]
    assert backend.traces.services() == SERVICES
    assert backend.traces.quality.orphans == 0
    topology = tomllib.loads((MESH / "env.toml").read_text(encoding="utf-8"))["topology"]
    assert sorted((caller, callee) for caller, callees in topology.items() for callee in callees) == sorted(
        backend.traces.call_pairs()
    )


def test_a_callers_span_contains_its_callees_called_one_after_another(spans):
    by_id = {(span.trace_id, span.span_id): span for span in spans}
    children: dict[tuple[str, str], list[Span]] = {}
    for span in spans:
        if span.parent_id:
            children.setdefault((span.trace_id, span.parent_id), []).append(span)
    assert sum(len(calls) for calls in children.values()) == len(spans) - len({span.trace_id for span in spans})
    for key, calls in children.items():
        parent, calls = by_id[key], sorted(calls, key=lambda span: span.start_ns)
        assert parent.start_ns < calls[0].start_ns and calls[-1].start_ns + calls[-1].duration_ns < (
            parent.start_ns + parent.duration_ns
        )
        assert all(a.start_ns + a.duration_ns < b.start_ns for a, b in zip(calls, calls[1:], strict=False))


def test_bank_gateway_slows_down_after_the_onset(backend):
    before = _edge(backend, "payment", "bank-gateway", end_ns=ONSET_NS - 1)
    after = _edge(backend, "payment", "bank-gateway", start_ns=ONSET_NS)
    assert after["p99_ms"] >= before["p99_ms"] + 300
    assert after["p50_ms"] >= before["p50_ms"] + 300  # every call, not only the timeouts
    assert before["errors"] == 0 and 0.04 <= after["errors"] / after["calls"] <= 0.08


def test_search_is_slow_all_hour_the_trap(backend):
    assert _edge(backend, "catalog", "search")["p99_ms"] > 500
    for start_ns, end_ns in ((None, ONSET_NS - 1), (ONSET_NS, None)):
        edge = _edge(backend, "catalog", "search", start_ns, end_ns)
        assert edge["p50_ms"] > 250 and edge["errors"] == 0


def test_bank_gateway_errors_only_after_the_onset_and_passed_up_in_the_same_traces(backend, spans):
    by_trace: dict[str, set[str]] = {}
    for span in spans:
        if span.error:
            by_trace.setdefault(span.trace_id, set()).add(backend.service_named(span.service))
    bank = [span for span in spans if span.error and span.service == "bank-gateway"]
    assert len(bank) >= 3 and all(span.start_ns >= ONSET_NS for span in bank)
    assert all(1_999 <= span.duration_ns / 1e6 <= 2_001 for span in bank)  # payment's read timeout
    failing = {span.trace_id: {"bank-gateway", "payment", "checkout", "frontend"} for span in bank}
    (storm,) = [span for span in spans if span.error and span.service == "catalog"]  # the noise at 13:41Z
    assert by_trace == failing | {storm.trace_id: {"catalog", "frontend"}}
    assert datetime.fromtimestamp(storm.start_ns // 10**9, UTC).strftime("%H:%M") == "13:41"


def test_catalog_and_search_spans_join_frontends_traces_across_the_two_files(backend, spans):
    jaeger = [span for span in spans if span.service in ("catalog", "search")]
    frontend = {span.trace_id: span for span in spans if span.service == "frontend"}
    catalog = [span for span in jaeger if span.service == "catalog"]
    assert catalog and all(frontend[span.trace_id].span_id == span.parent_id for span in catalog)
    edge = _edge(backend, "frontend", "catalog")
    assert edge["calls"] == len(catalog) == Counter(span.operation for span in frontend.values())["GET /api/products"]


def test_query_traces_maps_the_pods_to_checkout():
    run = evcli("tool", "query_traces", "--env", "mesh", "--service", "checkout", "--limit", "200", "--json")
    assert run.exit_code == 0, run
    output = run.json()["output"]
    assert {span["service"] for span in output["spans"]} == {"checkout"}
    assert output["stats"]["spans"] == len(output["spans"]) > 100  # both pods' spans
    assert {(edge["caller"], edge["callee"]) for edge in output["edges"]} == {
        ("frontend", "checkout"),
        ("checkout", "inventory"),
        ("checkout", "payment"),
    }


# --- logs, metrics and alerts agree with the spans ------------------------------------------------


def _log_total(backend: SnapshotBackend, service: str, level: str, *, after: bool, keywords=()) -> int:
    span = TimeRange(ONSET, None) if after else TimeRange(None, ONSET - timedelta(milliseconds=1))
    query = LogQuery(service=service, keywords=keywords, level=level, level_strict=True, range=span, limit=1)
    return int(backend.query_logs(query).total or 0)


def test_payment_logs_warnings_and_timeouts_only_after_the_onset_one_per_slow_or_failed_call(backend, spans):
    bank = [span for span in spans if span.service == "bank-gateway"]
    assert _log_total(backend, "payment", "WARN", after=False) == 0
    assert _log_total(backend, "payment", "ERROR", after=True, keywords=("Read timed out after",)) == sum(
        span.error for span in bank
    )
    slow = sum(not span.error and span.duration_ns >= 500 * 10**6 for span in bank)
    assert _log_total(backend, "payment", "WARN", after=True, keywords=("bank-gateway call took",)) == slow > 20


def test_the_noise_inventory_409s_all_hour_and_catalogs_cache_errors_at_13_41(backend):
    conflict = ("409 conflict",)
    assert _log_total(backend, "inventory", "WARN", after=False, keywords=conflict) >= 1
    assert _log_total(backend, "inventory", "WARN", after=True, keywords=conflict) >= 1
    errors = backend.query_logs(LogQuery(service="catalog", keywords=(), level="ERROR", level_strict=True)).logs
    assert len(errors) >= 3
    assert {item["timestamp"][:16] for item in errors} == {"2026-11-20T14:41"}  # 13:41Z in local time


def test_frontend_metrics_and_the_alert_follow_the_spans(backend, spans):
    rows = [row.split(",") for row in (MESH / "metrics" / "frontend.csv").read_text(encoding="utf-8").splitlines()[1:]]
    (storm,) = [span for span in spans if span.error and span.service == "frontend" and span.start_ns < ONSET_NS]
    storm_at = datetime.fromtimestamp(storm.start_ns // 10**9, UTC)
    windows = {f"{storm_at + timedelta(minutes=m):%Y-%m-%dT%H:%M}:00Z" for m in range(1, 6)}  # 5-minute windows
    assert {at for at, _, rate in rows if at <= "2026-11-20T14:02:00Z" and float(rate) > 0} == windows
    assert max(float(rate) for _, _, rate in rows) > 2  # a timeout among a few dozen requests
    found = backend.query_metrics(service=None, alertname=None, metric=None, state="any", series=True)
    (alert,) = found.alerts
    assert (alert["alertname"], alert["service"], alert["state"]) == ("FrontendLatencyHigh", "frontend", "firing")
    assert "2026-11-20T14:02:00Z" < alert["active_at"] <= "2026-11-20T14:06:00Z"
    assert backend.resolve_service("bank") == "bank-gateway"  # nobody alerts on it
    assert backend.query_metrics(service="bank", alertname=None, metric=None, state="any", series=False).alerts == []
    assert {series["metric"] for series in found.series} == {"request_latency_p99", "error_rate"}
