"""Metric CSV files of a snapshot: columns with units, cells, timestamps and per-series summaries.

A file is a timestamp column, then one column per metric. Invariants:
  - a header names the metric and may carry its unit in brackets or parentheses, with or
    without a space: `cpu_usage[%]`, `CpuUsageRate(%)`, `mem_used (MiB)` → name `CpuUsageRate`,
    unit `%`; a series is asked for by its header or its name, case-insensitively and ignoring
    spaces (`find_columns`), and an unknown name is answered with the close names, not an error;
  - empty, `NaN`, `null` and `None` cells are no point (skipped); other text is a `ValueError`;
  - a timestamp is epoch seconds/milliseconds (or finer, told apart by magnitude) or ISO 8601
    with `T` or space and `-` or `/` date separators; without a zone it is in the environment's zone;
  - rows may be irregular and unsorted (summaries: `evcli.backends.series`);
  - a file has at most MAX_METRIC_COLUMNS metric columns: a wider one is refused from its header
    (`MetricFileError`, which its reader reports naming the file), before any row is read.
"""

from __future__ import annotations

import csv
import difflib
import math
import re
from collections.abc import Iterable, Iterator
from datetime import datetime, tzinfo
from itertools import chain
from typing import NamedTuple

from evcli.backends.logformats.base import epoch_stamp, iso_time
from evcli.backends.series import SeriesSummary
from evcli.core.time import TimeRange, localize

_HEADER = re.compile(r"^\s*(?P<name>.*?)\s*(?:\[(?P<bracket>[^\]]*)\]|\((?P<paren>[^)]*)\))?\s*$")
_EPOCH = re.compile(r"^\d{9,19}(?:\.\d+)?$")
_SLASH_DATE = re.compile(r"^(\d{4})/(\d\d)/(\d\d)")
_SPACES = re.compile(r"\s+")
EMPTY_CELLS = frozenset({"", "nan", "null", "none"})
# Metric columns of one file. Real exports have tens to hundreds; past this a file is refused, so the
# work per file (and a tool answer listing its series) stays bounded.
MAX_METRIC_COLUMNS = 10_000


class MetricColumn(NamedTuple):
    name: str
    unit: str
    header: str


def metric_column(header: str) -> MetricColumn:
    """`cpu_usage[%]` → (cpu_usage, %); `CpuUsageRate(%)` and `mem_used (MiB)` the same way."""
    match = _HEADER.match(header)
    assert match is not None  # the pattern matches any string
    unit = match["bracket"] if match["bracket"] is not None else match["paren"]
    return MetricColumn(match["name"], (unit or "").strip(), header.strip())


def metric_number(cell: str) -> float | None:
    """A metric cell as a float; None for an empty/NaN/null cell. Raises ValueError for text."""
    text = cell.strip()
    if text.lower() in EMPTY_CELLS:
        return None
    number = float(text)
    return number if math.isfinite(number) else None


def metric_time(text: str, zone: tzinfo) -> datetime | None:
    """An aware time from a timestamp cell (see the module invariants), None when unreadable."""
    text = text.strip()
    if _EPOCH.match(text):
        return epoch_stamp(float(text))
    moment = iso_time(_SLASH_DATE.sub(r"\1-\2-\3", text))
    if moment is None:
        return None
    return localize(moment, zone) if moment.tzinfo is None else moment


class MetricFileError(ValueError):
    """A metric file too wide to read, or a row of one that cannot be read (named by its line); the
    message leaves the file to its reader to name."""


class MetricRow(NamedTuple):
    line: int  # 1-based line of the file (the header is line 1)
    timestamp: datetime | None
    raw_timestamp: str
    cells: list[str]


def read_metric_file(handle: Iterable[str], zone: tzinfo) -> tuple[list[MetricColumn], Iterator[MetricRow]]:
    """The metric columns of an open CSV and an iterator over its non-blank rows.
    Raises MetricFileError for a header of more than MAX_METRIC_COLUMNS metric columns."""
    lines = iter(handle)
    first = next(lines, "")
    reader = csv.reader(chain([first], lines))
    header = next(reader, None) or []
    if len(header) - 1 > MAX_METRIC_COLUMNS:
        # a header line without its end was cut by the line limit (or is all the file): it holds more
        at_least = "" if first.endswith(("\n", "\r")) else "at least "
        raise MetricFileError(
            f"{at_least}{len(header) - 1:,} metric columns, more than the {MAX_METRIC_COLUMNS:,} evcli reads "
            "from one file; split it into files of fewer columns"
        )
    columns = [metric_column(name) for name in header[1:]]

    def rows() -> Iterator[MetricRow]:
        for cells in reader:
            if not cells or not any(cell.strip() for cell in cells):
                continue
            yield MetricRow(reader.line_num, metric_time(cells[0], zone), cells[0], cells[1:])

    return columns, rows()


def _key(name: str) -> str:
    return _SPACES.sub("", name).lower()


def find_columns(columns: list[MetricColumn], metric: str | None) -> list[int]:
    """Indexes of the columns `metric` names (all when None), by header or bare name."""
    if metric is None:
        return list(range(len(columns)))
    wanted = _key(metric)
    return [index for index, column in enumerate(columns) if wanted in (_key(column.name), _key(column.header))]


def close_names(columns: list[MetricColumn], metric: str) -> list[str]:
    """Series names that look like `metric` (difflib ratio ≥ 0.6 on the bare names)."""
    names = {_key(column.name): column.name for column in columns}
    return [names[key] for key in difflib.get_close_matches(_key(metric), list(names), n=3, cutoff=0.6)]


class FileSummary(NamedTuple):
    summaries: dict[int, SeriesSummary]  # column index -> summary of its points in the range
    first: datetime | None  # the file's first and last row time (whole file, any range)
    last: datetime | None


def summarise(
    rows: Iterable[MetricRow], columns: list[MetricColumn], wanted: list[int], searched: TimeRange | None
) -> FileSummary:
    """The summaries of the `wanted` columns over the rows inside `searched` (all rows when None).
    Raises MetricFileError for a row without a timestamp or with a cell that is not a number."""
    summaries: dict[int, SeriesSummary] = {}
    first = last = None
    for row in rows:
        moment = row.timestamp
        if moment is None:
            raise MetricFileError(f"line {row.line}: {row.raw_timestamp!r} is not a timestamp")
        first = moment if first is None else min(first, moment)
        last = moment if last is None else max(last, moment)
        if searched is not None and not searched.contains(moment):
            continue
        for index in wanted:
            cell = row.cells[index] if index < len(row.cells) else ""
            try:
                number = metric_number(cell)
            except ValueError:
                raise MetricFileError(
                    f"line {row.line}: {columns[index].header} value {cell!r} is not a number"
                ) from None
            if number is None:
                continue
            if index in summaries:
                summaries[index].add(number, moment)
            else:
                summaries[index] = SeriesSummary.start(number, moment)
    return FileSummary(summaries, first, last)
