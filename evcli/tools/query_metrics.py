"""`query_metrics`: alerts and metric series (min/max/last over a time range) of a service, or of everything.

Refs: `$.alerts[i]` (`HighCPUUsage, service=…, state=firing, current=92%, …`) and
`$.series[i]` (`order-service heap_used range=<start>..<end> points=12 min=2.9GB at <time>
max=… at … last=… at …`: per series the absolute range and the number of points it
summarises; a series recorded before absolute ranges renders as then, `window=30m min=…`).
The range is since/until or a relative window on the environment's clock, else the backend's
default (a snapshot: all of it; live: the last hour). At most `max_items` alerts + series are
returned; the rest is reported as truncated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from evcli.timerange import TimeRange, parse_range_text
from evcli.tools import registry
from evcli.tools.fetch import Outcome, call_target, searched_scope
from evcli.tools.params import ALERTNAME, METRIC, NAME, TimeExpression, ToolParams
from evcli.tools.refs import pairs, with_unit

if TYPE_CHECKING:
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


def series_span(series: list[dict[str, Any]]) -> str | None:
    """The range the series summaries cover together (earliest start..latest end), None without any."""
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
    found["keywords"] = [value for value in (params.alertname, params.metric) if value]
    if params.state:
        found["state"] = params.state
    return found


def precise(params: dict[str, Any]) -> bool:
    return bool(params.get("service") or params.get("alertname"))


def wider(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    for key in ("alertname", "metric"):
        if old.get(key) and new.get(key) != old.get(key):
            return f"it drops or changes the {key} ({old.get(key)} → {new.get(key) or 'any'})"
    return None


def fetch(params: QueryMetricsParams, env: ToolEnvironment, session: SessionView) -> Outcome:
    found_scope = scope(params)
    target = call_target(params, env.backend, SPEC.array_names, found_scope)
    if isinstance(target, Outcome):
        return target
    service, named, window = target
    result = env.backend.query_metrics(
        service=service,
        alertname=params.alertname,
        metric=params.metric,
        window=window,
        range=named,
        state=params.state or "active",
    )
    found_scope.update(searched_scope(named, env.backend, result.searched_range or series_span(result.series)))
    items = len(result.alerts) + len(result.series)
    cap = env.settings.max_items
    alerts = result.alerts[:cap]
    series = result.series[: max(0, cap - len(alerts))]
    output = {
        "alerts": alerts,
        "series": series,
        "total": items,
        "truncated": items > cap,
        "message": result.message or f"{len(result.alerts)} alerts, {len(result.series)} series",
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
            "unless state asks for resolved, suppressed (silenced or inhibited) or any."
        ),
        summary="Alerts and metric series of a service (or of everything).",
        params=QueryMetricsParams,
        option_help={
            "metric": "A series as shown (CpuUsageRate(%), mem_used (MiB)) or its bare name (CpuUsageRate).",
            "state": "Alerts in this state: firing, pending, resolved, suppressed or any (default: firing or pending).",
        },
        arrays=(registry.EvidenceArray("alerts", alert_text), registry.EvidenceArray("series", series_text)),
        fetch=fetch,
        scope=scope,
        reads=("metrics", "alerts"),
        precise=precise,
        wider=wider,
    )
)
