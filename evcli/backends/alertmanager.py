"""Alertmanager over its v2 API: the alerts it currently holds, normalised like Prometheus alerts.

Silenced and inhibited alerts are asked for explicitly (`silenced=true&inhibited=true`) and come
back `suppressed` with `silenced_by`/`inhibited_by`; Alertmanager drops an alert from this list once
its `endsAt` has passed, so it never answers with resolved alerts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evcli.backends.alerts import active_in, alert_record, alertmanager_state, parse_time
from evcli.backends.http import Connection, HttpAuth, quote_string
from evcli.core.errors import BackendError

if TYPE_CHECKING:
    from evcli.contracts import BackendSpec
    from evcli.core.time import TimeRange


def build(spec: BackendSpec) -> AlertmanagerBackend:
    return AlertmanagerBackend(Connection.from_spec(spec))


class AlertmanagerBackend:
    def __init__(self, url: str | Connection, timeout: float = 10, *, auth: HttpAuth | None = None) -> None:
        self.connection = url if isinstance(url, Connection) else Connection(url, timeout=timeout, auth=auth)
        self.url = self.connection.url

    def probe(self) -> None:
        """Raise `BackendError` unless the server answers (`/-/ready`)."""
        self.connection.probe("/-/ready")

    def alerts(
        self,
        filters: dict[str, str] | None = None,
        now: datetime | None = None,
        searched: TimeRange | None = None,
    ) -> list[dict[str, Any]]:
        """Alerts it holds (silenced and inhibited included) whose labels equal every filter value,
        active at some instant of `searched` (startsAt ≤ its end and endsAt ≥ its start; None: all)."""
        now = now or datetime.now(UTC)
        return [
            normalise_alertmanager_alert(raw, now)
            for raw in self.raw_alerts(filters)
            if active_in(parse_time(raw.get("startsAt")), parse_time(raw.get("endsAt")), searched)
        ]

    def raw_alerts(self, filters: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """The same alerts as Alertmanager's `GET /api/v2/alerts` list gives them (an alert payload)."""
        params = {
            "active": "true",
            "silenced": "true",
            "inhibited": "true",
            "filter": [f"{label}={quote_string(value)}" for label, value in sorted((filters or {}).items())],
        }
        answer = self.connection.get_json("/api/v2/alerts", params)
        if not isinstance(answer, list) or not all(isinstance(raw, dict) for raw in answer):
            raise BackendError(
                f"Alertmanager at {self.url} answered {type(answer).__name__}, expected a list of alerts"
            )
        return answer


def normalise_alertmanager_alert(raw: dict[str, Any], now: datetime) -> dict[str, Any]:
    """One alert of Alertmanager's `GET /api/v2/alerts` list as a normalised record."""
    annotations = raw.get("annotations") or {}
    state, silenced_by, inhibited_by = alertmanager_state(raw.get("status"))
    return alert_record(
        labels=raw.get("labels") or {},
        annotations=annotations,
        state=state or str((raw.get("status") or {}).get("state", "")),
        active_at=raw.get("startsAt"),
        value=annotations.get("value", annotations.get("current")),
        now=now,
        ends_at=raw.get("endsAt"),
        silenced_by=silenced_by,
        inhibited_by=inhibited_by,
    )
