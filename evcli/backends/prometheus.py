"""Prometheus over its HTTP API: alerts (`/api/v1/alerts`) and range summaries (`/api/v1/query_range`).

A range summary asks `query_range` with the searched range's start/end and a step that keeps a
series within MAX_POINTS samples: those points are the summary's `points`, `samples` (the report's
chart) and `last`. Its min and max come from `min_over_time`/`max_over_time` over windows of one
step that tile the range, so an extreme between two sampled points is still the extreme (a spike
of one scrape in a 30-day range); `min_at`/`max_at` are the end of the step it fell in. Times are
in UTC. `/api/v1/alerts` knows only the pending and firing alerts of now: an alert is in a searched
range when it was active at some instant of it (activeAt to now).

A service is the value of the configured service label (`service_label` option, default
`service`); a label that is no plain PromQL name (`app.kubernetes.io/name`) is quoted the way
Prometheus 3 reads UTF-8 label names.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evcli.backends.alerts import active_in, alert_record, matches, number, parse_time, service_of
from evcli.backends.base import BackendError, MetricsResult, TimeWindow, as_utc
from evcli.backends.http import Connection, HttpAuth, quote_string
from evcli.backends.series import SeriesSummary
from evcli.timerange import TimeRange

if TYPE_CHECKING:
    from evcli.backends.spec import BackendSpec

MAX_POINTS = 300  # per series in one range query
MAX_METRICS = 10  # names summarised when no metric is named
# Prometheus' own record of its alerts, which carry the alert's labels: alerts are reported as alerts.
_ALERT_SERIES = frozenset({"ALERTS", "ALERTS_FOR_STATE"})
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


_PLAIN_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def build(spec: BackendSpec) -> PrometheusBackend:
    """Options: `service_label`, the label naming a service (default `service`)."""
    return PrometheusBackend(Connection.from_spec(spec), service_label=spec.options.get("service_label") or "service")


class PrometheusBackend:
    def __init__(
        self,
        url: str | Connection,
        timeout: float = 10,
        *,
        auth: HttpAuth | None = None,
        service_label: str = "service",
    ) -> None:
        self.connection = url if isinstance(url, Connection) else Connection(url, timeout=timeout, auth=auth)
        self.url = self.connection.url
        self.service_label = service_label

    def probe(self) -> None:
        """Raise `BackendError` unless the server answers (`/-/ready`)."""
        self.connection.probe("/-/ready")

    def alerts(
        self,
        filters: dict[str, str] | None = None,
        now: datetime | None = None,
        searched: TimeRange | None = None,
    ) -> list[dict[str, Any]]:
        """Pending and firing alerts whose labels equal every filter value, as normalised records,
        active at some instant of `searched` (None: all)."""
        data = self._get("/api/v1/alerts", expect=dict)
        now = now or datetime.now(UTC)
        raws = [raw for raw in data.get("alerts") or [] if active_in(parse_time(raw.get("activeAt")), now, searched)]
        records = [normalise_prometheus_alert(raw, now) for raw in raws]
        return [record for record in records if matches(record, filters)]

    def services(self) -> list[str]:
        """Values of the service label."""
        return self.label_values(self.service_label)

    def summarise(self, service: str | None, metric: str | None, window: TimeWindow | TimeRange) -> MetricsResult:
        """`series` as a result, noting when only the first `MAX_METRICS` names were summarised."""
        series = self.series(service, metric, window)
        message = ""
        if metric is None and len(series) >= MAX_METRICS:
            message = f"summarised the first {MAX_METRICS} metric names only; name a metric to see another"
        start, end = _bounds(window)
        return MetricsResult(series=series, message=message, searched_range=TimeRange(start, end).text(UTC))

    def label_values(self, label: str) -> list[str]:
        return sorted(self._get(f"/api/v1/label/{urllib.parse.quote(label)}/values", expect=list))

    def metric_names(self, service: str, window: TimeWindow | TimeRange) -> list[str]:
        """Names of the metrics with `service="<service>"` seen in the window, sorted, without ALERTS*."""
        start, end = _bounds(window)
        found = self._get(
            "/api/v1/series",
            {
                "match[]": selector(None, service, self.service_label),
                "start": _seconds(start),
                "end": _seconds(end),
            },
            expect=list,
        )
        names = {labels.get("__name__") for labels in found}
        return sorted(name for name in names if name and name not in _ALERT_SERIES)

    def series(self, service: str | None, metric: str | None, window: TimeWindow | TimeRange) -> list[dict[str, Any]]:
        """min/max/last (with their times) and points of `metric` over a relative window or a
        bounded range, one record per service.

        With no metric, the service's first `MAX_METRICS` metric names (sorted) are summarised.
        Samples of all series of one (service, metric) are pooled: `last` is the newest sample,
        the highest one when several series share that timestamp.
        """
        if metric is None:
            if service is None:
                return []
            names = self.metric_names(service, window)[:MAX_METRICS]
            return [item for name in names for item in self.series(service, name, window)]
        start, end = _bounds(window)
        step = max(1, math.ceil((end - start).total_seconds() / MAX_POINTS))
        matched = selector(metric, service, self.service_label)
        pooled, units = self._pooled(matched, service, start, end, step)
        lows, _ = self._pooled(f"min_over_time({matched}[{step}s])", service, start, end, step)
        highs, _ = self._pooled(f"max_over_time({matched}[{step}s])", service, start, end, step)
        summaries = []
        for owner, samples in sorted(pooled.items()):
            if not samples:
                continue
            # sorted by time, then value: of samples sharing the newest time, the highest is last
            ordered = sorted(samples)
            summary = SeriesSummary.start(ordered[0][1], ordered[0][0])
            for moment, value in ordered[1:]:
                summary.add(value, moment)
            _true_extremes(summary, lows.get(owner), highs.get(owner))
            item = summary.item(owner, metric, units[owner], TimeRange(start, end), UTC)
            if isinstance(window, TimeWindow):
                item["window"] = window.label
            summaries.append(item)
        return summaries

    def _pooled(
        self, query: str, service: str | None, start: datetime, end: datetime, step: int
    ) -> tuple[dict[str, list[tuple[datetime, float]]], dict[str, str]]:
        """The samples of every series `query` answers over the range, pooled per service, and each
        service's unit."""
        data = self._get(
            "/api/v1/query_range",
            {"query": query, "start": _seconds(start), "end": _seconds(end), "step": step},
            expect=dict,
        )
        if data.get("resultType") != "matrix":
            raise BackendError(f"Prometheus answered resultType {data.get('resultType')!r}, expected matrix")
        pooled: dict[str, list[tuple[datetime, float]]] = {}
        units: dict[str, str] = {}
        for result in data.get("result") or []:
            labels = result.get("metric") or {}
            owner = service or labels.get(self.service_label) or service_of(labels)
            samples = pooled.setdefault(owner, [])
            samples.extend(
                (datetime.fromtimestamp(float(moment), UTC), value)
                for moment, text in result.get("values") or []
                if (value := number(text)) is not None
            )
            units[owner] = units.get(owner) or labels.get("unit", "")
        return pooled, units

    def _get(self, path: str, params: dict[str, Any] | None = None, *, expect: type) -> Any:
        """The `data` of a successful API answer, which must be an `expect` (dict or list)."""
        answer = self.connection.get_json(path, params)
        if not isinstance(answer, dict) or answer.get("status") != "success":
            detail = str(answer.get("error") if isinstance(answer, dict) else answer)[:200]
            raise BackendError(f"GET {self.url}{path} answered without success: {detail}")
        if not isinstance(answer.get("data"), expect):
            raise BackendError(f"GET {self.url}{path} answered unexpected data: is {self.url} Prometheus?")
        return answer["data"]


def selector(metric: str | None, service: str | None, label: str = "service") -> str:
    """`metric{service="X"}` with X escaped; a metric that is not a plain name goes into `__name__`,
    a label that is not a plain name is quoted (`{"app.kubernetes.io/name"="X"}`)."""
    matchers = []
    if metric is not None and not _METRIC_NAME.match(metric):
        matchers.append(f"__name__={quote_string(metric)}")
        metric = None
    if service is not None:
        name = label if _PLAIN_LABEL.match(label) else quote_string(label)
        matchers.append(f"{name}={quote_string(service)}")
    return f"{metric or ''}{{{','.join(matchers)}}}"


def _true_extremes(
    summary: SeriesSummary, lows: list[tuple[datetime, float]] | None, highs: list[tuple[datetime, float]] | None
) -> None:
    """Set the summary's min and max from the min/max_over_time points when they go further than
    the sampled points (or reach the same value earlier): the lowest (highest) value, at the earliest
    time it was seen."""
    if lows:
        low, low_at = min((value, moment) for moment, value in lows)
        if (low, low_at) < (summary.low, summary.low_at):
            summary.low, summary.low_at = low, low_at
    if highs:
        high, high_at = min((-value, moment) for moment, value in highs)
        if (high, high_at) < (-summary.high, summary.high_at):
            summary.high, summary.high_at = -high, high_at


def normalise_prometheus_alert(raw: dict[str, Any], now: datetime) -> dict[str, Any]:
    """One alert of Prometheus' `/api/v1/alerts` answer as a normalised record."""
    return alert_record(
        labels=raw.get("labels") or {},
        annotations=raw.get("annotations") or {},
        state=raw.get("state") or "",
        active_at=raw.get("activeAt"),
        value=raw.get("value"),
        now=now,
    )


def _bounds(window: TimeWindow | TimeRange) -> tuple[datetime, datetime]:
    """(start, end) of a window or range; a range must be bounded (the caller fills open ends)."""
    if window.start is None or window.end is None:
        raise BackendError("a Prometheus range query needs a start and an end")
    return window.start, window.end


def _seconds(moment: datetime) -> str:
    return f"{as_utc(moment).timestamp():.3f}"
