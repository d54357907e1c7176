"""Build evcli/envs/mesh/: a small shop's service mesh on 2026-11-20 whose spans are the evidence.

    python scripts/build_mesh_env.py             # (re)write evcli/envs/mesh
    python scripts/build_mesh_env.py --out DIR   # write the same files into DIR (the tests compare them)

The story (times UTC, window 13:30-14:30): frontend sends each request to checkout (~30%) or catalog;
checkout calls inventory (→ postgres-inventory), then payment (→ bank-gateway); catalog calls search.
search is slow all hour (the trap). From 14:02:00 bank-gateway's own time rises by 300-500 ms and ~6%
of its calls time out at 2,000 ms; the failure passes up through payment, checkout and frontend.

Invariants:
  - deterministic: one seeded `random.Random` draws everything in a fixed order, and the files are
    written with fixed formatting and `\\n` line ends, so a run rewrites the directory byte-identically;
  - the spans are the source of truth: every log line about a request, every metric row and the alert
    are computed from the spans (a log line's duration is its span's, a metric row's p99 is the exact
    nearest-rank p99 of frontend's spans in its window, the alert is active from the first row of the
    last unbroken run of its checkout route's p99 above the threshold), so no file can disagree with another;
  - one span per hop, the callee's (kind SERVER), its parent the caller's span: no client spans;
  - a caller's span contains its callees' spans (sequential calls, small gaps); a failed callee ends
    its caller's calls and fails the caller too (errors pass up to frontend);
  - each service writes its own format: OTLP lines for frontend, checkout, payment, bank-gateway,
    inventory and postgres-inventory; a Jaeger export for catalog and search (the same trace ids,
    catalog's parent the frontend span of the OTLP file); naive log times are Europe/Amsterdam.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

OUT_DIR = Path(__file__).resolve().parent.parent / "evcli" / "envs" / "mesh"
SEED = 7  # a draw whose proportions match the story: 29% checkout, 3 of 44 late bank calls time out
ZONE = ZoneInfo("Europe/Amsterdam")
START = datetime(2026, 11, 20, 13, 30, tzinfo=UTC)
END = datetime(2026, 11, 20, 14, 30, tzinfo=UTC)
ONSET = datetime(2026, 11, 20, 14, 2, tzinfo=UTC)  # bank-gateway's upstream bank API slows down
STORM = (datetime(2026, 11, 20, 13, 41, tzinfo=UTC), datetime(2026, 11, 20, 13, 42, 30, tzinfo=UTC))
MS = 1_000_000  # ns per ms
CHECKOUT_SHARE = 0.3
INTERVAL_S = (12.0, 9.0)  # mean seconds between requests at the window's start and end (a mild rise)
TIMEOUT_MS = 2000  # payment's read timeout calling bank-gateway, and bank-gateway's deadline to the bank
TIMEOUT_BLOCK = 17  # of each 17 bank-gateway calls after the onset one times out (~6%), at a random place
SLOW_BANK_MS = 500  # payment logs a bank-gateway call at least this long as WARN
SLOW_PAYMENT_MS = 500  # checkout logs a payment call at least this long as WARN
CONFLICT_SHARE = 0.01  # reservations that meet a changed stock version (409) and retry once
SYNC_CONFLICT_BLOCK = 60  # of each 60 adjustments of the warehouse feed one meets a 409, at a random place
SYNC_INTERVAL_S = 20  # mean seconds between the warehouse feed's stock adjustments (untraced)
METRIC_WINDOW = timedelta(minutes=5)  # a metric row covers the 5 minutes before its timestamp
ALERT_THRESHOLD_MS = 600  # FrontendLatencyHigh: p99 of frontend's checkout route over 5 minutes
ALERT_FOR = timedelta(minutes=2)

PODS = {  # service → the Kubernetes pods that name themselves in service.name
    "checkout": ("checkout-7c9f6d8b5-x2k4q", "checkout-7c9f6d8b5-m8w2n"),
    "payment": ("payment-5f7d9c8b4-qz7wn", "payment-5f7d9c8b4-t6vkh"),
}
HOPS = {  # service → the name of its span and the median of its own time (its span minus its callees'), ms
    "frontend": ("", 12),  # its span is named by the route: CATALOG_ROUTE or CHECKOUT_ROUTE
    "catalog": ("GET /products", 25),
    "search": ("GET /search", 0),  # its own time is drawn apart: always slow
    "checkout": ("POST /checkout", 35),
    "inventory": ("POST /reservations", 18),
    "postgres-inventory": ("UPDATE stock", 6),
    "payment": ("POST /charges", 30),
    "bank-gateway": ("POST /v1/authorize", 140),
}
CATALOG_ROUTE, CHECKOUT_ROUTE = "GET /api/products", "POST /api/checkout"
ROUTE = CHECKOUT_ROUTE.split(" ")[1]  # FrontendLatencyHigh's route label
BANK_TIMEOUT = f"504: upstream bank API did not answer within {TIMEOUT_MS} ms"
POOL_TIMEOUT = "no database connection within 1.0s (pool size 10)"  # catalog, once in the cache miss storm
PASSED_UP = {  # the status message of a span whose callee failed, by the callee
    "bank-gateway": f"Read timed out after {TIMEOUT_MS} ms calling bank-gateway",
    "payment": "payment call failed: 504 from payment",
    "checkout": "checkout failed: 502 from checkout",
    "catalog": "catalog failed: 503 from catalog",
}
SCOPES = {  # the instrumentation library each service records its spans with
    "frontend": ("@opentelemetry/instrumentation-http", "0.52.1"),
    "checkout": ("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp", "0.56.0"),
    "inventory": ("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp", "0.56.0"),
    "postgres-inventory": ("envoy", "1.31.2"),
    "payment": ("io.opentelemetry.tomcat-10.0", "2.9.0-alpha"),
    "bank-gateway": ("io.opentelemetry.tomcat-10.0", "2.9.0-alpha"),
}


@dataclass
class Span:
    """One span as a service records it; times in ns since the epoch."""

    trace_id: str
    span_id: str
    parent_id: str  # "" at the root
    service: str
    resource: str  # service.name as written: the pod for checkout and payment
    name: str
    start_ns: int
    end_ns: int = 0
    error: str = ""  # the status message of a failed span
    children: list[Span] = field(default_factory=list)

    @property
    def ms(self) -> float:
        return (self.end_ns - self.start_ns) / MS


def ns(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000_000


# --- the spans ----------------------------------------------------------------------------------


class Mesh:
    """Draws the requests of the hour and the spans of each, in one fixed order from one seed."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.late_calls = 0  # bank-gateway's calls after the onset so far
        self.timeout_at = 0  # the one of the current block of TIMEOUT_BLOCK late calls that times out
        self.pool_timeout_pending = True

    def span_id(self) -> str:
        return f"{self.rng.getrandbits(64):016x}"

    def uniform_ns(self, low_ms: float, high_ms: float) -> int:
        return int((low_ms + (high_ms - low_ms) * self.rng.random()) * MS)

    def own_ns(self, service: str, at_ns: int) -> int:
        """A service's own time: log-normal around its median, a long tail in 2% of calls."""
        if service == "search":  # always slow: 250-450 ms, p99 around 700 ms
            own = self.uniform_ns(250, 450)
            return own + (self.uniform_ns(200, 380) if self.rng.random() < 0.03 else 0)
        normal = math.sqrt(-2 * math.log(1 - self.rng.random())) * math.cos(2 * math.pi * self.rng.random())
        own = int(HOPS[service][1] * math.exp(0.3 * normal) * MS)
        if self.rng.random() < 0.02:
            own = int(own * (2 + 1.5 * self.rng.random()))
        if service == "bank-gateway" and at_ns >= ns(ONSET):
            own += self.uniform_ns(300, 500)
        if service == "catalog" and ns(STORM[0]) <= at_ns < ns(STORM[1]):
            own += self.uniform_ns(60, 160)  # the cache miss storm: catalog reads the database instead
        return own

    def gap_ns(self) -> int:
        return self.uniform_ns(0.3, 1.5)

    def exponential_ns(self, mean_s: float) -> int:
        return int(-math.log(1 - self.rng.random()) * mean_s * 1_000 * MS)

    def hop(
        self,
        parent: Span,
        service: str,
        start_ns: int,
        calls: tuple[Callable[[Span, int], Span], ...] = (),
        operation: str = "",
        failure: tuple[int, str] = (0, ""),
    ) -> Span:
        """`service`'s span: part of its own time, its calls in turn (a failed one ends them and fails
        the span), the rest of its own time; `failure`: it waits that long more after its calls and fails
        with that message."""
        resource = self.rng.choice(PODS[service]) if service in PODS else service
        span = Span(parent.trace_id, self.span_id(), parent.span_id, service, resource, "", start_ns)
        span.name = operation or HOPS[service][0]
        own = self.own_ns(service, start_ns)
        at = start_ns + own * 6 // 10
        for call in calls:
            child = call(span, at + self.gap_ns())
            span.children.append(child)
            at = child.end_ns + self.gap_ns()
            if child.error:
                span.error = PASSED_UP[child.service]
                own = self.uniform_ns(3, 8)  # the failure is handled, not the rest of the work
                break
        wait, error = failure
        span.error = span.error or error
        span.end_ns = at + wait + own - own * 6 // 10
        return span

    def bank_gateway(self, parent: Span, start_ns: int) -> Span:
        """After the onset one call of each TIMEOUT_BLOCK, at a random place, times out at TIMEOUT_MS."""
        span = self.hop(parent, "bank-gateway", start_ns)
        if start_ns >= ns(ONSET):
            if self.late_calls % TIMEOUT_BLOCK == 0:
                self.timeout_at = self.late_calls + self.rng.randrange(TIMEOUT_BLOCK)
            if self.late_calls == self.timeout_at:
                span.end_ns, span.error = start_ns + TIMEOUT_MS * MS + self.uniform_ns(0.1, 0.8), BANK_TIMEOUT
            self.late_calls += 1
        return span

    def payment(self, parent: Span, start_ns: int) -> Span:
        return self.hop(parent, "payment", start_ns, (self.bank_gateway,))

    def leaf(self, service: str) -> Callable[[Span, int], Span]:
        """A call of a service that calls nothing."""
        return lambda parent, start_ns: self.hop(parent, service, start_ns)

    def inventory(self, parent: Span, start_ns: int) -> Span:
        retried = self.rng.random() < CONFLICT_SHARE  # a 409: the stock version changed, read and write again
        return self.hop(parent, "inventory", start_ns, (self.leaf("postgres-inventory"),) * (2 if retried else 1))

    def checkout(self, parent: Span, start_ns: int) -> Span:
        return self.hop(parent, "checkout", start_ns, (self.inventory, self.payment))

    def catalog(self, parent: Span, start_ns: int) -> Span:
        """In the cache miss storm, the first request after its peak fails: no database connection."""
        if self.pool_timeout_pending and ns(STORM[0]) + 15_000 * MS <= start_ns < ns(STORM[1]):
            self.pool_timeout_pending = False
            failure = (1_000 * MS, f"503: {POOL_TIMEOUT}")
            return self.hop(parent, "catalog", start_ns, (self.leaf("search"),), failure=failure)
        return self.hop(parent, "catalog", start_ns, (self.leaf("search"),))

    def request(self, at_ns: int) -> Span:
        """One request's trace: frontend's root span and everything under it."""
        root = Span(f"{self.rng.getrandbits(128):032x}", "", "", "", "", "", at_ns)  # stands for no parent
        if self.rng.random() < CHECKOUT_SHARE:
            return self.hop(root, "frontend", at_ns, (self.checkout,), CHECKOUT_ROUTE)
        return self.hop(root, "frontend", at_ns, (self.catalog,), CATALOG_ROUTE)

    def arrivals(self) -> Iterator[int]:
        """Request start times: exponential gaps whose mean falls over the hour (a mild rise in load)."""
        at, end = ns(START) + self.uniform_ns(500, 4000), ns(END)
        while at < end - 5_000 * MS:  # the last requests end before the snapshot's clock
            yield at
            share = (at - ns(START)) / (end - ns(START))
            mean_s = INTERVAL_S[0] + (INTERVAL_S[1] - INTERVAL_S[0]) * share
            at += self.exponential_ns(mean_s)

    def syncs(self) -> Iterator[int]:
        """The warehouse feed's stock adjustments on inventory (logged, not traced)."""
        at = ns(START) + self.uniform_ns(1000, 9000)
        while at < ns(END):
            yield at
            at += self.exponential_ns(SYNC_INTERVAL_S)


def walk(span: Span) -> Iterator[Span]:
    yield span
    for child in span.children:
        yield from walk(child)


def spans_of(traces: list[Span], *services: str) -> list[Span]:
    return [span for root in traces for span in walk(root) if span.service in services]


# --- traces/ ------------------------------------------------------------------------------------

OTLP_SERVICES = ("frontend", "checkout", "inventory", "postgres-inventory", "payment", "bank-gateway")
JAEGER_SERVICES = ("catalog", "search")
BATCH_NS = 60_000 * MS  # the collector's batch: the spans that ended within one minute, one export line


def _otlp_attribute(key: str, value: str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value}}


def _otlp_span(span: Span) -> dict[str, object]:
    found: dict[str, object] = {"traceId": span.trace_id, "spanId": span.span_id}
    if span.parent_id:  # the exporter leaves out empty fields
        found["parentSpanId"] = span.parent_id
    found |= {
        "name": span.name,
        "kind": 2,  # SPAN_KIND_SERVER: one span per hop, the callee's
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
    }
    if span.service == "postgres-inventory":
        found["attributes"] = [_otlp_attribute("db.system", "postgresql")]
    found["status"] = {"code": 2, "message": span.error} if span.error else {}
    return found


def _otlp_resource(resource: str, service: str, spans: list[Span]) -> dict[str, object]:
    name, version = SCOPES[service]
    return {
        "resource": {"attributes": [_otlp_attribute("service.name", resource)]},
        "scopeSpans": [{"scope": {"name": name, "version": version}, "spans": [_otlp_span(s) for s in spans]}],
    }


def collector_lines(traces: list[Span]) -> str:
    """The OpenTelemetry Collector's file exporter: one export request a line, each holding the spans
    that ended within one batch interval, grouped by resource (service.name)."""
    batches: dict[int, list[Span]] = {}
    for span in sorted(spans_of(traces, *OTLP_SERVICES), key=lambda span: (span.end_ns, span.span_id)):
        batches.setdefault(span.end_ns // BATCH_NS, []).append(span)
    lines = []
    for _, batch in sorted(batches.items()):
        by_resource: dict[str, list[Span]] = {}
        for span in batch:
            by_resource.setdefault(span.resource, []).append(span)
        resources = [_otlp_resource(name, spans[0].service, spans) for name, spans in by_resource.items()]
        lines.append(json.dumps({"resourceSpans": resources}, separators=(",", ":"), ensure_ascii=False))
    return "\n".join(lines) + "\n"


def _jaeger_tag(key: str, value: str | bool) -> dict[str, object]:
    return {"key": key, "type": "bool" if isinstance(value, bool) else "string", "value": value}


def _jaeger_span(span: Span, process: str, known: set[str]) -> dict[str, object]:
    tags = [_jaeger_tag("error", True), _jaeger_tag("otel.status_description", span.error)] if span.error else []
    found: dict[str, object] = {
        "traceID": span.trace_id,
        "spanID": span.span_id,
        "operationName": span.name,
        "references": [{"refType": "CHILD_OF", "traceID": span.trace_id, "spanID": span.parent_id}],
        "startTime": span.start_ns // 1_000,
        "duration": (span.end_ns - span.start_ns) // 1_000,
        "tags": tags,
        "processID": process,
    }
    if span.parent_id not in known:  # frontend's span is in the collector's file, not in Jaeger
        found["warnings"] = [f"invalid parent span IDs={span.parent_id}; skipping clock skew adjustment"]
    return found


def jaeger_export(traces: list[Span]) -> str:
    """The Jaeger UI's download of a search for catalog: {"data": [trace, …]}, one trace a line."""
    processes = {service: f"p{number}" for number, service in enumerate(JAEGER_SERVICES, 1)}
    lines = []
    for root in traces:
        spans = spans_of([root], *JAEGER_SERVICES)
        if not spans:
            continue
        known = {span.span_id for span in spans}
        trace = {
            "traceID": root.trace_id,
            "spans": [_jaeger_span(span, processes[span.service], known) for span in spans],
            "processes": {processes[service]: {"serviceName": service, "tags": []} for service in JAEGER_SERVICES},
        }
        lines.append(json.dumps(trace, separators=(",", ":")))
    return '{"data":[\n' + ",\n".join(lines) + '\n],"total":0,"limit":0,"offset":0,"errors":null}\n'


# --- logs/ --------------------------------------------------------------------------------------


def utc_text(at_ns: int) -> str:
    """`2026-11-20T13:30:12.345Z`."""
    return f"{datetime.fromtimestamp(at_ns // 1_000_000_000, UTC):%Y-%m-%dT%H:%M:%S}.{at_ns // MS % 1000:03d}Z"


def local_text(at_ns: int, separator: str) -> str:
    """`2026-11-20 14:30:12.345` in Europe/Amsterdam (`,` before the milliseconds for Python logging)."""
    moment = datetime.fromtimestamp(at_ns // 1_000_000_000, UTC).astimezone(ZONE)
    return f"{moment:%Y-%m-%d %H:%M:%S}{separator}{at_ns // MS % 1000:03d}"


def payment_log(traces: list[Span], rng: random.Random) -> str:
    """logback, local time: each bank-gateway call as payment's BankClient sees it."""
    lines = []
    for payment in spans_of(traces, "payment"):
        bank = payment.children[0]
        thread = f"http-nio-8080-exec-{rng.randint(1, 10)}"
        prefix = f"{local_text(bank.end_ns, '.')} {{level:<5}} [{thread}] c.s.payment.BankClient - "
        if bank.error:
            lines.append(prefix.format(level="ERROR") + f"Read timed out after {TIMEOUT_MS} ms calling bank-gateway")
            lines += [
                "java.net.SocketTimeoutException: Read timed out",
                "\tat java.base/sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:288)",
                "\tat java.base/java.net.Socket$SocketInputStream.read(Socket.java:1099)",
                "\tat c.s.payment.BankClient.authorize(BankClient.java:87)",
            ]
        else:
            level = "WARN" if bank.ms >= SLOW_BANK_MS else "INFO"
            lines.append(prefix.format(level=level) + f"bank-gateway call took {round(bank.ms)} ms")
    return "\n".join(lines) + "\n"


def order_id(span: Span) -> str:
    return f"ord-{int(span.trace_id[:6], 16) % 900_000 + 100_000}"


def checkout_log(traces: list[Span]) -> str:
    """JSON lines (time UTC, level, msg): each checkout with its payment call's outcome."""
    lines = []
    for checkout in spans_of(traces, "checkout"):
        payment = checkout.children[-1]
        fields = {"time": utc_text(checkout.end_ns), "level": "info", "pod": checkout.resource}
        if checkout.error:
            fields |= {"level": "error", "msg": checkout.error}
        elif payment.ms >= SLOW_PAYMENT_MS:
            fields |= {"level": "warn", "msg": f"slow payment call: {round(payment.ms)} ms"}
        else:
            fields |= {"msg": f"order placed in {round(checkout.ms)} ms"}
        fields |= {"order_id": order_id(checkout), "trace_id": checkout.trace_id}
        lines.append(json.dumps(fields, separators=(",", ":")))
    return "\n".join(lines) + "\n"


CONFLICT = 'level=warn msg="409 conflict: stock version changed, retrying" sku={sku} attempt=1'


def inventory_log(traces: list[Span], mesh: Mesh) -> str:
    """logfmt (ts UTC): reservations (traced) and the warehouse feed's adjustments (not traced); an
    operation that met a changed stock version logs the 409 before retrying."""
    rng = mesh.rng
    events: list[tuple[int, str]] = []
    for span in spans_of(traces, "inventory"):
        sku = f"SKU-{rng.randint(1000, 9999)}"
        if len(span.children) > 1:
            events.append((span.children[0].end_ns, CONFLICT.format(sku=sku)))
        events.append(
            (
                span.end_ns,
                f'level=info msg="stock reserved" order={order_id(span)} sku={sku} qty={rng.randint(1, 3)} '
                f"took={round(span.ms)}ms",
            )
        )
    conflict_at = 0
    for number, at in enumerate(mesh.syncs()):
        sku = f"SKU-{rng.randint(1000, 9999)}"
        if number % SYNC_CONFLICT_BLOCK == 0:
            conflict_at = number + rng.randrange(SYNC_CONFLICT_BLOCK)
        if number == conflict_at:
            events.append((at, CONFLICT.format(sku=sku)))
            at += mesh.uniform_ns(5, 20)
        delta = rng.randint(-4, 24)
        events.append((at, f'level=info msg="stock adjusted from warehouse feed" sku={sku} delta={delta:+d}'))
    return "".join(f"ts={utc_text(at)} {text}\n" for at, text in sorted(events))


REDIS_TIMEOUT = "redis.exceptions.TimeoutError: Timeout reading from socket"
CACHE_STORM = (  # seconds after the storm's start, logger, level, message
    (2.114, "catalog.cache", "WARNING", "cache miss rate 91% over the last 10s (keys products:*)"),
    (4.870, "catalog.cache", "ERROR", f"cache lookup failed for products:page:1: {REDIS_TIMEOUT}"),
    (9.305, "catalog.cache", "ERROR", f"cache lookup failed for products:page:3: {REDIS_TIMEOUT}"),
    (31.048, "catalog.cache", "ERROR", f"cache lookup failed for products:featured: {REDIS_TIMEOUT}"),
    (44.517, "catalog.cache", "ERROR", "cache refill of products:* failed: 412 keys pending, retrying in 5s"),
    (87.930, "catalog.cache", "INFO", "cache refilled: 1284 keys in 84.2s, hit ratio back to 0.93"),
)


def catalog_log(traces: list[Span]) -> str:
    """Python logging, local time: each request catalog served, and the cache miss storm at 13:41 UTC (the
    request that found no database connection logs it before its answer)."""
    events = [(ns(STORM[0]) + int(at * 1_000) * MS, logger, level, text) for at, logger, level, text in CACHE_STORM]
    for span in spans_of(traces, "catalog"):
        if span.error:
            events.append(
                (span.end_ns - MS, "catalog.db", "ERROR", f"fallback query for products failed: {POOL_TIMEOUT}")
            )
        status = 503 if span.error else 200
        events.append((span.end_ns, "catalog.api", "INFO", f"GET /products {status} in {round(span.ms)}ms"))
    return "".join(
        f"{local_text(at, ',')} - {logger} - {level} - {text}\n" for at, logger, level, text in sorted(events)
    )


# --- metrics/ and alerts.json -------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    at: datetime
    p99_ms: float
    error_pct: float


def nearest_rank_p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def window_rows(roots: list[Span]) -> list[Row]:
    """Per minute: p99 latency and error rate of the requests (root spans) that started in the 5 minutes
    before (an empty window is a p99 of 0)."""
    rows, at = [], START + METRIC_WINDOW
    while at <= END:
        window = [root for root in roots if ns(at - METRIC_WINDOW) <= root.start_ns < ns(at)]
        errors = sum(bool(root.error) for root in window)
        p99 = round(nearest_rank_p99([root.ms for root in window]), 1) if window else 0.0
        rows.append(Row(at, p99, round(100 * errors / len(window), 2) if window else 0.0))
        at += timedelta(minutes=1)
    return rows


def metrics_csv(rows: list[Row]) -> str:
    lines = ["timestamp,request_latency_p99[ms],error_rate[%]"]
    lines += [f"{row.at:%Y-%m-%dT%H:%M:%SZ},{row.p99_ms},{row.error_pct}" for row in rows]
    return "\n".join(lines) + "\n"


def alert_active_at(rows: list[Row]) -> datetime | None:
    """When FrontendLatencyHigh became active: the first row of the last unbroken run of rows above the
    threshold; None when the last row is not above it or the run is shorter than ALERT_FOR (not firing)."""
    since: datetime | None = None
    for row in rows:
        if row.p99_ms <= ALERT_THRESHOLD_MS:
            since = None
        elif since is None:
            since = row.at
    return since if since is not None and rows[-1].at - since >= ALERT_FOR else None


def alerts_json(route_rows: list[Row], active_at: datetime) -> str:
    """Prometheus GET /api/v1/alerts at the snapshot's clock: FrontendLatencyHigh firing on frontend's
    checkout route since `active_at` (nobody alerts on bank-gateway)."""
    alert = {
        "labels": {
            "alertname": "FrontendLatencyHigh",
            "service": "frontend",
            "route": ROUTE,
            "namespace": "shop",
            "severity": "warning",
            "team": "web",
        },
        "annotations": {
            "summary": f"p99 latency of frontend {ROUTE} is {route_rows[-1].p99_ms / 1000:.2f} s "
            f"(threshold {ALERT_THRESHOLD_MS / 1000:g} s)",
            "description": f"histogram_quantile(0.99, rate(http_server_request_duration_seconds_bucket"
            f'{{service="frontend",route="{ROUTE}"}}[5m])) above {ALERT_THRESHOLD_MS / 1000:g} s for '
            f"{ALERT_FOR.seconds // 60} minutes",
            "unit": "ms",
            "threshold": str(ALERT_THRESHOLD_MS),
            "runbook_url": "runbooks/upstream-latency-payment.md",
        },
        "state": "firing",
        "activeAt": f"{active_at:%Y-%m-%dT%H:%M:%SZ}",
        "value": f"{route_rows[-1].p99_ms:.4e}",
    }
    document = {"status": "success", "data": {"alerts": [alert]}}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# --- env.toml and runbooks/ ---------------------------------------------------------------------

ENV_TOML = """\
# The "mesh" snapshot environment: the service mesh of a small online shop on 2026-11-20, 14:30-15:30
# local time (Europe/Amsterdam, UTC+1; 13:30-14:30 UTC), frozen at 15:30. Its point is traces: the call
# graph is needed to find the cause. Written by scripts/build_mesh_env.py (seeded; run it to rebuild).
#   frontend → checkout (~30% of requests) → inventory → postgres-inventory, then → payment → bank-gateway
#   frontend → catalog (~70%) → search
# From 14:02:00Z bank-gateway's own time rises by 300-500 ms (a slow upstream bank API) and {timeouts} of
# its {late_calls} calls after that time out at 2,000 ms; the error passes up through payment, checkout and
# frontend in the same traces. Nobody alerts on bank-gateway: FrontendLatencyHigh fires on frontend.
# The trap: search is slow all hour (own time 250-450 ms, p99 {search_p99} ms), before and after 14:02Z.
# Noise: inventory's "409 conflict: stock version changed, retrying" at ~1% all hour; catalog's cache
# miss storm at 13:41Z (ERROR lines, one request failing with 503 up to frontend; over by 13:42:30Z).
# alerts.json (Prometheus /api/v1/alerts): FrontendLatencyHigh on frontend's route /api/checkout (p99 over
# 5 minutes above 600 ms for 2 minutes), active since {active_at}Z.
#   traces/collector.jsonl      OTLP JSON lines (Collector file exporter; ns times); checkout and payment
#                               name their pods in service.name (checkout-7c9f6d8b5-x2k4q, ...)
#   traces/catalog-jaeger.json  Jaeger export (µs times) of catalog's and search's spans of the same
#                               traces: catalog's parent is frontend's span in the OTLP file
#   logs/payment.log            logback, naive local time (UTC+1); logs/catalog.log Python logging, naive
#                               local time; logs/checkout.jsonl JSON lines (UTC); logs/inventory.log logfmt (UTC)
#   metrics/frontend.csv        per minute: p99 and error rate of frontend's requests in the 5 minutes before
name = "mesh"
timezone = "Europe/Amsterdam"
now = "2026-11-20T14:30:00Z"

[services.frontend]
aliases = ["web frontend"]

[services.checkout]
aliases = ["结算服务"]

[services.payment]
aliases = ["payments", "支付服务"]

[services.bank-gateway]
aliases = ["bank"]

[services.inventory]
aliases = ["库存服务"]

[services.postgres-inventory]
aliases = ["inventory db", "inventory database"]

[services.catalog]
aliases = ["product catalog"]

[services.search]
aliases = ["search service", "搜索服务"]

[topology]
frontend = ["checkout", "catalog"]
checkout = ["inventory", "payment"]
inventory = ["postgres-inventory"]
payment = ["bank-gateway"]
catalog = ["search"]
"""

RUNBOOK = """\
---
title: Upstream latency on payment
services: [payment, bank-gateway, checkout, frontend]
alerts: [FrontendLatencyHigh, PaymentLatencyHigh]
---

# Upstream latency on payment

Use this when checkout is slow or failing and payment's calls to bank-gateway take
longer than usual. bank-gateway forwards each charge to the bank's authorization
API; payment waits at most 2,000 ms for it (`Read timed out after 2000 ms calling
bank-gateway`), and checkout and frontend pass a failed payment on as 504 and 502.

## Checks

1. Follow the call graph from the alerting service down: frontend → checkout →
   payment → bank-gateway. For each edge compare the p99 after the alert's start
   with the hour before; the edge whose latency changed is the lead, not the edge
   that is slowest in absolute terms (search is slow all day).
2. Compute bank-gateway's own time (its span minus its callees'). If it rose while
   payment's own time did not, the delay is between bank-gateway and the bank.
3. Match the error spans: a timeout of bank-gateway should share its trace id with
   the failed spans of payment, checkout and frontend.
4. Count `Read timed out` and `bank-gateway call took` lines in payment's log per
   minute and compare their start with the onset in the spans.
5. Check the bank's status page and the acquirer's announced maintenance windows.

## Immediate steps

- Tell the web team that failed checkouts come from the bank API, so that nobody
  rolls back frontend or checkout for it.
- Open a ticket with the bank and send them trace ids and times of the timeouts.
- If the bank offers a second endpoint or region, switch bank-gateway to it.

## Escalation

Page the payments team when more than 2% of checkouts fail for 10 minutes.
"""


# --- the directory ------------------------------------------------------------------------------


def build() -> dict[str, str]:
    """Every file of the environment: its path relative to the directory → its text."""
    rng = random.Random(SEED)
    mesh = Mesh(rng)
    traces = [mesh.request(at) for at in list(mesh.arrivals())]
    rows = window_rows(traces)
    route_rows = window_rows([root for root in traces if root.name == CHECKOUT_ROUTE])
    late = [span for span in spans_of(traces, "bank-gateway") if span.start_ns >= ns(ONSET)]
    search = [span.ms for span in spans_of(traces, "search")]
    active_at = alert_active_at(route_rows)
    if active_at is None:
        raise SystemExit("the seed's spans do not fire FrontendLatencyHigh: the story needs it firing")
    env = ENV_TOML.format(
        active_at=f"{active_at:%H:%M}",
        timeouts=sum(bool(span.error) for span in late),
        late_calls=len(late),
        search_p99=round(nearest_rank_p99(search)),
    )
    return {
        "env.toml": env,
        "alerts.json": alerts_json(route_rows, active_at),
        "traces/collector.jsonl": collector_lines(traces),
        "traces/catalog-jaeger.json": jaeger_export(traces),
        "logs/payment.log": payment_log(traces, rng),
        "logs/checkout.jsonl": checkout_log(traces),
        "logs/inventory.log": inventory_log(traces, mesh),
        "logs/catalog.log": catalog_log(traces),
        "metrics/frontend.csv": metrics_csv(rows),
        "runbooks/upstream-latency-payment.md": RUNBOOK,
    }


def write(files: dict[str, str], out: Path) -> None:
    """The files into `out`, emptied first: only an empty directory or one this script wrote is replaced."""
    if out.exists() and any(out.iterdir()):
        marker = out / "env.toml"
        if not (marker.is_file() and 'name = "mesh"' in marker.read_text(encoding="utf-8")):
            raise SystemExit(f"{out} is neither empty nor the mesh environment: not overwritten")
    if out.exists():
        shutil.rmtree(out)
    for relative, text in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the mesh snapshot environment.")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help=f"directory to write (default: {OUT_DIR})")
    write(build(), parser.parse_args().out)


if __name__ == "__main__":
    main()
