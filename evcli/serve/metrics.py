"""`GET /metrics` in the Prometheus text format (version 0.0.4).

Counters of what this web process received (alerts, duplicates, rejected deliveries, queue-full answers)
live in memory and restart at zero with the process, as Prometheus counters may; everything the workers
did (diagnoses by verdict, durations, tool and model errors) is read from the alert queue in the store,
so it counts the work of every worker process.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evcli.store.db import TraceStore

DURATION_BUCKETS_S = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class Received(Counter[str]):
    """Per-process counts: alerts (by status), duplicates, rejected deliveries, deliveries refused as full."""


def render(store: TraceStore, received: Received) -> str:
    rows = store.alert_queue_rows()
    states = Counter(row["state"] for row in rows)
    finished = [row for row in rows if row["state"] in ("done", "failed")]
    lines = [
        *_family(
            "evcli_serve_alerts_received_total",
            "counter",
            "Alerts received in webhook deliveries.",
            [(f'{{status="{status}"}}', received[status]) for status in ("firing", "resolved")],
        ),
        *_family(
            "evcli_serve_duplicate_alerts_total",
            "counter",
            "Firing alerts already queued within the repeat interval.",
            [("", received["duplicates"])],
        ),
        *_family(
            "evcli_serve_rejected_deliveries_total",
            "counter",
            "Deliveries answered 400 (not webhook v4).",
            [("", received["rejected"])],
        ),
        *_family(
            "evcli_serve_queue_full_total",
            "counter",
            "Deliveries answered 503 because the queue was full.",
            [("", received["full"])],
        ),
        *_family(
            "evcli_serve_queue_depth",
            "gauge",
            "Alerts waiting for or under diagnosis.",
            [('{state="queued"}', states["queued"]), ('{state="running"}', states["running"])],
        ),
        *_family(
            "evcli_serve_diagnoses_total",
            "counter",
            "Finished diagnoses by verdict (failed: an error).",
            sorted(_by_verdict(finished).items()),
        ),
        *_histogram([row["duration_s"] or 0.0 for row in finished]),
        *_family(
            "evcli_serve_tool_errors_total",
            "counter",
            "Failed tool invocations in diagnoses.",
            [("", sum(row["tool_errors"] or 0 for row in finished))],
        ),
        *_family(
            "evcli_serve_model_errors_total",
            "counter",
            "Failed model calls in diagnoses.",
            [("", sum(row["model_errors"] or 0 for row in finished))],
        ),
    ]
    return "\n".join(lines) + "\n"


def _by_verdict(finished: list[dict]) -> dict[str, int]:
    tally = Counter((row["verdict"] or "none") if row["state"] == "done" else "failed" for row in finished)
    return {f'{{verdict="{verdict}"}}': count for verdict, count in tally.items()}


def _family(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> list[str]:
    return [
        f"# HELP {name} {help_text}",
        f"# TYPE {name} {kind}",
        *(f"{name}{labels} {value}" for labels, value in samples),
    ]


def _histogram(durations: list[float]) -> list[str]:
    name = "evcli_serve_diagnosis_duration_seconds"
    samples: list[tuple[str, float]] = [
        (f'_bucket{{le="{bound}"}}', sum(d <= bound for d in durations)) for bound in DURATION_BUCKETS_S
    ]
    samples += [('_bucket{le="+Inf"}', len(durations)), ("_sum", round(sum(durations), 4)), ("_count", len(durations))]
    lines = _family(name, "histogram", "Time a worker took per diagnosis.", [])
    return lines + [f"{name}{suffix} {value}" for suffix, value in samples]
