"""A snapshot metric file as arrays, read once and kept while the file is unchanged (like the log index).

Invariants:
  - the arrays are the file's rows with a readable timestamp, in file order: `times` (epoch
    seconds) and `values` (rows × columns, NaN where a cell is empty, NaN or not a number);
    rows without a readable timestamp are counted in `unread`, never guessed;
  - the cache file is named by the file's sha256 (the log index's stat record spares re-hashing),
    the environment zone (times without one are read in it) and SCHEMA, and written to a private
    temporary file renamed into place, so a reader never sees half of one;
  - a damaged cache file is read again from the source.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path

import numpy as np

from evcli.backends.logindex import file_sha256
from evcli.backends.series import MAX_SAMPLES, SeriesSummary
from evcli.backends.snapshot_metrics import FileSummary, MetricColumn, metric_column, metric_number, read_metric_file
from evcli.core.paths import index_home
from evcli.core.time import TimeRange

SCHEMA = 4  # 3: a file over MAX_METRIC_COLUMNS is refused, so no cache of one is read again; 4: raw float64


@dataclass(frozen=True)
class MetricArrays:
    columns: list[MetricColumn]
    times: np.ndarray  # float64, epoch seconds
    values: np.ndarray  # float64, rows × columns
    unread: int  # rows without a readable timestamp
    invalid: int = 0  # cells holding text that is not a number (empty and NaN cells are not counted)


def metric_arrays(path: Path, root: Path, zone: tzinfo, reading) -> MetricArrays:
    """The arrays of one metric file; `reading(path)` opens its bounded lines (the snapshot's reader)."""
    digest = file_sha256(path, root).removeprefix("sha256:")
    key = hashlib.sha256(f"{SCHEMA}|{zone}".encode()).hexdigest()[:16]
    cache = index_home() / f"metrics-{digest}-{key}.f64"
    if cache.exists():
        try:
            return _load(cache)
        except (OSError, ValueError, KeyError):
            cache.unlink(missing_ok=True)
    with reading(path) as handle:
        found = _read(handle, zone)
    _save(cache, found)
    return found


def _read(handle, zone: tzinfo) -> MetricArrays:
    columns, rows = read_metric_file(handle, zone)
    times: list[float] = []
    cells: list[list[float]] = []
    unread = invalid = 0
    width = len(columns)
    for row in rows:
        if row.timestamp is None:
            unread += 1
            continue
        times.append(row.timestamp.timestamp())
        numbers = [_number(row.cells[index]) if index < len(row.cells) else np.nan for index in range(width)]
        invalid += sum(number is None for number in numbers)
        cells.append([np.nan if number is None else number for number in numbers])
    values = np.array(cells, dtype=float).reshape(len(times), width)
    return MetricArrays(columns, np.array(times, dtype=float), values, unread, invalid)


def _number(cell: str) -> float | None:
    """The cell's number, NaN for no point (empty, NaN, null), None for text that is no number."""
    try:
        value = metric_number(cell)
    except ValueError:
        return None
    return np.nan if value is None else value


def summaries(arrays: MetricArrays, wanted: list[int], searched: TimeRange | None) -> FileSummary:
    """What `evcli.backends.snapshot_metrics.summarise` returns for the same file, from its arrays:
    the `wanted` columns' points inside `searched` (ends included), the file's first and last time."""
    times = arrays.times
    if not times.size:
        return FileSummary({}, None, None)
    inside = np.ones(times.size, dtype=bool)
    if searched is not None and searched.start is not None:
        inside &= times >= searched.start.timestamp()
    if searched is not None and searched.end is not None:
        inside &= times <= searched.end.timestamp()
    found: dict[int, SeriesSummary] = {}
    for index in wanted:
        column = arrays.values[:, index]
        kept = np.flatnonzero(inside & ~np.isnan(column))
        if kept.size:
            found[index] = _summary(times[kept], column[kept])
    return FileSummary(found, _moment(float(times.min())), _moment(float(times.max())))


def _summary(times: np.ndarray, values: np.ndarray) -> SeriesSummary:
    """Min and max at the earliest time reached, last at the newest time (the later row on a tie)."""
    low, high = float(values.min()), float(values.max())
    newest = np.flatnonzero(times == times.max())[-1]
    samples = None
    if values.size <= MAX_SAMPLES:
        order = np.lexsort((values, times))
        samples = [(_moment(float(times[i])), float(values[i])) for i in order]
    return SeriesSummary(
        points=int(values.size),
        low=low,
        low_at=_moment(float(times[values == low].min())),
        high=high,
        high_at=_moment(float(times[values == high].min())),
        last=float(values[newest]),
        last_at=_moment(float(times[newest])),
        samples=samples,
    )


def _moment(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _save(cache: Path, found: MetricArrays) -> None:
    """The times and values side by side as raw little-endian float64 (read back without parsing anything:
    numpy's .npy header is read with `ast.literal_eval`, which CPython 3.11 cannot run in two threads at
    once); the headers, row count and unread count in its .json sidecar, written first (a cache is whole
    when its data file exists)."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    sidecar = {
        "headers": [column.header for column in found.columns],
        "rows": int(found.times.size),
        "unread": found.unread,
        "invalid": found.invalid,
    }
    _write_atomically(cache.with_suffix(".json"), json.dumps(sidecar).encode())
    matrix = np.column_stack([found.times, found.values]) if found.times.size else np.empty((0, 1 + len(found.columns)))
    handle, temporary = tempfile.mkstemp(dir=cache.parent, prefix=".tmp-", suffix=".f64")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(np.ascontiguousarray(matrix, dtype="<f8").tobytes())
        os.replace(temporary, cache)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _write_atomically(target: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _load(cache: Path) -> MetricArrays:
    sidecar = json.loads(cache.with_suffix(".json").read_text())
    columns = [metric_column(header) for header in sidecar["headers"]]
    flat = np.fromfile(cache, dtype="<f8")
    rows, width = int(sidecar["rows"]), 1 + len(columns)
    if flat.size != rows * width:
        raise ValueError("cache does not match its headers")
    matrix = flat.reshape(rows, width)
    return MetricArrays(columns, matrix[:, 0], matrix[:, 1:], int(sidecar["unread"]), int(sidecar["invalid"]))


__all__ = ["MetricArrays", "metric_arrays", "summaries"]
