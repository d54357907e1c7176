"""`evcli env check` on a snapshot's traces/ directory: per file its format, spans, services, time range
and the share of span records read, with the same rule as for logs: below MIN_SPAN_SHARE read, the file
is an error. What the spans get wrong (orphans, clock skew, duplicate ids, cycles of parents, spans without a
service) is a warning that states the count; nothing is repaired or guessed. Everything is read from the
snapshot's trace index (evcli.backends.traceindex), so a check builds it, or reuses it, for later queries.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from evcli.backends.snapshot import SnapshotBackend
from evcli.backends.snapshot_traces import TRACE_SUFFIXES, TRACES_DIR
from evcli.backends.trace_graph import iso_ns
from evcli.backends.traceformats import FORMATS

MIN_SPAN_SHARE = 0.9  # below this share of span records read a trace file is an error (as timestamps in logs)

Report = Callable[[Literal["error", "warning"], str, str], None]  # severity, path, message
Entries = Callable[[str, tuple[str, ...]], list[Path]]  # folder, suffixes → the files read (others ignored)


class TraceFileInfo(BaseModel):
    path: str
    format: str | None  # otlp, jaeger, zipkin or csv; None when the file could not be read
    spans: int
    records: int  # span records seen, read or not
    read_share: float  # spans / records, 0..1
    traces: int
    services: list[str]  # as mapped to the environment's services (pods to their Deployment)
    first: str | None  # the earliest span start
    last: str | None  # the latest span start


def check_traces(backend: SnapshotBackend, report: Report, entries: Entries) -> list[TraceFileInfo]:
    """One info per file of traces/ that some format reads; every problem reported through `report`."""
    if not entries(TRACES_DIR, TRACE_SUFFIXES):
        return []
    traces = backend.traces
    infos = []
    for file in traces.files:
        if file.found is None:
            report(
                "error",
                file.relative,
                _without_path(file.error, file.relative) + f"; known formats: {', '.join(FORMATS)}",
            )
            continue
        found, zone = file.found, backend.config.timezone
        info = TraceFileInfo(
            path=file.relative,
            format=found.format,
            spans=found.read,
            records=found.records,
            read_share=found.share,
            traces=found.traces(),
            services=found.services,
            first=iso_ns(found.first, zone) if found.first is not None else None,
            last=iso_ns(found.last, zone) if found.last is not None else None,
        )
        _file_problems(info, found.unread_reasons, report)
        infos.append(info)
    _graph_problems(backend, report)
    return infos


def _file_problems(info: TraceFileInfo, reasons: list[str], report: Report) -> None:
    if info.records == 0:
        report("warning", info.path, "the file holds no spans")
    elif info.read_share < MIN_SPAN_SHARE:
        example = f"; e.g. {reasons[0]}" if reasons else ""
        report(
            "error",
            info.path,
            f"only {info.read_share:.0%} of the {info.records} span records were read (at least "
            f"{MIN_SPAN_SHARE:.0%} are needed; the detected format is {info.format}){example}",
        )
    elif info.spans < info.records:
        report("warning", info.path, f"{info.records - info.spans} of {info.records} span records were not read")


def _graph_problems(backend: SnapshotBackend, report: Report) -> None:
    """What the spans of all files together state about themselves: counted, never repaired."""
    quality = backend.traces.quality
    where = f"{TRACES_DIR}/"
    if quality.orphans:
        report("warning", where, f"{quality.orphans} orphan spans (their parent span is in no file): no edge to them")
    if quality.skewed:
        report("warning", where, f"{quality.skewed} spans start before their parent (clock skew between hosts)")
    if quality.duplicates:
        report(
            "warning",
            where,
            f"{quality.duplicates} spans repeat a span id of their trace (the first is kept as parent): on no edge",
        )
    if quality.cyclic:
        report(
            "warning",
            where,
            f"{quality.cyclic} spans are on a cycle of parents (each is its own ancestor): on no edge",
        )
    if quality.without_service:
        report("warning", where, f"{quality.without_service} spans name no service: they are on no call edge")


def trace_file_line(info: dict) -> str:
    """`otlp, 120 spans in 30 traces, read 100%, services checkout, gateway, <first> .. <last>`."""
    span = f", {info['first']} .. {info['last']}" if info["first"] else ""
    return (
        f"{info['format']}, {info['spans']} spans in {info['traces']} trace{'s' * (info['traces'] != 1)}, "
        f"read {info['read_share']:.0%}, "
        f"services {', '.join(info['services']) or '(none)'}{span}"
    )


def _without_path(message: str, relative: str) -> str:
    return message.removeprefix(f"{relative}: ")
