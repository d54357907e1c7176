"""`query_metrics`: alerts and metric series (min/max/last over a time range) of a service, or of everything.

Refs: `$.alerts[i]` (`HighCPUUsage, service=…, state=firing, current=92%, …`) and
`$.series[i]` (`order-service heap_used range=<start>..<end> points=12 min=2.9GB at <time>
max=… at … last=… at …`: per series the absolute range and the number of points it
summarises; a series recorded before absolute ranges renders as then, `window=30m min=…`).
A live Prometheus series is one label set and its ref names the PromQL that gives it and its step
(`shop rate(orders_total{job="shop",status="ok"}[60s]) step=2s range=… min=0.5/s at …`), so a
reader can run it again; a counter is its rate (unit /s), a histogram its quantiles. A `promql`
expression's series add the selector that tells them apart (`selector=up{job="shop"}`); evaluated
at an instant (`at`) a series reads `at=<time> value=…`. Label matchers (`labels`), `promql`, `at`
and `quantile` need a live Prometheus; a snapshot refuses them (a usage error, nothing recorded).
The range is since/until or a relative window on the environment's clock, else the backend's
default (a snapshot: all of it; live: the last hour). At most `max_items` alerts + series are
returned; when more series match, the ones that moved most in the range (relative to their size)
are kept, in that order, and the rest is reported as truncated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from evcli.tools import registry
from evcli.tools.fetch import Outcome, call_target, environment_zone, prepare_clock, searched_scope
from evcli.tools.params import ALERTNAME, METRIC, NAME, LabelMatchers, PromQL, TimeExpression, ToolParams
from evcli.tools.refs import pairs, with_unit

if TYPE_CHECKING:
    from evcli.backends.base import SeriesQuery
    from evcli.tools.runner import SessionView, ToolEnvironment


class QueryMetricsParams(ToolParams):
    service: str | None = Field(None, pattern=NAME)
    alertname: str | None = Field(None, pattern=ALERTNAME)
    metric: str | None = Field(None, pattern=METRIC)
    since: TimeExpression = None
    until: TimeExpression = None
    window: str | None = None
    # alerts in this state: one state, any, or None = active (firing or pending; resolved only when asked)
    state: Literal["active", "firing", "pending", "resolved", "suppressed", "any"] | None = None
    labels: LabelMatchers = None
    quantile: float | None = Field(None, gt=0, lt=1)
    promql: PromQL = None
    at: TimeExpression = None

    @model_validator(mode="after")
    def _promql_alone(self) -> QueryMetricsParams:
        """An expression is the whole query; `at` is the instant one is evaluated at, instead of a range."""
        if self.promql is not None:
            beside = [name for name in _NOT_WITH_PROMQL if getattr(self, name) is not None]
            if beside:
                raise ValueError(f"promql is the whole query: give it without {', '.join(beside)}")
        if self.at is not None:
            if self.promql is None:
                raise ValueError("at evaluates a promql expression at one instant: give promql too")
            if self.since is not None or self.until is not None or self.window is not None:
                raise ValueError("give either at (an instant) or since/until/window (a range), not both")
        return self


_NOT_WITH_PROMQL = ("service", "alertname", "metric", "labels", "quantile", "state")


def alert_text(alert: dict[str, Any]) -> str:
    parts = [str(alert.get("alertname") or "alert")]
    parts += pairs(alert, ("service", "instance", "severity", "state"))
    if alert.get("value") is not None:
        parts.append(f"current={with_unit(alert['value'], alert.get('unit'))}")
    parts += pairs(alert, ("duration", "active_at", "ends_at"))
    parts += [f"{key}={','.join(alert[key])}" for key in ("silenced_by", "inhibited_by") if alert.get(key)]
    parts += pairs(alert, ("summary",))
    return ", ".join(parts)


def series_text(series: dict[str, Any]) -> str:
    if "query" in series:  # a live Prometheus series
        return _promql_series_text(series)
    if "range" not in series:  # recorded before absolute ranges
        span = f"window={series.get('window')}"
    else:
        span = f"range={series['range']} points={series.get('points')}"
    stats = " ".join(
        f"{key}={with_unit(series[key], series.get('unit'))}"
        + (f" at {series[f'{key}_at']}" if series.get(f"{key}_at") else "")
        for key in ("min", "max", "last")
        if series.get(key) is not None
    )
    return f"{series.get('service')} {series.get('metric')} {span} {stats}".strip()


def _promql_series_text(series: dict[str, Any]) -> str:
    """`<service> <query> [selector=<selector>] step=<s>s range=… points=… min=… at … max=… last=…`, or for an
    instant `… at=<time> value=…`: the expression, the series and the range a reader needs to run it again."""
    head = [str(series.get("service") or ""), str(series["query"])]
    if series.get("type") == "promql":  # the expression answers several series: which one this is
        head.append(f"selector={series.get('selector')}")
    unit = series.get("unit")
    if series.get("instant"):
        tail = [f"at={series.get('last_at')}", f"value={with_unit(series.get('last'), unit)}"]
    else:
        tail = [f"step={series.get('step')}s", f"range={series.get('range')}", f"points={series.get('points')}"]
        tail += [
            f"{key}={with_unit(series[key], unit)} at {series.get(f'{key}_at')}"
            for key in ("min", "max", "last")
            if series.get(key) is not None
        ]
    return " ".join(part for part in (*head, *tail) if part)


def series_span(series: list[dict[str, Any]]) -> str | None:
    """The range the series summaries cover together (earliest start..latest end), None without any."""
    from evcli.core.time import TimeRange, parse_range_text

    ranges = [parse_range_text(item["range"]) for item in series if item.get("range")]
    starts = [found.start for found in ranges if found.start is not None]
    ends = [found.end for found in ranges if found.end is not None]
    if not starts or not ends:
        return None
    return TimeRange(min(starts), max(ends)).text()


def scope(params: QueryMetricsParams) -> dict[str, Any]:
    found: dict[str, Any] = {"service": params.service, "window": params.window}
    found.update(since=params.since, until=params.until)
    found = {key: value for key, value in found.items() if value is not None}
    found["keywords"] = [
        value for value in (params.alertname, params.metric, *(params.labels or ()), params.promql) if value
    ]
    if params.state:
        found["state"] = params.state
    found.update({key: value for key, value in (("quantile", params.quantile), ("at", params.at)) if value is not None})
    return found


def precise(params: dict[str, Any]) -> bool:
    return bool(params.get("service") or params.get("alertname") or params.get("promql") or params.get("labels"))


def wider(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    for key in ("alertname", "metric", "promql"):
        if old.get(key) and new.get(key) != old.get(key):
            return f"it drops or changes the {key} ({old.get(key)} → {new.get(key) or 'any'})"
    dropped = sorted(set(old.get("labels") or ()) - set(new.get("labels") or ()))
    if dropped:
        return f"it drops the label matchers {', '.join(dropped)}"
    return None


def series_query(params: QueryMetricsParams) -> SeriesQuery:
    """What the call asks of series beyond a service and a metric name."""
    from evcli.backends.base import QUANTILES, SeriesQuery, parse_matcher

    return SeriesQuery(
        labels=tuple(parse_matcher(text) for text in params.labels or ()),
        promql=params.promql,
        instant=params.at is not None,
        quantiles=QUANTILES if params.quantile is None else (params.quantile,),
    )


def fetch(params: QueryMetricsParams, env: ToolEnvironment, session: SessionView) -> Outcome:
    from evcli.backends.series import relative_range
    from evcli.core.time import TimeRange, parse_time

    found_scope = scope(params)
    target = call_target(params, env.backend, SPEC.array_names, found_scope)
    if isinstance(target, Outcome):
        return target
    service, named, window = target
    if params.at is not None:  # an instant: the range that starts and ends there
        moment = parse_time(params.at, clock=env.backend.now(), tz=environment_zone(env.backend))
        named = TimeRange(moment, moment)
    result = env.backend.query_metrics(
        service=service,
        alertname=params.alertname,
        metric=params.metric,
        window=window,
        range=named,
        state=params.state or "active",
        query=series_query(params),
    )
    found_scope.update(searched_scope(named, env.backend, result.searched_range or series_span(result.series)))
    items = len(result.alerts) + len(result.series)
    cap = env.settings.max_items
    alerts = result.alerts[:cap]
    room = max(0, cap - len(alerts))
    series = result.series
    message = result.message or f"{len(result.alerts)} alerts, {len(result.series)} series"
    if len(series) > room:  # the top `room` by change in the range; a stable sort keeps the backend's order on ties
        series = sorted(series, key=lambda item: -relative_range(item))[:room]
        message += f"; kept the {room} of {len(result.series)} series that moved most in the range"
    output = {
        "alerts": alerts,
        "series": series,
        "total": items,
        "truncated": items > cap,
        "message": message,
        "searched_range": found_scope["range"],
    }
    return Outcome(output, found_scope)


SPEC = registry.register(
    registry.ToolSpec(
        name="query_metrics",
        description=(
            "Alerts and metric series (min/max/last with their times, number of points) of a service, or of "
            "everything, in a time range (since/until, or a relative window; none: the whole snapshot, or the "
            "last hour of a live backend). With no service, alert or metric named, a snapshot returns every "
            "series of the range, those that moved most first. Alerts are the active ones (firing or pending) "
            "unless state asks for resolved, suppressed (silenced or inhibited) or any. On a live Prometheus each "
            "label set is its own series (labels narrows them), counters are rates, histograms quantiles, and "
            "promql runs an expression over the range or at one instant (at)."
        ),
        summary="Alerts and metric series of a service (or of everything).",
        params=QueryMetricsParams,
        option_help={
            "metric": (
                "A series as shown (CpuUsageRate(%), mem_used (MiB)) or its bare name (CpuUsageRate). On Prometheus a "
                "counter is summarised as its rate per second, a histogram as its p50/p90/p99."
            ),
            "state": "Alerts in this state: firing, pending, resolved, suppressed or any (default: firing or pending).",
            "labels": (
                "Prometheus only: label matchers added to the metric's selector, each name=value (or name!=value, "
                "name=~regex, name!~regex), e.g. quantile=0.5; repeat --label for several."
            ),
            "quantile": "Prometheus only: the one quantile of a histogram to report, e.g. 0.95 (default: 0.5, 0.9, 0.99).",
            "promql": (
                "Prometheus only: a PromQL expression evaluated as written over the range, e.g. "
                'sum by (code) (rate(http_requests_total{job="api"}[5m])); the whole query (no service, metric, '
                "labels, alertname or state beside it). One line, at most 2000 characters."
            ),
            "at": (
                "Evaluate promql once at this time (an instant query) instead of over a range: now, -5m, 10:03 or "
                "ISO 8601 (not with since/until/window)."
            ),
        },
        arrays=(registry.EvidenceArray("alerts", alert_text), registry.EvidenceArray("series", series_text)),
        fetch=fetch,
        scope=scope,
        reads=("metrics", "alerts"),
        prepare=prepare_clock,  # the snapshot's span and clock, before the deadline (they read the trace index)
        precise=precise,
        wider=wider,
    )
)
