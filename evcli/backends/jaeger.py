"""Jaeger through its query service's HTTP API (the one its UI reads, port 16686 by default).

Requests: `GET /api/services`, `GET /api/traces?service=&start=&end=&limit=` (start and end in microseconds
since the epoch) and `GET /api/traces/{traceID}`. Every answer is Jaeger's structured response
`{"data", "total", "limit", "offset", "errors": [{"code", "msg", "traceID"}]}`: `data` is a list of service
names, or of traces `{traceID, spans, processes}` read as a Jaeger export is (evcli.backends.traceformats).

Invariants (besides evcli.backends.live_traces'):
  - a search names one service, as Jaeger requires: the service asked under each name Jaeger lists for it
    (its own and its pods'), or with none asked each service Jaeger lists, at most MAX_SERVICES of them
    (the rest are stated as not searched);
  - a search asks for the service and the range only: operation, minimum duration and errors are filtered
    here over the whole traces read, so edges and percentiles are those of every call in the range, not of
    the slow or failing ones alone;
  - a trace id is fetched alone (`/api/traces/{id}`, in whatever range it lies; the query's range filters
    its spans); Jaeger's 404 means it has no such trace: a `BackendError`, as is an answer whose `errors`
    come without data; errors beside data (a trace of several that was not found) are stated.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any

from evcli.backends.http import Connection, HttpStatusError
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

NAME = "jaeger"
MAX_SERVICES = 20  # services searched one by one when the query names none


def build(spec: BackendSpec) -> JaegerBackend:
    return JaegerBackend(Connection.from_spec(spec))


class JaegerBackend:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.url = connection.url

    def probe(self) -> None:
        """Raise `BackendError` unless the query service answers (`/api/services`)."""
        self.connection.probe("/api/services")

    def services(self) -> list[str]:
        return self._services(TraceReading(NAME))

    def resolve(self, name: str) -> str | None:
        return resolve(name, self.services())

    def query(self, query: TraceQuery) -> LiveTraceResult:
        """The spans, stats and edges of `query` over the traces Jaeger holds for it."""
        reading = TraceReading(NAME)
        if query.trace_id is not None:
            self._trace(reading, query.trace_id)
        else:
            self._search(reading, query)
        return reading.result(query)

    def _services(self, reading: TraceReading) -> list[str]:
        where = f"Jaeger at {self.url}/api/services"
        names = self._data(reading.get(self.connection, "/api/services"), where)
        if not all(isinstance(name, str) for name in names):
            raise BackendError(f"{where} answered a service list that is not names: {str(names)[:200]}")
        return sorted(names)

    def _search(self, reading: TraceReading, query: TraceQuery) -> None:
        listed = self._services(reading)
        services = listed if query.service is None else written_as(query.service, listed)
        if len(services) > MAX_SERVICES:
            reading.limited.append(f"Jaeger lists {len(services)} services: the first {MAX_SERVICES} were searched")
            services = services[:MAX_SERVICES]
        for service in services:
            params: dict[str, Any] = {"service": service, "limit": TRACE_LIMIT}
            if query.start_ns is not None:
                params["start"] = query.start_ns // 1_000
            if query.end_ns is not None:
                params["end"] = -(-query.end_ns // 1_000)  # rounded up: the range's last microsecond is in it
            where = f"Jaeger at {self.url}/api/traces?service={service}"
            traces = self._data(reading.get(self.connection, "/api/traces", params), where, reading)
            if len(traces) >= TRACE_LIMIT:
                reading.limited.append(
                    f"Jaeger returned its limit of {TRACE_LIMIT} traces for {service}: other traces of the range "
                    "were not read"
                )
            reading.add({"data": traces}, where)

    def _trace(self, reading: TraceReading, trace_id: str) -> None:
        path = "/api/traces/" + urllib.parse.quote(trace_id, safe="")
        where = f"Jaeger at {self.url}{path}"
        try:
            document = reading.get(self.connection, path)
        except HttpStatusError as error:
            if error.status == 404:
                raise BackendError(f"Jaeger at {self.url} has no trace {trace_id} (HTTP 404)") from None
            raise
        traces = self._data(document, where, reading)
        if not traces or reading.add({"data": traces}, where) == 0:
            raise BackendError(f"Jaeger at {self.url} has no trace {trace_id} (it answered no spans)")

    @staticmethod
    def _data(document: Any, where: str, reading: TraceReading | None = None) -> list[Any]:
        """The answer's `data` list; its `errors` are a `BackendError` when there is no data, else stated."""
        data = checked_list(document, "data", where)
        listed = checked_list(document, "errors", where)
        errors = [str(error.get("msg") if isinstance(error, dict) else error) for error in listed]
        if errors and not data:
            raise BackendError(f"{where} answered an error: {'; '.join(errors)[:300]}")
        if errors and reading is not None:
            reading.errors.append(f"{where} also answered: {'; '.join(errors)[:300]}")
        return data
