"""The evidence backend of a running system, composed by capability from the registered backends.

Alerts, metric series and logs each come from the preferred configured backend that provides
them (see `evcli.backends.registry`). Any part may be left out; asking for what no configured
part provides raises `BackendError` naming the options that would provide it, as does any part
that fails: an error is never turned into an empty answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evcli.backends.alerts import wanted_state
from evcli.backends.base import (
    BackendError,
    LogQuery,
    LogResult,
    MetricsResult,
    TimeWindow,
)
from evcli.backends.registry import Capability, backend_kind, providers
from evcli.timerange import TimeRange

if TYPE_CHECKING:
    from evcli.backends.spec import BackendSpec


DEFAULT_RANGE = timedelta(hours=1)  # what a live query searches when the call names no time


class LiveBackend:
    name = "live"

    def __init__(self, parts: Mapping[str, Any] | None = None) -> None:
        self.parts = dict(parts or {})  # registry name -> built backend

    @classmethod
    def from_specs(cls, specs: Mapping[str, BackendSpec]) -> LiveBackend:
        return cls({name: backend_kind(name).build(spec) for name, spec in specs.items()})

    def serving(self, *capabilities: Capability) -> Any:
        """The configured part that serves the first of `capabilities` any part provides, else None."""
        for capability in capabilities:
            for kind in providers(capability):
                if kind.name in self.parts:
                    return self.parts[kind.name]
        return None

    def now(self) -> datetime:
        return datetime.now(UTC)

    def known_services(self) -> list[str] | None:
        return self._services

    @cached_property
    def _services(self) -> list[str] | None:
        """The metrics backend's service names, asked once; None (cannot tell) without one,
        when it fails, or when it knows none."""
        source = self.serving(Capability.METRICS)
        if source is None:
            return None
        try:
            return source.services() or None
        except BackendError:
            return None

    def query_metrics(
        self,
        *,
        service: str | None,
        alertname: str | None,
        metric: str | None,
        window: TimeWindow | None = None,
        range: TimeRange | None = None,
        state: str = "active",
    ) -> MetricsResult:
        """Alerts in `state` (a STATE_FILTERS key) active in the range, and series over it. The range
        is `range`, else the window, else the last DEFAULT_RANGE; an open end is filled the same way."""
        alert_source, metric_source = self.serving(Capability.ALERTS), self.serving(Capability.METRICS)
        if alert_source is None and metric_source is None:
            raise BackendError(f"no metrics backend configured: pass {_flags(Capability.METRICS, Capability.ALERTS)}")
        now = self.now()
        searched: TimeWindow | TimeRange = (
            window
            if range is None and window is not None
            else (range or TimeRange(None, None)).bounded(now - DEFAULT_RANGE, now)
        )
        stated = TimeRange(searched.start, searched.end).text(UTC)  # the tool layer's zone for live backends
        alerts = []
        if alert_source is not None:
            if state == "resolved":
                # Prometheus and Alertmanager drop an alert once it ends: "none" would not be evidence
                raise BackendError("a live alert source lists no resolved alerts; ask a snapshot or a webhook payload")
            found = alert_source.alerts(
                {"alertname": alertname} if alertname else None,
                now=now,
                searched=TimeRange(searched.start, searched.end),
            )
            alerts = [a for a in found if (service is None or a["service"] == service) and wanted_state(a, state)]
        if metric_source is None:
            return MetricsResult(alerts=alerts, searched_range=stated)
        summary = metric_source.summarise(service, metric, searched)
        return MetricsResult(alerts=alerts, series=summary.series, message=summary.message, searched_range=stated)

    def query_logs(self, query: LogQuery) -> LogResult:
        source = self.serving(Capability.LOGS)
        if source is None:
            raise BackendError(f"no log backend configured: pass {_flags(Capability.LOGS)}")
        result: LogResult = source.query_logs(query)
        return result


def _flags(*capabilities: Capability) -> str:
    """`--prometheus or --alertmanager`: the options that would provide any of `capabilities`."""
    names = {kind.name: kind.flag for capability in capabilities for kind in providers(capability)}
    return " or ".join(names.values())
