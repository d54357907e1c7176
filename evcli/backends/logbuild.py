"""Building a log index file (evcli.backends.logindex states the invariants): a file is read once,
every line masked, parsed and inserted in batches into a private temporary SQLite file that is renamed
into place when complete. A file of PART_MIN_BYTES or more is read in parts, one per core: this process
reads the first, worker processes (`python -c`, killed at the tool call's deadline) the others into
part files, merged in file order into the rows reading it at once gives; no part starts where a private
key block may be open. The summary tables whole-file queries read are written as the rows go in.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import sqlite3
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO

from evcli.backends.logformats import SAMPLE_LINES, LineReader, ParseContext, detect, format_named
from evcli.backends.logrows import SCHEMA, Cursor, line_rows, masked_lines
from evcli.backends.parts import Window, Workers, cores
from evcli.core.files import Lines, check_deadline, open_binary, open_text
from evcli.core.redaction import MAX_KEY_BLOCK_LINES

_BATCH = 1_024  # rows per insert: the build's memory is about one batch of lines
_TEMPLATE_CACHE = 4_096  # distinct templates kept in memory while building (then looked up in SQL)
_PROGRESS_MIN_BYTES = 8 << 20  # a progress bar only for files that take a noticeable time
PART_MIN_BYTES = 16 << 20  # a file this big is read in parts, one per core
_KEY_WINDOW_BYTES = 4 << 20  # how far before a part's start a key block is looked for
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_SUMS_KEPT = 1 << 13  # (level, template) sums kept in memory while building (then written to `sums`)
_SCHEMA_SQL = """
CREATE TABLE build (id TEXT, schema INTEGER, digest TEXT, format TEXT, lines INTEGER,
                    first REAL, last REAL, cut INTEGER, seconds REAL);
CREATE TABLE templates (id INTEGER PRIMARY KEY, text TEXT UNIQUE);
CREATE TABLE lines (lineno INTEGER PRIMARY KEY, ts REAL, level INTEGER, derived INTEGER,
                    template INTEGER, instance TEXT, line TEXT, unescaped TEXT, record INTEGER);
CREATE TABLE sums (level INTEGER, template INTEGER, n INTEGER, low REAL, high REAL, example INTEGER);
"""
# What a whole-file query without keywords counts, per (level, template), and the records per
# (highest level, holds a line without a level): `search` reads them instead of every row (a
# level filter over a whole big file keeps a large share of its lines).
_SUMMARY_SQL = """
CREATE TABLE summary AS SELECT level, template, sum(n) AS n, min(low) AS low, max(high) AS high,
    max(example) AS example FROM sums GROUP BY level, template;
DROP TABLE sums;
CREATE TABLE record_tops (top INTEGER, unleveled INTEGER, n INTEGER);
"""


def build_index(path: Path, root: Path, context: ParseContext, target: Path, digest: str) -> None:
    """Index `path` into a temporary file, then rename it to `target`. A big file is read in
    parts, one per core (`_bounds`): this process reads the first, worker processes the others
    into files of their own, which are then merged in file order (`_merge`)."""
    import time

    started = time.monotonic()
    with open_text(path, root) as text:
        fmt = detect(masked_lines(islice(Lines(text), SAMPLE_LINES)), context).format
    with open_binary(path, root) as handle:
        bounds = _bounds(handle, handle.seek(0, 2), cores())
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=".building-", suffix=".db")
    os.close(descriptor)
    try:
        workers = Workers(_WORKER, "log index", (path, root, context, fmt), bounds[1:], target.parent, ".part-")
        with _progress(path) as advance, workers:
            own = bounds[0] if workers.started else (0, bounds[-1][1])  # no workers: the whole file here
            scale = bounds[-1][1] / max(1, own[1])  # the bar follows this part, as a share of the file
            first = _build_part(path, root, context, fmt, own, temporary, lambda done: advance(int(done * scale)))
            _finish(temporary, [first, *workers.results()], (digest, fmt, time.monotonic() - started))
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)


def _finish(db: str, parts: list[_Part], build: tuple[str, str | None, float]) -> None:
    """Merge the later parts into the first one's file `db`, index it by ts, record the build."""
    digest, fmt, seconds = build
    conn = sqlite3.connect(db)
    try:
        conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")
        lines, cursor = parts[0].lines, parts[0].cursor
        for part in parts[1:]:
            cursor = _merge(conn, part, lines, cursor)
            lines += part.lines
        conn.execute("CREATE INDEX lines_ts ON lines (ts)")
        _summarise(conn, parts)
        firsts = [part.first for part in parts if part.first is not None]
        lasts = [part.last for part in parts if part.last is not None]
        rows, cut = sum(part.rows for part in parts), sum(part.cut for part in parts)
        conn.execute(
            "INSERT INTO build VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                uuid.uuid4().hex,
                SCHEMA,
                digest,
                fmt,
                rows,
                min(firsts, default=None),
                max(lasts, default=None),
                cut,
                seconds,
            ),
        )
        conn.commit()
    finally:
        conn.close()


def _summarise(conn: sqlite3.Connection, parts: list[_Part]) -> None:
    """Write the `summary` and `record_tops` tables from the parts' own sums and records and, in
    SQL, from the rows before each part's first timestamp (merging may have changed their ts,
    level and record: they are counted as merged)."""
    tally, before = _RecordTally(), 0
    for part in parts:
        timed = part.cursor.first_timed
        leading = (before + 1, before + (timed - 1 if timed is not None else part.lines))
        conn.execute(
            "INSERT INTO sums SELECT level, template, count(*), min(ts), max(ts), max(lineno) FROM lines"
            " WHERE lineno BETWEEN ? AND ? GROUP BY level, template",
            leading,
        )
        records = conn.execute(
            "SELECT record, max(level), max(level IS NULL) FROM lines WHERE lineno BETWEEN ? AND ?"
            " GROUP BY record ORDER BY record",
            leading,
        )
        for record, top, unleveled in records:
            tally.add(record, top, unleveled)
        if part.open is not None:  # the part's own records start at its first timestamp
            tally.close()
            for key, count in part.tops.items():
                tally.tops[key] = tally.tops.get(key, 0) + count
            record, top, unleveled = part.open
            tally.add(record + before, top, unleveled)
        before += part.lines
    tally.close()
    conn.executescript(_SUMMARY_SQL)
    conn.executemany("INSERT INTO record_tops VALUES (?, ?, ?)", [(*key, n) for key, n in tally.tops.items()])


@dataclass
class _RecordTally:
    """Records counted per (highest level, holds a line without a level), fed in file order; the
    last one stays `open` (later rows may still belong to it) until the next starts or `close`."""

    tops: dict[tuple[int | None, int], int] = field(default_factory=dict)
    open: list[Any] | None = None  # [record, highest level, unleveled]

    def add(self, record: int, top: int | None, unleveled: int) -> None:
        known = self.open
        if known is not None and known[0] == record:
            known[1] = top if known[1] is None or (top is not None and top > known[1]) else known[1]
            known[2] = known[2] or unleveled
            return
        self.close()
        self.open = [record, top, unleveled]

    def close(self) -> None:
        if self.open is not None:
            key = (self.open[1], int(self.open[2]))
            self.tops[key] = self.tops.get(key, 0) + 1
            self.open = None


def _bounds(handle: BinaryIO, size: int, parts: int) -> list[tuple[int, int]]:
    """Byte ranges [start, end) of the parts a file is read in: one when it is small, else about
    equal ones starting at line starts. A start is used only where no private key block can be
    open (no `PRIVATE KEY` in the MAX_KEY_BLOCK_LINES lines before it), so masking each part on
    its own masks what masking the whole file would."""
    starts = [0]
    if size >= PART_MIN_BYTES:
        for index in range(1, parts):
            handle.seek(size * index // parts)
            handle.readline()  # to the next line start
            start = handle.tell()
            if starts[-1] < start < size and _no_key_block_before(handle, start):
                starts.append(start)
    return list(zip(starts, [*starts[1:], size], strict=True))


def _no_key_block_before(handle: BinaryIO, start: int) -> bool:
    """No `PRIVATE KEY` in the MAX_KEY_BLOCK_LINES + 1 lines before `start` (read backwards in
    small blocks; False when those lines span more than _KEY_WINDOW_BYTES)."""
    position, newlines, after = start, 0, b""
    while position > 0 and newlines <= MAX_KEY_BLOCK_LINES + 1:
        if start - position >= _KEY_WINDOW_BYTES:
            return False
        step = min(position, 1 << 16)
        position -= step
        handle.seek(position)
        block = handle.read(step)
        if b"PRIVATE KEY" in block + after[:16]:
            return False
        newlines += block.count(b"\n")
        after = block
    return True


@dataclass(frozen=True)
class _Part:
    """One part of a file, indexed (`_build_part`): its rows are numbered from 1 in the part."""

    db: str
    lines: int  # lines read, blank ones too (the next part's line numbers start after them)
    rows: int
    first: float | None
    last: float | None
    cut: int
    cursor: Cursor
    tops: dict[tuple[int | None, int], int]  # records from its first timestamp on, but the last
    open: tuple[int, int | None, int] | None  # the last record (record, top, unleveled); None: no timestamp


def _build_part(
    path: Path, root: Path, context: ParseContext, fmt: str | None, bounds: tuple[int, int], db: str, advance
) -> _Part:
    """Index the bytes `bounds` of `path` (whole lines) into the SQLite file `db`."""
    reader = LineReader(None if fmt is None else format_named(fmt), context)
    cursor = Cursor()
    conn = sqlite3.connect(db)
    try:
        conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA_SQL)
        with open_binary(path, root) as handle:
            window = io.BufferedReader(Window(handle, *bounds))
            text = io.TextIOWrapper(window, encoding="utf-8", errors="replace", newline="\n")
            lines = Lines(text)
            built = _insert(conn, line_rows(masked_lines(iter(lines)), reader, context.tz, cursor), advance)
        conn.commit()
    finally:
        conn.close()
    tally = built.tally
    last_record = None if tally.open is None else (tally.open[0], tally.open[1], int(tally.open[2]))
    return _Part(db, cursor.lines, built.rows, built.first, built.last, lines.cut, cursor, tally.tops, last_record)


def _merge(conn: sqlite3.Connection, part: _Part, before: int, cursor: Cursor) -> Cursor:
    """Append a later part's rows: line numbers after the `before` lines already in, templates by
    text, and the rows before the part's first timestamp / first parsed line inheriting the state
    the earlier parts ended in (`cursor`), as reading the file at once would have given them.
    The state this part ends in."""
    parsed = part.cursor.first_parsed or part.lines + 1
    joined, orphan = _joined(part.cursor, cursor)
    conn.execute("ATTACH DATABASE ? AS part", (part.db,))
    try:
        conn.execute("INSERT OR IGNORE INTO templates (text) SELECT text FROM part.templates ORDER BY id")
        conn.execute(
            "INSERT INTO sums SELECT s.level, t.id, s.n, s.low, s.high, s.example + ? FROM part.sums AS s"
            " JOIN part.templates AS p ON p.id = s.template JOIN main.templates AS t ON t.text = p.text",
            (before,),
        )
        conn.execute(
            "INSERT INTO lines SELECT l.lineno + :before, coalesce(l.ts, :ts),"
            " CASE WHEN l.lineno < :parsed THEN :level ELSE l.level END,"
            " CASE WHEN l.lineno < :parsed THEN :derived ELSE l.derived END, t.id,"
            " CASE WHEN l.lineno < :parsed THEN :instance ELSE l.instance END, l.line, l.unescaped,"
            " CASE WHEN l.lineno < :joined OR l.record = :orphan THEN :record ELSE l.record + :before END"
            " FROM part.lines AS l JOIN part.templates AS p ON p.id = l.template"
            " JOIN main.templates AS t ON t.text = p.text ORDER BY l.lineno",
            {
                "before": before,
                "ts": cursor.ts,
                "parsed": parsed,
                "level": cursor.level,
                "derived": cursor.derived,
                "instance": cursor.instance or None,
                "joined": joined,
                "orphan": orphan,
                "record": cursor.record,
            },
        )
        conn.commit()
    finally:
        conn.execute("DETACH DATABASE part")
    ended = part.cursor
    local = ended.record
    joins = local is None or local < joined or local == orphan
    record = cursor.record if joins else local + before  # type: ignore[operator]
    if ended.first_parsed is None:
        return Cursor(
            ts=ended.ts if ended.ts is not None else cursor.ts,
            level=cursor.level,
            derived=cursor.derived,
            instance=cursor.instance,
            first_parsed=None,
            record=record,
        )
    return Cursor(
        ts=ended.ts if ended.ts is not None else cursor.ts,
        level=ended.level,
        derived=ended.derived,
        instance=ended.instance,
        first_parsed=ended.first_parsed,
        record=record,
    )


def _joined(ended: Cursor, before: Cursor) -> tuple[int, int]:
    """Which rows of a part belong to the record the earlier parts ended in (`before.record`):
    those before the part's first timestamp when a timestamp was seen before it (lines with
    none join the open record), else only the orphan record (its first row was a continuation
    line). (rows below this line number join, the part's record id that joins); -1: none."""
    if before.record is None:
        return 0, -1
    if before.ts is not None:
        return ended.first_timed or ended.lines + 1, -1
    return 0, ended.orphan if ended.orphan is not None else -1


_WORKER = "from evcli.backends.logbuild import worker_main; worker_main()"


def worker_main() -> None:
    """A worker process: index the part named by the pickle on stdin, pickle the `_Part` to stdout."""
    path, root, context, fmt, bounds, db = pickle.loads(sys.stdin.buffer.read())
    part = _build_part(path, root, context, fmt, bounds, db, lambda _: None)
    sys.stdout.buffer.write(pickle.dumps(part))


@dataclass
class _Built:
    """What `_insert` wrote: rows, first and last ts, and the summaries of the rows with a ts
    (their sums are in the `sums` table; `tally` holds their records)."""

    rows: int = 0
    first: float | None = None
    last: float | None = None
    tally: _RecordTally = field(default_factory=_RecordTally)


def _insert(conn: sqlite3.Connection, rows: Iterator[tuple[Any, ...]], advance) -> _Built:
    """Insert the rows in batches, templates by id, and sum the rows with a ts per (level,
    template) and their records (rows without one may still change when parts are merged)."""
    templates: dict[str, int] = {}
    sums: dict[tuple[int | None, int], list[Any]] = {}
    built = _Built()
    tops = built.tally.tops
    current: int | None = None  # the open record, its highest level and whether a line has none
    top: int | None = None
    unleveled = 0
    first = last = None
    batch: list[tuple[Any, ...]] = []
    for lineno, ts, level, derived, text, instance, line, record in rows:
        template = templates.get(text)
        if template is None:
            template = _template_id(conn, text, templates)
        if ts is not None:
            if first is None:
                first = last = ts
            first = ts if ts < first else first
            last = ts if ts > last else last
            total = sums.get((level, template))
            if total is None:
                if len(sums) >= _SUMS_KEPT:
                    _spill(conn, sums)
                sums[level, template] = [1, ts, ts, lineno]
            else:
                total[0] += 1
                total[1] = ts if ts < total[1] else total[1]
                total[2] = ts if ts > total[2] else total[2]
                total[3] = lineno
            if record == current:  # `_RecordTally.add` inline (this runs per row)
                if level is None:
                    unleveled = 1
                elif top is None or level > top:
                    top = level
            else:
                if current is not None:
                    tops[top, unleveled] = tops.get((top, unleveled), 0) + 1
                current, top, unleveled = record, level, int(level is None)
        unescaped = _ESCAPE.sub(_unescape, line) if "\\u" in line else None
        batch.append((lineno, ts, level, derived, template, instance or None, line, unescaped, record))
        if len(batch) >= _BATCH:
            built.rows += _flush(conn, batch, advance)
    built.rows += _flush(conn, batch, advance)
    _spill(conn, sums)
    built.first, built.last = first, last
    built.tally.open = None if current is None else [current, top, unleveled]
    return built


def _spill(conn: sqlite3.Connection, sums: dict[tuple[int | None, int], list[Any]]) -> None:
    conn.executemany("INSERT INTO sums VALUES (?, ?, ?, ?, ?, ?)", [(*key, *total) for key, total in sums.items()])
    sums.clear()


def _unescape(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 16))


def _template_id(conn: sqlite3.Connection, text: str, cache: dict[str, int]) -> int:
    """The id of a template, added when new; the cache is cleared when full (memory stays bounded)."""
    if len(cache) >= _TEMPLATE_CACHE:
        cache.clear()
    cursor = conn.execute("INSERT OR IGNORE INTO templates (text) VALUES (?)", (text,))
    if cursor.rowcount == 1 and cursor.lastrowid is not None:
        cache[text] = cursor.lastrowid
    else:
        cache[text] = conn.execute("SELECT id FROM templates WHERE text = ?", (text,)).fetchone()[0]
    return cache[text]


def _flush(conn: sqlite3.Connection, batch: list[tuple[Any, ...]], advance) -> int:
    check_deadline()
    conn.executemany("INSERT INTO lines VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch)
    size = len(batch)
    advance(sum(len(row[6]) + 1 for row in batch))
    batch.clear()
    return size


@contextmanager
def _progress(path: Path) -> Iterator[Any]:
    """A rich progress bar on stderr while a big file is indexed, only when stderr is a terminal."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size < _PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        yield lambda _: None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from evcli.core.console import err, safe

    columns = (TextColumn("indexing {task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task(safe(path.name), total=size)
        yield lambda consumed: progress.advance(task, consumed)
