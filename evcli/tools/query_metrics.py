"""`query_metrics`: alerts and metric series (min/max/last over the window) of a service, or of everything.

Refs: `$.alerts[i]` (`HighCPUUsage, service=…, state=firing, current=92%, …`) and
`$.series[i]` (`order-service heap_used window=30m min=… max=… last=…`). At most
`max_items` alerts + series are returned; the rest is reported as truncated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from evcli.backends.base import parse_window
from evcli.tools import registry
from evcli.tools.fetch import Outcome, resolve_service, unknown_service_outcome
from evcli.tools.params import ALERTNAME, METRIC, NAME, ToolParams
from evcli.tools.refs import pairs, with_unit

if TYPE_CHECKING:
    from evcli.tools.runner import SessionView, ToolEnvironment


class QueryMetricsParams(ToolParams):
    service: str | None = Field(None, pattern=NAME)
    alertname: str | None = Field(None, pattern=ALERTNAME)
    metric: str | None = Field(None, pattern=METRIC)
    window: str = "30m"


def alert_text(alert: dict[str, Any]) -> str:
    parts = [str(alert.get("alertname") or "alert")]
    parts += pairs(alert, ("service", "instance", "severity", "state"))
    if alert.get("value") is not None:
        parts.append(f"current={with_unit(alert['value'], alert.get('unit'))}")
    parts += pairs(alert, ("duration", "active_at", "summary"))
    return ", ".join(parts)


def series_text(series: dict[str, Any]) -> str:
    stats = " ".join(
        f"{key}={with_unit(series[key], series.get('unit'))}"
        for key in ("min", "max", "last")
        if series.get(key) is not None
    )
    return f"{series.get('service')} {series.get('metric')} window={series.get('window')} {stats}".strip()


def scope(params: QueryMetricsParams) -> dict[str, Any]:
    found: dict[str, Any] = {"service": params.service, "window": params.window}
    found = {key: value for key, value in found.items() if value is not None}
    found["keywords"] = [value for value in (params.alertname, params.metric) if value]
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
    service, unknown = resolve_service(params.service, env.backend)
    if unknown:
        return unknown_service_outcome(unknown, SPEC.array_names, found_scope)
    window = parse_window(params.window, env.backend.now())
    result = env.backend.query_metrics(service=service, alertname=params.alertname, metric=params.metric, window=window)
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
    }
    return Outcome(output, found_scope)


SPEC = registry.register(
    registry.ToolSpec(
        name="query_metrics",
        description="Alerts and metric series (min/max/last over the window) of a service, or of everything.",
        summary="Alerts and metric series of a service (or of everything).",
        params=QueryMetricsParams,
        arrays=(registry.EvidenceArray("alerts", alert_text), registry.EvidenceArray("series", series_text)),
        fetch=fetch,
        scope=scope,
        precise=precise,
        wider=wider,
    )
)
