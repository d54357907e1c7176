"""The evidence backend of a running system: Prometheus, Alertmanager and Loki over HTTP."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cached_property

from evcli.backends.alertmanager import AlertmanagerBackend
from evcli.backends.base import BackendError, LogQuery, LogResult, MetricsResult, TimeWindow
from evcli.backends.http import HttpAuth
from evcli.backends.loki import LokiBackend
from evcli.backends.prometheus import MAX_METRICS, PrometheusBackend


class LiveBackend:
    """Alerts from Alertmanager (else Prometheus), series from Prometheus, logs from Loki.

    Any part may be left out; asking for what no configured part provides raises `BackendError`,
    as does any part that fails: an error is never turned into an empty answer.
    """

    name = "live"

    def __init__(
        self,
        prometheus_url: str | None = None,
        alertmanager_url: str | None = None,
        loki_url: str | None = None,
        timeout: float = 10,
        *,
        prometheus_auth: HttpAuth | None = None,
        alertmanager_auth: HttpAuth | None = None,
        loki_auth: HttpAuth | None = None,
    ) -> None:
        self.prometheus = (
            PrometheusBackend(prometheus_url, timeout, auth=prometheus_auth) if prometheus_url else None
        )
        self.alertmanager = (
            AlertmanagerBackend(alertmanager_url, timeout, auth=alertmanager_auth)
            if alertmanager_url
            else None
        )
        self.loki = LokiBackend(loki_url, timeout, auth=loki_auth) if loki_url else None

    def now(self) -> datetime:
        return datetime.now(UTC)

    def known_services(self) -> list[str] | None:
        return self._prometheus_services

    @cached_property
    def _prometheus_services(self) -> list[str] | None:
        """Values of Prometheus' `service` label, asked once.

        None (cannot tell) without Prometheus, when it fails, or when no series has that label.
        """
        if self.prometheus is None:
            return None
        try:
            return self.prometheus.label_values("service") or None
        except BackendError:
            return None

    def query_metrics(
        self, *, service: str | None, alertname: str | None, metric: str | None, window: TimeWindow
    ) -> MetricsResult:
        if self.prometheus is None and self.alertmanager is None:
            raise BackendError("no metrics backend configured: pass --prometheus or --alertmanager")
        now = self.now()
        if self.alertmanager is not None:
            alerts = self.alertmanager.alerts({"alertname": alertname} if alertname else None, now=now)
        else:
            alerts = self.prometheus.alerts(now=now)
        alerts = [
            alert
            for alert in alerts
            if (service is None or alert["service"] == service)
            and (alertname is None or alert["alertname"] == alertname)
        ]
        series = self.prometheus.series(service, metric, window) if self.prometheus else []
        message = ""
        if metric is None and len(series) >= MAX_METRICS:
            message = f"summarised the first {MAX_METRICS} metric names only; name a metric to see another"
        return MetricsResult(alerts=alerts, series=series, message=message)

    def query_logs(self, query: LogQuery) -> LogResult:
        if self.loki is None:
            raise BackendError("no log backend configured: pass --loki")
        return self.loki.query_logs(query)
