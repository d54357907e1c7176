"""`GET /metrics` in the Prometheus text format (version 0.0.4).

Counters of what this web process received (alerts, duplicates, rejected deliveries, queue-full answers)
live in memory and restart at zero with the process, as Prometheus counters may; everything the workers
did (diagnoses by verdict, durations, tool and model errors) is read from the alert queue in the store,
so it counts the work of every worker process. Worker restarts are the supervisor's count (this process).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evcli.store.db import TraceStore

DURATION_BUCKETS_S = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class Received(Counter[str]):
    """Per-process counts: alerts (by status), duplicates, rejected deliveries, deliveries refused as full."""


def render(store: TraceStore, received: Received, restarts: int) -> str:
    stats = store.alert_queue_stats(DURATION_BUCKETS_S)
    states = stats["states"]
    families = [
        (
            "alerts_received_total",
            "counter",
            "Alerts received in webhook deliveries.",
            [(f'{{status="{status}"}}', received[status]) for status in ("firing", "resolved")],
        ),
        (
            "duplicate_alerts_total",
            "counter",
            "Firing alerts already queued within the repeat interval.",
            [("", received["duplicates"])],
        ),
        (
            "rejected_deliveries_total",
            "counter",
            "Deliveries answered 400 (not webhook v4).",
            [("", received["rejected"])],
        ),
        (
            "queue_full_total",
            "counter",
            "Deliveries answered 503 because the queue was full.",
            [("", received["full"])],
        ),
        (
            "queue_depth",
            "gauge",
            "Alerts waiting for or under diagnosis.",
            [(f'{{state="{state}"}}', states.get(state, 0)) for state in ("queued", "running")],
        ),
        (
            "diagnoses_total",
            "counter",
            "Finished diagnoses by verdict (failed: an error).",
            [(f'{{verdict="{verdict}"}}', count) for verdict, count in sorted(stats["verdicts"].items())],
        ),
        ("tool_errors_total", "counter", "Failed tool invocations in diagnoses.", [("", stats["tool_errors"])]),
        ("worker_restarts_total", "counter", "Worker processes replaced after they died.", [("", restarts)]),
        ("model_errors_total", "counter", "Failed model calls in diagnoses.", [("", stats["model_errors"])]),
    ]
    lines = [line for family in families for line in _family(*family)]
    return "\n".join([*lines, *_histogram(stats)]) + "\n"


def _family(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> list[str]:
    name = f"evcli_serve_{name}"
    return [
        f"# HELP {name} {help_text}",
        f"# TYPE {name} {kind}",
        *(f"{name}{labels} {value}" for labels, value in samples),
    ]


def _histogram(stats: dict) -> list[str]:
    samples: list[tuple[str, float]] = [
        (f'_bucket{{le="{bound}"}}', count) for bound, count in zip(DURATION_BUCKETS_S, stats["buckets"], strict=True)
    ]
    samples += [
        ('_bucket{le="+Inf"}', stats["count"]),
        ("_sum", round(stats["duration_sum"], 4)),
        ("_count", stats["count"]),
    ]
    lines = _family("diagnosis_duration_seconds", "histogram", "Time a worker took per diagnosis.", [])
    return lines + [f"evcli_serve_diagnosis_duration_seconds{suffix} {value}" for suffix, value in samples]
