"""Building a trace index file (evcli.backends.traceindex states the invariants): every span file of a
snapshot's traces/ read as a stream (`traceformats.stream_spans`), its spans inserted in batches into a
private temporary SQLite file, then each span's parent resolved in SQL by (trace id, span id), and the
file renamed into place when complete. Memory holds one batch of rows, bounded name caches and SQLite's
default page cache, whatever the size of the files.

A big file that can be read from any line start (JSON lines, a table without quotes) is read in parts,
one per core: this process reads the first, worker processes (`python -c`, a fresh interpreter, killed
when the build fails or its deadline passes) the others into SQLite files of their own, merged in file
order (line numbers counted from the file's start, names by text): the rows reading it at once gives.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Any, BinaryIO

from evcli.backends.parts import Window, Workers, cores
from evcli.backends.sqlite_deadline import stopped_at_deadline
from evcli.backends.traceformats import Span, Tally, TraceFileError, part_kind, stream_part, stream_spans
from evcli.core.files import check_deadline, open_binary

_BATCH = 4_096  # rows per insert
_NAMES_KEPT = 4_096  # service or operation names remembered while building (then looked up in SQL)
_PROGRESS_MIN_BYTES = 8 << 20  # a progress bar only for files that take a noticeable time
_DEADLINE_OPS = 100_000  # SQLite VM steps between deadline checks while parents are resolved
PART_MIN_BYTES = 32 << 20  # a file this big is read in parts, one per core
STATUS_CODES = {"unset": 0, "ok": 1, "error": 2}  # spans.status
_SPANS_SQL = """
CREATE TABLE services (id INTEGER PRIMARY KEY, name TEXT UNIQUE);
CREATE TABLE operations (id INTEGER PRIMARY KEY, name TEXT UNIQUE);
CREATE TABLE spans (id INTEGER PRIMARY KEY, file INTEGER, line INTEGER, trace TEXT, trace_pad INTEGER,
                    span TEXT, span_pad INTEGER, parent TEXT, parent_pad INTEGER, service INTEGER,
                    operation INTEGER, start INTEGER, duration INTEGER, status INTEGER, shared INTEGER,
                    parent_row INTEGER, parent_service INTEGER, after_parent INTEGER,
                    repeat INTEGER DEFAULT 0, cyclic INTEGER DEFAULT 0);
"""
_SCHEMA_SQL = """
CREATE TABLE build (schema INTEGER, seconds REAL, first INTEGER, ends INTEGER, orphans INTEGER,
                    skewed INTEGER, duplicates INTEGER, without_service INTEGER, cyclic INTEGER);
CREATE TABLE files (no INTEGER PRIMARY KEY, relative TEXT, digest TEXT, error TEXT, format TEXT,
                    records INTEGER, spans INTEGER, first INTEGER, last INTEGER, reasons TEXT);
CREATE TABLE file_services (file INTEGER, service INTEGER);
"""
_COLUMNS = "file, line, trace, trace_pad, span, span_pad, parent, parent_pad, service, operation, start, duration"
_COLUMNS += ", status, shared"
# A span's parent: for a Zipkin server span (`shared`) its client half, the first other span with its own
# id; else the first span (in file order) with its parent id in its trace — a server half first, since a
# child of an id both halves share runs in the server's service — none for a root or a span naming itself. `after_parent`: the sign of its start minus its parent's
# (-1: it starts before it, clock skew). `repeat`: an earlier span has its (trace, span id).
_RESOLVE_SQL = """
CREATE INDEX spans_key ON spans (trace, span, shared);
UPDATE spans SET (parent_row, parent_service, after_parent) = (
    SELECT p.id, p.service, (spans.start > p.start) - (spans.start < p.start) FROM spans AS p
    WHERE p.trace = spans.trace AND p.span = spans.parent AND p.id <> spans.id ORDER BY p.shared DESC, p.id LIMIT 1)
WHERE parent <> '' AND (parent <> span OR shared = 1);
UPDATE spans SET (parent_row, parent_service, after_parent) = (
    SELECT p.id, p.service, (spans.start > p.start) - (spans.start < p.start) FROM spans AS p
    WHERE p.trace = spans.trace AND p.span = spans.span AND p.shared = 0 ORDER BY p.id LIMIT 1)
WHERE shared = 1 AND EXISTS (SELECT 1 FROM spans AS p WHERE p.trace = spans.trace AND p.span = spans.span
                             AND p.shared = 0);
UPDATE spans SET repeat = 1 WHERE id IN (
    SELECT later.id FROM (SELECT trace, span, min(id) AS first FROM spans WHERE shared = 0 GROUP BY trace, span
                          HAVING count(*) > 1) AS repeated
    JOIN spans AS later ON later.trace = repeated.trace AND later.span = repeated.span AND later.shared = 0
                           AND later.id > repeated.first);
"""
MAX_CYCLE = 1_000  # spans of the longest cycle of parents looked for
# Spans on a cycle of parents. Around a cycle the starts cannot all rise: it holds a child starting before
# its parent (a skewed link), or every span of it starts at the same time. So the walks up the parents
# start only there (from a skewed span through any parent, from a span starting with its parent through
# such spans): few walks, and each stops at a root, at its own start or after MAX_CYCLE steps.
_CYCLES_SQL = f"""
WITH RECURSIVE up (origin, at, steps, skewed) AS (
    SELECT id, parent_row, 1, after_parent < 0 FROM spans WHERE after_parent <= 0
    UNION ALL
    SELECT up.origin, p.parent_row, up.steps + 1, up.skewed FROM up JOIN spans AS p ON p.id = up.at
    WHERE up.at <> up.origin AND up.steps < {MAX_CYCLE} AND p.parent_row IS NOT NULL
      AND (up.skewed OR p.after_parent = 0)),
cycles (origin) AS (SELECT origin FROM up WHERE at = origin)
UPDATE spans SET cyclic = 1 WHERE id IN (SELECT at FROM up WHERE origin IN (SELECT origin FROM cycles));
CREATE INDEX spans_start ON spans (start);
CREATE TABLE pairs AS SELECT DISTINCT parent_service AS caller, service AS callee FROM spans
    WHERE parent_service IS NOT NULL AND repeat = 0 AND cyclic = 0;
"""


@dataclass(frozen=True)
class SourceFile:
    """One file of traces/ as the index is keyed by it: its identity is its digest, or why it cannot be read."""

    path: Path
    relative: str
    digest: str = ""  # sha256:<hex>
    error: str = ""  # the file cannot be read at all (refused, unreadable): no spans


def build_index(sources: list[SourceFile], root: Path, zone: tzinfo, target: Path, schema: int) -> None:
    """Index the span files `sources` (inside `root`, in this order) into a temporary file, then rename it
    to `target`. A DeadlineExceeded, an interrupt or any failure leaves no file behind."""
    started = time.monotonic()
    temporary = _temporary(target.parent, ".building-traces-")
    try:
        conn = _connect(temporary)
        try:
            conn.executescript(_SCHEMA_SQL)
            writer = _Writer(conn, target.parent)
            with _progress(sources) as advance:
                for number, source in enumerate(sources, 1):
                    _index_file(writer, number, source, root, zone, advance)
            _resolve(conn)
            _record_build(conn, schema, time.monotonic() - started)
            conn.commit()
        finally:
            conn.close()
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)


def _temporary(directory: Path, prefix: str) -> str:
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".db")
    os.close(descriptor)
    return temporary


def _connect(db: str) -> sqlite3.Connection:
    """A connection for building: no journal (the file is private until renamed), SQLite's default page
    cache (2 MB: a bigger one only grows the build's memory with the files), the spans tables made."""
    conn = sqlite3.connect(db)
    conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SPANS_SQL)
    return conn


def _resolve(conn: sqlite3.Connection) -> None:
    """Resolve every span's parent (`_RESOLVE_SQL`), stopping at the deadline."""
    check_deadline()
    with stopped_at_deadline(conn, _DEADLINE_OPS):
        conn.executescript(_RESOLVE_SQL + _CYCLES_SQL)


@dataclass
class _FileSummary:
    """What one file's spans add up to, kept while they are inserted."""

    tally: Tally = field(default_factory=Tally)
    first: int | None = None
    last: int | None = None
    services: set[int] = field(default_factory=set)

    def spanning(self, first: int | None, last: int | None) -> None:
        if first is not None and (self.first is None or first < self.first):
            self.first = first
        if last is not None and (self.last is None or last > self.last):
            self.last = last


def _index_file(writer: _Writer, number: int, source: SourceFile, root: Path, zone: tzinfo, advance) -> None:
    """Insert the spans of one file and its row of `files` (its error instead when no format reads it)."""
    summary, error = _FileSummary(), source.error
    if not error:
        try:
            with open_binary(source.path, root) as handle:
                _read_file(writer, number, source, root, zone, handle, summary, advance)
        except TraceFileError as failure:
            writer.forget(number)
            summary, error = _FileSummary(), f"{source.relative}: {failure}"
        except OSError as failure:
            writer.forget(number)
            summary, error = _FileSummary(), f"{source.relative}: cannot read: {failure.strerror or failure}"
    advance(None)  # the next file
    tally = summary.tally
    writer.conn.execute(
        "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (number, source.relative, source.digest, error, tally.format, tally.records, tally.read)
        + (summary.first, summary.last, json.dumps(tally.unread_reasons)),
    )
    writer.conn.executemany("INSERT INTO file_services VALUES (?, ?)", [(number, id) for id in summary.services])


def _read_file(
    writer: _Writer,
    number: int,
    source: SourceFile,
    root: Path,
    zone: tzinfo,
    handle: BinaryIO,
    summary: _FileSummary,
    advance: Callable[[int | None], None],
) -> None:
    """Insert the spans of one open file: in parts, one per core, when it is big and can be read from any
    line start (`traceformats.part_kind`); this process reads the first part, worker processes the others."""
    csv_name = source.path.suffix == ".csv"
    size = handle.seek(0, os.SEEK_END)
    handle.seek(0)
    plan = part_kind(handle, csv_name=csv_name) if size >= PART_MIN_BYTES and cores() > 1 else None
    handle.seek(0)
    if plan is None:
        spans = stream_spans(handle, summary.tally, csv_name=csv_name, tz=zone)
        writer.insert(number, spans, summary, lambda: advance(handle.tell()))
        advance(size)
        return
    kind, header = plan
    bounds = _bounds(handle, size, cores())
    job = (source.path, root, zone, kind, header)
    with Workers(_WORKER, "trace index", job, bounds[1:], writer.home, ".part-traces-") as workers:
        own = bounds[0] if workers.started else (0, size)
        scale = size / max(1, own[1])  # the bar follows this part, as a share of the file
        window = io.BufferedReader(Window(handle, *own))
        spans = stream_part(window, summary.tally, kind=kind, header=header, first=1, tz=zone)
        writer.insert(number, spans, summary, lambda: advance(int(handle.tell() * scale)))
        for part in workers.results():
            writer.merge(number, part, summary)
    advance(size)


class _Writer:
    """Spans into rows of `spans`, in batches; service and operation names into ids."""

    def __init__(self, conn: sqlite3.Connection, home: Path) -> None:
        self.conn = conn
        self.home = home  # where the files of worker processes go
        self.names: dict[str, dict[str, int]] = {"services": {}, "operations": {}}

    def insert(self, number: int, spans: Iterator[Span], summary: _FileSummary, progress: Callable[[], None]) -> None:
        """Insert the spans read from file `number` (`progress` is called after each batch)."""
        batch: list[tuple[Any, ...]] = []
        service_id, operation_id = self._namer("services"), self._namer("operations")
        codes, services = STATUS_CODES, summary.services
        first = last = None
        for span in spans:
            trace, span_id, parent = span.trace_id, span.span_id, span.parent_id
            trace_key = trace.lstrip("0") or ("0" if trace else "")  # normal_id, on ids already read by _id
            span_key = span_id.lstrip("0") or ("0" if span_id else "")
            parent_key = parent.lstrip("0") or ("0" if parent else "")
            service = service_id(span.service)
            services.add(service)
            start = span.start_ns
            if first is None or start < first:
                first = start
            if last is None or start > last:
                last = start
            batch.append(
                (
                    number,
                    span.line,
                    trace_key,
                    len(trace) - len(trace_key),
                    span_key,
                    len(span_id) - len(span_key),
                    parent_key,
                    len(parent) - len(parent_key),
                    service,
                    operation_id(span.operation),
                    start,
                    span.duration_ns,
                    codes[span.status],
                    span.shared,
                )
            )
            if len(batch) >= _BATCH:
                self._flush(batch)
                progress()
        self._flush(batch)
        summary.spanning(first, last)

    def _flush(self, batch: list[tuple[Any, ...]]) -> None:
        check_deadline()
        self.conn.executemany(f"INSERT INTO spans ({_COLUMNS}) VALUES ({', '.join('?' * 14)})", batch)
        batch.clear()

    def merge(self, number: int, part: _Part, summary: _FileSummary) -> None:
        """Append the rows a worker process read (`part`) as spans of file `number`, names by their text."""
        conn = self.conn
        conn.commit()  # no attaching inside a transaction
        conn.execute("ATTACH DATABASE ? AS part", (part.db,))
        try:
            for table in ("services", "operations"):
                conn.execute(f"INSERT OR IGNORE INTO main.{table} (name) SELECT name FROM part.{table} ORDER BY id")
            conn.execute(
                f"INSERT INTO main.spans ({_COLUMNS}) SELECT ?, s.line, s.trace, s.trace_pad, s.span, s.span_pad,"
                " s.parent, s.parent_pad, ms.id, mo.id, s.start, s.duration, s.status, s.shared FROM part.spans AS s"
                " JOIN part.services AS ps ON ps.id = s.service JOIN main.services AS ms ON ms.name = ps.name"
                " JOIN part.operations AS po ON po.id = s.operation JOIN main.operations AS mo ON mo.name = po.name"
                " ORDER BY s.id",
                (number,),
            )
            named = "SELECT ms.id FROM part.services AS ps JOIN main.services AS ms ON ms.name = ps.name"
            summary.services.update(id for (id,) in conn.execute(named))
            conn.commit()
        finally:
            conn.execute("DETACH DATABASE part")
        summary.tally.add(part.tally)
        summary.spanning(part.first, part.last)

    def forget(self, number: int) -> None:
        """Remove what was inserted of a file that turned out unreadable part-way (its error is what it holds)."""
        self.conn.execute("DELETE FROM spans WHERE file = ?", (number,))

    def _namer(self, table: str) -> Callable[[str], int]:
        cache, conn = self.names[table], self.conn

        def name_id(name: str) -> int:
            found = cache.get(name)
            if found is None:
                if len(cache) >= _NAMES_KEPT:
                    cache.clear()
                conn.execute(f"INSERT OR IGNORE INTO {table} (name) VALUES (?)", (name,))
                found = cache[name] = conn.execute(f"SELECT id FROM {table} WHERE name = ?", (name,)).fetchone()[0]
            return found

        return name_id


def _record_build(conn: sqlite3.Connection, schema: int, seconds: float) -> None:
    """The build row: the spans' time span and what is wrong with them (counted, never repaired)."""
    first, ends = conn.execute("SELECT min(start), max(start + duration) FROM spans").fetchone()
    counts = conn.execute(
        "SELECT count(*) FILTER (WHERE parent <> '' AND parent_row IS NULL), count(*) FILTER (WHERE after_parent < 0),"
        " count(*) FILTER (WHERE repeat), count(*) FILTER (WHERE service = (SELECT id FROM services WHERE name = '')),"
        " count(*) FILTER (WHERE cyclic) FROM spans"
    ).fetchone()
    conn.execute(
        "INSERT INTO build VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (schema, round(seconds, 3), first, ends, *counts)
    )


# --- parts read by worker processes -------------------------------------------------------------


def _bounds(handle: BinaryIO, size: int, parts: int) -> list[tuple[int, int]]:
    """Byte ranges [start, end) of about equal parts, each starting at a line start."""
    starts = [0]
    for index in range(1, parts):
        start = _line_start(handle, size * index // parts)
        if starts[-1] < start < size:
            starts.append(start)
    return list(zip(starts, [*starts[1:], size], strict=True))


def _line_start(handle: BinaryIO, position: int) -> int:
    """The start of the first line at or after `position` (a long line is skipped in bounded reads)."""
    handle.seek(max(0, position - 1))
    while (chunk := handle.readline(1 << 20)) and not chunk.endswith(b"\n"):
        pass
    return handle.tell()


def _lines_before(handle: BinaryIO, end: int) -> int:
    handle.seek(0)
    lines = 0
    while end > handle.tell() and (chunk := handle.read(min(1 << 20, end - handle.tell()))):
        check_deadline()
        lines += chunk.count(b"\n")
    return lines


@dataclass(frozen=True)
class _Part:
    """One part of a file read by a worker process: its rows in the SQLite file `db`, numbered by line."""

    db: str
    tally: Tally
    first: int | None
    last: int | None


_WORKER = "from evcli.backends.tracebuild import worker_main; worker_main()"


def worker_main() -> None:
    """A worker process: read the part named by the pickle on stdin, pickle its `_Part` to stdout."""
    path, root, zone, kind, header, (start, end), db = pickle.loads(sys.stdin.buffer.read())
    conn = _connect(db)
    summary = _FileSummary()
    try:
        with open_binary(path, root) as handle:
            first = _lines_before(handle, start) + 1
            window = io.BufferedReader(Window(handle, start, end))
            spans = stream_part(window, summary.tally, kind=kind, header=header, first=first, tz=zone)
            _Writer(conn, Path(db).parent).insert(0, spans, summary, lambda: None)
        conn.commit()
    finally:
        conn.close()
    sys.stdout.buffer.write(pickle.dumps(_Part(db, summary.tally, summary.first, summary.last)))


# --- progress ------------------------------------------------------------------------------------


@contextmanager
def _progress(sources: list[SourceFile]) -> Iterator[Callable[[int | None], None]]:
    """A rich progress bar on stderr while big span files are indexed, only when stderr is a terminal.
    The callback takes the position reached in the current file, None when the next file starts."""
    sizes = [_size(source.path) for source in sources if not source.error]
    if sum(sizes) < _PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        yield lambda _: None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from evcli.core.console import err

    columns = (TextColumn("indexing traces/"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task("traces", total=sum(sizes))
        done = reached = 0  # bytes of the files finished, and of the current one

        def advance(position: int | None) -> None:
            nonlocal done, reached
            if position is None:
                done, reached = done + reached, 0
            else:
                reached = position
                progress.update(task, completed=done + position)

        yield advance


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
