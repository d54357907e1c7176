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

A record that cannot be read as a span (no trace or span id, no start) is counted in `records` but
not in `spans`, with the reason kept, so a reader can state the share read. Nothing is invented:
a span without a service keeps the service "" and a missing parent stays missing.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any

from evcli.timerange import localize

FORMATS = ("otlp", "jaeger", "zipkin", "csv")
_SHOWN_REASONS = 5  # unread records whose reason is kept, per file
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
class SpanFile:
    """What one file holds: its format, the spans read, and how many records were not spans."""

    format: str | None  # None: no known format reads it
    spans: list[Span] = field(default_factory=list)
    records: int = 0  # span records seen, read or not
    unread_reasons: list[str] = field(default_factory=list)  # the first few

    def unread(self, reason: str) -> None:
        self.records += 1
        if len(self.unread_reasons) < _SHOWN_REASONS:
            self.unread_reasons.append(reason)

    def add(self, span: Span) -> None:
        self.records += 1
        self.spans.append(span)

    @property
    def share(self) -> float:
        return round(len(self.spans) / self.records, 4) if self.records else 0.0


class TraceFileError(ValueError):
    """A file no trace format reads at all (not JSON of a known shape, no span table header)."""


def read_spans(data: bytes, *, csv_name: bool = False, tz: tzinfo = UTC) -> SpanFile:
    """The spans of one file's bytes, its format detected from the content (`csv_name`: the file is
    named *.csv, so a table is tried first; `tz`: the zone of a table's times written without one).
    TraceFileError when no format reads it."""
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    stripped = text.lstrip()
    if not stripped:
        return SpanFile(format=None)
    if csv_name or stripped[0] not in "[{":
        return _csv(text, tz)
    found = _json_lines(text)
    if found is not None:
        return found
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise TraceFileError(f"not JSON: {error}") from None
    return _document(document, 1)


def normal_id(value: Any) -> str:
    """`00000000000000004bf92f3577b34da6` and `4BF92F3577B34DA6` are one id: lower case, no leading zeros."""
    text = _id(value)
    return text.lstrip("0") or ("0" if text else "")


def _id(value: Any) -> str:
    """An id as written, in lower case (a span keeps it so, so the file can be searched for it)."""
    return str(value or "").strip().lower()


# --- JSON ------------------------------------------------------------------------------------------


def _json_lines(text: str) -> SpanFile | None:
    """One document a line (OTLP file exporter, Jaeger or Zipkin per line); None when the first
    non-blank line is not a whole JSON document (a pretty-printed file). A later line that is not
    JSON, or not of a known shape, is an unread record; the first one decides the file's format."""
    found = SpanFile(format=None)
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
        except (ValueError, RecursionError):
            if found.format is None:  # the first document is not one line: a pretty-printed file
                return None
            found.unread(f"line {number} is not JSON")
            continue
        try:
            part = _document(document, number)
        except TraceFileError as error:
            if found.format is None:
                raise
            found.unread(str(error))
            continue
        found.format = found.format or part.format
        found.spans += part.spans
        found.records += part.records
        found.unread_reasons += part.unread_reasons[: max(0, _SHOWN_REASONS - len(found.unread_reasons))]
    return found


def _document(document: Any, line: int) -> SpanFile:
    if isinstance(document, dict) and "resourceSpans" in document:
        return _otlp(document, line)
    if isinstance(document, dict) and isinstance(document.get("data"), list):
        return _jaeger(document["data"], line)
    if isinstance(document, dict) and "spans" in document and "processes" in document:
        return _jaeger([document], line)
    if isinstance(document, list):
        flat = [item for part in document for item in (part if isinstance(part, list) else [part])]
        if all(isinstance(item, dict) for item in flat) and any("traceId" in item for item in flat):
            return _zipkin(flat, line)
    if isinstance(document, dict) and "traceId" in document and ("localEndpoint" in document or "id" in document):
        return _zipkin([document], line)
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


def _otlp(document: dict[str, Any], line: int) -> SpanFile:
    found = SpanFile(format="otlp")
    for resource_spans in document.get("resourceSpans") or []:
        resource = _attributes((resource_spans.get("resource") or {}).get("attributes"))
        service = str(resource.get("service.name") or resource.get("k8s.pod.name") or "")
        scopes = resource_spans.get("scopeSpans") or resource_spans.get("instrumentationLibrarySpans") or []
        for scope in scopes:
            for raw in scope.get("spans") or []:
                _otlp_span(found, raw, service, line)
    return found


def _otlp_span(found: SpanFile, raw: dict[str, Any], service: str, line: int) -> None:
    start, end = _integer(raw.get("startTimeUnixNano")), _integer(raw.get("endTimeUnixNano"))
    if not raw.get("traceId") or not raw.get("spanId") or start is None:
        found.unread(f"line {line}: a span without traceId, spanId or startTimeUnixNano")
        return
    code = (raw.get("status") or {}).get("code")
    status = "error" if code in _OTLP_ERROR else "ok" if code in _OTLP_OK else "unset"
    span_service = service or str(_attributes(raw.get("attributes")).get("service.name") or "")
    duration = max(0, (end or start) - start)
    found.add(
        Span(
            _id(raw["traceId"]),
            _id(raw["spanId"]),
            _id(raw.get("parentSpanId")),
            span_service,
            str(raw.get("name") or ""),
            start,
            duration,
            status,
            line,
        )
    )


def _jaeger(traces: list[Any], line: int) -> SpanFile:
    found = SpanFile(format="jaeger")
    for trace in traces:
        if not isinstance(trace, dict):
            found.unread(f"line {line}: a trace that is not a JSON object")
            continue
        processes: dict[str, Any] = trace["processes"] if isinstance(trace.get("processes"), dict) else {}
        for raw in trace.get("spans") or []:
            process = processes.get(raw.get("processID")) or raw.get("process") or {}
            _jaeger_span(found, raw, str(process.get("serviceName") or ""), line)
    return found


def _jaeger_span(found: SpanFile, raw: dict[str, Any], service: str, line: int) -> None:
    start = _integer(raw.get("startTime"))
    if not raw.get("traceID") or not raw.get("spanID") or start is None:
        found.unread(f"line {line}: a span without traceID, spanID or startTime")
        return
    parent = next(
        (ref.get("spanID") for ref in raw.get("references") or [] if ref.get("refType") == "CHILD_OF"),
        raw.get("parentSpanID"),
    )
    tags = {str(tag.get("key")): tag.get("value") for tag in raw.get("tags") or [] if isinstance(tag, dict)}
    status_code = str(tags.get("otel.status_code") or "").upper()
    error = tags.get("error") in (True, "true", "True") or status_code == "ERROR"
    status = "error" if error else "ok" if status_code == "OK" else "unset"
    found.add(
        Span(
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
    )


def _zipkin(spans: list[dict[str, Any]], line: int) -> SpanFile:
    found = SpanFile(format="zipkin")
    for raw in spans:
        start = _integer(raw.get("timestamp"))
        if not raw.get("traceId") or not raw.get("id") or start is None:
            found.unread(f"line {line}: a span without traceId, id or timestamp")
            continue
        tags: dict[str, Any] = raw["tags"] if isinstance(raw.get("tags"), dict) else {}
        status = "error" if "error" in tags else "unset"
        found.add(
            Span(
                _id(raw["traceId"]),
                _id(raw["id"]),
                _id(raw.get("parentId")),
                str((raw.get("localEndpoint") or {}).get("serviceName") or ""),
                str(raw.get("name") or ""),
                start * 1_000,
                max(0, _integer(raw.get("duration")) or 0) * 1_000,
                status,
                line,
                shared=bool(raw.get("shared")),
            )
        )
    return found


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


def _csv(text: str, tz: tzinfo) -> SpanFile:
    rows = csv.reader(io.StringIO(text))
    header = next(rows, [])
    columns = _csv_columns(header)
    missing = [role for role in ("trace", "span", "start") if role not in columns]
    if missing or ("end" not in columns and "duration" not in columns):
        wanted = ", ".join(missing + ([] if "end" in columns or "duration" in columns else ["end or duration"]))
        raise TraceFileError(f"not a span table: the header {','.join(header)[:200]!r} has no {wanted} column")
    found = SpanFile(format="csv")
    for number, row in enumerate(rows, 2):
        if not any(cell.strip() for cell in row):
            continue
        span = _csv_span(row, columns, number, tz)
        if isinstance(span, str):
            found.unread(span)
        else:
            found.add(span)
    return found


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
