"""Grafana Tempo through its HTTP API (port 3200 by default).

Requests: `GET /api/search?q=<TraceQL>&start=&end=&limit=` (or `tags=<logfmt>` instead of `q`; start and end
in seconds since the epoch) answering `{"traces": [{"traceID", "rootServiceName", "startTimeUnixNano", …}],
"metrics": {…}}`; then `GET /api/traces/<traceID>` for each trace found, answering OTLP JSON with the resource
spans under `batches` (or `resourceSpans`) and trace and span ids in base64, as Tempo's protobuf JSON writes
them (hex ids are read too); `GET /api/search/tag/service.name/values` (`{"tagValues": [...]}`, the
services), `GET /api/status/buildinfo` (`{"version", …}`) and `GET /api/echo` (the query frontend answers).

Invariants (besides evcli.backends.live_traces'):
  - a search names its service with TraceQL, `{ resource.service.name = "x" }` (or'd with each pod of it
    Tempo lists), where the server has it (version 2 and later by /api/status/buildinfo), else with a tag
    search `service.name=x` (Tempo 1, whose tag values match as substrings, pods included: the spans are
    kept here by their service); a query naming no service searches every trace of the range;
  - the search's start is rounded down and its end up to the second; spans are kept by the range to the
    nanosecond here;
  - the traces found are fetched whole, FETCHES at once, and read in the order the search listed them; one
    that is gone by then (HTTP 404) is stated, not read;
  - a trace id Tempo does not have (HTTP 404, or a trace without spans) is a `BackendError`.
"""

from __future__ import annotations

import base64
import re
import string
import urllib.parse
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evcli.backends.http import Connection, HttpStatusError, quote_string
from evcli.backends.live_traces import (
    TRACE_LIMIT,
    LiveTraceResult,
    TraceReading,
    checked_list,
    resolve,
    written_as,
)
from evcli.backends.trace_graph import TraceQuery
from evcli.core.errors import BackendError

if TYPE_CHECKING:
    from evcli.contracts import BackendSpec

NAME = "tempo"
SERVICE_ATTRIBUTE = "service.name"
TRACEQL_SINCE = 2  # the major version that has TraceQL
_ID_BYTES = (8, 16)  # a span id, a trace id
_HEX_ID_LENGTHS = (16, 32)
_MAJOR = re.compile(r"^v?(\d+)\.")
_LOGFMT_PLAIN = re.compile(r'^[^\s"=]+$')
_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def build(spec: BackendSpec) -> TempoBackend:
    return TempoBackend(Connection.from_spec(spec))


class TempoBackend:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.url = connection.url

    def probe(self) -> None:
        """Raise `BackendError` unless the query frontend answers (`/api/echo`)."""
        self.connection.probe("/api/echo")

    def services(self) -> list[str]:
        path = f"/api/search/tag/{SERVICE_ATTRIBUTE}/values"
        where = f"Tempo at {self.url}{path}"
        values = checked_list(self.connection.get_json(path), "tagValues", where)
        if not all(isinstance(value, str) for value in values):
            raise BackendError(f"{where} answered tag values that are not names: {str(values)[:200]}")
        return sorted(values)

    def resolve(self, name: str) -> str | None:
        return resolve(name, self.services())

    @cached_property
    def traceql(self) -> bool:
        """Whether the server reads TraceQL: its version is TRACEQL_SINCE or later (a server without
        /api/status/buildinfo is older)."""
        try:
            info = self.connection.get_json("/api/status/buildinfo")
        except HttpStatusError as error:
            if error.status == 404:
                return False
            raise
        major = _MAJOR.match(str(info.get("version") if isinstance(info, dict) else ""))
        return major is not None and int(major.group(1)) >= TRACEQL_SINCE

    def query(self, query: TraceQuery) -> LiveTraceResult:
        """The spans, stats and edges of `query` over the traces Tempo holds for it."""
        reading = TraceReading(NAME)
        if query.trace_id is not None:
            self._trace(reading, query.trace_id)
        else:
            self._search(reading, query)
        return reading.result(query)

    def search_params(self, query: TraceQuery) -> dict[str, Any]:
        """The /api/search parameters of a query: its service as TraceQL or a tag, its range in seconds."""
        params: dict[str, Any] = {"limit": TRACE_LIMIT}
        if query.service is not None:
            if self.traceql:
                names = written_as(query.service, self.services())
                either = " || ".join(f"resource.{SERVICE_ATTRIBUTE} = {quote_string(name)}" for name in names)
                params["q"] = f"{{ {either} }}"
            else:
                value = query.service if _LOGFMT_PLAIN.match(query.service) else quote_string(query.service)
                params["tags"] = f"{SERVICE_ATTRIBUTE}={value}"
        if query.start_ns is not None:
            params["start"] = query.start_ns // 1_000_000_000
        if query.end_ns is not None:
            params["end"] = -(-query.end_ns // 1_000_000_000)
        return params

    def _search(self, reading: TraceReading, query: TraceQuery) -> None:
        where = f"Tempo at {self.url}/api/search"
        found = reading.get(self.connection, "/api/search", self.search_params(query))
        if not isinstance(found, dict) or not {"traces", "metrics"} & found.keys():
            raise BackendError(f"{where} answered no search result (traces, metrics): {str(found)[:200]}")
        listed = checked_list(found, "traces", where)
        ids = [str(trace.get("traceID") or "") if isinstance(trace, dict) else "" for trace in listed]
        if not all(ids):
            raise BackendError(f"{where} answered a trace without its traceID: {str(listed)[:200]}")
        if len(ids) >= TRACE_LIMIT:
            reading.limited.append(
                f"Tempo returned its limit of {TRACE_LIMIT} traces: other traces of the range were not read"
            )
        paths = [_trace_path(trace_id) for trace_id in dict.fromkeys(ids)]
        for path, document in zip(paths, reading.get_each(self.connection, paths), strict=True):
            if document is None:
                reading.errors.append(f"Tempo at {self.url}{path} answered HTTP 404: the trace is gone")
            else:
                reading.add(otlp(document, f"Tempo at {self.url}{path}"), f"Tempo at {self.url}{path}")

    def _trace(self, reading: TraceReading, trace_id: str) -> None:
        path = _trace_path(trace_id)
        try:
            document = reading.get(self.connection, path)
        except HttpStatusError as error:
            if error.status == 404:
                raise BackendError(f"Tempo at {self.url} has no trace {trace_id} (HTTP 404)") from None
            raise
        if reading.add(otlp(document, f"Tempo at {self.url}{path}"), f"Tempo at {self.url}{path}") == 0:
            raise BackendError(f"Tempo at {self.url} has no trace {trace_id} (it answered no spans)")


def _trace_path(trace_id: str) -> str:
    return "/api/traces/" + urllib.parse.quote(trace_id, safe="")


def otlp(document: Any, where: str) -> dict[str, Any]:
    """Tempo's trace as OTLP JSON (`resourceSpans`) with hex ids; a `BackendError` when it is no OTLP trace."""
    if not isinstance(document, dict) or not {"batches", "resourceSpans"} & document.keys():
        raise BackendError(f"{where} answered no OTLP trace (batches or resourceSpans): {str(document)[:200]}")
    batches = checked_list(document, "batches" if "batches" in document else "resourceSpans", where)
    for span in _spans(batches):
        span.update({key: hex_id(span[key]) for key in _ID_KEYS if key in span})
    return {"resourceSpans": batches}


def _spans(batches: list[Any]) -> list[dict[str, Any]]:
    """Every span object of the resource spans (parts of another shape are left to the reader to refuse)."""
    found = []
    for batch in batches:
        scopes = (
            (batch.get("scopeSpans") or batch.get("instrumentationLibrarySpans")) if isinstance(batch, dict) else []
        )
        for scope in scopes if isinstance(scopes, list) else []:
            spans = scope.get("spans") if isinstance(scope, dict) else []
            found += [span for span in spans if isinstance(span, dict)] if isinstance(spans, list) else []
    return found


def hex_id(value: Any) -> Any:
    """A trace or span id in hex: base64 of 8 or 16 bytes (Tempo's protobuf JSON) decoded; a hex id, or
    anything else, as it is."""
    if not isinstance(value, str) or (len(value) in _HEX_ID_LENGTHS and all(c in string.hexdigits for c in value)):
        return value
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        return value
    return raw.hex() if len(raw) in _ID_BYTES else value
