"""The summary of one metric series over a searched range, as every metrics source reports it.

A `series` item of `MetricsResult`: {service, metric, unit, range, points, min, min_at, max,
max_at, last, last_at, samples} (plus `window` when the call named one). Invariants:
  - `range` is the absolute range searched (`TimeRange.text`), `points` the samples inside it;
  - samples may come irregular and unsorted: `min_at`/`max_at` are the earliest time the
    extreme occurred, `last` is the value at the newest time (a later sample wins a tie);
  - times are ISO 8601 with the zone's offset; values are rounded to four significant digits;
  - `samples` is every point as [unix seconds, value], sorted by time, so a report can chart the
    series (issue 13); numbers, not ISO strings: compact, and nothing a secret mask must read. It
    is left out when there are more than MAX_SAMPLES points (the summary stays).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from evcli.backends.alerts import significant
from evcli.core.time import TimeRange

MAX_SAMPLES = 1000  # points kept per series for charting; beyond this only the summary is kept


def relative_range(series: dict[str, Any]) -> float:
    """How far a series moved in the range, relative to its size: (max - min) / max(|max|, |min|).
    Series are ranked by it: the ones that moved most first."""
    low, high = float(series.get("min") or 0.0), float(series.get("max") or 0.0)
    size = max(abs(low), abs(high))
    return (high - low) / size if size else 0.0


def zoned(moment: datetime, zone: tzinfo) -> str:
    """`2026-09-14T11:40:00+08:00`: seconds, milliseconds only when there are some."""
    return moment.astimezone(zone).isoformat(timespec="milliseconds" if moment.microsecond else "seconds")


def _seconds(moment: datetime) -> int | float:
    """Unix seconds: an int for whole seconds, else to the millisecond."""
    seconds = round(moment.timestamp(), 3)
    return int(seconds) if seconds.is_integer() else seconds


@dataclass
class SeriesSummary:
    """Running points, min/max (first time reached) and last (newest time) of one series."""

    points: int
    low: float
    low_at: datetime
    high: float
    high_at: datetime
    last: float
    last_at: datetime
    samples: list[tuple[datetime, float]] | None = field(default=None)  # None: more than MAX_SAMPLES

    @classmethod
    def start(cls, value: float, moment: datetime) -> SeriesSummary:
        return cls(1, value, moment, value, moment, value, moment, [(moment, value)])

    def add(self, value: float, moment: datetime) -> None:
        self.points += 1
        if self.samples is not None:
            self.samples.append((moment, value))
            if len(self.samples) > MAX_SAMPLES:
                self.samples = None
        if value < self.low or (value == self.low and moment < self.low_at):
            self.low, self.low_at = value, moment
        if value > self.high or (value == self.high and moment < self.high_at):
            self.high, self.high_at = value, moment
        if moment >= self.last_at:
            self.last, self.last_at = value, moment

    def item(self, service: str, metric: str, unit: str, searched: TimeRange, zone: tzinfo) -> dict[str, Any]:
        """The `series` item of `MetricsResult` (times in `zone`, values to four digits)."""
        item: dict[str, Any] = {
            "service": service,
            "metric": metric,
            "unit": unit,
            "range": searched.text(zone),
            "points": self.points,
            "min": significant(self.low),
            "min_at": zoned(self.low_at, zone),
            "max": significant(self.high),
            "max_at": zoned(self.high_at, zone),
            "last": significant(self.last),
            "last_at": zoned(self.last_at, zone),
        }
        if self.samples is not None:
            item["samples"] = [[_seconds(moment), significant(value)] for moment, value in sorted(self.samples)]
        return item
