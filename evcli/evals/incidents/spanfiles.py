"""traces/ of an incident as the tracing tools write it: the OpenTelemetry Collector's file exporter
(OTLP JSON, one export request a line), a Jaeger JSON export, Zipkin v2 JSON, or a CSV span table.

`records` turns the hops of `spans` into the spans a tracer records: each hop's server span and, where
the incident's callers are instrumented as OTel SDKs are, the caller's client span around it, with ids
of their own (as OpenTelemetry's exporters write them, Zipkin's included: no shared client/server ids).
Ids are drawn from the incident's "span-ids" stream; a span names the service or, in pod-named
incidents, the pod, as the hop does.
Times are written as each format writes them (nanosecond strings, microsecond numbers, ISO 8601), so
`evcli.backends.traceformats` reads every record of every file back.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from random import Random

from evcli.evals.incidents.graph import QUEUE_NAMES
from evcli.evals.incidents.logs import FAMILY
from evcli.evals.incidents.spans import Hop, TraceSetup
from evcli.evals.incidents.world import World, stream

Value = str | int | float | bool
CLIENT_GAP_NS = 40_000  # a client span opens this long before its server span and closes this long after
# The instrumentation library a service's runtime records its spans with (OTLP scope).
SCOPES: Mapping[str, tuple[str, str]] = {
    "java": ("io.opentelemetry.spring-webmvc-6.0", "2.9.0-alpha"),
    "go": ("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp", "0.56.0"),
    "python": ("opentelemetry.instrumentation.flask", "0.48b0"),
    "proxy": ("envoy", "1.31.2"),
    "store": ("io.opentelemetry.db", "1.0.0"),
}
STATUS_TEXT = {
    500: "Internal Server Error",
    502: "upstream request failed",
    503: "connection refused",
    504: "deadline exceeded",
}
GRPC_CODES = {200: 0, 500: 13, 502: 14, 503: 14, 504: 4}
QUEUES = tuple(QUEUE_NAMES)  # a queue service is named after its system: kafka, rabbitmq
DB_SYSTEMS = {"postgres": "postgresql", "mysql": "mysql", "redis": "redis", "valkey": "redis", "memcached": "memcached"}
FILE_NAMES: Mapping[str, tuple[str, ...]] = {
    "otlp": ("otel-traces.jsonl", "traces.json", "collector-export.ndjson"),
    "jaeger": ("jaeger-export.json", "jaeger-traces.json"),
    "zipkin": ("zipkin.json", "zipkin-spans.json"),
    "csv": ("spans.csv", "trace-export.csv"),
}


@dataclass(frozen=True)
class Record:
    """One span as written."""

    trace_id: str
    span_id: str
    parent_id: str  # "" at a trace's root
    name: str  # the service or pod the span names
    service: str  # the graph's service it belongs to
    operation: str
    kind: str  # server, client, producer or consumer
    start_ns: int
    end_ns: int
    status: int  # 200 or the failed call's HTTP-like status
    peer: str = ""  # a client span: the service called


def records(world: World, setup: TraceSetup, hops: Sequence[Hop]) -> list[Record]:
    rng = stream(world, "span-ids")
    trace_ids: dict[int, str] = {}
    span_ids: list[str] = []  # per hop: the id its callees' spans name as parent
    found: list[Record] = []
    for hop in hops:
        trace_id = trace_ids.setdefault(hop.trace, f"{rng.getrandbits(128):032x}")
        own_id = f"{rng.getrandbits(64):016x}"
        parent_id = span_ids[hop.parent] if hop.parent is not None else ""
        if hop.parent is not None and setup.client_spans:
            found.append(_client(world, hops[hop.parent], hop, trace_id, f"{rng.getrandbits(64):016x}", parent_id))
            parent_id = found[-1].span_id
        kind = "consumer" if hop.parent is None and world.graph.service(hop.service).role == "consumer" else "server"
        found.append(
            Record(
                trace_id,
                own_id,
                parent_id,
                hop.instance,
                hop.service,
                hop.operation,
                kind,
                hop.start_ns,
                hop.end_ns,
                hop.status,
            )
        )
        span_ids.append(own_id)
    return found


def _client(world: World, caller: Hop, hop: Hop, trace_id: str, span_id: str, parent_id: str) -> Record:
    """The caller's client span of one call: a little longer than the callee's span, with its status."""
    return Record(
        trace_id,
        span_id,
        parent_id,
        caller.instance,
        caller.service,
        hop.operation,
        _client_kind(world, hop.service, caller.service),
        hop.start_ns - CLIENT_GAP_NS,
        hop.end_ns + CLIENT_GAP_NS,
        hop.status,
        peer=hop.service,
    )


def _client_kind(world: World, callee: str, caller: str) -> str:
    if world.graph.service(callee).role != "queue":
        return "client"
    return "consumer" if world.graph.service(caller).role == "consumer" else "producer"


def write_traces(world: World, setup: TraceSetup, hops: Sequence[Hop], directory: Path) -> None:
    """directory/traces/<file> in the incident's format."""
    rng = stream(world, "span-files")
    folder = directory / "traces"
    folder.mkdir()
    written = records(world, setup, hops)
    text = WRITERS[setup.format](world, setup, written, rng)
    (folder / rng.choice(FILE_NAMES[setup.format])).write_text(text, encoding="utf-8")


# --- what a span says about itself ------------------------------------------------------------


def tags(world: World, setup: TraceSetup, record: Record) -> dict[str, Value]:
    """The semantic-convention attributes of a span, by what it calls or serves."""
    target = record.peer or record.service
    role, engine = world.graph.service(target).role, target.split("-", 1)[0]
    found: dict[str, Value] = {}
    if role in ("database", "cache"):
        found = {"db.system": DB_SYSTEMS.get(engine, engine), "db.operation.name": record.operation.split(" ")[0]}
        found |= {"db.namespace": world.graph.service(target).word} if role == "database" else {}
    elif role in ("queue", "consumer"):
        queue = target if role == "queue" else next(c for c in world.graph.callees(target) if c.startswith(QUEUES))
        found = {"messaging.system": queue, "messaging.destination.name": setup.topic}
        found["messaging.operation"] = record.operation.rsplit(" ", 1)[-1]
    elif setup.protocol == "grpc" and role == "business":
        service, _, method = record.operation.partition("/")
        found = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}
        found["rpc.grpc.status_code"] = GRPC_CODES[record.status]
    else:
        method, _, route = record.operation.partition(" ")
        found = {"http.request.method": method, "http.route": route or "/", "http.response.status_code": record.status}
    if record.kind != "server" and record.peer:
        found["peer.service"] = record.peer
    return found


def _scope(world: World, service: str) -> tuple[str, str]:
    setup = world.logs.get(service)
    family = FAMILY[setup.format] if setup else "store"
    return SCOPES.get(family, SCOPES["store"])


def _error_text(record: Record) -> str:
    return STATUS_TEXT.get(record.status, "")


# --- OTLP JSON lines (the Collector's file exporter) ---------------------------------------------

_OTLP_KINDS = {"server": 2, "client": 3, "producer": 4, "consumer": 5}


def _otlp(world: World, setup: TraceSetup, written: list[Record], rng: Random) -> str:
    """One export request a line: the spans that ended within one batch interval, grouped by resource."""
    interval = rng.choice((1, 2, 5, 10)) * 1_000_000_000
    batches: dict[int, list[Record]] = {}
    for record in sorted(written, key=lambda record: record.end_ns):
        batches.setdefault(record.end_ns // interval, []).append(record)
    namespace = rng.choice(("default", "shop", "prod", "apps"))
    lines = [_otlp_request(world, setup, batch, namespace) for _, batch in sorted(batches.items())]
    return "\n".join(lines) + "\n"


def _otlp_request(world: World, setup: TraceSetup, batch: list[Record], namespace: str) -> str:
    by_resource: dict[str, list[Record]] = {}
    for record in batch:
        by_resource.setdefault(record.name, []).append(record)
    resources = []
    for name, spans in by_resource.items():
        attributes = [_otlp_value("service.name", name)]
        if name != spans[0].service:
            attributes += [_otlp_value("k8s.pod.name", name), _otlp_value("k8s.namespace.name", namespace)]
        scope_name, version = _scope(world, spans[0].service)
        resources.append(
            {
                "resource": {"attributes": attributes},
                "scopeSpans": [
                    {
                        "scope": {"name": scope_name, "version": version},
                        "spans": [_otlp_span(world, setup, span) for span in spans],
                    }
                ],
            }
        )
    return json.dumps({"resourceSpans": resources}, separators=(",", ":"))


def _otlp_value(key: str, value: Value) -> dict[str, object]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _otlp_span(world: World, setup: TraceSetup, record: Record) -> dict[str, object]:
    status: dict[str, object] = {"code": 2, "message": _error_text(record)} if record.status != 200 else {}
    return {
        "traceId": record.trace_id,
        "spanId": record.span_id,
        "parentSpanId": record.parent_id,
        "flags": 1,
        "name": record.operation,
        "kind": _OTLP_KINDS[record.kind],
        "startTimeUnixNano": str(record.start_ns),
        "endTimeUnixNano": str(record.end_ns),
        "attributes": [_otlp_value(key, value) for key, value in tags(world, setup, record).items()],
        "status": status,
    }


# --- Jaeger JSON export ------------------------------------------------------------------------


def _jaeger(world: World, setup: TraceSetup, written: list[Record], rng: Random) -> str:
    """The Jaeger UI's download: {"data": [trace, …]}, each trace with its spans and processes."""
    traces: dict[str, list[Record]] = {}
    for record in written:
        traces.setdefault(record.trace_id, []).append(record)
    sampler = round(setup.traces / max(1.0, _requests(world)), 6)
    data = [_jaeger_trace(world, setup, spans, sampler) for spans in traces.values()]
    document = {"data": data, "total": 0, "limit": 0, "offset": 0, "errors": None}
    return json.dumps(document, separators=(",", ":")) + "\n"


def _requests(world: World) -> float:
    """Requests the roots served over the window, about (for the sampler's rate a process reports)."""
    roots = world.graph.names("entry", "consumer")
    return sum(world.profiles[root].rate for root in roots) * world.timeline.ticks * world.timeline.step


def _jaeger_trace(world: World, setup: TraceSetup, spans: list[Record], sampler: float) -> dict[str, object]:
    processes: dict[str, str] = {}
    for record in spans:
        processes.setdefault(record.name, f"p{len(processes) + 1}")
    return {
        "traceID": spans[0].trace_id,
        "spans": [_jaeger_span(world, setup, record, processes[record.name]) for record in spans],
        "processes": {
            key: {
                "serviceName": name,
                "tags": [
                    {"key": "sampler.type", "type": "string", "value": "probabilistic"},
                    {"key": "sampler.param", "type": "float64", "value": sampler},
                ],
            }
            for name, key in processes.items()
        },
        "warnings": None,
    }


def _jaeger_tag(key: str, value: Value) -> dict[str, object]:
    kind = "bool" if isinstance(value, bool) else "int64" if isinstance(value, int) else "string"
    return {"key": key, "type": kind, "value": value}


def _jaeger_span(world: World, setup: TraceSetup, record: Record, process: str) -> dict[str, object]:
    found = [_jaeger_tag("span.kind", record.kind)]
    found += [_jaeger_tag(key, value) for key, value in tags(world, setup, record).items()]
    if record.status != 200:
        found += [_jaeger_tag("error", True), _jaeger_tag("otel.status_description", _error_text(record))]
    references = (
        [{"refType": "CHILD_OF", "traceID": record.trace_id, "spanID": record.parent_id}] if record.parent_id else []
    )
    return {
        "traceID": record.trace_id,
        "spanID": record.span_id,
        "flags": 1,
        "operationName": record.operation,
        "references": references,
        "startTime": record.start_ns // 1_000,
        "duration": (record.end_ns - record.start_ns) // 1_000,
        "tags": found,
        "logs": [],
        "processID": process,
        "warnings": None,
    }


# --- Zipkin v2 JSON ----------------------------------------------------------------------------


def _zipkin(world: World, setup: TraceSetup, written: list[Record], rng: Random) -> str:
    """GET /api/v2/traces: a list of traces, each a list of spans."""
    traces: dict[str, list[dict[str, object]]] = {}
    for record in written:
        traces.setdefault(record.trace_id, []).append(_zipkin_span(world, setup, record))
    return json.dumps(list(traces.values()), separators=(",", ":")) + "\n"


def _zipkin_span(world: World, setup: TraceSetup, record: Record) -> dict[str, object]:
    found: dict[str, object] = {"traceId": record.trace_id}
    if record.parent_id:
        found["parentId"] = record.parent_id
    found |= {
        "id": record.span_id,
        "kind": record.kind.upper(),
        "name": record.operation.lower(),  # Zipkin keeps names in lower case
        "timestamp": record.start_ns // 1_000,
        "duration": max(1, (record.end_ns - record.start_ns) // 1_000),
        "localEndpoint": {"serviceName": record.name},
    }
    if record.peer:
        found["remoteEndpoint"] = {"serviceName": record.peer}
    labels = {key: str(value) for key, value in tags(world, setup, record).items()}
    if record.status != 200:
        labels["error"] = _error_text(record)
    found["tags"] = labels
    return found


# --- CSV span tables ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    """One way a span table is exported: its header and how it writes time and status."""

    header: tuple[str, ...]  # trace, span, parent, name, operation, start, end or duration, status
    time: str  # "iso" or "epoch_us"
    ends: bool  # the sixth column is the end time (else a duration in ms)
    status: Callable[[int], str]


DIALECTS = (
    Dialect(
        (
            "trace_id",
            "span_id",
            "parent_span_id",
            "service_name",
            "operation_name",
            "start_time",
            "duration_ms",
            "status_code",
        ),
        "iso",
        False,
        lambda status: "OK" if status == 200 else "ERROR",
    ),
    Dialect(
        ("traceId", "spanId", "parentId", "service", "name", "start_us", "end_us", "status"),
        "epoch_us",
        True,
        lambda status: "ok" if status == 200 else "error",
    ),
    Dialect(
        ("trace", "span", "parent", "service", "operation", "timestamp", "duration (ms)", "status_code"),
        "epoch_us",
        False,
        str,
    ),
)


def _csv(world: World, setup: TraceSetup, written: list[Record], rng: Random) -> str:
    dialect = rng.choice(DIALECTS)
    header = list(dialect.header)
    if setup.pod_named:
        header[3] = "pod"
    buffer = io.StringIO()
    table = csv.writer(buffer, lineterminator="\n")
    table.writerow(header)
    for record in sorted(written, key=lambda record: (record.start_ns, record.span_id)):
        table.writerow(
            (
                record.trace_id,
                record.span_id,
                record.parent_id,
                record.name,
                record.operation,
                _csv_time(record.start_ns, dialect.time),
                _csv_time(record.end_ns, dialect.time)
                if dialect.ends
                else f"{(record.end_ns - record.start_ns) / 1e6:.3f}",
                dialect.status(record.status),
            )
        )
    return buffer.getvalue()


def _csv_time(nanoseconds: int, form: str) -> str:
    if form == "epoch_us":
        return str(nanoseconds // 1_000)
    moment = datetime.fromtimestamp(nanoseconds // 1_000_000_000, UTC).replace(
        microsecond=nanoseconds // 1_000 % 1_000_000
    )
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


WRITERS: Mapping[str, Callable[[World, TraceSetup, list[Record], Random], str]] = {
    "otlp": _otlp,
    "jaeger": _jaeger,
    "zipkin": _zipkin,
    "csv": _csv,
}
