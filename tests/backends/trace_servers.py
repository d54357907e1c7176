"""A loopback Jaeger query service and a loopback Tempo on 127.0.0.1, serving one known set of traces in the
shapes those projects document, for tests/backends/test_jaeger.py and test_tempo.py (no Jaeger or Tempo can be
installed here: neither is packaged for Debian or PyPI), and the steps both test files take through the CLI.

Shapes followed:
  - Jaeger's query HTTP API (jaegertracing/jaeger cmd/query/app/http_handler.go and query_parser.go): every
    answer is `{"data", "total", "limit", "offset", "errors"}`; `/api/services` lists names; `/api/traces`
    needs `service`, takes `start`/`end` in microseconds and `limit` (default 100) and answers traces
    `{traceID, spans: [{traceID, spanID, operationName, references: [{refType, traceID, spanID}], startTime,
    duration (µs), tags: [{key, type, value}], logs, processID, warnings, flags}], processes: {p1:
    {serviceName, tags}}, warnings}`; `/api/traces/{id}` answers one, or HTTP 404 with
    `errors: [{"code": 404, "msg": "trace not found"}]`; a missing service is HTTP 400.
  - Tempo's HTTP API (grafana/tempo docs/sources/tempo/api_docs): `/api/echo` answers `echo`;
    `/api/status/buildinfo` `{version, revision, branch, buildUser, buildDate, goVersion}`;
    `/api/search/tag/service.name/values` `{"tagValues": [...]}`; `/api/search` takes `q` (TraceQL) or `tags`
    (logfmt, values matched as case-insensitive substrings), `start`/`end` in seconds and `limit` (default 20)
    and answers `{"traces": [{traceID (hex), rootServiceName, rootTraceName, startTimeUnixNano, durationMs}],
    "metrics": {...}}`; `/api/traces/<id>` answers OTLP JSON with its resource spans under `batches` and ids in
    base64 (grafana/tempo issue 5437), or HTTP 404.

Only the TraceQL this needs is understood: `{ resource.service.name = "x" || resource.service.name = "y" }`.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from evcli.contracts import SessionConfig, StageOutput
from evcli.store.db import TraceStore
from tests.cli._util import evcli

MINUTE_US = 60_000_000
_TRACEQL_NAME = re.compile(r'resource\.service\.name = "([^"]*)"')


@dataclass(frozen=True)
class SpanRow:
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_id: str  # "" for a root
    service: str  # as the tracer wrote it: a service or a pod name
    operation: str
    start_us: int
    duration_ms: int
    error: bool = False


# (service or pod, operation, offset from the trace start in µs, parent's index in the trace or None)
_CALLS = (
    ("gateway", "GET /checkout", 0, None),
    ("checkout", "POST /checkout", 1_000, 0),
    ("inventory", "reserve", 2_000, 1),
    ("payment", "charge", 5_000, 1),
)
# per trace: durations in ms of gateway, checkout, inventory (None: not called), payment; the payment failed?
_TRACES = (
    (110, 100, 20, 40, False),
    (130, 120, None, 60, False),
    (160, 150, None, 80, False),
    (810, 800, 30, 700, True),
    (1010, 1000, None, 900, True),
)
INVENTORY_POD = "inventory-5d8b9c7f4-x2k4q"  # trace 4 names inventory by a pod of it


def dataset(now_us: int) -> list[SpanRow]:
    """Five checkouts a minute apart, the first 30 minutes before `now_us`, and one two hours before it
    (payment failing after 5 s). Hand-computed over the last hour:
      payment spans 40, 60, 80, 700, 900 ms (2 errors): p50 80, p90 900, p99 900;
      gateway → checkout 5 calls, 0 errors, p50 150, p90/p99 1000;
      checkout → payment 5 calls, 2 errors, p50 80, p90/p99 900;
      checkout → inventory 2 calls (one from the pod), 0 errors, p50 20, p90/p99 30."""
    rows: list[SpanRow] = []
    for number, (*durations, failed) in enumerate(_TRACES):
        rows += _trace(number, now_us - 30 * MINUTE_US + number * MINUTE_US, durations, failed)
    return rows + _trace(9, now_us - 120 * MINUTE_US, [5200, 5100, None, 5000], True)


def _trace(number: int, start_us: int, durations: list[int | None], failed: bool) -> list[SpanRow]:
    trace_id = f"4bf92f3577b34da6a3ce929d0e0e47{number:02x}"
    rows = []
    for index, ((service, operation, offset, parent), duration) in enumerate(zip(_CALLS, durations, strict=True)):
        if duration is None:
            continue
        if service == "inventory" and number == 3:
            service = INVENTORY_POD
        rows.append(
            SpanRow(
                trace_id,
                f"{number:02x}{index:02x}00f067aa0ba902b7"[:16],
                "" if parent is None else f"{number:02x}{parent:02x}00f067aa0ba902b7"[:16],
                service,
                operation,
                start_us + offset,
                duration,
                failed and service == "payment",
            )
        )
    return rows


# --- Jaeger ----------------------------------------------------------------------------------------


def jaeger_trace(rows: list[SpanRow]) -> dict[str, Any]:
    processes = {service: f"p{index + 1}" for index, service in enumerate(dict.fromkeys(row.service for row in rows))}
    spans = [
        {
            "traceID": row.trace_id,
            "spanID": row.span_id,
            "flags": 1,
            "operationName": row.operation,
            "references": [{"refType": "CHILD_OF", "traceID": row.trace_id, "spanID": row.parent_id}]
            if row.parent_id
            else [],
            "startTime": row.start_us,
            "duration": row.duration_ms * 1000,
            "tags": [{"key": "span.kind", "type": "string", "value": "server"}]
            + ([{"key": "error", "type": "bool", "value": True}] if row.error else []),
            "logs": [],
            "processID": processes[row.service],
            "warnings": None,
        }
        for row in rows
    ]
    return {
        "traceID": rows[0].trace_id,
        "spans": spans,
        "processes": {pid: {"serviceName": service, "tags": []} for service, pid in processes.items()},
        "warnings": None,
    }


def structured(data: Any, errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "data": data,
        "total": len(data) if isinstance(data, list) else 0,
        "limit": 0,
        "offset": 0,
        "errors": errors,
    }


# --- Tempo -----------------------------------------------------------------------------------------


def b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode() if hex_id else ""


def tempo_trace(rows: list[SpanRow]) -> dict[str, Any]:
    batches = []
    for service in dict.fromkeys(row.service for row in rows):
        spans = [
            {
                "traceId": b64(row.trace_id),
                "spanId": b64(row.span_id),
                **({"parentSpanId": b64(row.parent_id)} if row.parent_id else {}),
                "name": row.operation,
                "kind": "SPAN_KIND_SERVER",
                "startTimeUnixNano": str(row.start_us * 1000),
                "endTimeUnixNano": str((row.start_us + row.duration_ms * 1000) * 1000),
                "status": {"code": "STATUS_CODE_ERROR"} if row.error else {},
            }
            for row in rows
            if row.service == service
        ]
        resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
        batches.append({"resource": resource, "scopeSpans": [{"scope": {"name": "shop"}, "spans": spans}]})
    return {"batches": batches}


def tempo_summary(rows: list[SpanRow]) -> dict[str, Any]:
    root = next(row for row in rows if not row.parent_id)
    return {
        "traceID": root.trace_id.lstrip("0"),  # Tempo's search writes ids without leading zeros
        "rootServiceName": root.service,
        "rootTraceName": root.operation,
        "startTimeUnixNano": str(root.start_us * 1000),
        "durationMs": root.duration_ms,
    }


# --- the server ------------------------------------------------------------------------------------


@dataclass
class TraceServer:
    """One loopback server (`flavour` jaeger or tempo) answering from `rows`, recording what it was asked.

    `status`/`body` replace every answer (an HTTP error, bytes that are no JSON); `token` makes it answer 401
    to any request without `Authorization: Bearer <token>`; `tempo_version` None makes a Tempo 1 without
    /api/status/buildinfo and without TraceQL."""

    flavour: str
    rows: list[SpanRow]
    url: str = ""
    status: int | None = None
    body: bytes | None = None
    token: str | None = None
    tempo_version: str | None = "2.6.1"
    gone: set[str] = field(default_factory=set)  # trace ids a Tempo search lists but no longer has
    requests: list[dict[str, Any]] = field(default_factory=list)

    def traces(self) -> dict[str, list[SpanRow]]:
        found: dict[str, list[SpanRow]] = {}
        for row in self.rows:
            found.setdefault(row.trace_id, []).append(row)
        return found

    def answer(self, path: str, params: dict[str, str]) -> tuple[int, Any]:
        """(status, JSON-able answer or bytes) of one GET."""
        if self.status is not None:
            return self.status, self.body if self.body is not None else b"internal error: querier unavailable\n"
        if self.body is not None:
            return 200, self.body
        return (self._jaeger if self.flavour == "jaeger" else self._tempo)(path, params)

    def _jaeger(self, path: str, params: dict[str, str]) -> tuple[int, Any]:
        traces = self.traces()
        if path == "/api/services":
            return 200, structured(sorted({row.service for row in self.rows}))
        if path.startswith("/api/traces/"):
            rows = traces.get(path.rsplit("/", 1)[1].lower().rjust(32, "0"))
            if rows is None:
                return 404, structured(None, [{"code": 404, "msg": "trace not found"}])
            return 200, structured([jaeger_trace(rows)])
        if path == "/api/traces":
            if not params.get("service"):
                return 400, structured(None, [{"code": 400, "msg": "parameter 'service' is required"}])
            start, end = int(params.get("start", 0)), int(params.get("end", 2**62))
            found = [
                rows
                for rows in traces.values()
                if any(row.service == params["service"] and start <= row.start_us <= end for row in rows)
            ]
            found.sort(key=lambda rows: -rows[0].start_us)  # the newest first
            return 200, structured([jaeger_trace(rows) for rows in found[: int(params.get("limit", 100))]])
        return 404, b"404 page not found\n"

    def _tempo(self, path: str, params: dict[str, str]) -> tuple[int, Any]:
        traces = self.traces()
        if path == "/api/echo":
            return 200, b"echo"
        if path == "/api/status/buildinfo":
            if self.tempo_version is None:
                return 404, b"404 page not found\n"
            return 200, {"version": self.tempo_version, "revision": "abc123", "branch": "HEAD", "goVersion": "go1.22"}
        if path == "/api/search/tag/service.name/values":
            return 200, {"tagValues": sorted({row.service for row in self.rows}), "metrics": {"inspectedBytes": "1"}}
        if path.startswith("/api/traces/"):
            trace_id = path.rsplit("/", 1)[1].lower().rjust(32, "0")
            rows = None if trace_id in self.gone else traces.get(trace_id)
            return (404, b"trace not found\n") if rows is None else (200, tempo_trace(rows))
        if path == "/api/search":
            return 200, self._tempo_search(traces, params)
        return 404, b"404 page not found\n"

    def _tempo_search(self, traces: dict[str, list[SpanRow]], params: dict[str, str]) -> dict[str, Any]:
        start_us, end_us = int(params.get("start", 0)) * 1_000_000, int(params.get("end", 2**40)) * 1_000_000
        found = [
            rows
            for rows in traces.values()
            if any(self._searched(row.service, params) for row in rows) and start_us <= rows[0].start_us <= end_us
        ]
        found.sort(key=lambda rows: -rows[0].start_us)
        listed = [tempo_summary(rows) for rows in found[: int(params.get("limit", 20))]]
        return {"traces": listed, "metrics": {"inspectedTraces": len(traces), "totalBlocks": 1}}

    def _searched(self, service: str, params: dict[str, str]) -> bool:
        """Whether a span of `service` is what the search asks: a service name in the TraceQL (which Tempo 1
        ignores), or a `service.name` tag value contained in it (case-insensitive)."""
        if "q" in params and self.tempo_version is not None:
            return service in _TRACEQL_NAME.findall(params["q"])
        tags = dict(part.split("=", 1) for part in params.get("tags", "").split())
        return tags.get("service.name", "").strip('"').lower() in service.lower()


@contextmanager
def serving(server: TraceServer, tls: Any = None) -> Iterator[TraceServer]:
    """Serve `server` on a free loopback port (HTTPS with `tls`, an `ssl.SSLContext`) until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            target = urllib.parse.urlsplit(self.path)
            params = dict(urllib.parse.parse_qsl(target.query))
            authorization = self.headers.get("Authorization")
            server.requests.append({"path": target.path, "params": params, "authorization": authorization})
            if server.token is not None and authorization != f"Bearer {server.token}":
                self._send(401, b"Unauthorized\n")
                return
            status, answer = server.answer(urllib.parse.unquote(target.path), params)
            self._send(status, answer if isinstance(answer, bytes) else json.dumps(answer).encode())

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        http.socket = tls.wrap_socket(http.socket, server_side=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    server.url = f"{'https' if tls is not None else 'http'}://127.0.0.1:{http.server_address[1]}"
    try:
        yield server
    finally:
        http.shutdown()
        http.server_close()


# --- the steps both test files take -------------------------------------------------------------------


def query(flag: str, url: str, *args: Any) -> dict[str, Any]:
    """`evcli tool query_traces --<flag> URL …` as JSON (the invocation), which must succeed."""
    run = evcli("tool", "query_traces", f"--{flag}", url, "--json", *args)
    assert run.exit_code == 0, run
    return run.json()


def refs(invocation: dict[str, Any]) -> dict[str, str]:
    return {ref["raw_path"]: ref["text"] for ref in invocation["retrieval_details"]["evidence_refs"]}


def failed(flag: str, url: str, *args: Any) -> str:
    """The one-line error of a `query_traces` call that fails: recorded failed, with no ref at all (never
    "no evidence"), and said on one stderr line without a traceback."""
    run = evcli("tool", "query_traces", f"--{flag}", url, "--json", *args)
    assert run.exit_code == 1 and "Traceback" not in run.stderr, run
    invocation = run.json()
    assert invocation["success"] is False, invocation
    assert invocation["retrieval_details"]["evidence_status"] == "failed"
    assert invocation["retrieval_details"]["evidence_refs"] == []
    (line,) = run.stderr.strip().splitlines()
    assert line == f"query_traces failed: {invocation['error_message']}" and "\n" not in invocation["error_message"]
    return str(invocation["error_message"])


def claim(claim_id: str, text: str, invocation_id: int, raw_path: str, excerpt: str) -> dict[str, Any]:
    binding = {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": "query_traces",
        "source_invocation_id": invocation_id,
        "raw_path": raw_path,
        "evidence_excerpt": excerpt,
    }
    return {
        "claim_id": claim_id,
        "claim_type": "observation",
        "claim_text": text,
        "support_level": "direct",
        "evidence_bindings": [binding],
    }


def edge_claim(claim_id: str, invocation_id: int, edge: str) -> dict[str, Any]:
    """A claim stating what an edge ref says: `edge checkout → payment: calls=5 errors=2 p50=… p99=900ms`."""
    pair, _, counts = edge.removeprefix("edge ").partition(": ")
    caller, callee = pair.split(" → ")
    value = dict(part.split("=") for part in counts.split())
    text = f"{caller} calls {callee}: {value['calls']} calls, {value['errors']} errors, p99={value['p99']}"
    return claim(claim_id, text, invocation_id, "$.edges[0]", edge)


def gated_session(db: Path, flag: str, url: str, calls: list[tuple[str, ...]]) -> str:
    """A session on the live backend at `url`: each call of `calls` run through `evcli tool --session` and
    recorded, then an executor output with one claim per call citing its first edge."""
    with TraceStore(db) as store:
        config = SessionConfig.model_validate({"task_scope": "broad", "env": {flag: url}})
        session_id = store.create_session("who calls payment?", config=config).session_id
    claims = []
    for number, args in enumerate(calls, start=1):
        recorded = evcli("tool", "query_traces", *args, "--session", session_id, "--db", db, "--json")
        assert recorded.exit_code == 0, recorded
        claims.append(edge_claim(f"c{number}", number, refs(recorded.json())["$.edges[0]"]))
    document = {"answer_version": "executor_evidence_v2", "claims": claims}
    document |= {"hypotheses": [], "recommended_actions": [], "missing_info": []}
    with TraceStore(db) as store:
        store.record_stage_output(session_id, StageOutput(stage="execute", output=document))
    return session_id


def gate(*args: Any) -> tuple[int, dict[str, Any]]:
    run = evcli("gate", *args, "--json")
    assert run.exit_code in (0, 3, 4), run
    return run.exit_code, run.json()
