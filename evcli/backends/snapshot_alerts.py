"""alerts.json of an environment snapshot: a Prometheus, Alertmanager v2 or webhook alert list."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

from evcli.backends.alerts import alertmanager_state
from evcli.backends.snapshot_time import Timebase, parse_timestamp
from evcli.core.errors import BackendError
from evcli.core.files import read_text

ALERTS_FILE = "alerts.json"

ALERT_SHAPES = {
    "prometheus": 'Prometheus GET /api/v1/alerts response ({"status": "success", "data": {"alerts": [...]}})',
    "alertmanager-v2": "Alertmanager GET /api/v2/alerts list ([{labels, annotations, startsAt, ...}])",
    "alertmanager-webhook": 'Alertmanager webhook payload ({"version": "4", "alerts": [...]})',
}
_VALUE_WITH_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(%|[A-Za-z/]+)?\s*$")


class AlertItemError(ValueError):
    """One alert of alerts.json that cannot be read (the others still can)."""


@dataclass(frozen=True)
class SnapshotAlert:
    labels: dict[str, str]
    annotations: dict[str, str]
    state: str  # firing / pending / resolved / suppressed, as the file states it
    active_at: datetime | None
    ends_at: datetime | None
    value: str | None  # Prometheus' sample value, or an Alertmanager annotation value/current
    silenced_by: tuple[str, ...] = ()  # Alertmanager silence ids
    inhibited_by: tuple[str, ...] = ()  # fingerprints of the inhibiting alerts


@dataclass
class AlertsFile:
    shape: str  # a key of ALERT_SHAPES
    alerts: list[SnapshotAlert]
    problems: list[str]  # items that could not be read, "alerts[3]: ..."


def read_alerts(path: Path, zone: tzinfo = UTC) -> AlertsFile:
    """alerts.json in any of the three shapes. Raises BackendError when the file is unusable;
    unusable items are reported in `problems` and left out."""
    try:
        data = json.loads(read_text(path, path.parent))
    except (OSError, UnicodeDecodeError) as error:
        raise BackendError(f"{ALERTS_FILE}: cannot read: {error}") from error
    except ValueError as error:
        raise BackendError(f"{ALERTS_FILE}: invalid JSON: {error}") from error
    except RecursionError:
        raise BackendError(f"{ALERTS_FILE}: nested too deeply to read (no alert list is that deep)") from None
    shape, items = _alerts_shape(data)
    alerts, problems = [], []
    for index, item in enumerate(items):
        try:
            alerts.append(_snapshot_alert(shape, item, zone))
        except AlertItemError as error:
            problems.append(f"alerts[{index}]: {error}")
    return AlertsFile(shape, alerts, problems)


def _alerts_shape(data: Any) -> tuple[str, list[Any]]:
    if isinstance(data, list):
        return "alertmanager-v2", data
    if isinstance(data, dict):
        inner = data.get("data")
        if isinstance(inner, dict) and isinstance(inner.get("alerts"), list):
            if data.get("status", "success") != "success":
                raise BackendError(f"{ALERTS_FILE}: Prometheus reported status {data.get('status')!r}")
            return "prometheus", inner["alerts"]
        if isinstance(data.get("alerts"), list):
            return "alertmanager-webhook", data["alerts"]
    expected = "; ".join(ALERT_SHAPES.values())
    raise BackendError(f"{ALERTS_FILE}: unknown alerts shape; expected one of: {expected}")


def _snapshot_alert(shape: str, item: Any, zone: tzinfo) -> SnapshotAlert:
    if not isinstance(item, dict):
        raise AlertItemError("not an object")
    labels, annotations = item.get("labels"), item.get("annotations") or {}
    if not isinstance(labels, dict) or not labels.get("alertname"):
        raise AlertItemError("labels.alertname is missing")
    if not isinstance(annotations, dict):
        raise AlertItemError("annotations is not an object")
    labels = {str(key): str(value) for key, value in labels.items()}
    annotations = {str(key): str(value) for key, value in annotations.items()}
    if shape == "prometheus":
        state = {"firing": "firing", "pending": "pending", "inactive": "resolved"}.get(item.get("state", ""))
        started, ended, value = item.get("activeAt"), None, item.get("value")
    else:
        if shape == "alertmanager-v2":
            status = item.get("status") or {}  # hand-written snapshots may omit it: active
            if not isinstance(status, dict):
                raise AlertItemError(f"status of {labels['alertname']} is not an object")
            state, silenced, inhibited = alertmanager_state(status)
        else:
            state = {"firing": "firing", "resolved": "resolved"}.get(item.get("status", ""))
        started, ended = item.get("startsAt"), item.get("endsAt")
        value = annotations.get("value", annotations.get("current"))
    if state is None:
        raise AlertItemError(f"unknown state in {labels['alertname']}")
    active_at = _alert_time(started, zone, "activeAt" if shape == "prometheus" else "startsAt")
    ends_at = _alert_time(ended, zone, "endsAt")
    suppression = (tuple(silenced), tuple(inhibited)) if shape == "alertmanager-v2" else ((), ())
    return SnapshotAlert(
        labels, annotations, state, active_at, ends_at, None if value is None else str(value), *suppression
    )


def _alert_time(raw: Any, zone: tzinfo, name: str) -> datetime | None:
    if raw in (None, "") or (isinstance(raw, str) and raw.startswith("0001-01-01")):
        return None
    moment = parse_timestamp(raw, Timebase.of(zone))
    if moment is None:
        raise AlertItemError(f"{name} {raw!r} is not an ISO-8601 time")
    return moment


def alert_state_at(alert: SnapshotAlert, now: datetime) -> str:
    """The alert's state at `now`: an alert whose endsAt has passed is resolved."""
    if alert.state != "resolved" and alert.ends_at is not None and alert.ends_at <= now:
        return "resolved"
    return alert.state


def split_value(raw: str | None) -> tuple[float | None, str]:
    """`"92"` → (92.0, ""), `"92%"` → (92.0, "%"), `"4.2s"` → (4.2, "s"); NaN or text → (None, "")."""
    match = _VALUE_WITH_UNIT.match(raw or "")
    if not match:
        return None, ""
    number = float(match.group(1))
    return (number, match.group(2) or "") if math.isfinite(number) else (None, "")
