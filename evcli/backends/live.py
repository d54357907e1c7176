"""The evidence backend of a running system, composed by capability from the registered backends.

Alerts, metric series, logs and traces each come from the preferred configured backend that
provides them (see `evcli.backends.registry`). Any part may be left out; asking for what no
configured part provides raises `BackendError` naming the options that would provide it, as does
any part that fails: an error is never turned into an empty answer.

Services: the values of each part's service label (metrics and logs parts) and the services the
traces part lists, plus the configured aliases (`service_aliases` option, "alias=name,…": a name a
user writes -> the name in that backend's data). A name no part knows is unknown (the tool answers
with close names); when no part can tell, every name is taken as given. `check_reachable` fails
only when every part fails to answer.

The clock is the wall clock, unless `clock` pins it: `gate --against URL` re-runs a call that named no
time on the clock it ran on, so that it searches the same last hour.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evcli.backends.alerts import wanted_state
from evcli.backends.base import LogQuery, LogResult, MetricsResult, SeriesQuery, TimeWindow
from evcli.backends.registry import Capability, backend_kind, providers
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange

if TYPE_CHECKING:
    from evcli.contracts import BackendSpec


DEFAULT_RANGE = timedelta(hours=1)  # what a live query searches when the call names no time
ALIASES_OPTION = "service_aliases"  # BackendSpec.options: "alias=name,alias=name"
CLOSE_NAMES = 5
CLOSE_CUTOFF = 0.6


class BackendsUnreachable(BackendError):
    """No configured backend answered; `evcli doctor` checks each one and says what to fix."""

    hint = "check each backend with `evcli doctor`"


def parse_aliases(text: str | None) -> dict[str, str]:
    """`"payments=payment-service,pay=payment-service"` -> {alias (lower-cased): name}."""
    pairs = (item.partition("=") for item in (text or "").split(","))
    return {alias.strip().lower(): name.strip() for alias, _, name in pairs if alias.strip() and name.strip()}


class LiveBackend:
    name = "live"

    def __init__(
        self, parts: Mapping[str, Any] | None = None, aliases: Mapping[str, Mapping[str, str]] | None = None
    ) -> None:
        self.parts = dict(parts or {})  # registry name -> built backend
        self.aliases = {name: dict(table) for name, table in (aliases or {}).items()}  # part -> {alias: name}
        self.clock: datetime | None = None  # pinned: what `now()` answers instead of the wall clock

    @classmethod
    def from_specs(cls, specs: Mapping[str, BackendSpec]) -> LiveBackend:
        return cls(
            {name: backend_kind(name).build(spec) for name, spec in specs.items()},
            {name: parse_aliases(spec.options.get(ALIASES_OPTION)) for name, spec in specs.items()},
        )

    def check_reachable(self) -> None:
        """Raise `BackendError` naming each URL and its failure when no part answers at all."""
        probed = [(name, part) for name, part in self.parts.items() if hasattr(part, "probe")]
        if not probed:
            return
        with ThreadPoolExecutor(max_workers=len(probed)) as pool:
            failures = list(pool.map(lambda pair: _probe(pair[1]), probed))
        if all(failures):
            raise BackendsUnreachable(
                "no backend answered: "
                + "; ".join(f"{name}: {why}" for (name, _), why in zip(probed, failures, strict=True))
            )

    def serving(self, *capabilities: Capability) -> Any:
        """The configured part that serves the first of `capabilities` any part provides, else None."""
        for capability in capabilities:
            for kind in providers(capability):
                if kind.name in self.parts:
                    return self.parts[kind.name]
        return None

    def capabilities(self) -> list[str]:
        """What the configured parts serve, in Capability order."""
        return [capability.value for capability in Capability if self.serving(capability) is not None]

    def now(self) -> datetime:
        return self.clock or datetime.now(UTC)

    def known_services(self) -> list[str] | None:
        return self._services

    @cached_property
    def _services(self) -> list[str] | None:
        """The service names of the metrics, logs and traces parts, asked once; None (cannot tell) when no
        such part is configured, answers, or knows any."""
        names: set[str] = set()
        for capability in (Capability.METRICS, Capability.LOGS, Capability.TRACES):
            source = self.serving(capability)
            if source is None or not hasattr(source, "services"):
                continue
            try:
                names.update(source.services())
            except BackendError:
                continue
        return sorted(names) or None

    def service_aliases(self) -> dict[str, list[str]]:
        """Service -> the aliases configured for it (all parts together)."""
        found: dict[str, list[str]] = {}
        for table in self.aliases.values():
            for alias, name in table.items():
                found.setdefault(name, []).append(alias)
        return found

    def resolve_service(self, name: str) -> str | None:
        """The service a name or alias denotes (case-insensitive), None when no part knows it; the
        name as given when no part can tell."""
        key = name.strip().lower()
        for table in self.aliases.values():
            if key in table:
                return table[key]
        known = self.known_services()
        if known is None:
            return name
        return next((service for service in known if service.lower() == key), None)

    def close_matches(self, name: str) -> list[str]:
        """Known services containing the name or contained in it, then those spelled alike."""
        known = self.known_services() or []
        key = name.strip().lower()
        within = [service for service in known if key in service.lower() or service.lower() in key]
        alike = difflib.get_close_matches(
            key, [service.lower() for service in known], n=CLOSE_NAMES, cutoff=CLOSE_CUTOFF
        )
        spelled = [service for lowered in alike for service in known if service.lower() == lowered]
        return list(dict.fromkeys([*within, *spelled]))[:CLOSE_NAMES]

    def query_metrics(
        self,
        *,
        service: str | None,
        alertname: str | None,
        metric: str | None,
        window: TimeWindow | None = None,
        range: TimeRange | None = None,
        state: str = "active",
        series: bool = True,
        query: SeriesQuery | None = None,
    ) -> MetricsResult:
        """Alerts in `state` (a STATE_FILTERS key) active in the range, and series over it (none when
        `series` is False). The range
        is `range`, else the window, else the last DEFAULT_RANGE; an open end is filled the same way.
        A PromQL expression (`query.promql`) is the whole question: its series, and no alerts."""
        alert_source, metric_source = self.serving(Capability.ALERTS), self.serving(Capability.METRICS)
        query = query or SeriesQuery()
        if metric_source is None:
            query.refuse_on("these backends, none of which serves metrics")
        if query.promql is not None:
            alert_source = None
        if alert_source is None and (metric_source is None or not series):
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
        if metric_source is None or not series:
            return MetricsResult(alerts=alerts, searched_range=stated)
        summary = metric_source.summarise(service, metric, searched, query)
        return MetricsResult(alerts=alerts, series=summary.series, message=summary.message, searched_range=stated)

    def trace_source(self) -> Any:
        """The part serving traces (its `query`, `services`, `resolve`: evcli.backends.registry)."""
        source = self.serving(Capability.TRACES)
        if source is None:
            raise BackendError(f"no trace backend configured: pass {_flags(Capability.TRACES)}")
        return source

    def query_logs(self, query: LogQuery) -> LogResult:
        source = self.serving(Capability.LOGS)
        if source is None:
            raise BackendError(f"no log backend configured: pass {_flags(Capability.LOGS)}")
        result: LogResult = source.query_logs(query)
        return result


def _probe(part: Any) -> str:
    """Why the part did not answer, or "" when it did."""
    try:
        part.probe()
    except BackendError as error:
        return str(error)
    return ""


def _flags(*capabilities: Capability) -> str:
    """`--prometheus or --alertmanager`: the options that would provide any of `capabilities`."""
    names = {kind.name: kind.flag for capability in capabilities for kind in providers(capability)}
    return " or ".join(names.values())
