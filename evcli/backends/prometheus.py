"""Prometheus over its HTTP API: alerts (`/api/v1/alerts`), series summaries (`/api/v1/query_range`)
and PromQL expressions (`query_range`, `query`).

One summary per label set: every series a query answers is its own item, with its labels and the
PromQL (`query`) that gives exactly that series over the searched range at its `step`, so a reader
can run it again. A range query asks `query_range` with the range's start/end and a step that keeps
a series within MAX_POINTS samples: those points are the summary's `points`, `samples` (the
report's chart) and `last`. Times are in UTC.

What a metric is decides how it is summarised. Its type is what Prometheus' `/api/v1/metadata`
says of the name or of its family (`x_bucket`, `x_count`, `x_sum` of histogram `x`; `x_total` of
counter `x`), else read from the name: `_total` a counter, `_bucket` a histogram, anything else a
gauge.
  - a gauge (or a summary's quantiles, or an untyped metric) as it is: min and max come from
    `min_over_time`/`max_over_time` over windows of one step that tile the range, so an extreme
    between two sampled points is still the extreme (a spike of one scrape in a 30-day range);
    `min_at`/`max_at` are the end of the step it fell in;
  - a counter as its per-second rate, `rate(x[w])`, unit `/s`, where `w` is the step but at least
    four scrape intervals (a window must hold two scrapes for a rate to exist): Prometheus' global
    `scrape_interval` (`/api/v1/status/config`), DEFAULT_SCRAPE_INTERVAL when it does not say;
  - a histogram as quantiles of its `_bucket` series, `histogram_quantile(q, rate(x_bucket[w]))`
    for q in p50/p90/p99 (or the one asked), one item per label set without `le`, in the unit its
    name ends with (`_seconds`: s, `_bytes`: B) unless a `unit` label says otherwise.
Label matchers (`SeriesQuery.labels`) are added to the metric's selector. With no metric named, the
first MAX_METRICS names of the service (or of the matchers) are summarised.

A PromQL expression (`SeriesQuery.promql`) is evaluated as it is written, over the range at the
step (`query_range`), or once at an instant (`query`); each series it answers is an item whose
`query` is the expression and whose labels tell it from the others. An expression Prometheus
refuses is a one-line `BackendError` with Prometheus' own reason.

`/api/v1/alerts` knows only the pending and firing alerts of now: an alert is in a searched range
when it was active at some instant of it (activeAt to now).

A service is the value of the configured service label (`service_label` option, default
`service`); a label that is no plain PromQL name (`app.kubernetes.io/name`) is quoted the way
Prometheus 3 reads UTF-8 label names.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evcli.backends.alerts import active_in, alert_record, matches, number, parse_time, service_of
from evcli.backends.base import LabelMatcher, MetricsResult, SeriesQuery, TimeWindow, as_utc
from evcli.backends.http import Connection, HttpAuth, HttpStatusError, quote_string
from evcli.backends.series import SeriesSummary
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange

if TYPE_CHECKING:
    from evcli.contracts import BackendSpec

MAX_POINTS = 300  # per series in one range query
MAX_METRICS = 10  # names summarised when no metric is named
DEFAULT_SCRAPE_INTERVAL = 15  # seconds, Prometheus' own default
RATE_SCRAPES = 4  # scrape intervals a rate window spans at least
# Prometheus' own record of its alerts, which carry the alert's labels: alerts are reported as alerts.
_ALERT_SERIES = frozenset({"ALERTS", "ALERTS_FOR_STATE"})
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_PLAIN_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# A family's series names: the suffix, and the types of family whose series it names with that suffix.
_FAMILY_SUFFIXES = {
    "_bucket": ("histogram",),
    "_count": ("histogram", "summary"),
    "_sum": ("histogram", "summary"),
    "_total": ("counter",),
}
_UNIT_SUFFIXES = {"_seconds": "s", "_bytes": "B"}  # a histogram's quantiles are in the unit its name ends with
# The global scrape interval in the configuration Prometheus reports (it writes `global:` first, as YAML).
_GLOBAL_SCRAPE = re.compile(r"^global:\n(?:[ ]{2}.*\n)*?[ ]{2}scrape_interval: ([0-9a-z]+)$", re.MULTILINE)
_DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
_DURATION_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
# Prometheus' answer to a query it refuses: {"status":"error","errorType":"bad_data","error":"…"}
_REFUSAL = re.compile(r'"error"\s*:\s*"((?:[^"\\]|\\.)*)')


_BARE = "{selector}"  # a view of the samples as they are


@dataclass(frozen=True)
class Kind:
    """How a metric is summarised: its type and the PromQL of one view of its series (`{selector}` is
    filled with the series' selector), with the view's unit and quantile."""

    type: str  # counter, gauge, histogram, summary, unknown
    series_name: str  # the name the selector selects (a histogram's `_bucket` series)
    template: str  # e.g. `rate({selector}[60s])`
    unit: str = ""  # unless the series has a `unit` label
    quantile: float | None = None


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

    def summarise(
        self,
        service: str | None,
        metric: str | None,
        window: TimeWindow | TimeRange,
        query: SeriesQuery | None = None,
    ) -> MetricsResult:
        """The series `query` asks for (a PromQL expression, else `series` of the metric with its
        matchers) as a result, noting when only the first `MAX_METRICS` names were summarised."""
        query = query or SeriesQuery()
        start, end = _bounds(window)
        searched = TimeRange(start, end).text(UTC)
        if query.promql is not None:
            series = self.evaluate(query.promql, window, instant=query.instant)
            return MetricsResult(series=series, message=f"{len(series)} series", searched_range=searched)
        series = self.series(service, metric, window, query)
        message = ""
        if metric is None and len({item["metric"] for item in series}) >= MAX_METRICS:
            message = f"summarised the first {MAX_METRICS} metric names only; name a metric to see another"
        return MetricsResult(series=series, message=message, searched_range=searched)

    def label_values(self, label: str) -> list[str]:
        return sorted(self._get(f"/api/v1/label/{urllib.parse.quote(label)}/values", expect=list))

    def metric_names(
        self, service: str | None, window: TimeWindow | TimeRange, labels: tuple[LabelMatcher, ...] = ()
    ) -> list[str]:
        """Names of the metrics with `service="<service>"` (and the matchers) seen in the window, sorted,
        without ALERTS*."""
        start, end = _bounds(window)
        found = self._get(
            "/api/v1/series",
            {
                "match[]": selector(None, service, self.service_label, labels),
                "start": _seconds(start),
                "end": _seconds(end),
            },
            expect=list,
        )
        names = {labels.get("__name__") for labels in found}
        return sorted(name for name in names if name and name not in _ALERT_SERIES)

    def series(
        self,
        service: str | None,
        metric: str | None,
        window: TimeWindow | TimeRange,
        query: SeriesQuery | None = None,
    ) -> list[dict[str, Any]]:
        """min/max/last (with their times) and points of `metric` over a relative window or a bounded
        range: one item per label set, summarised as its type says (module docstring), in name order
        and then label order.

        With no metric, the first `MAX_METRICS` metric names (sorted) of the service or the matchers."""
        query = query or SeriesQuery()
        if metric is None:
            if service is None and not query.labels:
                return []
            names = self.metric_names(service, window, query.labels)[:MAX_METRICS]
            return [item for name in names for item in self.series(service, name, window, query)]
        start, end = _bounds(window)
        searched, step = TimeRange(start, end), _step(start, end)
        items = []
        for kind in self.kinds(metric, step, query.quantiles):
            matched = selector(kind.series_name, service, self.service_label, query.labels)
            found = self._range(kind.template.format(selector=matched), start, end, step)
            raw = kind.template == _BARE  # samples as they are: a spike between two points is found too
            lows = self._range(f"min_over_time({matched}[{step}s])", start, end, step) if raw else {}
            highs = self._range(f"max_over_time({matched}[{step}s])", start, end, step) if raw else {}
            for key, samples in sorted(found.items()):
                summary = _summary(samples)
                if summary is None:
                    continue
                _true_extremes(summary, lows.get(key), highs.get(key))
                items.append(self._item(summary, service, metric, kind, key, searched, step, window))
        # by series, and a histogram's p50, p90, p99 together
        return sorted(items, key=lambda item: (item["selector"], item.get("quantile") or 0.0))

    def kinds(self, metric: str, step: int, quantiles: Iterable[float]) -> list[Kind]:
        """The views `metric` is summarised in: itself, its rate, or its quantiles."""
        found, unit = self.metric_type(metric)
        window = max(step, RATE_SCRAPES * self.scrape_interval)
        if found == "counter":
            return [Kind("counter", metric, f"rate({{selector}}[{window}s])", unit="/s")]
        if found == "histogram":
            family = metric.removesuffix("_bucket")
            shown = unit or next((to for suffix, to in _UNIT_SUFFIXES.items() if family.endswith(suffix)), "")
            return [
                Kind(
                    "histogram",
                    family + "_bucket",
                    f"histogram_quantile({_number(q)}, rate({{selector}}[{window}s]))",
                    unit=shown,
                    quantile=q,
                )
                for q in quantiles
            ]
        return [Kind(found, metric, _BARE, unit=unit)]

    @cached_property
    def scrape_interval(self) -> int:
        """Prometheus' global scrape interval in whole seconds (at least 1), read once;
        DEFAULT_SCRAPE_INTERVAL when its configuration is not shown or does not say."""
        try:
            text = str(self._get("/api/v1/status/config", expect=dict).get("yaml") or "")
        except HttpStatusError:
            return DEFAULT_SCRAPE_INTERVAL
        found = _GLOBAL_SCRAPE.search(text)
        parts = _DURATION_PART.findall(found.group(1)) if found else []
        seconds = sum(int(amount) * _DURATION_SECONDS[unit] for amount, unit in parts)
        return max(1, math.ceil(seconds)) if seconds else DEFAULT_SCRAPE_INTERVAL

    def metric_type(self, metric: str) -> tuple[str, str]:
        """(type, unit) of a metric name: Prometheus' metadata of the name or of its family, else the
        name's suffix (`_total` a counter, `_bucket` a histogram, anything else a gauge)."""
        own = self._metadata(metric)
        if own is not None and own[0] not in ("unknown", ""):
            return own
        for suffix, families in _FAMILY_SUFFIXES.items():
            if metric.endswith(suffix) and metric != suffix:
                family = self._metadata(metric.removesuffix(suffix))
                if family is not None and family[0] in families:
                    return ("histogram" if suffix == "_bucket" else "counter"), family[1]
        if metric.endswith("_total"):
            return "counter", ""
        if metric.endswith("_bucket"):
            return "histogram", ""
        return ("gauge" if own is None else own[0]), ""

    def evaluate(
        self, expression: str, window: TimeWindow | TimeRange, *, instant: bool = False
    ) -> list[dict[str, Any]]:
        """Each series `expression` answers over the range at its step, or at the range's end (`instant`),
        as an item whose `query` is the expression and whose labels tell it from the others."""
        start, end = _bounds(window)
        step = None if instant else _step(start, end)
        if step is None:
            answered = self._instant(expression, end)
        else:
            answered = self._range(expression, start, end, step, keep_name=True)
        kind = Kind("promql", "", expression)
        items = []
        for key, samples in sorted(answered.items()):
            summary = _summary(samples)
            if summary is None:
                continue
            item = self._item(
                summary, None, dict(key).get("__name__", ""), kind, key, TimeRange(start, end), step, window
            )
            if instant:
                item["instant"] = True
            items.append(item)
        return items

    def _item(
        self,
        summary: SeriesSummary,
        service: str | None,
        metric: str,
        kind: Kind,
        key: tuple[tuple[str, str], ...],
        searched: TimeRange,
        step: int | None,
        window: TimeWindow | TimeRange,
    ) -> dict[str, Any]:
        """The `series` item of one series: the summary, then its labels, type, the selector of exactly this
        series, the PromQL that gives it (the expression asked, or the view's template on that selector) and step."""
        labels = {name: value for name, value in key if name != "__name__"}
        owner = service or labels.get(self.service_label) or service_of(labels)
        unit = labels.get("unit") or kind.unit or ""
        if kind.type == "histogram":  # its quantiles are of the family, not of the `_bucket` series
            metric = kind.series_name.removesuffix("_bucket")
        item = summary.item(owner, metric, unit, searched, UTC)
        exact = selector(kind.series_name or metric or None, None, exact=labels)  # this one series
        item.update(labels=labels, type=kind.type, selector=exact)
        item["query"] = kind.template if kind.type == "promql" else kind.template.format(selector=exact)
        if step is not None:
            item["step"] = step
        if kind.quantile is not None:
            item["quantile"] = kind.quantile
        if isinstance(window, TimeWindow):
            item["window"] = window.label
        return item

    def _range(
        self, query: str, start: datetime, end: datetime, step: int, *, keep_name: bool = False
    ) -> dict[tuple[tuple[str, str], ...], list[tuple[datetime, float]]]:
        """The samples of every series `query` answers over the range, by label set (sorted pairs;
        without `__name__` unless `keep_name`, so a raw series and its min/max_over_time share a key)."""
        data = self._query("/api/v1/query_range", query, {"start": _seconds(start), "end": _seconds(end), "step": step})
        if data.get("resultType") != "matrix":
            raise BackendError(f"Prometheus answered resultType {data.get('resultType')!r}, expected matrix")
        found: dict[tuple[tuple[str, str], ...], list[tuple[datetime, float]]] = {}
        for result in data.get("result") or []:
            key = _key(result.get("metric") or {}, keep_name)
            found.setdefault(key, []).extend(_samples(result.get("values") or []))
        return found

    def _instant(self, query: str, moment: datetime) -> dict[tuple[tuple[str, str], ...], list[tuple[datetime, float]]]:
        """The value of every series `query` answers at `moment`, by label set (a scalar: one, without labels)."""
        data = self._query("/api/v1/query", query, {"time": _seconds(moment)})
        kind, result = data.get("resultType"), data.get("result")
        if kind == "scalar" and isinstance(result, list):
            return {(): _samples([result])}
        if kind != "vector":
            raise BackendError(
                f"the expression gives a {kind} at an instant; evcli reads numbers per series "
                "(drop a [range] selector, or query a range with since/until)"
            )
        found: dict[tuple[tuple[str, str], ...], list[tuple[datetime, float]]] = {}
        for entry in result or []:
            key = _key(entry.get("metric") or {}, keep_name=True)
            found.setdefault(key, []).extend(_samples([entry.get("value")]))
        return found

    def _query(self, path: str, query: str, params: dict[str, Any]) -> dict[str, Any]:
        """The `data` of a query; an expression Prometheus refuses (HTTP 400/422) is one line with its reason."""
        try:
            data: dict[str, Any] = self._get(path, {"query": query, **params}, expect=dict)
        except HttpStatusError as error:
            if error.status not in (400, 422):
                raise
            reason = _REFUSAL.search(str(error))
            detail = reason.group(1).replace('\\"', '"') if reason else str(error)
            raise BackendError(f"Prometheus at {self.url} refused the query: {detail}") from None
        return data

    def _metadata(self, metric: str) -> tuple[str, str] | None:
        """(type, unit) Prometheus' metadata gives a name, None when it has none (or cannot say:
        a server without the endpoint answers 404, and the name's suffix decides)."""
        try:
            data = self._get("/api/v1/metadata", {"metric": metric}, expect=dict)
        except HttpStatusError:
            return None
        entries = data.get(metric) or []
        first = entries[0] if entries and isinstance(entries[0], dict) else None
        return None if first is None else (str(first.get("type") or ""), str(first.get("unit") or ""))

    def _get(self, path: str, params: dict[str, Any] | None = None, *, expect: type) -> Any:
        """The `data` of a successful API answer, which must be an `expect` (dict or list)."""
        answer = self.connection.get_json(path, params)
        if not isinstance(answer, dict) or answer.get("status") != "success":
            detail = str(answer.get("error") if isinstance(answer, dict) else answer)[:200]
            raise BackendError(f"GET {self.url}{path} answered without success: {detail}")
        if not isinstance(answer.get("data"), expect):
            raise BackendError(f"GET {self.url}{path} answered unexpected data: is {self.url} Prometheus?")
        return answer["data"]


def selector(
    metric: str | None,
    service: str | None,
    label: str = "service",
    matchers: Iterable[LabelMatcher] = (),
    *,
    exact: dict[str, str] | None = None,
) -> str:
    """`metric{service="X",…}` with X escaped: the service, then the matchers, then `exact` labels
    (sorted); a metric that is not a plain name goes into `__name__`, a label that is not a plain name
    is quoted (`{"app.kubernetes.io/name"="X"}`)."""
    parts = []
    if metric is not None and not _METRIC_NAME.match(metric):
        parts.append(f"__name__={quote_string(metric)}")
        metric = None
    if service is not None:
        parts.append(f"{_label(label)}={quote_string(service)}")
    parts += [f"{_label(m.name)}{m.operator}{quote_string(m.value)}" for m in matchers]
    parts += [f"{_label(name)}={quote_string(value)}" for name, value in sorted((exact or {}).items())]
    return f"{metric or ''}{{{','.join(parts)}}}"


def _label(name: str) -> str:
    return name if _PLAIN_LABEL.match(name) else quote_string(name)


def _key(labels: dict[str, Any], keep_name: bool) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in labels.items() if keep_name or k != "__name__"))


def _samples(values: Iterable[Any]) -> list[tuple[datetime, float]]:
    """[unix seconds, "text"] pairs as (time, value), leaving out NaN, infinities and anything unreadable."""
    return [
        (datetime.fromtimestamp(float(pair[0]), UTC), value)
        for pair in values
        if isinstance(pair, list | tuple) and len(pair) == 2 and (value := number(pair[1])) is not None
    ]


def _number(value: float) -> str:
    """0.5 -> "0.5", 0.99 -> "0.99": as PromQL is written."""
    return f"{value:g}"


def _step(start: datetime, end: datetime) -> int:
    """Seconds between points: a range within MAX_POINTS samples a series, at least 1 s."""
    return max(1, math.ceil((end - start).total_seconds() / MAX_POINTS))


def _summary(samples: list[tuple[datetime, float]]) -> SeriesSummary | None:
    """The summary of one series' samples, None without any. Sorted by time, then value: of samples
    sharing the newest time, the highest is last."""
    if not samples:
        return None
    ordered = sorted(samples)
    summary = SeriesSummary.start(ordered[0][1], ordered[0][0])
    for moment, value in ordered[1:]:
        summary.add(value, moment)
    return summary


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
