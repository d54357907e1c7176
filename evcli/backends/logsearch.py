"""Queries over a built log index (evcli.backends.logindex): the lines, stats and patterns of a file's
rows that match a filter (time range, level, keywords), in SQL.

Whole-file queries without keywords read the summary tables the build wrote, so they touch no row
but the newest `limit`; other queries count the distinct records of their matching lines. The tool
call's deadline aborts a running statement (DeadlineExceeded), as in the build.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from evcli.backends.logindex import IndexedFile, connect

# SQLite's longest LIKE pattern is 50,000 bytes (SQLITE_MAX_LIKE_PATTERN_LENGTH); a longer keyword (a
# 100 KB question read as one phrase) is found with instr() on the line's ASCII-lowered copy instead.
_LIKE_LONGEST = 40_000
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_LIKE_SPECIAL = re.compile(r"[\\%_]")  # escaped in a LIKE pattern: a keyword matches literally
# a keyword of digits alone matches a whole number: no digit after it, no digit or '.' before it (GLOB is
# case-sensitive, which digits do not mind; its [^…] classes give the boundaries LIKE cannot)
_TEXT = "coalesce(unescaped, line)"
_NUMBER_MATCH = (
    f"{_TEXT} = ? OR {_TEXT} GLOB ? || '[^0-9]*' OR {_TEXT} GLOB '*[^0-9.]' || ? || '[^0-9]*'"
    f" OR {_TEXT} GLOB '*[^0-9.]' || ?"
)


@dataclass(frozen=True)
class Filter:
    """What a query keeps: a closed ts range (None: any, untimed lines included), keywords (lower
    case), a minimum level index and whether lines without a level are dropped."""

    start: float | None
    end: float | None
    keywords: tuple[str, ...]
    level: int | None
    level_strict: bool = False
    whole: bool = False  # no range named: lines before any timestamp count too

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        if self.start is not None or self.end is not None:
            clauses.append("ts BETWEEN ? AND ?")
            args += [
                self.start if self.start is not None else float("-inf"),
                self.end if self.end is not None else float("inf"),
            ]
        elif not self.whole:
            clauses.append("ts IS NOT NULL")
        if self.level is not None:
            clauses.append("level >= ?" if self.level_strict else "(level >= ? OR level IS NULL)")
            args.append(self.level)
        for keyword in self.keywords:  # LIKE folds ASCII case as lower() does, without copying each line
            if keyword.isdigit() and keyword.isascii():  # a number is a whole number: 500 is not in 1500 or 0.500
                clauses.append(f"({_NUMBER_MATCH})")
                args += [keyword] * 4
                continue
            if len(keyword.encode("utf-8")) > _LIKE_LONGEST:  # SQLite refuses longer LIKE patterns
                clauses.append("instr(lower(coalesce(unescaped, line)), ?) > 0")  # lower(): ASCII, as LIKE folds
                args.append(keyword.translate(_ASCII_LOWER))
                continue
            clauses.append("coalesce(unescaped, line) LIKE ? ESCAPE '\\'")
            args.append("%" + _LIKE_SPECIAL.sub(r"\\\g<0>", keyword) + "%")
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


# A pattern's example line (its newest), its level and whether it starts its record: a line with a
# clock time of its own, not a traceback frame or continuation line of the record above it.
_EXAMPLE = "l.line, l.level, l.record = l.lineno"


@dataclass
class FileMatches:
    """One file's matches: the newest `limit` rows, counts per level, first/last ts, patterns."""

    rows: list[tuple[Any, ...]]  # (lineno, ts, level, derived, instance, line), newest first
    by_level: dict[int | None, int]
    first: float | None
    last: float | None
    patterns: list[dict[str, Any]] = field(
        default_factory=list
    )  # {template, count, first, last, example, level, starts_record}
    records: int = 0  # records (a line with its timestamp and the lines without one after it) matching

    @property
    def total(self) -> int:
        return sum(self.by_level.values())


def search(indexed: IndexedFile, wanted: Filter, limit: int, patterns: int = 20) -> FileMatches:
    """The matches of `wanted` in one file. The whole file without keywords is counted from the
    per-(level, template) summary; otherwise a keyword or level filter (no index serves it) is
    evaluated once, into a temporary table of the matching line numbers, which the counts, the
    newest rows and the patterns then read; a bare time range is read through the ts index."""
    where, args = wanted.where()
    with connect(indexed.db) as conn:
        if wanted.whole and wanted.start is None and wanted.end is None and not wanted.keywords:
            return _from_summary(conn, wanted, limit, patterns)
        source = "lines"
        if wanted.keywords or wanted.level is not None:
            conn.execute(
                f"CREATE TEMP TABLE hits AS SELECT lineno, ts, level, template, record FROM lines{where}", args
            )
            source, where, args = "temp.hits", "", []
        counts = conn.execute(f"SELECT level, count(*), min(ts), max(ts) FROM {source}{where} GROUP BY level", args)
        by_level, first, last = _levels(counts)
        if not by_level:
            return FileMatches([], {}, None, None)
        rows = _newest_rows(conn, source, where, args, limit)
        found = conn.execute(
            f"SELECT t.text, m.n, m.low, m.high, {_EXAMPLE} FROM (SELECT template, count(*) AS n, min(ts) AS low,"
            f" max(ts) AS high, max(lineno) AS example FROM {source}{where} GROUP BY template"
            " ORDER BY n DESC LIMIT ?) AS m JOIN templates AS t ON t.id = m.template"
            " JOIN lines AS l ON l.lineno = m.example ORDER BY m.n DESC",
            [*args, patterns],
        ).fetchall()
        records = conn.execute(f"SELECT count(DISTINCT record) FROM {source}{where}", args).fetchone()[0]
    return FileMatches(rows, by_level, first, last, _pattern_dicts(found), records)


def instance_counts(indexed: IndexedFile, wanted: Filter) -> dict[str, int]:
    """Matching lines per instance (the host, pod or node a line names; lines naming none left out)."""
    where, args = wanted.where()
    where = (where + " AND" if where else " WHERE") + " instance IS NOT NULL AND instance != ''"
    with connect(indexed.db) as conn:
        return dict(conn.execute(f"SELECT instance, count(*) FROM lines{where} GROUP BY instance", args).fetchall())


def matching_lines(indexed: IndexedFile, wanted: Filter) -> Iterator[str]:
    """The text of every line `wanted` keeps, in file order (what `count_by` counts over)."""
    where, args = wanted.where()
    with connect(indexed.db) as conn:
        yield from (row[0] for row in conn.execute(f"SELECT coalesce(unescaped, line) FROM lines{where}", args))


def _from_summary(conn: sqlite3.Connection, wanted: Filter, limit: int, patterns: int) -> FileMatches:
    """A whole-file query without keywords (it filters only by level) from the summaries."""
    where, args = wanted.where()
    counts = conn.execute(f"SELECT level, sum(n), min(low), max(high) FROM summary{where} GROUP BY level", args)
    by_level, first, last = _levels(counts)
    if not by_level:
        return FileMatches([], {}, None, None)
    rows = _newest_rows(conn, "lines", where, args, limit)
    found = conn.execute(
        f"SELECT t.text, m.n, m.low, m.high, {_EXAMPLE} FROM (SELECT template, sum(n) AS n, min(low) AS low,"
        f" max(high) AS high, max(example) AS example FROM summary{where} GROUP BY template"
        " ORDER BY n DESC LIMIT ?) AS m JOIN templates AS t ON t.id = m.template"
        " JOIN lines AS l ON l.lineno = m.example ORDER BY m.n DESC",
        [*args, patterns],
    ).fetchall()
    return FileMatches(rows, by_level, first, last, _pattern_dicts(found), _summary_records(conn, wanted))


def _summary_records(conn: sqlite3.Connection, wanted: Filter) -> int:
    """Records holding a line the level filter keeps: one at the level or above, or (unless
    strict) one without a level."""
    if wanted.level is None:
        where = ""
    else:
        where = " WHERE top >= :level" if wanted.level_strict else " WHERE top >= :level OR unleveled"
    return conn.execute(f"SELECT coalesce(sum(n), 0) FROM record_tops{where}", {"level": wanted.level}).fetchone()[0]


def _levels(counts: Iterator[tuple[Any, ...]]) -> tuple[dict[int | None, int], float | None, float | None]:
    by_level: dict[int | None, int] = {}
    first = last = None
    for level, count, low, high in counts:
        by_level[level] = count
        first = low if first is None or (low is not None and low < first) else first
        last = high if last is None or (high is not None and high > last) else last
    return by_level, first, last


def _newest_rows(conn: sqlite3.Connection, source: str, where: str, args: list[Any], limit: int) -> list[Any]:
    return conn.execute(
        "SELECT l.lineno, l.ts, l.level, l.derived, l.instance, l.line FROM (SELECT lineno FROM"
        f" {source}{where} ORDER BY ts DESC, lineno DESC LIMIT ?) AS h JOIN lines AS l ON l.lineno = h.lineno"
        " ORDER BY l.ts DESC, l.lineno DESC",
        [*args, limit],
    ).fetchall()


def _pattern_dicts(found: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    return [
        {
            "template": t,
            "count": n,
            "first": low,
            "last": high,
            "example": line,
            "level": level,
            "starts_record": bool(head),
        }
        for t, n, low, high, line, level, head in found
    ]
