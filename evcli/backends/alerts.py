"""The normalised alert record every alert source produces, and the value helpers it is built with.

One shape for Prometheus, Alertmanager and snapshot alerts (documented on `MetricsResult`):
times are ISO-8601 UTC with a `Z`, values finite floats or None, labels sorted.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from evcli.backends.base import as_utc


def alert_record(
    *,
    labels: dict[str, str],
    annotations: dict[str, str],
    state: str,
    active_at: str | None,
    value: Any,
    now: datetime,
) -> dict[str, Any]:
    """The alert shape documented on `MetricsResult`, from any source's labels and annotations."""
    started = parse_time(active_at)
    return {
        "alertname": labels.get("alertname", ""),
        "service": service_of(labels),
        "instance": labels.get("instance", ""),
        "severity": labels.get("severity", ""),
        "state": state,
        "value": number(value),
        "unit": annotations.get("unit") or labels.get("unit", ""),
        "active_at": iso_utc(started) if started else None,
        "duration": format_duration(now - started) if started else None,
        "summary": annotations.get("summary") or annotations.get("description") or "",
        "labels": dict(sorted(labels.items())),
    }


def matches(alert: dict[str, Any], filters: dict[str, str] | None) -> bool:
    """True when every filter label equals the alert's label of that name."""
    labels = alert.get("labels") or {}
    return all(labels.get(name) == value for name, value in (filters or {}).items())


def service_of(labels: dict[str, str]) -> str:
    return labels.get("service") or labels.get("job") or labels.get("app") or ""


def number(value: Any) -> float | None:
    """A finite float from a sample or annotation value ("9.2e+01", "92", 92), else None."""
    try:
        parsed = float(value)
    except (TypeError, ValueError):
        return None
    return parsed if math.isfinite(parsed) else None


def significant(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 time as Prometheus and Alertmanager write it; None when absent or the zero time."""
    if not text or text.startswith("0001-01-01"):
        return None
    try:
        return as_utc(datetime.fromisoformat(text))
    except ValueError:
        return None


def iso_utc(moment: datetime) -> str:
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_duration(elapsed: timedelta) -> str:
    """`25m`, `1h05m`, `26h00m`: whole minutes, never negative."""
    minutes = max(0, int(elapsed.total_seconds() // 60))
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m"
