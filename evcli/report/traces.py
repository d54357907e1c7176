"""What a report draws of trace evidence: a waterfall per cited trace, the call edges of a cited call graph.

Read from the recorded outputs only (pure, like evcli.report.model). Which items count is read from
their shape (a span: a dict with a trace id and a start; an edge: one with a caller and a callee),
never from a tool's name. Invariants:
  - one waterfall per trace a cited `$.spans[i]` belongs to (at most MAX_TRACES, in the order of
    their first citation); its rows are the spans of that trace that any invocation of the session
    recorded, a span recorded twice being one row, in start order (the longer first at one start);
  - at most MAX_ROWS rows: the cited spans always, then the earliest others; `more` counts the spans
    of the trace recorded but not drawn (a start without a readable time and zone is not drawn), so
    a trace of thousands of spans is still a small drawing;
  - depth: a span is drawn under the row of its parent's span id when that row is drawn; a span
    recorded before outputs held that id (its parent service only) under the innermost earlier row of
    that service whose bar encloses its own; without either (a root, an orphan, a parent not recorded
    or not drawn) it is at depth 0;
  - one call graph per invocation with a cited `$.edges[i]`, or a cited `$.stats` beside recorded
    edges (at most MAX_GRAPHS, in the order of their first citation): its edges in their recorded
    order, at most MAX_EDGES, the cited ones always;
  - values are verbatim: renderers escape them for their medium.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from evcli.contracts import ToolInvocation
from evcli.core.time import aware_time
from evcli.report.cited import ITEM_PATH, Citation

MAX_TRACES, MAX_ROWS = 12, 60
MAX_GRAPHS, MAX_EDGES = 12, 40
MAX_DEPTH = 24  # rows indented at most this deep

Ref = tuple[int | None, str]  # a cited item as the citation names it: (invocation id, raw_path)
_Key = tuple[int | None, str, int | None]  # (invocation id, array, index); the stats' index is None
_Row = TypeVar("_Row")


@dataclass
class SpanRow:
    service: str
    operation: str
    offset_ms: float  # its start, from the first drawn start
    duration_ms: float
    status: str  # error, ok or unset
    parent_service: str | None
    span_id: str
    parent_span_id: str | None = None
    depth: int = 0
    citations: list[int] = field(default_factory=list)

    @property
    def error(self) -> bool:
        return self.status == "error"


@dataclass
class Waterfall:
    anchor: str  # the HTML id of the drawing
    trace_id: str
    start: str  # the first drawn span's start as recorded: time zero of the axis
    rows: list[SpanRow]
    more: int  # spans of the trace recorded but not drawn
    refs: list[Ref]  # the cited refs it draws


@dataclass
class EdgeRow:
    caller: str
    callee: str
    calls: int
    errors: int
    p99_ms: float | None
    citations: list[int] = field(default_factory=list)


@dataclass
class CallGraph:
    anchor: str
    invocation_id: int
    tool_name: str
    rows: list[EdgeRow]
    more: int  # edges recorded but not drawn
    citations: list[int]  # every citation of an edge or of the stats of the invocation
    refs: list[Ref]


@dataclass
class _Cited:
    numbers: list[int] = field(default_factory=list)
    refs: list[Ref] = field(default_factory=list)


@dataclass
class _Span:
    item: dict[str, Any]
    start: datetime
    citations: list[int]


def waterfalls(invocations: list[ToolInvocation], citations: list[Citation]) -> list[Waterfall]:
    """The waterfall of each trace with a cited span (see the module's invariants)."""
    cited = _cited(citations)
    outputs = {invocation.invocation_id: invocation.output for invocation in invocations}
    traces: dict[str, list[Ref]] = {}
    for (invocation_id, array, index), entry in cited.items():
        item = _recorded(outputs.get(invocation_id) if invocation_id is not None else None, array, index)
        if array == "spans" and _is_span(item):
            traces.setdefault(_trace_of(item), []).extend(entry.refs)
    drawn = []
    for number, (trace, refs) in enumerate(list(traces.items())[:MAX_TRACES], start=1):
        spans, unread = _trace_spans(invocations, trace, cited)
        if spans:
            drawn.append(_waterfall(f"trace-{number}", spans, unread, refs))
    return drawn


def call_graphs(invocations: list[ToolInvocation], citations: list[Citation]) -> list[CallGraph]:
    """The call edges of each invocation with a cited edge, or cited stats beside edges."""
    cited = _cited(citations)
    by_id = {invocation.invocation_id: invocation for invocation in invocations}
    keys: dict[int, list[_Key]] = {}
    for key in cited:
        if key[0] is not None and key[1] in ("edges", "stats"):
            keys.setdefault(key[0], []).append(key)
    drawn = []
    for invocation_id, graph_keys in keys.items():
        invocation = by_id.get(invocation_id)
        recorded = invocation.output.get("edges") if invocation else None
        rows = [
            _edge_row(edge, cited.get((invocation_id, "edges", index)))
            for index, edge in enumerate(recorded if isinstance(recorded, list) else [])
            if _is_edge(edge)
        ]
        if invocation is None or not rows:
            continue
        shown = _bounded(rows, lambda row: bool(row.citations), MAX_EDGES)
        drawn.append(
            CallGraph(
                anchor=f"calls-{invocation_id}",
                invocation_id=invocation_id,
                tool_name=invocation.tool_name,
                rows=shown,
                more=len(rows) - len(shown),
                citations=sorted({number for key in graph_keys for number in cited[key].numbers}),
                refs=[ref for key in graph_keys for ref in cited[key].refs],
            )
        )
    return drawn[:MAX_GRAPHS]


def drawn_refs(traces: list[Waterfall], graphs: list[CallGraph]) -> dict[Ref, tuple[str, str]]:
    """Each cited ref that is drawn: the drawing's anchor and what it is called."""
    found: dict[Ref, tuple[str, str]] = {}
    for trace in traces:
        found.update({ref: (trace.anchor, f"waterfall of trace {trace.trace_id}") for ref in trace.refs})
    for graph in graphs:
        label = f"call edges of {graph.tool_name} #{graph.invocation_id}"
        found.update({ref: (graph.anchor, label) for ref in graph.refs if ref not in found})
    return found


def _cited(citations: list[Citation]) -> dict[_Key, _Cited]:
    """The citation numbers and refs of each cited item, in the order of first citation."""
    found: dict[_Key, _Cited] = {}
    for citation in citations:
        for evidence in citation.evidence:
            key = _key(evidence.invocation_id, evidence.raw_path)
            if key is None:
                continue
            entry = found.setdefault(key, _Cited())
            ref = (evidence.invocation_id, evidence.raw_path)
            entry.numbers += [citation.number] if citation.number not in entry.numbers else []
            entry.refs += [ref] if ref not in entry.refs else []
    return found


def _key(invocation_id: int | None, raw_path: str) -> _Key | None:
    if raw_path == "$.stats":
        return invocation_id, "stats", None
    matched = ITEM_PATH.match(raw_path)
    return (invocation_id, matched.group(1), int(matched.group(2))) if matched else None


def _recorded(output: dict[str, Any] | None, array: str, index: int | None) -> dict[str, Any] | None:
    items = output.get(array) if output and index is not None else None
    if isinstance(items, list) and index is not None and index < len(items) and isinstance(items[index], dict):
        return items[index]
    return None


def _is_span(item: Any) -> bool:
    return isinstance(item, dict) and bool(item.get("trace_id")) and bool(item.get("start"))


def _trace_of(span: Any) -> str:
    # imported here: a report that cites no span does not pay for the trace formats' module
    from evcli.backends.traceformats import normal_id

    return normal_id(span["trace_id"])


def _is_edge(item: Any) -> bool:
    return isinstance(item, dict) and bool(item.get("caller")) and bool(item.get("callee"))


def _trace_spans(invocations: list[ToolInvocation], trace: str, cited: dict[_Key, _Cited]) -> tuple[list[_Span], int]:
    """The spans of one trace every invocation recorded, one per span, and how many have no readable start."""
    spans: dict[tuple[str, ...], _Span] = {}
    unread: set[tuple[str, ...]] = set()
    for invocation in invocations:
        items = invocation.output.get("spans")
        for index, item in enumerate(items if isinstance(items, list) else []):
            if not _is_span(item) or _trace_of(item) != trace:
                continue
            identity = tuple(str(item.get(key)) for key in ("span_id", "service", "operation", "start"))
            start = aware_time(str(item["start"]))
            if start is None:
                unread.add(identity)
                continue
            span = spans.setdefault(identity, _Span(item, start, []))
            entry = cited.get((invocation.invocation_id, "spans", index))
            span.citations += [number for number in entry.numbers if number not in span.citations] if entry else []
    return list(spans.values()), len(unread)


def _waterfall(anchor: str, spans: list[_Span], unread: int, refs: list[Ref]) -> Waterfall:
    ordered = sorted(spans, key=_start_order)
    shown = _bounded(ordered, lambda span: bool(span.citations), MAX_ROWS)
    zero = shown[0].start
    rows = [
        SpanRow(
            service=str(span.item.get("service") or ""),
            operation=str(span.item.get("operation") or ""),
            offset_ms=round((span.start - zero).total_seconds() * 1000, 3),
            duration_ms=_milliseconds(span.item),
            status=str(span.item.get("status") or "unset"),
            parent_service=str(span.item["parent_service"]) if span.item.get("parent_service") else None,
            span_id=str(span.item.get("span_id") or ""),
            parent_span_id=str(span.item["parent_span_id"]) if span.item.get("parent_span_id") else None,
            citations=sorted(span.citations),
        )
        for span in shown
    ]
    _set_depths(rows)
    return Waterfall(
        anchor=anchor,
        trace_id=str(shown[0].item["trace_id"]),
        start=str(shown[0].item["start"]),
        rows=rows,
        more=len(ordered) - len(shown) + unread,
        refs=refs,
    )


def _start_order(span: _Span) -> tuple[Any, ...]:
    item = span.item
    return (
        span.start,
        -_milliseconds(item),
        str(item.get("service")),
        str(item.get("operation")),
        str(item.get("span_id")),
    )


def _milliseconds(item: dict[str, Any]) -> float:
    value = item.get("duration_ms")
    return float(value) if isinstance(value, int | float) and value >= 0 else 0.0


def _bounded(rows: list[_Row], is_cited: Callable[[_Row], bool], limit: int) -> list[_Row]:
    """At most `limit` of `rows`, in their order: every cited one (up to the limit), then the first others."""
    cited = [index for index, row in enumerate(rows) if is_cited(row)][:limit]
    others = [index for index, row in enumerate(rows) if not is_cited(row)][: limit - len(cited)]
    return [rows[index] for index in sorted(cited + others)]


def _set_depths(rows: list[SpanRow]) -> None:
    """Each row under its parent's row: by span id when recorded (a child starting before its parent too),
    else the innermost earlier row of its parent's service that encloses it (rows in start order); a cycle
    of parent ids ends where it meets itself, and no row is deeper than MAX_DEPTH."""
    by_id = {row.span_id: row for row in rows if row.span_id}
    parents: dict[int, SpanRow | None] = {}
    for index, row in enumerate(rows):
        if row.parent_span_id is not None:
            parent = by_id.get(row.parent_span_id)
        else:
            parent = next((e for e in reversed(rows[:index]) if row.parent_service and _is_parent(e, row)), None)
        parents[id(row)] = parent
    for row in rows:
        seen, node = {id(row)}, parents[id(row)]
        while node is not None and id(node) not in seen and len(seen) <= MAX_DEPTH:
            seen.add(id(node))
            node = parents[id(node)]
        row.depth = len(seen) - 1


def _is_parent(earlier: SpanRow, row: SpanRow) -> bool:
    ends = earlier.offset_ms + earlier.duration_ms >= row.offset_ms + row.duration_ms - 1e-6
    return earlier.service == row.parent_service and earlier.offset_ms <= row.offset_ms and ends


def _edge_row(edge: dict[str, Any], cited: _Cited | None) -> EdgeRow:
    p99 = edge.get("p99_ms")
    return EdgeRow(
        caller=str(edge["caller"]),
        callee=str(edge["callee"]),
        calls=_count(edge.get("calls")),
        errors=_count(edge.get("errors")),
        p99_ms=float(p99) if isinstance(p99, int | float) else None,
        citations=list(cited.numbers) if cited else [],
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
