"""Queries over a built trace index (evcli.backends.traceindex): the spans, stats and call edges of a
`TraceQuery`, exactly as `trace_graph.answer` gives them over the same spans read into memory (the same
invariants, the same order), computed in SQL so a query reads the rows of its range, not every span.

Invariants (beyond trace_graph's):
  - a service filter and the edges compare the environment's names: each service id of the index is
    mapped once (`Names`), and a span calling a span of the same mapped service is no edge;
  - an operation filter is the case-insensitive substring match of Python's `str.lower`, decided on
    the distinct operation names, never SQLite's ASCII-only `lower`;
  - ties keep the order of the spans read (files in path order, then file order): the row id, assigned
    as the spans were read, is the last sort key everywhere;
  - every statement runs on a read-only connection of its own that stops at the tool call's deadline.
"""

from __future__ import annotations

import itertools
import math
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import Any

from evcli.backends.sqlite_deadline import connect
from evcli.backends.trace_graph import (
    BY_COUNT,
    NO_NAME,
    PERCENTILES,
    Totals,
    TraceAnswer,
    TraceQuery,
    edge_items,
    iso_ns,
    millis,
    stats_item,
)
from evcli.backends.tracebuild import STATUS_CODES
from evcli.backends.traceformats import Span, normal_id
from evcli.backends.traceindex import FileRow, Names

_STATUS_NAMES = {code: name for name, code in STATUS_CODES.items()}
_INLINE_IDS = 500  # ids written into a statement; more go into a temporary table
_TABLES = itertools.count()  # names of those temporary tables
# a span id as written: the zeros cut from its normalised id put back (hex(zeroblob(n)) is n times "00")
_WRITTEN_SPAN_ID = "replace(hex(zeroblob(span_pad)), '00', '0') || span"
_ORDER_SLOWEST = "duration DESC, start, id"  # the answer's spans: the slowest first
_ORDER_WATERFALL = f"start, {_WRITTEN_SPAN_ID}, id"  # with a trace id asked: the trace in start order
_SPAN_COLUMNS = "id, file, line, trace, trace_pad, span, span_pad, service, operation, start, duration, status"


@dataclass
class _Filter:
    """A WHERE clause and its parameters."""

    sql: str
    params: list[Any]


class IndexedSpans:
    """The spans of one index file, answered in SQL."""

    def __init__(self, db: Path, names: Names, files: list[FileRow]) -> None:
        self.db = db
        self.names = names
        self.paths = {file.number: file.relative for file in files}

    def answer(self, query: TraceQuery, zone: tzinfo) -> TraceAnswer:
        """The spans, stats and edges of one query (trace_graph's invariants)."""
        with connect(self.db) as conn:
            kept = self._kept(conn, query)
            order = _ORDER_SLOWEST if query.trace_id is None else _ORDER_WATERFALL
            totals = self._totals(conn, kept)
            shown = conn.execute(
                f"SELECT {_SPAN_COLUMNS}, parent_service, (SELECT name FROM operations WHERE id = operation),"
                " (SELECT p.span_pad FROM spans AS p WHERE p.id = spans.parent_row),"
                " (SELECT p.span FROM spans AS p WHERE p.id = spans.parent_row)"
                f" FROM spans WHERE {kept.sql} ORDER BY {order} LIMIT ?",
                [*kept.params, query.limit],
            ).fetchall()
            counts = self._counts(conn, kept, order, query.count_by) if query.count_by is not None else None
            edges = self._edges(conn, query) if totals.spans else []  # no span matched: found nothing
        spans = [self._item(row, zone) for row in shown]
        return TraceAnswer(spans, stats_item(totals, query, zone, counts), edges, totals.spans)

    # --- filters ------------------------------------------------------------------------------

    def _kept(self, conn: sqlite3.Connection, query: TraceQuery) -> _Filter:
        """Every filter of the query (the `$.spans[i]` and `$.stats` of the answer)."""
        found = self._ranged(query)
        parts, params = [found.sql], found.params
        if query.service is not None:
            ids = [id for id, name in self.names.mapped.items() if name == query.service]
            parts.append(_in(conn, "service", ids))
        if query.operation is not None:
            needle = query.operation.lower()
            rows = conn.execute("SELECT id, name FROM operations").fetchall()
            parts.append(_in(conn, "operation", [id for id, name in rows if needle in name.lower()]))
        if query.min_duration_ns is not None:
            parts.append("duration >= ?")
            params.append(query.min_duration_ns)
        if query.errors_only:
            parts.append(f"status = {STATUS_CODES['error']}")
        return _Filter(" AND ".join(parts), params)

    @staticmethod
    def _ranged(query: TraceQuery) -> _Filter:
        """The range and trace filters only (the call graph of the range)."""
        parts: list[str] = ["1"]
        params: list[Any] = []
        if query.start_ns is not None:
            parts.append("start >= ?")
            params.append(query.start_ns)
        if query.end_ns is not None:
            parts.append("start <= ?")
            params.append(query.end_ns)
        if query.trace_id is not None:
            parts.append("trace = ?")
            params.append(normal_id(query.trace_id))
        return _Filter(" AND ".join(parts), params)

    # --- what the matching spans add up to ------------------------------------------------------

    def _totals(self, conn: sqlite3.Connection, kept: _Filter) -> Totals:
        spans, traces, errors, first, last, *wrong = conn.execute(
            f"SELECT count(*), count(DISTINCT trace), count(*) FILTER (WHERE status = {STATUS_CODES['error']}),"
            " min(start), max(start), count(*) FILTER (WHERE parent <> '' AND parent_row IS NULL),"
            " count(*) FILTER (WHERE after_parent < 0), count(*) FILTER (WHERE repeat), count(*) FILTER (WHERE cyclic)"
            f" FROM spans WHERE {kept.sql}",
            kept.params,
        ).fetchone()
        return Totals(spans, traces, errors, _latency(conn, kept, spans), first, last, *wrong)

    def _counts(self, conn: sqlite3.Connection, kept: _Filter, order: str, by: str) -> list[tuple[str, int]]:
        """(name, spans) per service or operation, the most first; ties in the order of the answer's spans
        (each name's first span in it), as `Counter.most_common` gives them over those spans."""
        rows = conn.execute(
            f"SELECT {by}, count(*), min(rank) FROM (SELECT {by}, row_number() OVER (ORDER BY {order}) AS rank"
            f" FROM spans WHERE {kept.sql}) GROUP BY {by}",
            kept.params,
        ).fetchall()
        if by == "service":
            named = {id: self.names.mapped[id] for id, _, _ in rows}
        else:
            named = dict(conn.execute("SELECT id, name FROM operations").fetchall())
        counts: Counter[str] = Counter()
        firsts: dict[str, int] = {}
        for id, count, rank in rows:
            name = named[id] or NO_NAME
            counts[name] += count
            firsts[name] = min(rank, firsts.get(name, rank))
        ordered = sorted(counts, key=lambda name: (-counts[name], firsts[name]))
        return [(name, counts[name]) for name in ordered[:BY_COUNT]]

    def _edges(self, conn: sqlite3.Connection, query: TraceQuery) -> list[dict[str, Any]]:
        """Caller → callee of the spans of the range (and trace) whose parent was read, with the asked
        service on either side; a pair of one mapped service or with an unknown one is no edge."""
        mapped = self.names.mapped
        edges: dict[tuple[int, int], tuple[str, str]] = {}
        for caller_id, callee_id in conn.execute("SELECT caller, callee FROM pairs").fetchall():
            caller, callee = mapped[caller_id], mapped[callee_id]
            if caller and callee and caller != callee and (query.service is None or query.service in (caller, callee)):
                edges[caller_id, callee_id] = (caller, callee)
        if not edges:
            return []
        ranged = self._ranged(query)
        # one integer a row: caller id, callee id and whether the call failed (ids are far below 2**32)
        rows = conn.execute(
            f"SELECT (parent_service << 33) | (service << 1) | (status = {STATUS_CODES['error']}), duration"
            f" FROM spans WHERE {ranged.sql} AND NOT repeat AND NOT cyclic"
            f" AND {_in(conn, 'parent_service', sorted({caller for caller, _ in edges}))}"
            f" AND {_in(conn, 'service', sorted({callee for _, callee in edges}))}",
            ranged.params,
        )
        by_key: dict[int, list[int]] = {}
        for key, duration in rows:
            found = by_key.get(key)
            if found is None:
                found = by_key[key] = []
            found.append(duration)
        durations: dict[tuple[str, str], list[int]] = {}
        errors: Counter[tuple[str, str]] = Counter()
        for key, values in by_key.items():
            edge = edges.get((key >> 33, (key >> 1) & 0xFFFFFFFF))
            if edge is not None:
                durations.setdefault(edge, []).extend(values)
                errors[edge] += len(values) if key & 1 else 0
        return edge_items(durations, errors)

    # --- spans ---------------------------------------------------------------------------------

    def _item(self, row: tuple[Any, ...], zone: tzinfo) -> dict[str, Any]:
        _, file, line, trace, trace_pad, span, span_pad, service, _, start, duration, status, parent, operation = row[
            :14
        ]
        parent_pad, parent_id = row[14:]
        return {
            "service": self.names.mapped[service],
            "operation": operation,
            "start": iso_ns(start, zone),
            "duration_ms": millis(duration),
            "status": _STATUS_NAMES[status],
            "parent_service": None if parent is None else self.names.mapped[parent],
            "parent_span_id": None if parent_id is None else "0" * parent_pad + parent_id,
            "trace_id": "0" * trace_pad + trace,
            "span_id": "0" * span_pad + span,
            "source": {"path": self.paths[file], "line": line},
        }

    def file_spans(self, number: int) -> Iterator[Span]:
        """The spans read from one file, in file order, their services as the environment names them."""
        with connect(self.db) as conn:
            rows = conn.execute(
                f"SELECT {_SPAN_COLUMNS}, parent, parent_pad, shared, (SELECT name FROM operations WHERE id = operation)"
                " FROM spans WHERE file = ? ORDER BY id",
                (number,),
            )
            for row in rows:
                yield _span(row, self.names)

    def file_traces(self, number: int) -> int:
        with connect(self.db) as conn:
            return conn.execute("SELECT count(DISTINCT trace) FROM spans WHERE file = ?", (number,)).fetchone()[0]

    def file_services(self, number: int) -> list[str]:
        with connect(self.db) as conn:
            ids = [id for (id,) in conn.execute("SELECT service FROM file_services WHERE file = ?", (number,))]
        return sorted({self.names.mapped[id] for id in ids} - {""})

    def call_pairs(self) -> list[tuple[str, str]]:
        """Every (caller, callee) some span shows, whatever its time: who calls whom."""
        with connect(self.db) as conn:
            rows = conn.execute("SELECT caller, callee FROM pairs").fetchall()
        named = {(self.names.mapped[caller], self.names.mapped[callee]) for caller, callee in rows}
        return sorted((caller, callee) for caller, callee in named if caller and callee and caller != callee)


def _span(row: tuple[Any, ...], names: Names) -> Span:
    _, _, line, trace, trace_pad, span, span_pad, service, _, start, duration, status = row[:12]
    parent, parent_pad, shared, operation = row[12:]
    return Span(
        "0" * trace_pad + trace,
        "0" * span_pad + span,
        "0" * parent_pad + parent,
        names.mapped[service],
        operation,
        start,
        duration,
        _STATUS_NAMES[status],
        line,
        bool(shared),
    )


def _latency(conn: sqlite3.Connection, kept: _Filter, spans: int) -> dict[str, float]:
    """Exact nearest-rank p50/p90/p99 of the matching spans' durations: the ⌈p/100 · n⌉-th smallest."""
    if not spans:
        return {}
    ranks = {share: max(1, math.ceil(share / 100 * spans)) for share in PERCENTILES}
    found = dict(
        conn.execute(
            "SELECT rank, duration FROM (SELECT duration, row_number() OVER (ORDER BY duration) AS rank"
            f" FROM spans WHERE {kept.sql}) WHERE rank IN ({', '.join('?' * len(ranks))})",
            [*kept.params, *ranks.values()],
        ).fetchall()
    )
    return {f"p{share}_ms": millis(found[rank]) for share, rank in ranks.items()}


def _in(conn: sqlite3.Connection, column: str, ids: list[int]) -> str:
    """`column IN (ids)`: the ids written out, or put into a temporary table when there are many."""
    if len(ids) <= _INLINE_IDS:
        return f"{column} IN ({', '.join(str(int(id)) for id in ids)})"
    table = f"wanted_{next(_TABLES)}"
    conn.execute(f"CREATE TEMP TABLE {table} (id INTEGER PRIMARY KEY)")
    conn.executemany(f"INSERT INTO temp.{table} VALUES (?)", [(id,) for id in ids])
    return f"{column} IN (SELECT id FROM temp.{table})"
