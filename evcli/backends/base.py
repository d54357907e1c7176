"""What every evidence backend provides, in one normalised shape.

Backends only fetch and normalise; the tool layer (`evcli/tools/`) validates
parameters, applies guards and caps, masks secrets and builds evidence refs.
A backend that cannot answer raises `BackendError` (evcli.core.errors): the tool records that as
`evidence_status: failed`, never as "no evidence".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, Protocol

from evcli.core.errors import BadInput
from evcli.core.time import TimeRange

_WINDOW = re.compile(r"^(\d{1,4})([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_WINDOW = timedelta(days=30)


@dataclass(frozen=True)
class TimeWindow:
    """A relative window ("30m") resolved against the backend's own clock."""

    label: str
    start: datetime
    end: datetime

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment <= self.end


def parse_window(label: str, now: datetime) -> TimeWindow:
    """`30m`, `2h`, `1d`, `90s` ending at `now` (an aware datetime)."""
    match = _WINDOW.match(label.strip())
    if not match:
        raise ValueError(f"window must look like 30m, 2h or 1d, got {label!r}")
    length = timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    if length <= timedelta(0) or length > MAX_WINDOW:
        raise ValueError(f"window must be between 1s and 30d, got {label!r}")
    return TimeWindow(label=label.strip(), start=now - length, end=now)


def as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@dataclass(frozen=True)
class LogQuery:
    """A log search. `range` None is the backend's default: the whole snapshot for a snapshot,
    the last hour for a live backend. A relative `window` is still accepted where the tool layer
    passes one; `effective_range` turns it into a range. `level` keeps lines without a level
    unless `level_strict`."""

    service: str | None
    keywords: tuple[str, ...]  # all must occur in a line, case-insensitively
    level: str | None  # minimum level name (DEBUG < INFO < WARN < ERROR < FATAL), None for all
    window: TimeWindow | None = None
    limit: int = 50  # newest `limit` matches are returned; `total` counts all
    range: TimeRange | None = None
    level_strict: bool = False  # with `level`: drop lines that have no level
    count_by: str | None = None  # "address" / "instance" / "path": stats.by_address / by_instance / by_path count them

    def effective_range(self) -> TimeRange | None:
        """The range the call names (`range`, else the window's), None for the backend default."""
        if self.range is not None:
            return self.range
        return None if self.window is None else TimeRange(self.window.start, self.window.end)

    def keeps_level(self, level: str | None) -> bool:
        """Whether a line of that level passes the level filter."""
        if self.level is None:
            return True
        if level is None:
            return not self.level_strict
        return level_at_least(level, canonical_level(self.level))


@dataclass
class LogResult:
    """`logs` items: {timestamp (ISO 8601 with the environment's offset), level, level_derived,
    service, instance, message, line, source}; `stats`, `patterns`, `searched_range` and
    `digests` as DESIGN §2 describes (HELPERS_COMMON_W3 shared contract)."""

    logs: list[dict[str, Any]]
    total: int
    truncated: bool
    message: str = ""
    stats: dict[str, Any] | None = (
        None  # {total, first, last, by_level, by_source, [by_address], range, range_origin, filters}
    )
    patterns: list[dict[str, Any]] = field(
        default_factory=list
    )  # {template, count, first, last, example, level, starts_record}
    searched_range: str = ""  # TimeRange.text() of what was searched
    digests: dict[str, str] = field(default_factory=dict)  # path or url -> "sha256:<hex>"


QUANTILES = (0.5, 0.9, 0.99)  # a histogram's quantiles when the call states none
MATCH_OPERATORS = ("=~", "!~", "!=", "=")  # PromQL's label matchers, longest first
_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:/-]{0,99}$")


class LabelMatcher(NamedTuple):
    """One label matcher as PromQL reads it: `quantile="0.5"`, `code!="200"`, `handler=~"/api/.*"`."""

    name: str
    operator: str  # one of MATCH_OPERATORS
    value: str


def parse_matcher(text: str) -> LabelMatcher:
    """`name=value`, `name!=value`, `name=~regex` or `name!~regex`; ValueError saying which form is expected."""
    # the first operator in the text, the longest one where two start together (`=~` before `=`)
    found = [(text.find(operator), -len(operator), operator) for operator in MATCH_OPERATORS if operator in text]
    if not found:
        raise ValueError(f"label matcher {text!r} must look like name=value (or name!=value, name=~regex, name!~regex)")
    operator = min(found)[2]
    name, _, value = text.partition(operator)
    if not _LABEL_NAME.match(name.strip()):
        raise ValueError(f"label matcher {text!r}: {name.strip()!r} is not a label name")
    return LabelMatcher(name.strip(), operator, value.strip())


class UnsupportedQuery(BadInput):
    """A series query the backend cannot run (PromQL or label matchers on a snapshot): refused before
    anything runs or is recorded, as a usage error."""


@dataclass(frozen=True)
class SeriesQuery:
    """What a metrics call asks of its series beyond a service and a metric name. A live Prometheus
    answers all of it; a snapshot (CSV columns without labels) none, and refuses it (`refuse_on`).

    `promql` is the whole query (no service, metric or matchers beside it); `instant` evaluates it once,
    at the searched range's end (the tool passes a range whose start is its end)."""

    labels: tuple[LabelMatcher, ...] = ()
    promql: str | None = None
    instant: bool = False
    quantiles: tuple[float, ...] = QUANTILES

    def asked(self) -> list[str]:
        """The parameters that ask for more than a plain series summary."""
        named = {"labels": bool(self.labels), "promql": self.promql is not None, "at": self.instant}
        named["quantile"] = self.quantiles != QUANTILES
        return [name for name, given in named.items() if given]

    def refuse_on(self, source: str) -> None:
        """Raise UnsupportedQuery when anything beyond a plain summary is asked of `source`, which cannot."""
        asked = self.asked()
        if asked:
            raise UnsupportedQuery(
                f"cannot ask {' and '.join(asked)} of {source}: that needs a live Prometheus (--prometheus URL)"
            )


@dataclass
class MetricsResult:
    """`alerts` items: {alertname, service, instance, severity, state (firing, pending, resolved,
    suppressed), value, unit, active_at, duration, summary, labels, and when set: ends_at (resolved),
    silenced_by, inhibited_by}; `series` items (`evcli.backends.series`): {service, metric, unit,
    range, points, min, min_at, max, max_at, last, last_at, and window when the call named one; a live
    Prometheus series also: labels, selector (of exactly that series), query (the PromQL that gives it),
    type, step, and when they apply quantile and instant};
    `searched_range` the absolute range searched (TimeRange.text(), open ends filled: a snapshot's
    whole span, a live backend's clock), also when nothing was found."""

    alerts: list[dict[str, Any]] = field(default_factory=list)
    series: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""
    searched_range: str = ""


class EvidenceBackend(Protocol):
    """Alerts, metric series and logs for one environment."""

    name: str

    def now(self) -> datetime:
        """The backend's clock: wall time for live systems, the snapshot's own time for snapshots."""

    def known_services(self) -> list[str] | None:
        """Service names this backend knows, or None when it cannot tell."""

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
        """Alerts in `state` (`evcli.backends.alerts.STATE_FILTERS`: active = firing or pending) that
        were active in the range, and series summaries over it (alerts only when `series` is False:
        the session overview reads no series). The range is `range`, else the window's, else the
        backend default (whole snapshot; live: the last hour). `query` asks for label matchers or a
        PromQL expression (series only); a backend that cannot run it raises UnsupportedQuery."""

    def query_logs(self, query: LogQuery) -> LogResult: ...


LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
_LEVEL_ALIASES = {"WARNING": "WARN", "ERR": "ERROR", "CRITICAL": "FATAL", "CRIT": "FATAL", "PANIC": "FATAL"}


def canonical_level(name: str | None) -> str | None:
    if not name:
        return None
    upper = name.strip().upper()
    upper = _LEVEL_ALIASES.get(upper, upper)
    return upper if upper in LEVELS else None


def level_at_least(level: str | None, minimum: str | None) -> bool:
    if minimum is None:
        return True
    if level is None:
        return False
    return LEVELS.index(level) >= LEVELS.index(minimum)
