"""`query_traces`: spans of a snapshot's traces/ (OTLP, Jaeger, Zipkin or CSV) or of a live Jaeger or Tempo
(`--jaeger URL`, `--tempo URL`: the part of `evcli.backends.live.LiveBackend` serving traces), filtered by
service, operation, range, minimum duration, errors and trace id; their stats and the call edges of the range.
With no time named a snapshot is searched whole and a live backend over the last hour ending at its clock;
either way the absolute range searched is recorded with where it came from.

Refs (rendered here from the structured output, the one source the runner records and the
Gatekeeper re-derives):
  - `$.spans[i]`: one span, `span <service> "<operation>" start=<ISO with zone> duration=<ms>
    status=<error|ok|unset> parent_service=<service|-> trace_id=… span_id=… (<file>:<line>)`, a live
    span's source being its backend (`(jaeger)`: the trace and span id name it there); the slowest
    first, or with a trace id asked the trace in start order;
  - `$.edges[i]`: one caller → callee pair of the range (the asked service on either side), the
    calls (callee spans whose parent span is the caller's), their errors and exact p50/p90/p99
    durations; an orphan span (its parent read nowhere) is on no edge;
  - `$.stats`: the spans matching every filter (not capped by `limit`), their traces, errors, exact
    p50/p90/p99 durations, first and last start, orphans among them, counts per service or
    operation when asked (`count_by`), the absolute range with where it came from, the filters; "at
    least" when a live backend returned as many traces as it was asked for (`lower_bound`).
Pods are named by their service (Deployment), as logs and metrics name them. A live call records the
sha256 of every answer it read (`digests`, by request URL), as a snapshot call records its files'.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import Field, field_validator

from evcli.core.errors import BackendError
from evcli.tools import registry
from evcli.tools.fetch import (
    LIVE_DEFAULT_SPAN,
    Outcome,
    call_range,
    environment_zone,
    is_snapshot,
    prepare_clock,
    searched_scope,
    unknown_service_outcome,
)
from evcli.tools.params import NAME, TimeExpression, ToolParams
from evcli.tools.refs import number, range_text

if TYPE_CHECKING:
    from evcli.backends.snapshot_traces import TraceResult
    from evcli.backends.trace_graph import TraceQuery
    from evcli.core.time import TimeRange
    from evcli.tools.runner import SessionView, ToolEnvironment

_UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}  # "s" after "ns", "us", "ms"


class QueryTracesParams(ToolParams):
    service: str | None = Field(None, pattern=NAME)  # None: every service
    operation: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")
    since: TimeExpression = None
    until: TimeExpression = None
    window: str | None = None
    min_duration: str | None = Field(None, max_length=32)
    errors_only: bool | None = None  # None (or False): every status, and not recorded in the call's parameters
    trace_id: str | None = Field(None, pattern=r"^[0-9a-fA-F]{1,32}$")
    limit: int = Field(20, ge=1, le=200)
    count_by: Literal["service", "operation"] | None = None  # stats.by_service / by_operation

    @field_validator("min_duration")
    @classmethod
    def _duration_syntax(cls, value: str | None) -> str | None:
        if value is not None:
            duration_ns(value)
        return value

    @field_validator("errors_only")
    @classmethod
    def _errors_or_none(cls, value: bool | None) -> bool | None:
        return value or None  # False is the default spelt out: the same call


def duration_ns(text: str) -> int:
    """`250ms`, `1.5s`, `800us`, `2m` (a number alone is milliseconds) in nanoseconds; ValueError otherwise."""
    from evcli.core.time import parse_duration

    value = text.strip().lower()
    for unit, factor in _UNITS_NS.items():
        if value.endswith(unit) and _is_number(value.removesuffix(unit)):
            return int(float(value.removesuffix(unit)) * factor)
    if _is_number(value):
        return int(float(value) * 1_000_000)
    try:
        return int(parse_duration(value).total_seconds() * 1_000_000_000)
    except ValueError:
        raise ValueError(f"cannot read duration {text!r}: use e.g. 250ms, 1.5s, 800us, 2m") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return bool(text.strip())


# --- refs --------------------------------------------------------------------------------------


def _ms(value: Any) -> str:
    return f"{number(value)}ms"


def span_text(span: dict[str, Any]) -> str:
    """`span checkout "POST /checkout" start=… duration=812.5ms status=error parent_service=gateway trace_id=… span_id=… (traces/a.jsonl:3)`."""
    source = span.get("source") or {}
    where = source.get("backend") or f"{source.get('path')}:{source.get('line')}"
    return (
        f'span {span.get("service") or "(no service)"} "{span.get("operation")}" start={span.get("start")} '
        f"duration={_ms(span.get('duration_ms'))} status={span.get('status')} "
        f"parent_service={span.get('parent_service') or '-'} trace_id={span.get('trace_id')} "
        f"span_id={span.get('span_id')} ({where})"
    )


def _latency(item: dict[str, Any]) -> str:
    return " ".join(f"{key}={_ms(item[f'{key}_ms'])}" for key in ("p50", "p90", "p99") if f"{key}_ms" in item)


def edge_text(edge: dict[str, Any]) -> str:
    """`edge gateway → checkout: calls=40 errors=12 p50=80ms p90=700ms p99=812.5ms`."""
    return (
        f"edge {edge.get('caller')} → {edge.get('callee')}: calls={edge.get('calls')} errors={edge.get('errors')} "
        + _latency(edge)
    ).rstrip()


def _filters(filters: Any) -> str:
    filters = filters if isinstance(filters, dict) else {}
    parts = [
        f"{key}={filters[key]}" for key in ("service", "operation", "min_duration", "trace_id") if filters.get(key)
    ]
    if filters.get("errors_only"):
        parts.append("errors_only")
    return " ".join(parts) or "none"


# what is wrong with the matching spans, stated in `$.stats` when it is not 0 (evcli.backends.trace_graph)
_STATED = (
    ("orphans", "orphan spans (parent not found)"),
    ("skewed", "spans start before their parent (clock skew)"),
    ("repeated", "spans repeat an earlier span's id (on no edge)"),
    ("cyclic", "spans on a cycle of parents (on no edge)"),
)


def stats_text(stats: dict[str, Any]) -> str:
    """`stats: 120 spans in 30 traces in <range> (<origin>); errors 12; duration p50=… p90=… p99=…; first …, last …; …`."""
    spans, traces = stats.get("spans", 0), stats.get("traces", 0)
    counted = f"at least {spans}" if stats.get("lower_bound") else f"{spans}"
    text = f"stats: {counted} span{'s' * (spans != 1)} in {traces} trace{'s' * (traces != 1)} in {range_text(stats)}"
    if stats.get("lower_bound"):
        text += " (a lower bound: the backend's trace limit was reached)"
    text += f"; errors {stats.get('errors', 0)}"
    if latency := _latency(stats):
        text += f"; duration {latency}"
    if stats.get("first"):
        text += f"; first {stats['first']}, last {stats.get('last')}"
    for key, what in _STATED:
        if stats.get(key):
            text += f"; {stats[key]} {what}"
    for key in ("by_service", "by_operation"):
        if isinstance(stats.get(key), dict):
            counts = ", ".join(f"{name} {count}" for name, count in stats[key].items()) or "-"
            text += f"; {key.replace('_', ' ')}: {counts}"
    return text + f"; filters: {_filters(stats.get('filters'))}"


# --- the call ----------------------------------------------------------------------------------


def scope(params: QueryTracesParams) -> dict[str, Any]:
    found: dict[str, Any] = {"service": params.service, "limit": params.limit}
    found.update({key: getattr(params, key) for key in ("window", "since", "until") if getattr(params, key)})
    for key in ("operation", "min_duration", "trace_id", "count_by"):
        if getattr(params, key):
            found[key] = getattr(params, key)
    if params.errors_only:
        found["errors_only"] = True
    # the names searched for, as the scope rules read a search's terms
    found["keywords"] = [value for value in (params.operation, params.trace_id) if value]
    return found


def precise(params: dict[str, Any]) -> bool:
    return bool(params.get("trace_id") or (params.get("service") and params.get("operation")))


def wider(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why `new` finds spans `old` would not, or None."""
    for key in ("service", "operation", "trace_id"):
        if old.get(key) and str(new.get(key) or "").lower() != str(old[key]).lower():
            return f"it drops or changes the {key} ({old[key]} → {new.get(key) or 'any'})"
    if old.get("errors_only") and not new.get("errors_only"):
        return "it drops errors_only"
    if old.get("min_duration") and duration_ns(str(new.get("min_duration") or "0")) < duration_ns(old["min_duration"]):
        return f"it lowers the minimum duration ({old['min_duration']} → {new.get('min_duration') or 'none'})"
    return None


class TraceSource(Protocol):
    """Where spans come from: a snapshot's traces/ (evcli.backends.snapshot_traces) or a live Jaeger or Tempo."""

    def services(self) -> list[str]: ...

    def resolve(self, name: str) -> str | None: ...

    def query(self, query: TraceQuery) -> TraceResult: ...


def prepare(backend: Any, params: QueryTracesParams) -> None:
    """Index a snapshot's span files before the call's deadline starts: a first build is not the call's time;
    the snapshot's span and clock too (they read the log files' edges)."""
    source = getattr(backend, "traces", None) if is_snapshot(backend) else None
    if source is not None and source.present:
        source.prepare()
    prepare_clock(backend, params)


def traces_source(backend: Any) -> TraceSource:
    """The snapshot's traces/ directory, or the live backend serving traces; a BackendError (a failed call)
    where there is neither."""
    if not is_snapshot(backend) and hasattr(backend, "trace_source"):
        live: TraceSource = backend.trace_source()  # a BackendError naming --jaeger/--tempo when none is
        return live
    source = getattr(backend, "traces", None) if is_snapshot(backend) else None
    if source is None:
        raise BackendError("no trace evidence here: query_traces reads a snapshot's traces/ directory (--env DIR)")
    if not source.present:
        raise BackendError("no trace evidence here: the snapshot has no traces/ files (.json, .jsonl, .ndjson, .csv)")
    snapshot: TraceSource = source
    return snapshot


def _resolve(name: str, backend: Any, source: TraceSource) -> str | None:
    """The service a name denotes: a snapshot's (names, aliases, files), else one the spans name; live, the
    configured alias or known name as the spans name it (a pod's Deployment), else the name as given."""
    resolved = backend.resolve_service(name) if hasattr(backend, "resolve_service") else None
    if is_snapshot(backend):
        return resolved or source.resolve(name)
    return source.resolve(resolved or name) or resolved


def _ns(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1_000


def _searched(named: TimeRange | None, backend: Any) -> tuple[TimeRange | None, dict[str, str]]:
    """The range to search (None: a snapshot's whole span) and the scope stating it: a snapshot's named range
    or whole span; a live backend's named range with open ends filled, else the last hour ending at its clock."""
    from evcli.core.time import TimeRange

    if is_snapshot(backend):
        whole = backend.span.text(environment_zone(backend)) if named is None and backend.span is not None else None
        return named, searched_scope(named, backend, whole)
    now = backend.now()
    searched = (named or TimeRange(None, None)).bounded(now - LIVE_DEFAULT_SPAN, now)
    return searched, searched_scope(named, backend, searched.text(environment_zone(backend)))


def fetch(params: QueryTracesParams, env: ToolEnvironment, session: SessionView) -> Outcome:
    from evcli.backends.trace_graph import TraceQuery

    backend: Any = env.backend  # a snapshot (its `span` and `traces`) or live backends (their `trace_source`)
    found_scope = scope(params)
    source = traces_source(backend)
    service = None
    if params.service:
        service = _resolve(params.service, backend, source)
        if service is None:
            known = ", ".join(source.services()) or "none"
            message = f"unknown service '{params.service}'; services in the traces: {known}"
            return unknown_service_outcome(message, SPEC.array_names, found_scope)
    searched, stated = _searched(call_range(params, backend), backend)
    found_scope.update(stated)
    query = TraceQuery(
        service=service,
        operation=params.operation,
        start_ns=_ns(searched.start) if searched else None,
        end_ns=_ns(searched.end) if searched else None,
        min_duration_ns=duration_ns(params.min_duration) if params.min_duration else None,
        errors_only=bool(params.errors_only),
        trace_id=params.trace_id,
        limit=params.limit,
        count_by=params.count_by,
    )
    result = source.query(query)
    found = result.answer
    filters = {
        key: found_scope[key]
        for key in ("service", "operation", "min_duration", "trace_id", "errors_only")
        if found_scope.get(key)
    }
    stats = found.stats | {
        "range": found_scope["range"],
        "range_origin": found_scope["range_origin"],
        "filters": filters,
    }
    limited = _limited(result)
    if limited:
        stats["lower_bound"] = True
    notes = [f"{found.total} matching spans ({len(found.spans)} shown), {len(found.edges)} call edges"]
    notes += [*([limited] if limited else []), *result.errors]
    output = {
        "spans": found.spans,
        "edges": found.edges,
        "stats": stats,
        "total": found.total,
        "truncated": found.total > len(found.spans) or bool(limited),
        "message": "; ".join(notes),
        "searched_range": found_scope["range"],
        "digests": result.digests,
    }
    return Outcome(output, found_scope)


def _limited(result: TraceResult) -> str:
    """Why a live search may have left traces of the range unread ("" for a snapshot, which reads every file)."""
    from evcli.backends.live_traces import LiveTraceResult

    return result.limited if isinstance(result, LiveTraceResult) else ""


SPEC = registry.register(
    registry.ToolSpec(
        name="query_traces",
        description=(
            "Spans of the environment's traces (OTLP, Jaeger, Zipkin or CSV span files, or a live Jaeger or Tempo) of "
            "one service (or of all), by operation, range (since/until or window; none: the whole snapshot, or a live "
            "backend's last hour), minimum duration, errors only or "
            "trace id: `$.spans[i]` (service, operation, start, duration, status, parent service, trace and span id; "
            "the slowest first), `$.edges[i]` (caller → callee of the range with the service on either side: calls, "
            "errors, exact p50/p90/p99 durations) and `$.stats` (spans, traces, errors, exact percentiles). "
            "Cite an edge for who calls whom and how slow or failing the calls are, `$.stats` for a count. "
            'count_by="service" or "operation" adds span counts per service or operation to `$.stats`.'
        ),
        summary="Spans, call edges (caller → callee) and latency percentiles from the environment's traces.",
        params=QueryTracesParams,
        arrays=(
            registry.EvidenceArray("spans", span_text),
            registry.EvidenceArray("edges", edge_text),
            registry.EvidenceArray("stats", stats_text, single=True),
        ),
        fetch=fetch,
        scope=scope,
        reads=("traces",),
        prepare=prepare,
        precise=precise,
        wider=wider,
        option_help={
            "service": "Service whose spans to return, by name, alias or pod name (default: every service); edges "
            "where it is the caller or the callee.",
            "operation": "Only spans whose operation (span name) contains this text, case-insensitive: POST /checkout.",
            "min_duration": "Only spans at least this long: 250ms, 1.5s, 800us (a number alone is milliseconds).",
            "errors_only": "Only spans whose status is an error (true: with service=payment, its failing calls).",
            "trace_id": "Only the spans of this trace (hex, leading zeros optional), in start order.",
            "limit": "At most N spans (1-200); stats and edges count every matching span.",
            "count_by": "service: count the matching spans per service in the stats (the 10 most); operation: per "
            "operation.",
        },
    )
)
