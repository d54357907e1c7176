"""Spans read from a live tracing backend (Jaeger, Tempo): what both do between their HTTP answers and
`query_traces` (DESIGN §5, traces issue). Each backend module only asks its own API; this reads the answers.

Invariants:
  - a backend reads whole traces (every span of each trace its search found, so that a span's parent and the
    call edges are there to be seen) and answers a `TraceQuery` with `trace_graph.answer` over them, exactly as
    a snapshot's span files are answered; the spans are parsed by `traceformats.read_spans`;
  - a trace read twice (found by two searches) counts once: the first answer that holds it is kept;
  - a span's service is the name the backend gives it, a Kubernetes pod name read as its Deployment
    (`checkout-7c9f6d8b5-x2k4q` → checkout), as every other source names it;
  - a span item's source is the backend that served it (`{"backend": "jaeger"}`); its trace and span id say
    which span it is;
  - `digests` maps each request's URL (with its query, without credentials) to the sha256 of the body read;
  - a search that returned as many traces as it asked for may have left others unread: `limited` says so and
    the tool states its counts as a lower bound; records of an answer that are no readable span are counted
    in `errors`, never dropped silently;
  - an unreachable backend, an HTTP error, invalid JSON or an answer of another shape is a `BackendError`, never
    "no spans".
"""

from __future__ import annotations

import json
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC
from typing import Any

from evcli.backends.http import Connection, HttpStatusError, Params
from evcli.backends.k8s_objects import pod_service
from evcli.backends.snapshot_traces import TraceResult
from evcli.backends.trace_graph import SpanGraph, SpanSource, TraceQuery, answer
from evcli.backends.traceformats import Span, TraceFileError, normal_id, read_spans
from evcli.core.errors import BackendError

TRACE_LIMIT = 100  # traces one search asks for; an answer this long may have left others out
FETCHES = 4  # requests at once when traces are fetched one by one


@dataclass
class LiveTraceResult(TraceResult):
    limited: str = ""  # why traces of the range may be missing ("" when the searches returned less than asked)


@dataclass
class TraceReading:
    """What the requests of one query read: the spans of each trace once, the body digests, what was cut."""

    backend: str  # "jaeger", "tempo": the spans' source
    spans: list[Span] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)
    limited: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _traces: set[str] = field(default_factory=set, init=False, repr=False)  # normalised ids of the traces read

    def get(self, connection: Connection, path: str, params: Params = None) -> Any:
        """GET `path` (a `BackendError` on failure), keep the body's digest under its URL, return its JSON."""
        document, digest = connection.get_json_digest(path, params)
        query = urllib.parse.urlencode(params or {}, doseq=True)
        self.digests[connection.url + path + (f"?{query}" if query else "")] = digest
        return document

    def get_each(self, connection: Connection, paths: list[str]) -> list[Any]:
        """GET every path, at most FETCHES at once, digests kept in the order of `paths`; the answer of a path
        the server does not have (HTTP 404) is None, any other failure a `BackendError`."""
        with ThreadPoolExecutor(max_workers=FETCHES) as pool:
            answers = list(pool.map(lambda path: _found(connection, path), paths))
        for path, found in zip(paths, answers, strict=True):
            if found is not None:
                self.digests[connection.url + path] = found[1]
        return [None if found is None else found[0] for found in answers]

    def add(self, document: Any, where: str) -> int:
        """Read the spans of one answer (OTLP or Jaeger JSON); a trace read before is left out. The number of
        spans kept."""
        try:
            found = read_spans(json.dumps(document).encode())
        except TraceFileError as error:
            raise BackendError(f"{where} answered no spans: {error}") from None
        except (AttributeError, TypeError):  # the reader takes a part of another shape for an object or a list
            raise BackendError(f"{where} answered spans of an unexpected shape") from None
        if found.records > len(found.spans):
            unread = found.records - len(found.spans)
            reason = found.unread_reasons[0] if found.unread_reasons else "unreadable"
            self.errors.append(f"{unread} of {found.records} spans {where} answered could not be read ({reason})")
        earlier = set(self._traces)
        kept = [span for span in found.spans if normal_id(span.trace_id) not in earlier]
        self._traces.update(normal_id(span.trace_id) for span in kept)
        self.spans += [replace(span, service=service_name(span.service)) for span in kept]
        return len(kept)

    def result(self, query: TraceQuery) -> LiveTraceResult:
        """The spans, stats and edges of `query` over every span read (times in UTC, a live backend's zone)."""
        graph = SpanGraph(SpanSource(span, self.backend) for span in self.spans)
        found = answer(graph, query, UTC)
        for item in found.spans:
            item["source"] = {"backend": self.backend}
        return LiveTraceResult(found, self.digests, self.errors, "; ".join(self.limited))


def _found(connection: Connection, path: str) -> tuple[Any, str] | None:
    try:
        return connection.get_json_digest(path)
    except HttpStatusError as error:
        if error.status == 404:
            return None
        raise


def service_name(name: str) -> str:
    """The service a span names: a pod's Deployment, else the name as written ("" stays unknown)."""
    return pod_service(name) or name


def written_as(service: str, listed: list[str]) -> list[str]:
    """The names a backend lists for `service`: itself and its pods (the service alone when it lists none)."""
    return [name for name in listed if service_name(name) == service] or [service]


def resolve(name: str, services: list[str]) -> str | None:
    """The service of `services` a name denotes (case-insensitive), directly or as a pod of it."""
    by_lower = {service_name(service).lower(): service_name(service) for service in services}
    return by_lower.get(name.strip().lower()) or by_lower.get(service_name(name.strip()).lower())


def checked_list(document: Any, key: str, where: str) -> list[Any]:
    """`document[key]` when it is a list (a missing or null key is an empty list); a `BackendError` when the
    answer is no JSON object or holds something else there."""
    if not isinstance(document, dict):
        raise BackendError(f"{where} answered {type(document).__name__}, not a JSON object: {str(document)[:200]}")
    found = document.get(key)
    if found is None:
        return []
    if not isinstance(found, list):
        raise BackendError(f"{where} answered {key!r} that is not a list: {str(found)[:200]}")
    return found
