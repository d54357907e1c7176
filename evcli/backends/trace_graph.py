"""Spans as evidence (pure): the spans a query asks for, their stats and the call edges of its range.

Invariants:
  - a span's parent is looked up among every span read (not only those in the range), by trace and
    span id; a Zipkin server span (`shared`) has its client half, the span with its own id, as parent,
    and a span whose parent id both halves share has the server half (it runs in the callee);
  - an edge caller → callee exists only where a span's parent was read and belongs to another
    service: a missing parent is an orphan (counted, never guessed), a span calling its own service
    is no edge, and a span whose service is unknown ("") is on no edge;
  - a span repeating the (trace, span id) of an earlier span (an export written twice) is on no edge,
    so no call is counted twice; a span on a cycle of parents (a → b → a: one of those links is wrong,
    which one cannot be told) is on no edge; a child starting before its parent (clock skew between
    hosts) keeps its edge. Each is counted (`Quality`, and among a query's spans in `$.stats`);
  - percentiles are exact on the data, by nearest rank (the ⌈p·n⌉-th smallest duration);
  - edges are the call graph of the range (and trace, when asked): spans filtered by range and
    trace id only, then kept when the asked service is the caller or the callee, so "who calls
    payment" and "what does payment call" are both answered by one call; a query that matches no
    span has no edges either, so that it states "found nothing" (`$.no_evidence`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal

from evcli.backends.traceformats import Span, normal_id

PERCENTILES = (50, 90, 99)
BY_COUNT = 10  # count_by entries kept, the most first
NO_NAME = "(none)"  # count_by's name for spans without a service or operation


@dataclass(frozen=True)
class TraceQuery:
    service: str | None = None  # resolved
    operation: str | None = None  # case-insensitive substring of the span name
    start_ns: int | None = None  # the range, inclusive, by span start
    end_ns: int | None = None
    min_duration_ns: int | None = None
    errors_only: bool = False
    trace_id: str | None = None
    limit: int = 20
    count_by: Literal["service", "operation"] | None = None

    def in_range(self, span: Span) -> bool:
        return (self.start_ns is None or span.start_ns >= self.start_ns) and (
            self.end_ns is None or span.start_ns <= self.end_ns
        )

    def in_trace(self, span: Span) -> bool:
        return self.trace_id is None or normal_id(span.trace_id) == normal_id(self.trace_id)

    def keeps(self, span: Span) -> bool:
        """Every filter of the call (the `$.spans[i]` and `$.stats` of the answer)."""
        return (
            self.in_range(span)
            and self.in_trace(span)
            and (self.service is None or span.service == self.service)
            and (self.operation is None or self.operation.lower() in span.operation.lower())
            and (self.min_duration_ns is None or span.duration_ns >= self.min_duration_ns)
            and (not self.errors_only or span.error)
        )


@dataclass
class SpanSource:
    """A span and where it was read: the file relative to the environment (or a live source's name)."""

    span: Span
    path: str


@dataclass(frozen=True)
class Quality:
    """What is wrong with the spans read, stated rather than repaired."""

    orphans: int  # a parent id no span read has (or the span itself)
    skewed: int  # a child starting before its parent (clock skew between hosts)
    duplicates: int  # a (trace, span id) read more than once; the first is the parent the others see
    without_service: int
    cyclic: int = 0  # on a cycle of parents: each is its own ancestor


class SpanGraph:
    """Every span read, indexed by (trace, span id), with its parent's service."""

    def __init__(self, sources: Iterable[SpanSource]) -> None:
        self.sources = list(sources)
        self._by_id: dict[tuple[str, str], Span] = {}
        self._servers: dict[tuple[str, str], Span] = {}  # a Zipkin server half, by the id it shares
        self._repeats: set[int] = set()  # spans repeating an earlier span's (trace, span id)
        for index, source in enumerate(self.sources):
            span = source.span
            if span.shared:
                self._servers.setdefault((normal_id(span.trace_id), normal_id(span.span_id)), span)
                continue
            key = (normal_id(span.trace_id), normal_id(span.span_id))
            if key in self._by_id:
                self._repeats.add(index)
            else:
                self._by_id[key] = span
        self.parents = [self._parent(source.span) for source in self.sources]
        self._cyclic = self._on_cycles()
        self.quality = Quality(
            orphans=sum(self.orphan(index) for index in range(len(self.sources))),
            skewed=sum(self.skewed(index) for index in range(len(self.sources))),
            duplicates=len(self._repeats),
            without_service=sum(not source.span.service for source in self.sources),
            cyclic=len(self._cyclic),
        )

    def _on_cycles(self) -> set[int]:
        """The spans each of which is its own ancestor (every span's parent chain walked once)."""
        index_of = {id(source.span): index for index, source in reversed(list(enumerate(self.sources)))}
        parent_index = [None if parent is None else index_of[id(parent)] for parent in self.parents]
        state = [0] * len(self.sources)  # 0: not seen, 1: on the walk in progress, 2: done
        cyclic: set[int] = set()
        for start in range(len(self.sources)):
            walk: list[int] = []
            at: int | None = start
            while at is not None and state[at] == 0:
                state[at] = 1
                walk.append(at)
                at = parent_index[at]
            if at is not None and state[at] == 1:  # the walk came back to a span of its own
                cyclic.update(walk[walk.index(at) :])
            for index in walk:
                state[index] = 2
        return cyclic

    def _parent(self, span: Span) -> Span | None:
        if span.shared:
            client = self._by_id.get((normal_id(span.trace_id), normal_id(span.span_id)))
            if client is not None and client is not span:
                return client
        if not span.parent_id or (normal_id(span.parent_id) == normal_id(span.span_id) and not span.shared):
            return None
        key = (normal_id(span.trace_id), normal_id(span.parent_id))
        server = self._servers.get(key)  # a child of a shared id runs in the server half's service
        return server if server is not None and server is not span else self._by_id.get(key)

    def orphan(self, index: int) -> bool:
        """A span naming a parent that was not read (or itself)."""
        return self.parents[index] is None and bool(self.sources[index].span.parent_id)

    def skewed(self, index: int) -> bool:
        """A span starting before its parent."""
        parent = self.parents[index]
        return parent is not None and self.sources[index].span.start_ns < parent.start_ns

    def repeated(self, index: int) -> bool:
        return index in self._repeats

    def cyclic(self, index: int) -> bool:
        return index in self._cyclic

    def services(self) -> list[str]:
        return sorted({source.span.service for source in self.sources if source.span.service})

    def edge_of(self, index: int) -> tuple[str, str] | None:
        """(caller, callee) of the call span `index` is the callee's side of, None when it is none."""
        span, parent = self.sources[index].span, self.parents[index]
        if (
            parent is None
            or index in self._repeats
            or index in self._cyclic
            or not span.service
            or not parent.service
            or parent.service == span.service
        ):
            return None
        return parent.service, span.service

    def call_pairs(self) -> list[tuple[str, str]]:
        """Every (caller, callee) some span shows, whatever its time: who calls whom."""
        return sorted({edge for index in range(len(self.sources)) if (edge := self.edge_of(index)) is not None})


def percentile(ordered: list[int], share: int) -> int:
    """The nearest-rank percentile of sorted values: the ⌈share/100 · n⌉-th smallest."""
    return ordered[max(0, math.ceil(share / 100 * len(ordered)) - 1)]


def millis(nanoseconds: int) -> float:
    return round(nanoseconds / 1e6, 3)


def latency(durations: list[int]) -> dict[str, float]:
    """`p50_ms`, `p90_ms`, `p99_ms` of the durations (ns), exact by nearest rank; {} without any."""
    ordered = sorted(durations)
    return {f"p{share}_ms": millis(percentile(ordered, share)) for share in PERCENTILES} if ordered else {}


def iso_ns(nanoseconds: int, zone: tzinfo) -> str:
    """`2026-05-04T18:41:02.123456+02:00`: a span time in the environment's zone, to the microsecond."""
    moment = datetime.fromtimestamp(nanoseconds // 1_000 / 1e6, UTC).astimezone(zone)
    return moment.isoformat(timespec="microseconds")


@dataclass
class TraceAnswer:
    spans: list[dict[str, Any]]
    stats: dict[str, Any]
    edges: list[dict[str, Any]]
    total: int  # spans matching every filter (not capped by the limit)


def answer(graph: SpanGraph, query: TraceQuery, zone: tzinfo) -> TraceAnswer:
    """The spans, stats and edges of one query (see the module's invariants)."""
    kept = [index for index, source in enumerate(graph.sources) if query.keeps(source.span)]
    # the slowest first; with a trace id asked, the trace in start order (a waterfall)
    if query.trace_id is None:
        kept.sort(key=lambda index: (-graph.sources[index].span.duration_ns, graph.sources[index].span.start_ns))
    else:
        kept.sort(key=lambda index: (graph.sources[index].span.start_ns, graph.sources[index].span.span_id))
    spans = [_span_item(graph, index, zone) for index in kept[: query.limit]]
    edges = _edges(graph, query) if kept else []  # a query that matched no span found nothing: no_evidence
    return TraceAnswer(spans, _stats(graph, kept, query, zone), edges, len(kept))


def _span_item(graph: SpanGraph, index: int, zone: tzinfo) -> dict[str, Any]:
    source, parent = graph.sources[index], graph.parents[index]
    span = source.span
    return {
        "service": span.service,
        "operation": span.operation,
        "start": iso_ns(span.start_ns, zone),
        "duration_ms": millis(span.duration_ns),
        "status": span.status,
        "parent_service": parent.service if parent is not None else None,
        "parent_span_id": parent.span_id if parent is not None else None,
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "source": {"path": source.path, "line": span.line},
    }


def _stats(graph: SpanGraph, kept: list[int], query: TraceQuery, zone: tzinfo) -> dict[str, Any]:
    spans = [graph.sources[index].span for index in kept]
    starts = [span.start_ns for span in spans]
    counts = None
    if query.count_by is not None:
        counts = Counter(getattr(span, query.count_by) or NO_NAME for span in spans).most_common(BY_COUNT)
    return stats_item(
        Totals(
            spans=len(spans),
            traces=len({normal_id(span.trace_id) for span in spans}),
            errors=sum(span.error for span in spans),
            latency=latency([span.duration_ns for span in spans]),
            first=min(starts, default=None),
            last=max(starts, default=None),
            orphans=sum(graph.orphan(index) for index in kept),
            skewed=sum(graph.skewed(index) for index in kept),
            repeated=sum(graph.repeated(index) for index in kept),
            cyclic=sum(graph.cyclic(index) for index in kept),
        ),
        query,
        zone,
        counts,
    )


@dataclass(frozen=True)
class Totals:
    """What the spans matching a query add up to (`$.stats` before it is written out)."""

    spans: int
    traces: int
    errors: int
    latency: dict[str, float]  # p50_ms, p90_ms, p99_ms; {} without spans
    first: int | None  # the earliest and latest span start, ns
    last: int | None
    orphans: int  # what is wrong with them (`Quality`), stated when not 0
    skewed: int = 0
    repeated: int = 0
    cyclic: int = 0


def stats_item(totals: Totals, query: TraceQuery, zone: tzinfo, counts: list[tuple[str, int]] | None) -> dict[str, Any]:
    """`$.stats` of an answer; `counts`: the (name, spans) per service or operation asked by `count_by`,
    the most first (ties in the order of the answer's spans)."""
    stats: dict[str, Any] = {
        "spans": totals.spans,
        "traces": totals.traces,
        "errors": totals.errors,
        **totals.latency,
    }
    if totals.first is not None and totals.last is not None:
        stats["first"] = iso_ns(totals.first, zone)
        stats["last"] = iso_ns(totals.last, zone)
    for key in ("orphans", "skewed", "repeated", "cyclic"):
        if getattr(totals, key):
            stats[key] = getattr(totals, key)
    if query.count_by is not None:
        stats[f"by_{query.count_by}"] = dict(counts or [])
    return stats


def _edges(graph: SpanGraph, query: TraceQuery) -> list[dict[str, Any]]:
    durations: dict[tuple[str, str], list[int]] = {}
    errors: Counter[tuple[str, str]] = Counter()
    for index, source in enumerate(graph.sources):
        if not (query.in_range(source.span) and query.in_trace(source.span)):
            continue
        edge = graph.edge_of(index)
        if edge is None or (query.service is not None and query.service not in edge):
            continue
        durations.setdefault(edge, []).append(source.span.duration_ns)
        errors[edge] += source.span.error
    return edge_items(durations, errors)


def edge_items(
    durations: dict[tuple[str, str], list[int]], errors: Mapping[tuple[str, str], int]
) -> list[dict[str, Any]]:
    """`$.edges` from each (caller, callee)'s call durations and errors: the most errors first, then the
    slowest p99, then the most calls."""
    ordered = {edge: sorted(values) for edge, values in durations.items()}
    order = sorted(
        ordered,
        key=lambda edge: (-errors[edge], -percentile(ordered[edge], 99), -len(ordered[edge]), edge),
    )
    return [
        {
            "caller": caller,
            "callee": callee,
            "calls": len(ordered[(caller, callee)]),
            "errors": errors[(caller, callee)],
        }
        | latency(ordered[(caller, callee)])
        for caller, callee in order
    ]
