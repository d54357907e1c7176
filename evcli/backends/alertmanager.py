"""Alertmanager over its v2 API: the alerts it currently holds, normalised like Prometheus alerts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evcli.backends.alerts import alert_record
from evcli.backends.base import BackendError
from evcli.backends.http import HttpAuth, base_url, get_json, quote_string

if TYPE_CHECKING:
    from evcli.backends.spec import BackendSpec

# Alertmanager's status.state in the words Prometheus uses for the same situation.
_STATES = {"active": "firing", "suppressed": "suppressed", "unprocessed": "pending"}


def build(spec: BackendSpec) -> AlertmanagerBackend:
    return AlertmanagerBackend(spec.url, spec.timeout)


class AlertmanagerBackend:
    def __init__(self, url: str, timeout: float = 10, *, auth: HttpAuth | None = None) -> None:
        self.url, self._auth = base_url(url, auth)
        self.timeout = timeout

    def alerts(self, filters: dict[str, str] | None = None, now: datetime | None = None) -> list[dict[str, Any]]:
        """Active alerts (silenced and inhibited included) whose labels equal every filter value."""
        now = now or datetime.now(UTC)
        return [normalise_alertmanager_alert(raw, now) for raw in self.raw_alerts(filters)]

    def raw_alerts(self, filters: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """The same alerts as Alertmanager's `GET /api/v2/alerts` list gives them (an alert payload)."""
        params = {
            "active": "true",
            "filter": [f"{label}={quote_string(value)}" for label, value in sorted((filters or {}).items())],
        }
        answer = get_json(self.url + "/api/v2/alerts", params, self.timeout, self._auth)
        if not isinstance(answer, list) or not all(isinstance(raw, dict) for raw in answer):
            raise BackendError(
                f"Alertmanager at {self.url} answered {type(answer).__name__}, expected a list of alerts"
            )
        return answer


def normalise_alertmanager_alert(raw: dict[str, Any], now: datetime) -> dict[str, Any]:
    """One alert of Alertmanager's `GET /api/v2/alerts` list as a normalised record."""
    annotations = raw.get("annotations") or {}
    state = (raw.get("status") or {}).get("state", "")
    return alert_record(
        labels=raw.get("labels") or {},
        annotations=annotations,
        state=_STATES.get(state, state),
        active_at=raw.get("startsAt"),
        value=annotations.get("value", annotations.get("current")),
        now=now,
    )
