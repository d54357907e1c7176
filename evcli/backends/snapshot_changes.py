"""What the change finder reads from a snapshot: every metric series' points and every log file's
counts per template and per level, over a baseline and an incident window.

Invariants:
  - a series is one column of one metric file; a file named after a pod (`checkout-7c9f6d8b5-x2k4q`)
    belongs to its Deployment's service, with the pod as the series' instance;
  - a cell that is empty, NaN or not a number is no point (counted in `skipped`), a row without a
    readable timestamp likewise: a broken row is stated, never a crash;
  - log counts come from each file's persistent index (evcli.backends.logindex), counted with numpy over
    its store's columns: lines per template and highest level inside each range (record starts only: a
    stack trace is one line), and lines at WARN and at ERROR or above per bucket of the window's step;
    the baseline ends where the window starts: [start, end) then [start, end];
  - nothing here judges: evcli.diagnosis compares.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evcli.backends.base import LEVELS
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange

if TYPE_CHECKING:
    from evcli.backends.logstore import StoredLog
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
    from evcli.backends.logsearch import opened
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
        with opened(indexed) as stored:
            templates += _template_counts(stored, service, indexed.relative, baseline, window)
            for level_index, name in ((ERROR, "ERROR"), (WARN, "WARN")):
                buckets = [
                    _level_buckets(stored, level_index, moments, step, closed)
                    for moments, closed in ((baseline, False), (window, True))
                ]
                levels.append(LevelBuckets(service, indexed.relative, name, step, buckets[0], buckets[1]))
    return templates, levels, problems


def _template_counts(
    stored: StoredLog, service: str, source: str, baseline: TimeRange, window: TimeRange
) -> list[TemplateCounts]:
    """Record starts per template in the baseline [start, end) and the window [start, end], in the order
    the templates first occur in the file."""
    before = _per_template(stored, _record_starts(stored, *_bounds(baseline), closed=False))
    during = _per_template(stored, _record_starts(stored, *_bounds(window), closed=True))
    special_rows, special_texts = stored.special()  # rows whose text is not their bytes: unescaped first
    shown = dict(zip(special_rows.tolist(), special_texts, strict=True))
    texts = stored.texts()
    found = []
    for code in sorted(set(before) | set(during)):
        earlier, inside = before.get(code), during.get(code)
        level = max((row[0] for row in (earlier, inside) if row and row[0] is not None), default=None)
        example = (inside or earlier)[3]  # type: ignore[index]
        found.append(
            TemplateCounts(
                service=service,
                source=source,
                template=stored.side("templates")[code],
                level=None if level is None else LEVELS[level],
                baseline=earlier[1] if earlier else 0,
                incident=inside[1] if inside else 0,
                first=inside[2] if inside else None,
                example=shown[example] if example in shown else stored.line(example, texts),
            )
        )
    return found


def _record_starts(stored: StoredLog, start: float, end: float, *, closed: bool) -> Any:
    """The mask of the rows that start a record (a stack trace counts once) with ts in [start, end)
    ([start, end] when `closed`)."""
    ts = stored.column("ts")
    inside = (ts >= start) & ((ts <= end) if closed else (ts < end))  # NaN compares false: no ts is out
    return inside & (stored.column("record") == stored.column("lineno"))


def _per_template(stored: StoredLog, keep: Any) -> dict[int, tuple[int | None, int, float, int]]:
    """Template code -> (highest level or None, rows, first ts, newest row) of the rows `keep` holds."""
    import numpy as np

    rows = np.flatnonzero(keep)
    if not len(rows):
        return {}
    codes = stored.column("template")[rows]
    size = int(codes.max()) + 1
    counts = np.bincount(codes, minlength=size)
    top = np.full(size, -1, np.int64)  # -1: no level, as the column holds it
    first = np.full(size, np.inf)
    newest = np.full(size, -1, np.int64)
    np.maximum.at(top, codes, stored.column("level")[rows])
    np.minimum.at(first, codes, stored.column("ts")[rows])
    np.maximum.at(newest, codes, rows)
    return {
        code: (None if top[code] < 0 else int(top[code]), int(counts[code]), float(first[code]), int(newest[code]))
        for code in np.flatnonzero(counts).tolist()
    }


def _level_buckets(stored: StoredLog, level: int, moments: TimeRange, step: float, closed: bool) -> list[int]:
    """Record starts at `level` (WARN: below ERROR; ERROR: and above) per bucket of `step` seconds from the
    range's start; the last bucket takes what a partial step leaves."""
    import numpy as np

    start, end = _bounds(moments)
    count = max(1, int((end - start) // step) + (1 if (end - start) % step else 0))
    levels = stored.column("level")
    at_level = (levels >= level) & ((levels < ERROR) if level < ERROR else True)
    ts = stored.column("ts")[_record_starts(stored, start, end, closed=closed) & at_level]
    return np.bincount(np.minimum(((ts - start) / step).astype(np.int64), count - 1), minlength=count).tolist()


def level_series(backend: SnapshotBackend, first: float, last: float, step: float) -> list[SeriesPoints]:
    """Per log file, its lines at ERROR and above per bucket of `step` over [first, last], as a series
    (times: bucket starts; values: counts) for finding where an incident starts."""
    import numpy as np

    from evcli.backends.logsearch import opened
    from evcli.backends.snapshot_logs import open_index_of

    count = max(1, int((last - first) // step) + 1)
    found: list[SeriesPoints] = []
    for path in backend.log_files():
        try:
            indexed = open_index_of(backend, path)
        except BackendError:
            continue  # log_counts reports it
        with opened(indexed) as stored:
            ts = stored.column("ts")[
                _record_starts(stored, first, last, closed=True) & (stored.column("level") >= ERROR)
            ]
        buckets = np.minimum(((ts - first) / step).astype(np.int64), count - 1)
        counts = np.bincount(buckets, minlength=count).astype(np.float64)
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
