"""Changes of an incident window against its baseline, over every series and every log (pure).

A change is one evidence item (`find_changes`' `$.changes[i]`): which service and signal, its
class (signals.toml), the baseline's centre, spread and number of points, the incident value
(median from the onset on) and peak, the direction, the onset and a score. Invariants:
  - a series changes only when a sustained run of its window leaves its baseline band
    (evcli.diagnosis.robust); a series with fewer than 3 baseline points or no window point is
    not judged, and is counted in the notes, never turned into a change;
  - a cumulative counter (`*_total`, `*_count`, a non-decreasing series) of a class judged as a
    rate (signals.toml `rate`: traffic, errors) is judged as its rate per second, a reset (a drop)
    starting again from 0; a counter of restarts stays a count (one restart is a step, not a rate);
  - a counter's rate is never judged finer than its smallest step (one event per interval);
  - log lines at ERROR (and above) and at WARN are judged per bucket of the window's step, as a
    series whose spread is at least the Poisson noise of its level (√centre, and 1 line);
  - a template with no line in the baseline and at least NEW_TEMPLATE_MIN in the window is new;
    one whose rate rose SURGE_FACTOR-fold (at least SURGE_MIN lines) surges; only templates at
    WARN or above, or of a class that is a service's own (restarts, memory, disk, responses)
    count: a busier INFO line is traffic, not a fault;
  - the same inputs give the same changes in the same order (sorted by score, then onset,
    service and signal): `gate --against` re-derives them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from evcli.backends.snapshot_changes import AlertStart, LevelBuckets, SeriesPoints, TemplateCounts
from evcli.diagnosis import robust, signals

NEW_TEMPLATE_MIN = 3
EVENT_SCORE = 10.0  # per event of a count of events (one restart; a crash loop of five scores in full)
SURGE_FACTOR = 4.0
SURGE_MIN = 10
ALERTS_SOURCE = "alerts.json"
ALERT_SCORE = 10.0  # an alert that became active in the window: the team's own judgement that this is trouble
PENDING_SHARE = 0.5  # of ALERT_SCORE for an alert still pending (its condition held, not yet for long enough)
RESET_SHARE = 0.1  # a counter that falls restarts from 0: to less than this share of where it was
SHORTFALL_RESOLUTION = 0.01  # of its ceiling: a success share is not judged finer than 1 % (of 100 %)
_COUNTER_ENDINGS = ("_total_", "_count_", "_sum_", "_seconds_total_")
_FRACTION_WORDS = ("_ratio_", "ratio", "utilization", "utilisation", "fraction", "_usage_", "_used_")


@dataclass(frozen=True)
class Change:
    service: str
    signal: str  # the metric, `ERROR lines`/`WARN lines`, or the template's text
    kind: str  # "metric", "log_level", "new_template", "surging_template"
    signal_class: str
    direction: str  # "up" / "down"
    unit: str
    baseline: float
    spread: float
    baseline_points: int
    value: float
    peak: float
    points: int
    outside: int
    onset: float  # epoch seconds
    score: float
    source: str
    instance: str | None = None
    example: str | None = None
    rate: bool = False  # a counter judged as its rate per second
    state: str | None = None  # an alert's state at the snapshot's clock (kind "alert")

    @property
    def klass(self) -> signals.SignalClass:
        return signals.by_name(self.signal_class)

    @property
    def weighted(self) -> float:
        """The score as suspicion: by the class's weight, a third when the direction is not trouble."""
        factor = self.klass.weight * (1.0 if self.klass.is_bad(self.direction) else 1 / 3)
        return round(self.score * factor, 3)


@dataclass
class Judged:
    changes: list[Change]
    series: int = 0  # series judged
    unjudged: int = 0  # series with too few baseline points or no window point
    log_files: int = 0
    notes: list[str] | None = None


@dataclass(frozen=True)
class JudgedView:
    """A series as it is judged: a counter as its rate; a share that is trouble when it falls (a
    success rate) as the share that fails (`judged` = ceiling - values): 99.9 % to 75 % is 0.1 % to
    25 % failing, measured against the room below the ceiling, not against 99.9."""

    times: np.ndarray
    values: np.ndarray  # the series' own values (a counter's rates)
    judged: np.ndarray  # what is compared with the baseline
    ceiling: float | None
    shortfall: bool
    rate: bool
    quantum: float  # the finest step judged: one event per interval for a rate, 1 % of a share's ceiling


def judged_view(points: SeriesPoints) -> JudgedView:
    times, values = points.times, points.values
    rate = is_counter(points.metric, values)
    if rate:
        times, values = rates(times, values)
    ceiling = None if rate else ceiling_of(points.metric, points.unit, values)
    shortfall = ceiling is not None and signals.of_metric(points.metric).bad == "down"
    if shortfall and ceiling is not None:
        return JudgedView(times, values, ceiling - values, ceiling, True, rate, SHORTFALL_RESOLUTION * ceiling)
    # a rate of sparse events moves in steps of one event per interval: it is not judged finer than that
    return JudgedView(times, values, values, ceiling, False, rate, event_quantum(times) if rate else 0.0)


def series_changes(series: list[SeriesPoints], baseline: tuple[float, float], window: tuple[float, float]) -> Judged:
    found: list[Change] = []
    judged = unjudged = 0
    for points in series:
        klass = signals.of_metric(points.metric)
        view = judged_view(points)
        times, values, judged_values, ceiling = view.times, view.values, view.judged, view.ceiling
        shortfall, rate = view.shortfall, view.rate
        before = judged_values[(times >= baseline[0]) & (times < baseline[1])]
        inside = (times >= window[0]) & (times <= window[1])
        base = robust.baseline_of(before, view.quantum, ceiling)
        if base is None or not inside.any():
            unjudged += 1
            continue
        judged += 1
        during_times = times[inside]
        if klass.events:
            change = _event_change(points, klass, before, during_times, values[inside])
            found += [change] if change else []
            continue
        shift = robust.shift_of(base, judged_values[inside], ceiling)
        if shift is None:
            continue
        if shift.points < robust.RUN:
            # an onset in the window's last points is confirmed by the points that follow the window, where the
            # data goes on: a blip at a named window's end is no change
            following = judged_values[times > window[1]][: robust.RUN - shift.points]
            tail = np.concatenate([judged_values[inside][shift.onset_index :], following])
            if following.size and not robust.sustained(base, tail, shift.direction):
                continue
        # the judged share that fails, back to the series' own numbers and direction
        offset, sign = (ceiling, -1.0) if shortfall and ceiling is not None else (0.0, 1.0)
        direction = shift.direction if not shortfall else ("down" if shift.direction == "up" else "up")
        found.append(
            Change(
                service=points.service,
                signal=points.metric,
                kind="metric",
                signal_class=klass.name,
                direction=direction,
                unit=f"{points.unit}/s" if rate and points.unit else ("/s" if rate else points.unit),
                baseline=offset + sign * base.centre,
                spread=base.mad_spread,
                baseline_points=base.points,
                value=offset + sign * shift.value,
                peak=offset + sign * shift.peak,
                points=shift.points,
                outside=shift.outside,
                onset=float(during_times[shift.onset_index]),
                score=shift.score,
                source=points.source,
                instance=points.instance,
                rate=rate,
            )
        )
    return Judged(found, series=judged, unjudged=unjudged)


def _event_change(
    points: SeriesPoints, klass: signals.SignalClass, before: np.ndarray, times: np.ndarray, during: np.ndarray
) -> Change | None:
    """A count of events (restarts) that rose in the window: how many happened (a drop is a reset, the
    new value counted again), from the first rise on; EVENT_SCORE per event."""
    series = np.concatenate([before[-1:], during])
    steps = np.diff(series)
    increase = np.where(steps >= 0, steps, series[1:])
    events = float(increase.sum())
    if events < 1:
        return None
    first = int(np.argmax(increase > 0))
    return Change(
        service=points.service,
        signal=points.metric,
        kind="events",
        signal_class=klass.name,
        direction="up",
        unit=points.unit,
        baseline=float(before[-1]),
        spread=0.0,
        baseline_points=int(before.size),
        value=events,
        peak=float(during.max()),
        points=int(during.size - first),
        outside=int((increase > 0).sum()),
        onset=float(times[first]),
        score=min(robust.Z_CAP, EVENT_SCORE * events),
        source=points.source,
        instance=points.instance,
    )


def event_quantum(times: np.ndarray) -> float:
    """One event per typical interval of a rate's points (events per second), 0 without two points."""
    gaps = np.diff(times)
    gaps = gaps[gaps > 0]
    return 1.0 / float(np.median(gaps)) if gaps.size else 0.0


def ceiling_of(metric: str, unit: str, values: np.ndarray) -> float | None:
    """The bound a quantity cannot pass: 100 for a percentage, 1 for a ratio or utilisation read as a
    fraction (its values within [0, 1]); None for an unbounded one."""
    if unit.strip() == "%":
        return 100.0
    key = signals.metric_key(metric)
    fraction = bool(values.size) and float(values.min()) >= 0.0 and float(values.max()) <= 1.0
    return 1.0 if fraction and any(word in key for word in _FRACTION_WORDS) else None


def is_counter(metric: str, values: np.ndarray) -> bool:
    """A cumulative counter: named so (`requests_total`), or of a traffic/error class and never
    falling but for resets to near 0."""
    if values.size < 3:
        return False
    key = signals.metric_key(metric)
    steps = np.diff(values)
    falling = steps < 0
    falls, rises = int(falling.sum()), int((steps > 0).sum())
    # a counter falls only when it restarts from 0: to less than RESET_SHARE of where it was
    resets = bool((values[1:][falling] <= RESET_SHARE * np.abs(values[:-1][falling])).all())
    klass = signals.of_metric(metric)
    named = any(key.endswith(ending) for ending in _COUNTER_ENDINGS)
    return (
        klass.as_rate
        and (named or klass.name != "other")
        and rises > 0
        and resets
        and falls <= max(1, values.size // 50)
    )


def rates(times: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-second rates of a counter's points; after a reset the counter counts from 0 again."""
    elapsed = np.diff(times)
    steps = np.diff(values)
    increase = np.where(steps >= 0, steps, values[1:])
    kept = elapsed > 0
    return times[1:][kept], increase[kept] / elapsed[kept]


def level_changes(levels: list[LevelBuckets], window_start: float) -> list[Change]:
    found = []
    for buckets in levels:
        base = robust.baseline_of([float(count) for count in buckets.baseline])
        if base is None:
            continue
        floor = max(base.spread, math.sqrt(max(base.centre, 0.0)), 1.0)
        base = robust.Baseline(base.centre, floor, base.points, base.mad_spread)
        shift = robust.shift_of(base, [float(count) for count in buckets.incident])
        if shift is None or shift.direction != "up":
            continue
        klass = signals.by_name("errors")
        found.append(
            Change(
                service=buckets.service,
                signal=f"{buckets.level} lines",
                kind="log_level",
                signal_class=klass.name,
                direction="up",
                unit=f"lines/{_step_text(buckets.step)}",
                baseline=base.centre,
                spread=base.mad_spread,
                baseline_points=base.points,
                value=shift.value,
                peak=shift.peak,
                points=shift.points,
                outside=shift.outside,
                onset=window_start + shift.onset_index * buckets.step,
                score=round(shift.score * (1.0 if buckets.level == "ERROR" else 0.5), 3),
                source=buckets.source,
            )
        )
    return found


def template_changes(templates: list[TemplateCounts], baseline_seconds: float, window_seconds: float) -> list[Change]:
    found = []
    for counts in templates:
        klass = signals.of_text(counts.template)
        leveled = counts.level in ("WARN", "ERROR", "FATAL")
        if counts.first is None or not (leveled or klass.cause):
            continue
        expected = counts.baseline * window_seconds / baseline_seconds if baseline_seconds > 0 else 0.0
        if counts.baseline == 0 and counts.incident >= NEW_TEMPLATE_MIN:
            kind, z = "new_template", 2 * math.sqrt(counts.incident)
        elif (
            counts.baseline > 0
            and counts.incident >= SURGE_MIN
            and counts.incident >= SURGE_FACTOR * max(expected, 1.0)
        ):
            kind, z = "surging_template", (counts.incident - expected) / math.sqrt(max(expected, 1.0))
        else:
            continue
        if not leveled:
            klass = klass if klass.cause else signals.by_name("errors")
        found.append(
            Change(
                service=counts.service,
                signal=counts.template,
                kind=kind,
                signal_class=klass.name if klass is not signals.OTHER else "errors",
                direction="up",
                unit="lines",
                baseline=float(counts.baseline),
                spread=math.sqrt(max(expected, 1.0)),
                baseline_points=counts.baseline,
                value=float(counts.incident),
                peak=float(counts.incident),
                points=counts.incident,
                outside=counts.incident,
                onset=counts.first,
                score=round(min(z, robust.Z_CAP) * (1.0 if counts.level in ("ERROR", "FATAL") else 0.6), 3),
                source=counts.source,
                example=counts.example,
            )
        )
    return found


def alert_changes(alerts: list[AlertStart], window: tuple[float, float]) -> list[Change]:
    """The alerts that became active inside the window (one active before it is no change in it), classed by
    their names as metrics are (HighMemoryUsage: memory); a pending one counts PENDING_SHARE."""
    found = []
    for alert in alerts:
        if not window[0] <= alert.active_at <= window[1]:
            continue
        klass = signals.of_metric(alert.alertname)
        value = alert.value if alert.value is not None else 1.0
        found.append(
            Change(
                service=alert.service,
                signal=alert.alertname,
                kind="alert",
                signal_class=klass.name,
                direction="up",
                unit=alert.unit,
                baseline=0.0,
                spread=0.0,
                baseline_points=0,
                value=value,
                peak=value,
                points=1,
                outside=1,
                onset=alert.active_at,
                score=ALERT_SCORE * (PENDING_SHARE if alert.state == "pending" else 1.0),
                source=ALERTS_SOURCE,
                state=alert.state,
            )
        )
    return found


def ordered(changes: list[Change]) -> list[Change]:
    return sorted(changes, key=lambda c: (-c.weighted, c.onset, c.service, c.signal, c.instance or ""))


def _step_text(step: float) -> str:
    return f"{int(step // 60)}min" if step >= 60 and step % 60 == 0 else f"{int(step)}s"


def as_item(change: Change, zone: Any, time_text: Any) -> dict[str, Any]:
    """The stored evidence item of a change (numbers to four significant digits, times in the zone)."""
    from evcli.backends.alerts import significant

    item: dict[str, Any] = {
        "service": change.service,
        "signal": change.signal,
        "kind": change.kind,
        "class": change.signal_class,
        "direction": change.direction,
        "unit": change.unit,
        "baseline": significant(change.baseline),
        "spread": significant(change.spread),
        "baseline_points": change.baseline_points,
        "value": significant(change.value),
        "peak": significant(change.peak),
        "points": change.points,
        "outside": change.outside,
        "onset": time_text(change.onset, zone),
        "score": round(change.weighted, 2),
        "source": change.source,
    }
    if change.instance:
        item["instance"] = change.instance
    if change.example:
        item["example"] = change.example
    if change.rate:
        item["rate"] = True
    if change.state:
        item["state"] = change.state
    return item
