"""The normalised alert record every alert source produces, alert states, and the value helpers.

One shape for Prometheus, Alertmanager and snapshot alerts (documented on `MetricsResult`):
times are ISO-8601 UTC with a `Z`, values finite floats or None, labels sorted.

Alert states (DESIGN §2): `firing`, `pending`, `resolved`, `suppressed`. An alert keeps its real
state everywhere: a silenced or inhibited alert (Alertmanager `status.state` suppressed, or a
non-empty `silencedBy`/`inhibitedBy`) is `suppressed`, an alert whose end has passed is
`resolved`; neither is ever shown or counted as firing. A query asks for a `STATE_FILTERS` key
(`active` = firing or pending by default).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from evcli.backends.base import as_utc
from evcli.core.time import TimeRange

ALERT_STATES = ("firing", "pending", "resolved", "suppressed")
STATE_FILTERS: dict[str, frozenset[str]] = {
    "active": frozenset({"firing", "pending"}),
    **{state: frozenset({state}) for state in ALERT_STATES},
    "any": frozenset(ALERT_STATES),
}
# Alertmanager's status.state in the words Prometheus uses for the same situation.
_ALERTMANAGER_STATES = {"active": "firing", "suppressed": "suppressed", "unprocessed": "pending"}


def alert_record(
    *,
    labels: dict[str, str],
    annotations: dict[str, str],
    state: str,
    active_at: str | None,
    value: Any,
    now: datetime,
    ends_at: str | None = None,
    silenced_by: list[str] | None = None,
    inhibited_by: list[str] | None = None,
) -> dict[str, Any]:
    """The alert shape documented on `MetricsResult`, from any source's labels and annotations.
    `ends_at` is kept only for a resolved alert (for the others it is a refresh deadline), and
    the silences/inhibiting alerts only when there are some."""
    started = parse_time(active_at)
    ended = parse_time(ends_at) if state == "resolved" else None
    record: dict[str, Any] = {
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
    if ended is not None:
        record["ends_at"] = iso_utc(ended)
        if started is not None:
            record["duration"] = format_duration(ended - started)
    if silenced_by:
        record["silenced_by"] = list(silenced_by)
    if inhibited_by:
        record["inhibited_by"] = list(inhibited_by)
    return record


def alertmanager_state(status: Any) -> tuple[str | None, list[str], list[str]]:
    """(state, silenced_by, inhibited_by) of an Alertmanager v2 `status`; state None when unknown.
    A status that names silences or inhibiting alerts is suppressed whatever its `state` says;
    a missing status (hand-written snapshots) is active."""
    if not isinstance(status, dict):
        status = {}
    silenced = [str(item) for item in status.get("silencedBy") or []]
    inhibited = [str(item) for item in status.get("inhibitedBy") or []]
    state = _ALERTMANAGER_STATES.get(str(status.get("state", "active")))
    if state is not None and (silenced or inhibited):
        state = "suppressed"
    return state, silenced, inhibited


def wanted_state(alert: dict[str, Any], state_filter: str) -> bool:
    """Whether the alert's state is one the filter (a `STATE_FILTERS` key) asks for."""
    return alert.get("state") in STATE_FILTERS[state_filter]


def active_in(start: datetime | None, end: datetime | None, searched: TimeRange | None) -> bool:
    """Whether an alert active from `start` to `end` (None: open) overlaps the searched range."""
    if searched is None:
        return True
    if start is not None and end is not None and end < start:
        end = start  # an end before the start (a clock skew) is the start instant
    return searched.overlaps(TimeRange(start, end))


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
