"""What the change finder reads from a snapshot: every metric series' points and every log file's
counts per template and per level, over a baseline and an incident window.

Invariants:
  - a series is one column of one metric file; a file named after a pod (`checkout-7c9f6d8b5-x2k4q`)
    belongs to its Deployment's service, with the pod as the series' instance;
  - a cell that is empty, NaN or not a number is no point (counted in `skipped`), a row without a
    readable timestamp likewise: a broken row is stated, never a crash;
  - log counts come from each file's persistent index (evcli.backends.logindex), counted with numpy over
    its store's rows: lines per template and highest level inside each range (record starts only: a
    stack trace is one line), and lines at WARN and at ERROR or above per bucket of the window's step;
    the baseline ends where the window starts: [start, end) then [start, end];
  - a file's counts take one pass over its store a block of row groups at a time (`StoredLog.groups`, in
    file order, the deadline checked before each), each block's counts added to the file's: per template
    its rows, highest level, first ts and newest line (a later block's replaces an earlier one's), per
    bucket its rows. Memory holds a block (and the next, read ahead), the side lists and these tallies,
    never a whole column, so it does not grow with the log; the counts equal those over whole columns;
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
    from evcli.backends.logstore import Group, StoredLog
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
            before, during = _tallies(stored, ((baseline, False), (window, True)), step)
            templates += _template_counts(stored, service, indexed.relative, before, during)
        levels += [
            LevelBuckets(
                service, indexed.relative, name, step, before.buckets[name].tolist(), during.buckets[name].tolist()
            )
            for name in ("ERROR", "WARN")
        ]
    return templates, levels, problems


class _Tally:
    """What the record starts (a stack trace counts once) with ts inside one range add up to, taken a block
    of rows at a time in file order (`add`): per template code its rows, highest level (-1: none, as the
    column holds it), first ts and newest row (its line number, start and length: the example); and per
    bucket of `step` seconds from the range's start its rows at WARN (below ERROR) and at ERROR or above,
    the last bucket taking what a partial step leaves."""

    def __init__(self, templates: int, moments: TimeRange, closed: bool, step: float) -> None:
        import numpy as np

        self.start, self.end = _bounds(moments)
        self.closed, self.step = closed, step
        self.count = max(1, int((self.end - self.start) // step) + (1 if (self.end - self.start) % step else 0))
        self.rows = np.zeros(templates, np.int64)
        self.top = np.full(templates, -1, np.int64)
        self.first = np.full(templates, np.inf)
        self.newest = {name: np.full(templates, -1, np.int64) for name in ("lineno", "start", "length")}
        self.buckets = {"ERROR": np.zeros(self.count, np.int64), "WARN": np.zeros(self.count, np.int64)}

    def add(self, group: Group, starts: Any) -> None:
        """Tally the rows of `group` that start a record (the mask `starts`) with ts inside the range."""
        import numpy as np

        rows = np.flatnonzero(starts & _inside(group["ts"], self.start, self.end, self.closed))
        if not len(rows):
            return
        codes, levels, ts = group["template"][rows], group["level"][rows], group["ts"][rows]
        self.rows += np.bincount(codes, minlength=len(self.rows))
        np.maximum.at(self.top, codes, levels)
        np.minimum.at(self.first, codes, ts)
        present, reversed_at = np.unique(codes[::-1], return_index=True)
        newest = rows[len(rows) - 1 - reversed_at]  # each code's last row in this block: a later block's win
        for name, values in self.newest.items():
            values[present] = group[name][newest]
        for name, at_level in (("ERROR", levels >= ERROR), ("WARN", (levels >= WARN) & (levels < ERROR))):
            self.buckets[name] += _bucketed(ts[at_level], self.start, self.step, self.count)


def _tallies(stored: StoredLog, ranges: tuple[tuple[TimeRange, bool], ...], step: float) -> list[_Tally]:
    """One `_Tally` per (range, closed) of `ranges` ([start, end] when closed, else [start, end)), over one
    pass of the store's rows a block at a time (`StoredLog.groups`)."""
    tallies = [_Tally(len(stored.side("templates")), moments, closed, step) for moments, closed in ranges]
    for group in stored.groups():
        starts = group["record"] == group["lineno"]
        for tally in tallies:
            tally.add(group, starts)
    return tallies


def _template_counts(
    stored: StoredLog, service: str, source: str, before: _Tally, during: _Tally
) -> list[TemplateCounts]:
    """The templates with lines in the baseline (`before`) or the window (`during`), in the order they
    first occur in the file (their codes' order); the example: the newest line inside the window, else
    inside the baseline, shown as matched (its unescaped text where it has one)."""
    import numpy as np

    special_linenos, special_texts = stored.matched_texts()
    shown = dict(zip(special_linenos.tolist(), special_texts, strict=True))
    texts, names = stored.texts(), stored.side("templates")
    found = []
    for code in np.flatnonzero(before.rows + during.rows).tolist():
        top = max(int(before.top[code]), int(during.top[code]))
        example = during if during.rows[code] else before
        lineno, start, length = (int(example.newest[name][code]) for name in ("lineno", "start", "length"))
        found.append(
            TemplateCounts(
                service=service,
                source=source,
                template=names[code],
                level=None if top < 0 else LEVELS[top],
                baseline=int(before.rows[code]),
                incident=int(during.rows[code]),
                first=float(during.first[code]) if during.rows[code] else None,
                example=shown[lineno] if lineno in shown else stored.text(lineno, start, length, texts),
            )
        )
    return found


def _inside(ts: Any, start: float, end: float, closed: bool) -> Any:
    """The mask of `ts` in [start, end) ([start, end] when `closed`); NaN compares false: no ts is out."""
    return (ts >= start) & ((ts <= end) if closed else (ts < end))


def _bucketed(ts: Any, start: float, step: float, count: int) -> Any:
    """How many of `ts` (all >= start) fall in each of `count` buckets of `step` seconds from `start`, the
    last one taking the rest."""
    import numpy as np

    return np.bincount(np.minimum(((ts - start) / step).astype(np.int64), count - 1), minlength=count)


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
        counts = np.zeros(count, np.int64)
        with opened(indexed) as stored:
            for group in stored.groups():
                kept = (group["record"] == group["lineno"]) & (group["level"] >= ERROR)
                counts += _bucketed(group["ts"][kept & _inside(group["ts"], first, last, True)], first, step, count)
        if counts.any():
            times = first + step * np.arange(count)
            found.append(
                SeriesPoints(
                    backend.service_of_file(path),
                    "ERROR lines",
                    "lines",
                    indexed.relative,
                    None,
                    times,
                    counts.astype(np.float64),
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
