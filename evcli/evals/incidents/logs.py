"""logs/<service>.log|.jsonl in the formats the programs really write.

An `Event` is what a program logged (time, level, logger, message, fields, a stack trace); a format
renders it as the line(s) that program writes. Formats with a local timestamp and no offset
(logback, Python logging, nginx, Kafka) write the environment's timezone, as a service configured
with that TZ does; the others write UTC. A container json-file log wraps every rendered line in
Docker's `{"log": …, "stream": …, "time": …}` envelope, one envelope per line of a stack trace.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

Value = str | int | float | bool


@dataclass(frozen=True)
class Request:
    """One line of an access log."""

    client: str
    method: str
    path: str
    status: int
    size: int  # response bytes
    duration_ms: float
    upstream: str  # "name:port" the proxy passed the request to
    upstream_ip: str
    user_agent: str
    request_id: str


@dataclass(frozen=True)
class Event:
    time: datetime  # aware UTC
    level: str  # DEBUG, INFO, WARN, ERROR
    message: str
    logger: str = ""  # class, module or file:line, as the runtime names it
    thread: str = "main"
    fields: tuple[tuple[str, Value], ...] = ()
    trace: tuple[str, ...] = ()  # continuation lines in the runtime's own form
    request: Request | None = None


Format = Callable[[Event, ZoneInfo], list[str]]

# The family of programs that write each format: it decides loggers, messages and stack traces.
FAMILY: Mapping[str, str] = {
    "spring": "java",
    "logfmt": "go",
    "zap": "go",
    "python": "python",
    "nginx": "proxy",
    "envoy": "proxy",
    "postgres": "postgres",
    "mysql": "mysql",
    "kafka": "kafka",
    "rabbitmq": "rabbitmq",
}
_PYTHON_LEVELS = {"WARN": "WARNING"}
_POSTGRES_LEVELS = {"DEBUG": "DEBUG1", "INFO": "LOG", "WARN": "WARNING", "ERROR": "ERROR"}
_MYSQL_LEVELS = {"DEBUG": "Note", "INFO": "Note", "WARN": "Warning", "ERROR": "ERROR"}
_STDERR_FAMILIES = ("go", "python")  # zap, slog and Python logging write to stderr by default


def _millis(moment: datetime) -> str:
    return f"{moment.microsecond // 1000:03d}"


def _local(event: Event, zone: ZoneInfo) -> datetime:
    return event.time.astimezone(zone)


def _utc_iso(moment: datetime, digits: int = 3) -> str:
    fraction = f"{moment.microsecond:06d}"[:digits]
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{fraction}Z"


def _inline_fields(event: Event) -> str:
    return "".join(f" {key}={value}" for key, value in event.fields)


def _logfmt_value(value: Value) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if text and not any(c in text for c in ' "=\t'):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _spring(event: Event, zone: ZoneInfo) -> list[str]:
    local = _local(event, zone)
    head = f"{local:%Y-%m-%d %H:%M:%S}.{_millis(local)} {event.level:>5} 1 --- [{event.thread[-15:]:>15}] {event.logger:<40} : "
    return [head + event.message + _inline_fields(event), *event.trace]


def _logfmt(event: Event, zone: ZoneInfo) -> list[str]:
    pairs = [("time", _utc_iso(event.time)), ("level", event.level.lower()), ("msg", event.message), *event.fields]
    return [" ".join(f"{key}={_logfmt_value(value)}" for key, value in pairs), *event.trace]


def _zap(event: Event, zone: ZoneInfo) -> list[str]:
    record: dict[str, Value] = {
        "level": event.level.lower(),
        "ts": round(event.time.timestamp(), 6),
        "caller": event.logger,
        "msg": event.message,
    }
    record.update(event.fields)
    if event.trace:
        record["stacktrace"] = "\n".join(event.trace)
    return [json.dumps(record, separators=(",", ":"))]


def _python(event: Event, zone: ZoneInfo) -> list[str]:
    local = _local(event, zone)
    level = _PYTHON_LEVELS.get(event.level, event.level)
    return [
        f"{local:%Y-%m-%d %H:%M:%S},{_millis(local)} {level} [{event.logger}] {event.message}{_inline_fields(event)}",
        *event.trace,
    ]


def _nginx(event: Event, zone: ZoneInfo) -> list[str]:
    local, request = _local(event, zone), event.request
    if request is None:  # the error log, which the nginx image sends to the same container output
        return [f"{local:%Y/%m/%d %H:%M:%S} [{event.level.lower()}] 31#31: {event.message}"]
    upstream_time = f"{request.duration_ms / 1000 - 0.001:.3f}" if request.status != 502 else "-"
    return [
        f'{request.client} - - [{local:%d/%b/%Y:%H:%M:%S %z}] "{request.method} {request.path} HTTP/1.1" {request.status} {request.size} '
        f'"-" "{request.user_agent}" rt={request.duration_ms / 1000:.3f} uct="0.001" urt="{upstream_time}" proxy={request.upstream}'
    ]


def _envoy(event: Event, zone: ZoneInfo) -> list[str]:
    request = event.request
    if request is None:
        return []
    flags = {504: "UT", 503: "UF", 502: "UC"}.get(request.status, "-")
    duration = round(request.duration_ms)
    return [
        f'[{_utc_iso(event.time)}] "{request.method} {request.path} HTTP/1.1" {request.status} {flags} 0 {request.size} {duration} '
        f'{max(0, duration - 1)} "{request.client}" "{request.user_agent}" "{request.request_id}" "shop.example.com" "{request.upstream_ip}"'
    ]


def _postgres(event: Event, zone: ZoneInfo) -> list[str]:
    prefix = f"{event.time:%Y-%m-%d %H:%M:%S}.{_millis(event.time)} UTC [{event.thread}]"
    return [
        f"{prefix} {_POSTGRES_LEVELS[event.level]}:  {event.message}",
        *(f"{prefix} {line}" for line in event.trace),
    ]


def _mysql(event: Event, zone: ZoneInfo) -> list[str]:
    code, _, subsystem = event.logger.partition(" ")  # "MY-010914 Server"
    return [
        f"{_utc_iso(event.time, 6)} {event.thread} [{_MYSQL_LEVELS[event.level]}] [{code}] [{subsystem}] {event.message}"
    ]


def _kafka(event: Event, zone: ZoneInfo) -> list[str]:
    local = _local(event, zone)
    return [
        f"[{local:%Y-%m-%d %H:%M:%S},{_millis(local)}] {event.level} {event.message} ({event.logger})",
        *event.trace,
    ]


def _rabbitmq(event: Event, zone: ZoneInfo) -> list[str]:
    level = _PYTHON_LEVELS.get(event.level, event.level).lower()
    return [
        f"{event.time:%Y-%m-%d %H:%M:%S}.{event.time.microsecond:06d}+00:00 [{level}] <0.{event.thread}.0> {event.message}"
    ]


FORMATS: Mapping[str, Format] = {
    "spring": _spring,
    "logfmt": _logfmt,
    "zap": _zap,
    "python": _python,
    "nginx": _nginx,
    "envoy": _envoy,
    "postgres": _postgres,
    "mysql": _mysql,
    "kafka": _kafka,
    "rabbitmq": _rabbitmq,
}


def file_name(service: str, log_format: str, wrapped: bool) -> str:
    return f"{service}.jsonl" if log_format == "zap" and not wrapped else f"{service}.log"


def write_log(path: Path, events: Iterable[Event], log_format: str, timezone: str, wrapped: bool) -> int:
    """Render the events in time order; returns the number of lines written."""
    zone, render = ZoneInfo(timezone), FORMATS[log_format]
    stream = "stderr" if FAMILY[log_format] in _STDERR_FAMILIES else "stdout"
    lines: list[str] = []
    for event in sorted(events, key=lambda event: event.time):
        rendered = render(event, zone)
        if wrapped:
            rendered = [
                _docker(line, event.time + timedelta(microseconds=index * 7), stream)
                for index, line in enumerate(rendered)
            ]
        lines.extend(rendered)
    if lines:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def _docker(line: str, moment: datetime, stream: str) -> str:
    """Docker's json-file envelope; Go's JSON encoder escapes <, > and & as it does."""
    nanos = f"{moment.microsecond:06d}{moment.microsecond * 7 % 1000:03d}"
    envelope = json.dumps(
        {"log": line + "\n", "stream": stream, "time": f"{moment:%Y-%m-%dT%H:%M:%S}.{nanos}Z"}, separators=(",", ":")
    )
    return envelope.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
