"""What the change finder reads from a snapshot: every metric series' points and every log file's
counts per template and per level, over a baseline and an incident window.

Invariants:
  - a series is one column of one metric file; a file named after a pod (`checkout-7c9f6d8b5-x2k4q`)
    belongs to its Deployment's service, with the pod as the series' instance;
  - a cell that is empty, NaN or not a number is no point (counted in `skipped`), a row without a
    readable timestamp likewise: a broken row is stated, never a crash;
  - log counts come from each file's persistent index (evcli.backends.logindex) in SQL: lines per
    template and highest level inside each range (record starts only: a stack trace is one line),
    and lines at WARN and at ERROR or above per bucket of the window's step;
  - nothing here judges: evcli.diagnosis compares.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evcli.backends.base import LEVELS
from evcli.backends.logindex import connect
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange

if TYPE_CHECKING:
    from evcli.backends.snapshot import SnapshotBackend

WARN, ERROR = LEVELS.index("WARN"), LEVELS.index("ERROR")


@dataclass
class SeriesPoints:
    service: str
    metric: str
    unit: str
    source: str  # the file, relative to the environment
    instance: str | None  # the pod a per-pod file is named after
    times: Any  # numpy float64 epoch seconds, sorted
    values: Any  # numpy float64, no NaN
    skipped: int = 0  # cells in range that were empty or not numbers


@dataclass(frozen=True)
class TemplateCounts:
    service: str
    source: str
    template: str
    level: str | None  # the highest level of its lines
    baseline: int
    incident: int
    first: float | None  # its first line inside the incident window
    example: str  # its newest line inside the incident window (else the baseline's)


@dataclass(frozen=True)
class LevelBuckets:
    """Lines at one level (WARN, or ERROR and above) per bucket of `step` seconds."""

    service: str
    source: str
    level: str
    step: float
    baseline: list[int]
    incident: list[int]  # bucket i starts at window.start + i * step


@dataclass(frozen=True)
class AlertStart:
    """An alert of alerts.json: when it became active (pending or firing) and what it measured."""

    service: str
    alertname: str
    state: str  # its state at the snapshot's clock: firing, pending, resolved, suppressed
    active_at: float  # epoch seconds
    value: float | None
    unit: str


@dataclass
class ChangeInputs:
    series: list[SeriesPoints] = field(default_factory=list)
    templates: list[TemplateCounts] = field(default_factory=list)
    levels: list[LevelBuckets] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # files that could not be read, and why


def series_points(backend: SnapshotBackend, span: TimeRange | None) -> tuple[list[SeriesPoints], list[str]]:
    """The points of every metric column inside `span` (all of them when None), in time order."""
    import numpy as np

    from evcli.backends.metric_arrays import metric_arrays

    found: list[SeriesPoints] = []
    problems: list[str] = []
    zone = backend.config.timezone
    low = span.start.timestamp() if span is not None and span.start is not None else -np.inf
    high = span.end.timestamp() if span is not None and span.end is not None else np.inf
    for path in backend.metric_files():
        service, instance, source = (
            backend.service_of_file(path),
            backend.instance_of_file(path),
            backend.relative(path),
        )
        try:
            arrays = metric_arrays(path, backend.directory, zone, backend._reading)
        except (BackendError, OSError, csv.Error) as error:
            problems.append(f"{source}: {error}")
            continue
        if arrays.unread:
            problems.append(f"{source}: {arrays.unread} rows without a readable timestamp")
        order = np.argsort(arrays.times, kind="stable")
        times, values = arrays.times[order], arrays.values[order]
        inside = (times >= low) & (times <= high)
        for index, column in enumerate(arrays.columns):
            cells = values[inside, index] if values.size else np.empty(0)
            kept = ~np.isnan(cells)
            found.append(
                SeriesPoints(
                    service,
                    column.name,
                    column.unit,
                    source,
                    instance,
                    times[inside][kept],
                    cells[kept],
                    int((~kept).sum()),
                )
            )
    return found, problems


def log_counts(
    backend: SnapshotBackend, baseline: TimeRange, window: TimeRange, step: float
) -> tuple[list[TemplateCounts], list[LevelBuckets], list[str]]:
    """Per log file: lines per template in the baseline and the window, and WARN / ERROR lines per bucket."""
    from evcli.backends.snapshot_logs import open_index_of

    templates: list[TemplateCounts] = []
    levels: list[LevelBuckets] = []
    problems: list[str] = []
    for path in backend.log_files():
        service = backend.service_of_file(path)
        try:
            indexed = open_index_of(backend, path)
        except BackendError as error:
            problems.append(str(error))
            continue
        with connect(indexed.db) as conn:
            counted = {}
            # the baseline ends where the window starts: [start, end) then [start, end]
            for name, moments, upper in (("baseline", baseline, "<"), ("incident", window, "<=")):
                counted[name] = {
                    row[0]: row[1:]
                    for row in conn.execute(
                        "SELECT template, max(level), count(*), min(ts), max(lineno) FROM lines"
                        f" WHERE ts >= ? AND ts {upper} ? AND record = lineno GROUP BY template",
                        _bounds(moments),
                    )
                }
            texts = dict(conn.execute("SELECT id, text FROM templates"))
            for template_id in sorted(set(counted["baseline"]) | set(counted["incident"])):
                before = counted["baseline"].get(template_id)
                during = counted["incident"].get(template_id)
                example_line = (during or before)[3]  # type: ignore[index]
                level = max((row[0] for row in (before, during) if row and row[0] is not None), default=None)
                example = conn.execute(
                    "SELECT coalesce(unescaped, line) FROM lines WHERE lineno = ?", (example_line,)
                ).fetchone()[0]
                templates.append(
                    TemplateCounts(
                        service=service,
                        source=indexed.relative,
                        template=texts.get(template_id, ""),
                        level=None if level is None else LEVELS[level],
                        baseline=before[1] if before else 0,
                        incident=during[1] if during else 0,
                        first=during[2] if during else None,
                        example=example,
                    )
                )
            for level_index, name in ((ERROR, "ERROR"), (WARN, "WARN")):
                upper = "" if level_index == ERROR else " AND level < 4"
                buckets = []
                for moments, before in ((baseline, "<"), (window, "<=")):
                    start, end = _bounds(moments)
                    count = max(1, int((end - start) // step) + (1 if (end - start) % step else 0))
                    found = [0] * count
                    for bucket, number in conn.execute(
                        f"SELECT CAST((ts - ?) / ? AS INTEGER), count(*) FROM lines WHERE ts >= ? AND ts {before} ?"
                        f" AND record = lineno AND level >= ?{upper} GROUP BY 1",
                        (start, step, start, end, level_index),
                    ):
                        found[min(int(bucket), count - 1)] += number
                    buckets.append(found)
                levels.append(LevelBuckets(service, indexed.relative, name, step, buckets[0], buckets[1]))
    return templates, levels, problems


def level_series(backend: SnapshotBackend, first: float, last: float, step: float) -> list[SeriesPoints]:
    """Per log file, its lines at ERROR and above per bucket of `step` over [first, last], as a series
    (times: bucket starts; values: counts) for finding where an incident starts."""
    import numpy as np

    from evcli.backends.snapshot_logs import open_index_of

    count = max(1, int((last - first) // step) + 1)
    found: list[SeriesPoints] = []
    for path in backend.log_files():
        try:
            indexed = open_index_of(backend, path)
        except BackendError:
            continue  # log_counts reports it
        counts = np.zeros(count)
        with connect(indexed.db) as conn:
            for bucket, number in conn.execute(
                "SELECT CAST((ts - ?) / ? AS INTEGER), count(*) FROM lines WHERE ts >= ? AND ts <= ?"
                " AND record = lineno AND level >= ? GROUP BY 1",
                (first, step, first, last, ERROR),
            ):
                counts[min(int(bucket), count - 1)] += number
        if counts.any():
            times = first + step * np.arange(count)
            found.append(
                SeriesPoints(
                    backend.service_of_file(path), "ERROR lines", "lines", indexed.relative, None, times, counts
                )
            )
    return found


def alert_starts(backend: SnapshotBackend) -> tuple[list[AlertStart], list[str]]:
    """Every alert of alerts.json with the time it became active, and why the file could not be read."""
    from evcli.backends.snapshot_alerts import alert_state_at, split_value

    try:
        alerts = backend._alerts.alerts
    except BackendError as error:
        return [], [str(error)]
    if not alerts:
        return [], []  # and the snapshot's clock (the newest line of every log) is not read for nothing
    now = backend.now()
    found = []
    for alert in alerts:
        if alert.active_at is None or not alert.labels.get("alertname"):
            continue
        value, unit = split_value(alert.value)
        found.append(
            AlertStart(
                backend.alert_service(alert.labels),
                alert.labels["alertname"],
                alert_state_at(alert, now),
                alert.active_at.timestamp(),
                value,
                alert.annotations.get("unit") or alert.labels.get("unit") or unit,
            )
        )
    return found, []


def log_edges(backend: SnapshotBackend) -> list[float]:
    """The first and last timestamp of every log file (from its index, built if need be)."""
    from evcli.backends.snapshot_logs import open_index_of

    edges: list[float] = []
    for path in backend.log_files():
        try:
            indexed = open_index_of(backend, path)
        except BackendError:
            continue  # log_counts reports it
        edges += [moment for moment in (indexed.first, indexed.last) if moment is not None]
    return edges


def _bounds(moments: TimeRange) -> tuple[float, float]:
    assert moments.start is not None and moments.end is not None  # the change finder bounds both ends
    return moments.start.timestamp(), moments.end.timestamp()


def change_inputs(backend: SnapshotBackend, baseline: TimeRange, window: TimeRange, step: float) -> ChangeInputs:
    """Everything the change finder compares, for the baseline and the window together."""
    assert baseline.start is not None and window.end is not None
    series, problems = series_points(backend, TimeRange(baseline.start, window.end))
    templates, levels, log_problems = log_counts(backend, baseline, window, step)
    return ChangeInputs(series, templates, levels, problems + log_problems)
