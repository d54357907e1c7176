"""Span files as the tracing tools write them, read into one `Span` shape (DESIGN §5, traces issue).

Formats, detected per file from its content (never from its name alone):
  - `otlp`: the OpenTelemetry Collector's file exporter, one `{"resourceSpans": [...]}` document a
    line (a whole pretty-printed document is read too); `service.name` from the resource attributes,
    nanosecond times as strings or numbers, `status.code` 2 / `STATUS_CODE_ERROR` is an error;
  - `jaeger`: the Jaeger UI's and HTTP API's export, `{"data": [{"traceID", "spans", "processes"}]}`
    (one document, or one a line); microsecond `startTime` and `duration`, the parent from a
    `CHILD_OF` reference (else `parentSpanID`), an error from the `error` tag or `otel.status_code`;
  - `zipkin`: Zipkin v2 JSON, a list of spans (or of traces, lists of spans); microsecond
    `timestamp`/`duration`, `localEndpoint.serviceName`, an error from the `error` tag; a
    server span sharing its client's id (`shared`) is the callee's half of that call;
  - `csv`: a span table with a header: trace id, span id, parent id, service (or pod), operation,
    start, and end or duration; times as epoch numbers (the unit from a `_ns`/`_us`/`_ms`/`_s`
    header suffix, else from the start's magnitude) or ISO 8601.

Invariants:
  - a file is read as a stream (`stream_spans`): one JSON document a line and CSV rows one at a time,
    so memory does not grow with the file; `read_spans` is the same reading of bytes in memory;
  - a JSON document that is not one line (a pretty-printed or single Jaeger/Zipkin export) is read
    whole, and only up to MAX_DOCUMENT_BYTES: a larger one is refused (`DocumentTooLarge`, naming
    its size), as is a JSON line that long as the file's first document; a later line that long is
    an unread record, skipped without being held in memory;
  - a record that cannot be read as a span (no trace or span id, no start) is counted in `records`
    but not read, with the reason kept, so a reader can state the share read. Nothing is invented:
    a span without a service keeps the service "" and a missing parent stays missing.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any, BinaryIO

from evcli.core.files import Lines, check_deadline
from evcli.core.time import localize

FORMATS = ("otlp", "jaeger", "zipkin", "csv")
MAX_DOCUMENT_BYTES = 64 << 20  # one JSON document read whole (json.loads holds it several times over)
_SHOWN_REASONS = 5  # unread records whose reason is kept, per file
_SNIFF_BYTES = 1 << 16  # read at a time while looking for a file's first character
_SNIFF_LINE_BYTES = 1 << 20  # a first line longer than this is left to `stream_spans` (it may be refused)
_EPOCH_UNITS = ((1e17, 1), (1e14, 1_000), (1e11, 1_000_000), (0, 1_000_000_000))  # magnitude → ns per unit
_UNIT_SUFFIXES = {"ns": 1, "us": 1_000, "µs": 1_000, "micros": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_OTLP_ERROR = {2, "2", "STATUS_CODE_ERROR", "ERROR"}
_OTLP_OK = {1, "1", "STATUS_CODE_OK", "OK"}


@dataclass(slots=True)
class Span:
    """One span as read: ids as written in lower case (`normal_id` compares them), times in ns since the epoch."""

    trace_id: str
    span_id: str
    parent_id: str  # "" for a root span
    service: str  # as written: a service name, an alias or a pod name ("" when the file names none)
    operation: str
    start_ns: int
    duration_ns: int
    status: str  # error, ok or unset
    line: int  # 1-based line of the file where its document or row starts
    shared: bool = False  # Zipkin: the server half of a call whose client half has the same id

    @property
    def error(self) -> bool:
        return self.status == "error"


@dataclass
class Tally:
    """What reading one file has found so far: its format, the span records seen, the spans read, and
    why the first few others were not read."""

    format: str | None = None  # None: no known format reads it (yet)
    records: int = 0  # span records seen, read or not
    read: int = 0
    unread_reasons: list[str] = field(default_factory=list)

    def unread(self, reason: str) -> None:
        self.records += 1
        if len(self.unread_reasons) < _SHOWN_REASONS:
            self.unread_reasons.append(reason)

    def add(self, later: Tally) -> None:
        """Count what a later part of the same file found."""
        self.records, self.read = self.records + later.records, self.read + later.read
        self.unread_reasons += later.unread_reasons[: max(0, _SHOWN_REASONS - len(self.unread_reasons))]

    def took(self, span: Span) -> Span:
        self.records += 1
        self.read += 1
        return span

    @property
    def share(self) -> float:
        return round(self.read / self.records, 4) if self.records else 0.0


@dataclass
class SpanFile(Tally):
    """What one file holds, read whole into memory: the tally and the spans read."""

    spans: list[Span] = field(default_factory=list)


class TraceFileError(ValueError):
    """A file no trace format reads at all (not JSON of a known shape, no span table header)."""


class DocumentTooLarge(TraceFileError):
    """A JSON document to read whole that is larger than MAX_DOCUMENT_BYTES."""


def read_spans(data: bytes, *, csv_name: bool = False, tz: tzinfo = UTC) -> SpanFile:
    """The spans of one file's bytes, its format detected from the content (`csv_name`: the file is
    named *.csv, so a table is tried first; `tz`: the zone of a table's times written without one).
    TraceFileError when no format reads it."""
    found = SpanFile()
    found.spans = list(stream_spans(io.BytesIO(data), found, csv_name=csv_name, tz=tz))
    return found


def stream_spans(handle: BinaryIO, tally: Tally, *, csv_name: bool = False, tz: tzinfo = UTC) -> Iterator[Span]:
    """The spans of a seekable binary file as they are read, counted in `tally` (see `read_spans`).
    TraceFileError (raised before any span) when no format reads it."""
    first = _first_character(handle)
    handle.seek(0)
    if first is None:
        return
    if csv_name or first not in "[{":
        yield from _csv(handle, tally, tz)
        return
    try:
        yield from _json_lines(handle, tally)
    except _NotLines:
        handle.seek(0)
        yield from _whole_document(handle, tally)


def refusal(handle: BinaryIO, *, csv_name: bool = False) -> str | None:
    """Why the file is refused before it is read or hashed, None when it is not: a JSON document larger than
    MAX_DOCUMENT_BYTES, which would be read whole (its first line is read, up to that size)."""
    size = handle.seek(0, io.SEEK_END)
    handle.seek(0)
    if size <= MAX_DOCUMENT_BYTES or csv_name or _first_character(handle) not in ("[", "{"):
        return None
    handle.seek(0)
    number, line = 0, ""
    while not line.strip() and (raw := handle.readline(MAX_DOCUMENT_BYTES + 1)):
        number += 1
        if len(raw) > MAX_DOCUMENT_BYTES:
            return _too_large(f"line {number} holds a JSON document of more than", size)
        line = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    try:
        json.loads(line)
    except (ValueError, RecursionError):  # not one document a line: the file is one document
        return _too_large("one JSON document is read whole, and this one is larger than", size)
    return None


def part_kind(handle: BinaryIO, *, csv_name: bool = False) -> tuple[str, str] | None:
    """("lines", first line) for JSON lines whose first document is of a known shape, ("table", header) for
    a span table that holds no quote (so no row spans two lines): a file `stream_part` can read in parts
    starting at any line. None for a file to read from its start as a whole (`stream_spans`)."""
    first = _first_character(handle)
    handle.seek(0)
    if first is None:
        return None
    line = ""
    while not line.strip() and (raw := handle.readline(_SNIFF_LINE_BYTES)):
        line = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
        if csv_name or first not in "[{":
            break  # a table's header is its first line, blank or not
    if csv_name or first not in "[{":
        try:
            _table_columns(next(csv.reader([line]), []))
        except (TraceFileError, csv.Error):
            return None
        return ("table", line) if _no_quote(handle) else None
    try:
        _shape(json.loads(line), 1, Tally())
    except (ValueError, RecursionError):  # TraceFileError is a ValueError
        return None
    return "lines", line


def _no_quote(handle: BinaryIO) -> bool:
    handle.seek(0)
    while chunk := handle.read(1 << 20):
        check_deadline()
        if b'"' in chunk:
            return False
    return True


def stream_part(
    handle: BinaryIO, tally: Tally, *, kind: str, header: str, first: int, tz: tzinfo = UTC
) -> Iterator[Span]:
    """The spans of the lines of a file `part_kind` names `kind`, starting at a line start: its line
    `first` (1: the file's start, read as `stream_spans` reads it; a later part reads its lines as the
    lines after the first document, a table's rows with the columns of `header`, the file's first line)."""
    if first == 1:
        yield from _json_lines(handle, tally) if kind == "lines" else _csv(handle, tally, tz)
        return
    tally.format = kind  # not the file's first document: the file's format is decided by its first part
    if kind == "lines":
        yield from _json_lines(handle, tally, first)
        return
    text = io.TextIOWrapper(handle, encoding="utf-8", errors="replace", newline="\n")
    try:
        columns = _table_columns(next(csv.reader([header.lstrip("\ufeff")]), []))
        yield from _csv_rows(csv.reader(iter(Lines(text))), columns, tally, tz, first)
    finally:
        text.detach()


def normal_id(value: Any) -> str:
    """`00000000000000004bf92f3577b34da6` and `4BF92F3577B34DA6` are one id: lower case, no leading zeros."""
    text = _id(value)
    return text.lstrip("0") or ("0" if text else "")


def _id(value: Any) -> str:
    """An id as written, in lower case (a span keeps it so, so the file can be searched for it)."""
    if type(value) is str:  # the common case, first
        return value.strip().lower()
    return str(value or "").strip().lower()


def _first_character(handle: BinaryIO) -> str | None:
    """The first character of the file that is neither a byte order mark at its start nor white space."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    leading = True
    while True:
        chunk = handle.read(_SNIFF_BYTES)
        check_deadline()
        text = decoder.decode(chunk, final=not chunk)
        if leading and text:
            text, leading = text.lstrip("\ufeff"), not text.lstrip("\ufeff")
        stripped = text.lstrip()
        if stripped:
            return stripped[0]
        if not chunk:
            return None


# --- JSON ------------------------------------------------------------------------------------------


class _NotLines(Exception):
    """The first non-blank line of the file is not a whole JSON document: it is one pretty-printed document."""


def _json_lines(handle: BinaryIO, tally: Tally, first: int = 1) -> Iterator[Span]:
    """One document a line (OTLP file exporter, Jaeger or Zipkin per line), the first on line `first`. A
    later line that is not JSON, or not of a known shape, is an unread record; the first one decides the
    file's format."""
    number = first - 1
    while raw := handle.readline(MAX_DOCUMENT_BYTES + 1):
        number += 1
        if len(raw) > MAX_DOCUMENT_BYTES:
            _too_long(handle, tally, number)
            continue
        line = raw.decode("utf-8", errors="replace")
        if number == 1:
            line = line.lstrip("\ufeff")
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except (ValueError, RecursionError):
            if tally.format is None:
                raise _NotLines() from None
            tally.unread(f"line {number} is not JSON")
            continue
        try:
            fmt, spans = _shape(document, number, tally)
        except TraceFileError as error:
            if tally.format is None:
                raise
            tally.unread(str(error))
            continue
        tally.format = tally.format or fmt
        yield from spans


def _too_long(handle: BinaryIO, tally: Tally, number: int) -> None:
    """A line longer than MAX_DOCUMENT_BYTES: the file is refused when it is its first document, else the
    line is an unread record and the rest of it is skipped."""
    if tally.format is None:
        size = handle.seek(0, io.SEEK_END)
        raise DocumentTooLarge(_too_large(f"line {number} holds a JSON document of more than", size))
    tally.unread(f"line {number}: a JSON document of more than {MAX_DOCUMENT_BYTES} bytes (not read)")
    while (rest := handle.readline(1 << 20)) and not rest.endswith(b"\n"):
        check_deadline()


def _too_large(what: str, size: int) -> str:
    return (
        f"refused: {what} {MAX_DOCUMENT_BYTES >> 20} MiB (the file is {size} bytes, {size / (1 << 30):.1f} GiB); "
        "a Jaeger or Zipkin document is read whole up to that size, OTLP JSON lines and CSV tables stream"
    )


def _whole_document(handle: BinaryIO, tally: Tally) -> Iterator[Span]:
    """The file as one JSON document (a pretty-printed export), read whole up to MAX_DOCUMENT_BYTES."""
    size = handle.seek(0, io.SEEK_END)
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentTooLarge(_too_large("one JSON document is read whole, and this one is larger than", size))
    handle.seek(0)
    text = handle.read().decode("utf-8", errors="replace").lstrip("\ufeff")
    check_deadline()
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise TraceFileError(f"not JSON: {error}") from None
    fmt, spans = _shape(document, 1, tally)
    tally.format = fmt
    yield from spans


def _shape(document: Any, line: int, tally: Tally) -> tuple[str, Iterator[Span]]:
    """The format of one JSON document and its spans (read as they are taken); TraceFileError when no
    format has its shape."""
    if isinstance(document, dict) and "resourceSpans" in document:
        return "otlp", _otlp(document, line, tally)
    if isinstance(document, dict) and isinstance(document.get("data"), list):
        return "jaeger", _jaeger(document["data"], line, tally)
    if isinstance(document, dict) and "spans" in document and "processes" in document:
        return "jaeger", _jaeger([document], line, tally)
    if isinstance(document, list):
        flat = [item for part in document for item in (part if isinstance(part, list) else [part])]
        if all(isinstance(item, dict) for item in flat) and any("traceId" in item for item in flat):
            return "zipkin", _zipkin(flat, line, tally)
    if isinstance(document, dict) and "traceId" in document and ("localEndpoint" in document or "id" in document):
        return "zipkin", _zipkin([document], line, tally)
    raise TraceFileError(
        f"line {line}: JSON of an unknown shape (expected OTLP resourceSpans, Jaeger data, or a Zipkin v2 span list)"
    )


def _attributes(raw: Any) -> dict[str, Any]:
    """OTLP `[{"key", "value": {"stringValue": …}}]` as a dict of plain values."""
    found: dict[str, Any] = {}
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("value"), dict) and item["value"]:
            found[str(item.get("key"))] = next(iter(item["value"].values()))
    return found


def _integer(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return None


def _otlp(document: dict[str, Any], line: int, tally: Tally) -> Iterator[Span]:
    took = tally.took
    for resource_spans in document.get("resourceSpans") or []:
        resource = _attributes((resource_spans.get("resource") or {}).get("attributes"))
        service = str(resource.get("service.name") or resource.get("k8s.pod.name") or "")
        scopes = resource_spans.get("scopeSpans") or resource_spans.get("instrumentationLibrarySpans") or []
        for scope in scopes:
            for raw in scope.get("spans") or []:
                span = _otlp_span(raw, service, line)
                if span is None:
                    tally.unread(f"line {line}: a span without traceId, spanId or startTimeUnixNano")
                else:
                    yield took(span)


def _otlp_span(raw: dict[str, Any], service: str, line: int) -> Span | None:
    get = raw.get
    trace, span_id, start = get("traceId"), get("spanId"), _integer(get("startTimeUnixNano"))
    if not trace or not span_id or start is None:
        return None
    end = _integer(get("endTimeUnixNano"))
    code = (get("status") or {}).get("code")
    return Span(
        _id(trace),
        _id(span_id),
        _id(get("parentSpanId")),
        service or str(_attributes(get("attributes")).get("service.name") or ""),
        str(get("name") or ""),
        start,
        max(0, (end or start) - start),
        "error" if code in _OTLP_ERROR else "ok" if code in _OTLP_OK else "unset",
        line,
    )


def _jaeger(traces: list[Any], line: int, tally: Tally) -> Iterator[Span]:
    for trace in traces:
        if not isinstance(trace, dict):
            tally.unread(f"line {line}: a trace that is not a JSON object")
            continue
        processes: dict[str, Any] = trace["processes"] if isinstance(trace.get("processes"), dict) else {}
        for raw in trace.get("spans") or []:
            process = processes.get(raw.get("processID")) or raw.get("process") or {}
            span = _jaeger_span(raw, str(process.get("serviceName") or ""), line)
            if span is None:
                tally.unread(f"line {line}: a span without traceID, spanID or startTime")
            else:
                yield tally.took(span)


def _jaeger_span(raw: dict[str, Any], service: str, line: int) -> Span | None:
    start = _integer(raw.get("startTime"))
    if not raw.get("traceID") or not raw.get("spanID") or start is None:
        return None
    parent = next(
        (ref.get("spanID") for ref in raw.get("references") or [] if ref.get("refType") == "CHILD_OF"),
        raw.get("parentSpanID"),
    )
    tags = {str(tag.get("key")): tag.get("value") for tag in raw.get("tags") or [] if isinstance(tag, dict)}
    status_code = str(tags.get("otel.status_code") or "").upper()
    error = tags.get("error") in (True, "true", "True") or status_code == "ERROR"
    status = "error" if error else "ok" if status_code == "OK" else "unset"
    return Span(
        _id(raw["traceID"]),
        _id(raw["spanID"]),
        _id(parent),
        service,
        str(raw.get("operationName") or ""),
        start * 1_000,
        max(0, _integer(raw.get("duration")) or 0) * 1_000,
        status,
        line,
    )


def _zipkin(spans: list[dict[str, Any]], line: int, tally: Tally) -> Iterator[Span]:
    for raw in spans:
        start = _integer(raw.get("timestamp"))
        if not raw.get("traceId") or not raw.get("id") or start is None:
            tally.unread(f"line {line}: a span without traceId, id or timestamp")
            continue
        tags: dict[str, Any] = raw["tags"] if isinstance(raw.get("tags"), dict) else {}
        yield tally.took(
            Span(
                _id(raw["traceId"]),
                _id(raw["id"]),
                _id(raw.get("parentId")),
                str((raw.get("localEndpoint") or {}).get("serviceName") or ""),
                str(raw.get("name") or ""),
                start * 1_000,
                max(0, _integer(raw.get("duration")) or 0) * 1_000,
                "error" if "error" in tags else "unset",
                line,
                shared=bool(raw.get("shared")),
            )
        )


# --- CSV -------------------------------------------------------------------------------------------

# header (lower-cased, with `-`, ` ` and `.` as `_`, unit suffix removed) → column role
_CSV_ROLES = {
    "trace_id": "trace",
    "traceid": "trace",
    "trace": "trace",
    "span_id": "span",
    "spanid": "span",
    "span": "span",
    "id": "span",
    "parent_id": "parent",
    "parent_span_id": "parent",
    "parentid": "parent",
    "parentspanid": "parent",
    "parent": "parent",
    "service": "service",
    "service_name": "service",
    "servicename": "service",
    "pod": "service",
    "pod_name": "service",
    "operation": "operation",
    "operation_name": "operation",
    "operationname": "operation",
    "name": "operation",
    "span_name": "operation",
    "start": "start",
    "start_time": "start",
    "starttime": "start",
    "timestamp": "start",
    "end": "end",
    "end_time": "end",
    "endtime": "end",
    "duration": "duration",
    "status": "status",
    "status_code": "status",
    "error": "status",
}
_CSV_ERROR = {"error", "2", "true", "status_code_error", "err", "failed", "failure"}
_CSV_OK = {"ok", "1", "false", "status_code_ok", "success"}


@dataclass(frozen=True)
class _Column:
    index: int
    unit: int | None  # ns per unit from the header suffix; None: from the value's magnitude


def _csv_columns(header: list[str]) -> dict[str, _Column]:
    columns: dict[str, _Column] = {}
    for index, raw in enumerate(header):
        name = raw.strip().lower().replace("-", "_").replace(" ", "_").replace(".", "_").strip("_")
        for bracket in ("(", "["):  # `duration (ms)`, `start[us]`
            if bracket in name:
                name, _, rest = name.partition(bracket)
                name = f"{name.rstrip('_')}_{rest.strip(')]_ ')}"
        unit = None
        base, _, suffix = name.rpartition("_")
        if base and suffix in _UNIT_SUFFIXES:
            name, unit = base, _UNIT_SUFFIXES[suffix]
        role = _CSV_ROLES.get(name)
        if role and role not in columns:
            columns[role] = _Column(index, unit)
    return columns


def _csv(handle: BinaryIO, tally: Tally, tz: tzinfo) -> Iterator[Span]:
    """The rows of a span table one at a time (lines cut at LIMITS.max_line_chars, a row the csv module
    cannot read is an unread record)."""
    text = io.TextIOWrapper(handle, encoding="utf-8", errors="replace", newline="\n")
    try:
        rows = csv.reader(_without_bom(iter(Lines(text))))
        columns = _table_columns(_header(rows))
        tally.format = "csv"
        yield from _csv_rows(rows, columns, tally, tz, 2)
    finally:
        text.detach()  # the caller closes the file


def _table_columns(header: list[str]) -> dict[str, _Column]:
    """The roles of a span table's columns; TraceFileError when one it needs is missing."""
    columns = _csv_columns(header)
    missing = [role for role in ("trace", "span", "start") if role not in columns]
    if missing or ("end" not in columns and "duration" not in columns):
        wanted = ", ".join(missing + ([] if "end" in columns or "duration" in columns else ["end or duration"]))
        raise TraceFileError(f"not a span table: the header {','.join(header)[:200]!r} has no {wanted} column")
    return columns


def _csv_rows(rows: Iterator[list[str]], columns: dict[str, _Column], tally: Tally, tz: tzinfo, first: int):
    """The spans of a table's rows, the first of them on line `first`."""
    number = first - 1
    while True:
        number += 1
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as error:
            tally.unread(f"line {number}: {error}")
            continue
        if not any(cell.strip() for cell in row):
            continue
        span = _csv_span(row, columns, number, tz)
        if isinstance(span, str):
            tally.unread(span)
        else:
            yield tally.took(span)


def _without_bom(lines: Iterator[str]) -> Iterator[str]:
    first = next(lines, None)
    if first is not None:
        yield first.lstrip("\ufeff")
        yield from lines


def _header(rows: Any) -> list[str]:
    try:
        return next(rows, [])
    except csv.Error as error:
        raise TraceFileError(f"not a span table: its header cannot be read ({error})") from None


def _cell(row: list[str], columns: dict[str, _Column], role: str) -> str:
    column = columns.get(role)
    return row[column.index].strip() if column is not None and column.index < len(row) else ""


def _csv_span(row: list[str], columns: dict[str, _Column], line: int, tz: tzinfo) -> Span | str:
    trace, span = _cell(row, columns, "trace"), _cell(row, columns, "span")
    start = _time_ns(_cell(row, columns, "start"), columns["start"].unit, tz)
    if not trace or not span or start is None:
        return f"line {line}: no trace id, span id or readable start"
    unit = columns["start"].unit or _magnitude_unit(_cell(row, columns, "start"))
    end = _time_ns(_cell(row, columns, "end"), columns["end"].unit or unit, tz) if "end" in columns else None
    duration_cell = _cell(row, columns, "duration")
    if duration_cell:
        number = _number(duration_cell)
        duration_unit = columns["duration"].unit or unit or 1
        duration = None if number is None else int(number * duration_unit)
    else:
        duration = None if end is None else end - start
    if duration is None:
        return f"line {line}: no readable end or duration"
    status_cell = _cell(row, columns, "status").lower()
    if status_cell.isdigit() and len(status_cell) == 3:  # an HTTP status
        status = "error" if int(status_cell) >= 500 else "ok"
    else:
        status = "error" if status_cell in _CSV_ERROR else "ok" if status_cell in _CSV_OK else "unset"
    return Span(
        _id(trace),
        _id(span),
        _id(_cell(row, columns, "parent")),
        _cell(row, columns, "service"),
        _cell(row, columns, "operation"),
        start,
        max(0, duration),
        status,
        line,
    )


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _magnitude_unit(text: str) -> int | None:
    """ns per unit of an epoch number by its size: ~1.7e18 ns, ~1.7e15 µs, ~1.7e12 ms, ~1.7e9 s."""
    number = _number(text)
    if number is None:
        return None
    return next(unit for floor, unit in _EPOCH_UNITS if abs(number) >= floor)


def _time_ns(text: str, unit: int | None, tz: tzinfo) -> int | None:
    """An epoch number (in `unit`, else by its magnitude) or an ISO 8601 time with a zone, in ns."""
    if not text:
        return None
    if text.lstrip("-").isdigit():  # exact: a float loses the last digits of an epoch in ns or µs
        return int(text) * (unit or _magnitude_unit(text) or 1)
    number = _number(text)
    if number is not None:
        return int(number * (unit or _magnitude_unit(text) or 1))
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    moment = localize(moment, tz) if moment.tzinfo is None else moment
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1_000
