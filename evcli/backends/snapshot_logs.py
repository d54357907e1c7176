"""Log queries over a snapshot's log files, through their persistent indexes (DESIGN §5, issue 9).

Invariants:
  - a query names a range or none; none covers the whole snapshot (every line, also those before
    the first timestamp) and the stats say so (`range_origin: whole snapshot`);
  - a `level` filter keeps lines without a level unless `level_strict`; stats count matches per
    level with `none` for lines without one;
  - every returned item carries its timestamp in the environment's zone, the original line and
    its source (path relative to the environment, 1-based line number); `digests` holds the
    sha256 of every file the query read;
  - `total` and the stats count every match in the range; `limit` caps only the items returned
    (the newest, oldest first; ties in file order);
  - items are lines, one each, and `total` counts lines; `stats.records` counts the records they
    belong to (a line with a timestamp and the lines without one after it: stack traces,
    continuations), a record matching when any of its lines does.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, Protocol

from evcli.backends.addresses import top_counts
from evcli.backends.base import LEVELS, LogQuery, LogResult, canonical_level
from evcli.backends.logformats import LineReader, LogFormat, ParseContext, detect, format_named
from evcli.backends.logindex import IndexedFile, open_index
from evcli.backends.logrows import epoch, split_instance
from evcli.backends.logsearch import FileMatches, Filter, address_counts, instance_counts, path_counts, search
from evcli.backends.snapshot_config import EnvConfig
from evcli.core.errors import BackendError
from evcli.core.files import LIMITS, open_binary
from evcli.core.time import TimeRange

MAX_PATTERNS = 20
WHOLE = "whole snapshot"
NAMED = "question/call"
_TAIL_BYTES = 64 * 1024
_EDGE_LINES = 64  # lines read at each end for the edge times; the whole 64 KiB only when these have none


class LogSnapshot(Protocol):
    """What searching a snapshot's logs reads of the snapshot (`evcli.backends.snapshot.SnapshotBackend`)."""

    directory: Path

    @property
    def config(self) -> EnvConfig: ...

    @property
    def span(self) -> TimeRange | None: ...

    def log_files(self, service: str | None = None) -> list[Path]: ...

    def relative(self, path: Path) -> str: ...

    def parse_context(self, path: Path) -> ParseContext: ...

    def service_of_file(self, path: Path) -> str: ...


def stamp(epoch_seconds: float | None, tz: tzinfo) -> str | None:
    """An epoch as ISO 8601 in the environment's zone, with milliseconds and offset."""
    if epoch_seconds is None:
        return None
    return datetime.fromtimestamp(epoch_seconds, tz).isoformat(timespec="milliseconds")


def query_logs(backend: LogSnapshot, query: LogQuery, service: str | None) -> LogResult:
    """Run `query` over the log files of `service` (None: all services)."""
    tz = backend.config.timezone
    minimum = canonical_level(query.level) if query.level else None
    if query.level and minimum is None:
        raise ValueError(f"unknown log level {query.level!r}")
    named = query.effective_range()
    wanted = Filter(
        start=None if named is None or named.start is None else named.start.timestamp(),
        end=None if named is None or named.end is None else named.end.timestamp(),
        keywords=tuple(keyword.lower() for keyword in query.keywords if keyword),
        level=None if minimum is None else LEVELS.index(minimum),
        level_strict=query.level_strict,
        whole=named is None,
    )
    indexes = [open_index_of(backend, path) for path in backend.log_files(service)]
    found = [(indexed, search(indexed, wanted, query.limit, MAX_PATTERNS)) for indexed in indexes]
    searched = _searched_range(backend, named, indexes)
    items = [_item(backend, indexed, row, tz) for indexed, row in _newest(found, query.limit)]
    total = sum(matches.total for _, matches in found)
    stats = _stats(found, total, searched, named, query, tz)
    if query.count_by == "address":
        stats["by_address"] = top_counts(_per_file(address_counts, found, wanted))
    elif query.count_by == "path":
        stats["by_path"] = top_counts(_per_file(path_counts, found, wanted))
    elif query.count_by == "instance":
        stats["by_instance"] = top_counts(_per_file(instance_counts, found, wanted))
    return LogResult(
        logs=items,
        total=total,
        truncated=total > len(items),
        message=_message(total, len(items), stats["by_level"].get("none", 0), sum(i.cut for i in indexes)),
        stats=stats,
        patterns=_patterns(found, tz),
        searched_range=searched,
        digests={indexed.relative: indexed.digest for indexed in indexes},
    )


def _per_file(
    counts: Callable[[IndexedFile, Filter], Mapping[str, int]],
    found: list[tuple[IndexedFile, FileMatches]],
    wanted: Filter,
) -> Counter[str]:
    """`counts` of every file with a match, added (lines are counted one by one, so per file)."""
    total: Counter[str] = Counter()
    for indexed, matches in found:
        total.update(counts(indexed, wanted) if matches.total else {})
    return total


def open_index_of(backend: LogSnapshot, path: Path) -> IndexedFile:
    """The index of one of the snapshot's log files (BackendError when it cannot be read)."""
    try:
        return open_index(path, backend.directory, backend.parse_context(path))
    except OSError as error:
        raise BackendError(f"{backend.relative(path)}: cannot read: {error}") from error


def _searched_range(backend: LogSnapshot, named: TimeRange | None, indexes: list[IndexedFile]) -> str:
    """The range searched, absolute: the named one, its open ends filled by the whole snapshot's
    (`SnapshotBackend.span`, the same for every service), or that span when none was named. A
    searched file with lines outside the span (after the clock) widens it: the range covers
    every line the search counted."""
    tz = backend.config.timezone
    span = backend.span or TimeRange(None, None)
    firsts = [datetime.fromtimestamp(indexed.first, tz) for indexed in indexes if indexed.first is not None]
    lasts = [datetime.fromtimestamp(indexed.last, tz) for indexed in indexes if indexed.last is not None]
    firsts += [span.start] if span.start is not None else []
    lasts += [span.end] if span.end is not None else []
    if not firsts or not lasts:
        return named.text(tz) if named is not None else ""
    return (named or TimeRange(None, None)).bounded(min(firsts), max(lasts)).text(tz)


def _newest(found: list[tuple[IndexedFile, FileMatches]], limit: int) -> list[tuple[IndexedFile, tuple[Any, ...]]]:
    """The newest `limit` rows of all files, oldest first; untimed rows count as oldest, ties
    keep file order (files in name order, lines in file order)."""
    keyed = [
        ((row[1] if row[1] is not None else float("-inf"), order, row[0]), indexed, row)
        for order, (indexed, matches) in enumerate(found)
        for row in matches.rows
    ]
    newest = heapq.nlargest(limit, keyed, key=lambda entry: entry[0]) if limit > 0 else []
    return [(indexed, row) for _, indexed, row in sorted(newest, key=lambda entry: entry[0])]


def _item(backend: LogSnapshot, indexed: IndexedFile, row: tuple[Any, ...], tz: tzinfo) -> dict[str, Any]:
    lineno, ts, level, derived, instance, line = row
    message = line.strip()
    parsed = LineReader(_format(indexed), backend.parse_context(backend.directory / indexed.relative)).read(line).parsed
    if parsed is not None:
        message = split_instance(parsed.fields, parsed.message)[1]
    return {
        "timestamp": stamp(ts, tz),
        "level": None if level is None else LEVELS[level],
        "level_derived": bool(derived),
        "service": backend.service_of_file(backend.directory / indexed.relative),
        "instance": instance or "",
        "message": message,
        "line": line,
        "source": {"path": indexed.relative, "line": lineno},
    }


def _format(indexed: IndexedFile):
    return None if indexed.format is None else format_named(indexed.format)


def _stats(
    found: list[tuple[IndexedFile, FileMatches]],
    total: int,
    searched: str,
    named: TimeRange | None,
    query: LogQuery,
    tz: tzinfo,
) -> dict[str, Any]:
    by_level = dict.fromkeys([*LEVELS, "none"], 0)
    for _, matches in found:
        for level, count in matches.by_level.items():
            by_level["none" if level is None else LEVELS[level]] += count
    firsts = [matches.first for _, matches in found if matches.first is not None]
    lasts = [matches.last for _, matches in found if matches.last is not None]
    filters: dict[str, Any] = {"service": query.service, "keywords": list(query.keywords), "level": query.level}
    if query.level_strict:
        filters["level_strict"] = True
    return {
        "total": total,
        "records": sum(matches.records for _, matches in found),
        "first": stamp(min(firsts), tz) if firsts else None,
        "last": stamp(max(lasts), tz) if lasts else None,
        "by_level": {level: count for level, count in by_level.items() if count or level == "none"},
        "by_source": {indexed.relative: matches.total for indexed, matches in found if matches.total},
        "range": searched,
        "range_origin": WHOLE if named is None else NAMED,
        "filters": filters,
    }


def _patterns(found: list[tuple[IndexedFile, FileMatches]], tz: tzinfo) -> list[dict[str, Any]]:
    """Each file's top templates merged by text (counts added), the MAX_PATTERNS most frequent."""
    merged: dict[str, dict[str, Any]] = {}
    for _, matches in found:
        for pattern in matches.patterns:
            known = merged.get(pattern["template"])
            if known is None:
                merged[pattern["template"]] = dict(pattern)
                continue
            known["count"] += pattern["count"]
            known["first"] = _min(known["first"], pattern["first"])
            known["last"] = _max(known["last"], pattern["last"])
    ordered = sorted(merged.values(), key=lambda pattern: -pattern["count"])[:MAX_PATTERNS]
    return [
        {
            **pattern,
            "first": stamp(pattern["first"], tz),
            "last": stamp(pattern["last"], tz),
            "level": None if pattern["level"] is None else LEVELS[pattern["level"]],
        }
        for pattern in ordered
    ]


def _min(left: float | None, right: float | None) -> float | None:
    return right if left is None else left if right is None else min(left, right)


def _max(left: float | None, right: float | None) -> float | None:
    return right if left is None else left if right is None else max(left, right)


def _message(total: int, shown: int, unleveled: int, cut: int) -> str:
    message = "no matching log lines" if total == 0 else f"{total} matching line{'s' * (total != 1)}"
    if total > shown:
        message += f" (newest {shown} returned)"
    if unleveled:
        message += f"; {unleveled} without a level"
    if cut:
        message += (
            f"; {cut} line{'s' * (cut != 1)} longer than {LIMITS.max_line_chars} characters"
            " searched and shown up to that length"
        )
    return message


def edge_timestamps(path: Path, root: Path, context: ParseContext) -> tuple[datetime | None, datetime | None]:
    """(oldest, newest) timestamp of a log file from its first and last _EDGE_LINES lines, else from
    its first and last 64 KiB (logs are appended in time order; the format is detected once, on its
    first lines), so the clock and the snapshot's span do not cost a full read; from its index when
    those parts have none."""
    with open_binary(path, root) as handle:
        head = handle.read(_TAIL_BYTES).decode("utf-8", errors="replace").splitlines()
        size = handle.seek(0, 2)
        tail = None
        if size > _TAIL_BYTES:
            handle.seek(size - _TAIL_BYTES)
            tail = handle.read().decode("utf-8", errors="replace").splitlines()[1:]  # its first line is cut
            head = head[:-1]  # the head's last line is cut
    detection = detect(head[:_EDGE_LINES], context)  # what reads the lines whose times are taken
    form = None if detection.format is None else format_named(detection.format)
    oldest = _stamps(head[:_EDGE_LINES], form, context) or _stamps(head, form, context)
    ending = head if tail is None else tail
    newest = _stamps(ending[-_EDGE_LINES:], form, context) or _stamps(ending, form, context)
    first, last = min(oldest, default=None), max(newest, default=None)
    if tail is not None and (first is None or last is None):
        indexed = open_index(path, root, context)
        first = indexed.first if first is None else first
        last = indexed.last if last is None else last
    return _utc(first), _utc(last)


def _stamps(lines: list[str], form: LogFormat | None, context: ParseContext) -> list[float]:
    reader = LineReader(form, context)
    parsed = (read.parsed for read in map(reader.read, lines))
    return [epoch(line.timestamp, context.tz) for line in parsed if line is not None and line.timestamp is not None]


def _utc(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)
