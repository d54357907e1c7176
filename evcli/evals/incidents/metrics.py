"""metrics/<file>.csv as exporters write them: one naming style per incident, one time format.

A style names each canonical metric of `signals` and converts its unit (milliseconds to seconds,
MiB to bytes …). Some styles export requests and errors as cumulative `_total` counters instead of
rates: a counter grows by rate × interval each sample, never decreases, and starts again from 0
when its process restarts. Rows the instance was down for are missing; a few rows go missing at
random (a missed scrape) and a few cells are empty or NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from random import Random
from typing import Literal
from zoneinfo import ZoneInfo

from evcli.evals.incidents.clock import Timeline
from evcli.evals.incidents.signals import Series

Kind = Literal["gauge", "counter", "error_rate", "error_counter"]
TIME_FORMATS = ("iso_z", "iso_offset", "epoch")
POD_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what Kubernetes uses for generated name suffixes


@dataclass(frozen=True)
class Column:
    header: str
    metric: str  # the canonical metric it is computed from
    factor: float = 1.0  # written value = canonical value × factor
    decimals: int = 2
    kind: Kind = "gauge"  # counter: cumulative count of the per-second rate; error_*: from success


def _c(header: str, metric: str, factor: float = 1.0, decimals: int = 2, kind: Kind = "gauge") -> Column:
    return Column(header, metric, factor, decimals, kind)


STYLES: Mapping[str, tuple[Column, ...]] = {
    "snake": (
        _c("cpu_usage[%]", "cpu", decimals=1),
        _c("memory_working_set[MiB]", "memory", decimals=1),
        _c("latency_p50[ms]", "p50", decimals=1),
        _c("latency_p90[ms]", "p90", decimals=1),
        _c("latency_p99[ms]", "p99", decimals=1),
        _c("requests[req/s]", "requests", decimals=1),
        _c("success_rate[%]", "success", decimals=2),
        _c("restarts", "restarts", decimals=0),
        _c("net_rtt[ms]", "net_rtt", decimals=2),
        _c("disk_used[%]", "disk", decimals=1),
        _c("response_bytes[B]", "response_bytes", decimals=0),
    ),
    "camel": (
        _c("CpuUsageRate(%)", "cpu", decimals=2),
        _c("MemoryWorkingSet(GiB)", "memory", 1 / 1024, 3),
        _c("PodLatencyP50(s)", "p50", 0.001, 4),
        _c("PodLatencyP90(s)", "p90", 0.001, 4),
        _c("PodLatencyP99(s)", "p99", 0.001, 4),
        _c("RequestRate(req/s)", "requests", decimals=2),
        _c("SuccessRate(%)", "success", decimals=2),
        _c("RestartCount", "restarts", decimals=0),
        _c("NetworkLatency(s)", "net_rtt", 0.001, 4),
        _c("DiskUsageRate(%)", "disk", decimals=2),
        _c("ResponseSize(KB)", "response_bytes", 1 / 1024, 2),
    ),
    "prometheus": (
        _c("process_cpu_usage[%]", "cpu", decimals=2),
        _c("container_memory_working_set_bytes[B]", "memory", 1024 * 1024, 0),
        _c("http_request_duration_p50[s]", "p50", 0.001, 4),
        _c("http_request_duration_p90[s]", "p90", 0.001, 4),
        _c("http_request_duration_p99[s]", "p99", 0.001, 4),
        _c("http_requests_total", "requests", decimals=0, kind="counter"),
        _c("http_request_errors_total", "success", decimals=0, kind="error_counter"),
        _c("kube_pod_container_status_restarts_total", "restarts", decimals=0),
        _c("network_rtt[s]", "net_rtt", 0.001, 5),
        _c("filesystem_used_ratio", "disk", 0.01, 4),
        _c("http_response_size_bytes[B]", "response_bytes", decimals=0),
    ),
    "short": (
        _c("cpu(%)", "cpu", decimals=1),
        _c("mem(MB)", "memory", 1.048576, 0),
        _c("rt_p90(ms)", "p90", decimals=0),
        _c("rt_p99(ms)", "p99", decimals=0),
        _c("qps", "requests", decimals=1),
        _c("err_rate(%)", "success", decimals=2, kind="error_rate"),
        _c("restart_count", "restarts", decimals=0),
        _c("rtt(ms)", "net_rtt", decimals=1),
        _c("disk(%)", "disk", decimals=1),
        _c("resp_size(KB)", "response_bytes", 1 / 1024, 1),
    ),
    "dotted": (
        _c("cpu.utilization (%)", "cpu", decimals=1),
        _c("memory.usage (MiB)", "memory", decimals=0),
        _c("http.server.duration.p50 (ms)", "p50", decimals=2),
        _c("http.server.duration.p90 (ms)", "p90", decimals=2),
        _c("http.server.duration.p99 (ms)", "p99", decimals=2),
        _c("http.server.requests_total", "requests", decimals=0, kind="counter"),
        _c("http.server.errors_total", "success", decimals=0, kind="error_counter"),
        _c("k8s.container.restarts", "restarts", decimals=0),
        _c("net.rtt (ms)", "net_rtt", decimals=2),
        _c("disk.utilization (%)", "disk", decimals=1),
        _c("http.server.response.size (By)", "response_bytes", decimals=0),
    ),
}
_EMPTY_CELL = {"snake": "", "camel": "", "prometheus": "NaN", "short": "", "dotted": "NaN"}


def columns(style: str, metrics: tuple[str, ...]) -> tuple[Column, ...]:
    """The columns a style writes for an instance exposing `metrics` (a style may lack one: `short`
    has no median latency)."""
    return tuple(column for column in STYLES[style] if column.metric in metrics)


def pod_names(service: str, count: int, rng: Random) -> list[str]:
    """The pods of one ReplicaSet of a Deployment: <deployment>-<pod-template hash>-<pod suffix>."""
    template_hash = "".join(rng.choices(POD_ALPHABET, k=10))
    return [f"{service}-{template_hash}-{''.join(rng.choices(POD_ALPHABET, k=5))}" for _ in range(count)]


def timestamp(moment: datetime, time_format: str, timezone: str) -> str:
    if time_format == "epoch":
        return str(int(moment.timestamp()))
    if time_format == "iso_offset":
        return moment.astimezone(ZoneInfo(timezone)).isoformat()
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def timestamps(timeline: Timeline, time_format: str, timezone: str) -> list[str]:
    """The timestamp cell of every tick (the same in every file of an incident)."""
    return [timestamp(timeline.at(tick), time_format, timezone) for tick in range(timeline.ticks)]


def write_csv(path: Path, series: Series, stamps: list[str], step: int, style: str, rng: Random) -> None:
    """`stamps` from `timestamps`; `step` the seconds between them."""
    chosen = columns(style, tuple(series.values))
    missing = series.down | _missed_scrapes(rng, len(stamps))
    served = rng.uniform(1e4, 5e6)  # since the process started, before the snapshot
    counters = {
        column.header: served * (1 if column.kind == "counter" else rng.uniform(0.0005, 0.01))
        for column in chosen
        if column.kind in ("counter", "error_counter")
    }
    restarts = set(series.restarts)
    lines = [",".join(("timestamp", *(column.header for column in chosen)))]
    for tick, stamp in enumerate(stamps):
        if tick in restarts:
            counters = dict.fromkeys(counters, 0.0)
        cells = []
        for column in chosen:
            value = _value(column, series.values, tick)
            if column.header in counters:
                counters[column.header] += value * step
                value = counters[column.header]
            cells.append(_EMPTY_CELL[style] if rng.random() < 0.002 else f"{value:.{column.decimals}f}")
        if tick not in missing:
            lines.append(",".join((stamp, *cells)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _value(column: Column, values: Mapping[str, list[float]], tick: int) -> float:
    """The column's value at a tick; for a counter, the per-second rate it counts."""
    if column.kind == "gauge":
        return values[column.metric][tick] * column.factor
    if column.kind == "counter":
        return values[column.metric][tick]
    failed = (100 - values["success"][tick]) / 100
    return failed * 100 if column.kind == "error_rate" else failed * values["requests"][tick]


def _missed_scrapes(rng: Random, ticks: int) -> frozenset[int]:
    missed: set[int] = set()
    for _ in range(rng.choice((0, 0, 1, 2, 3))):
        start = rng.randrange(ticks)
        missed.update(range(start, start + rng.randint(1, 3)))
    return frozenset(missed)
