"""The persistent per-file log index of snapshot logs (DESIGN §5, issue 9).

A log file is read once with the log format registry (`evcli.backends.logformats`): its format is
detected from the first SAMPLE_LINES lines, every line is read with `LineReader`, and the lines
go into one SQLite file per (content digest, parse context) under `$EVCLI_HOME/logindex/`. Queries
by time range, level, keywords and the stats and patterns of their matches run in SQL.

Invariants:
  - an index file is named by the file's sha256, by what completes its timestamps (the
    environment zone and clock), by the extra secret patterns and SCHEMA, so a changed file,
    zone or masking never reads a stale index;
  - every line is masked (evcli.tools.redaction) before it is parsed or stored: the index holds
    no secret, and keywords match the masked text that results show;
    a stat record (real path, inode, size, mtime_ns -> sha256) spares re-hashing an unchanged file;
  - an index is built into a private temporary file and renamed into place when complete, so a
    reader never sees half an index and two processes building the same one both end with a
    whole one (the later rename replaces an identical file);
  - every non-blank line is one row: `lineno` (1-based line of the file), `ts` (UTC epoch seconds,
    a line without its own timestamp takes the previous event's: continuation lines such as stack
    traces, and lines no format reads), `level` (index into LEVELS, NULL when the line has none),
    `derived` (the level came from an access log status), `template` (the message with variable
    parts masked), `instance` and the original `line` (without its line ending), for a line
    holding JSON `\\uXXXX` escapes the line with them decoded (`unescaped`), and `record`: the
    line number of the record's first line. A line with a timestamp of its own starts a record;
    a line without one (stack trace, continuation, unrecognised) belongs to the record of the
    line before, except that before the first timestamp only continuation lines join one;
  - keywords match literally and case-insensitively (ASCII case folding, SQLite's LIKE) anywhere in the
    original line, or in its unescaped text (`连接池` finds a JSON line that wrote it escaped);
  - a file of PART_MIN_BYTES or more is read in parts, one per core, by worker processes
    (`python -c`, killed at the deadline) whose part files are merged in file order into the same
    rows reading it at once gives; a part never starts where a private key block may be open;
  - a `summary` table (count, first/last ts, newest line per level and template) and a
    `record_tops` table (records per highest level and whether one holds a line without a level)
    serve whole-file queries without keywords, so they read no row but the newest `limit`;
    other queries count the distinct records of their matching lines;
  - the tool call's deadline stops both building (checked as lines are read and per batch) and
    queries (an SQLite progress handler aborts the statement): `DeadlineExceeded` either way.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import re
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO

from evcli.backends.base import LEVELS
from evcli.backends.files import DeadlineExceeded, Lines, check_deadline, contained, open_binary, open_text
from evcli.backends.logformats import SAMPLE_LINES, LineKind, LineReader, ParseContext, detect, format_named
from evcli.tools.redaction import ENV_EXTRA_PATTERNS, MAX_KEY_BLOCK_LINES, Redactor

SCHEMA = 7  # part of every index file's name: a new schema builds new files
INDEX_DIR = "logindex"
_BATCH = 1_024  # rows per insert: the build's memory is about one batch of lines
_TEMPLATE_CACHE = 4_096  # distinct templates kept in memory while building (then looked up in SQL)
_PROGRESS_MIN_BYTES = 8 << 20  # a progress bar only for files that take a noticeable time
_PROGRESS_OPS = 20_000  # SQLite VM steps between deadline checks
PART_MIN_BYTES = 16 << 20  # a file this big is read in parts, one per core
MAX_PARTS = 4
_KEY_WINDOW_BYTES = 4 << 20  # how far before a part's start a key block is looked for
_INSTANCE_KEYS = ("instance", "pod", "host", "thread")
_LEADING_INSTANCE = re.compile(r"\[([^\]\s]+)\]\s*")
_INSTANCE_FIELD = re.compile(r"\binstance=\"?([^\s\",]+)")
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_LIKE_SPECIAL = re.compile(r"[\\%_]")  # escaped in a LIKE pattern: a keyword matches literally
# Variable parts of a message: quoted values, UUIDs, IPv4 addresses (with port), paths holding
# a digit, hex numbers, and any token holding a digit (numbers, ids like ORD-7113541, 453ms).
_VARIABLE = re.compile(
    r"\"[^\"]*\"|'[^']*'"
    r"|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"
    r"|(?:/[\w.-]*)*/[\w.-]*\d[\w./-]*"
    r"|\b0x[0-9a-fA-F]+\b"
    r"|\b(?=[\w.-]*\d)[\w.-]+"
)
_TOKENS_KEPT = 1 << 10  # token templates remembered by `mask` (then forgotten: memory stays bounded)
_TOKEN_TEMPLATES: dict[str, str] = {}
_TEMPLATES_BY_SHAPE: dict[bytes, str] = {}  # message bytes with digits as `1` -> template (see `mask`)
_DIGITS_AS_ONE = bytes.maketrans(b"0123456789", b"1111111111")
_DIGIT = re.compile(r"\d")
_NAIVE_EPOCH = datetime(1970, 1, 1)
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


def mask(message: str) -> str:
    """A message with its variable parts replaced by `<*>` (the pattern's template).

    Messages that differ only in ASCII digits have the same template when no `0x` occurs (the
    one rule naming a digit): every other rule treats all digits alike, so the same parts are
    replaced. The template is therefore remembered under the message's bytes with each digit
    read as `1`, when it holds no digit itself (every digit of the message was replaced, so no
    other message of that key shows a different one); most lines of a log share few such keys."""
    if "0x" in message:
        return _mask_tokens(message)
    key = message.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ONE)
    template = _TEMPLATES_BY_SHAPE.get(key)
    if template is None:
        template = _mask_tokens(message)
        if _DIGIT.search(template) is None:
            if len(_TEMPLATES_BY_SHAPE) >= _TOKENS_KEPT:
                _TEMPLATES_BY_SHAPE.clear()
            _TEMPLATES_BY_SHAPE[key] = template
    return template


def _mask_tokens(message: str) -> str:
    """`mask` by the regex. Only a quoted part spans a space, so a message without quotes is
    masked space-separated token by token, with the same result: the templates of tokens are
    remembered (most tokens repeat)."""
    if '"' in message or "'" in message:
        return _VARIABLE.sub("<*>", message)
    tokens = message.split(" ")
    for index, token in enumerate(tokens):
        template = _TOKEN_TEMPLATES.get(token)
        if template is None:
            if len(_TOKEN_TEMPLATES) >= _TOKENS_KEPT:
                _TOKEN_TEMPLATES.clear()
            template = _TOKEN_TEMPLATES[token] = _VARIABLE.sub("<*>", token)
        tokens[index] = template
    return " ".join(tokens)


def index_home() -> Path:
    """`$EVCLI_HOME/logindex/`, else `logindex/` in the per-user app dir (next to the trace store)."""
    from evcli.store.db import default_db_path

    return default_db_path().parent / INDEX_DIR


# --- reading a file as events ---------------------------------------------------------------------


def _masked(lines: Iterator[str]) -> Iterator[str]:
    return Redactor.from_env().mask_stream(line.rstrip("\r\n") for line in lines)


@dataclass
class _Cursor:
    """Where `_rows` stands when its lines end: lines read (blank ones too), the state later
    continuation lines inherit (last ts; level, derived, instance of the last parsed line; the
    open record), the first parsed line and the first line with a timestamp of its own (None:
    none was), and `orphan`: the first row when it is a continuation line that started a record
    only because no record was open (it joins the record an earlier part ended in)."""

    lines: int = 0
    ts: float | None = None
    level: int | None = None
    derived: int = 0
    instance: str = ""
    first_parsed: int | None = None
    record: int | None = None
    first_timed: int | None = None
    orphan: int | None = None


def _rows(lines: Iterator[str], reader: LineReader, tz: tzinfo, cursor: _Cursor) -> Iterator[tuple[Any, ...]]:
    """(lineno, ts, level, derived, template text, instance, line, record) of every non-blank line.
    A line with a timestamp of its own starts a record; a line without one (stack trace,
    continuation, unrecognised) belongs to the record of the line before, except that before
    the first timestamp only continuation lines join (each other line is a record of its own)."""
    read = reader.read
    to_epoch = Epochs(tz)
    continuation = LineKind.CONTINUATION
    blank = LineKind.BLANK
    ts: float | None = None
    level: int | None = None
    derived = 0
    instance = ""
    first_parsed = first_timed = record = orphan = None
    lineno = 0
    for lineno, line in enumerate(lines, 1):
        kind, _, parsed = read(line)
        if kind is blank:
            continue
        if parsed is None:  # continuation or unrecognised: part of the previous event
            if record is None:
                record, orphan = lineno, (lineno if kind is continuation else None)
            elif ts is None and kind is not continuation:
                record = lineno
            yield lineno, ts, level, derived, mask(line.strip()), instance, line, record
            continue
        if first_parsed is None:
            first_parsed = lineno
        if parsed.timestamp is not None:
            ts = to_epoch(parsed.timestamp)
            record = lineno
            if first_timed is None:
                first_timed = lineno
        elif record is None or ts is None:
            record = lineno
        level = None if parsed.level is None else LEVELS.index(parsed.level)
        derived = int(parsed.level_derived)
        instance, message = split_instance(parsed.fields, parsed.message)
        yield lineno, ts, level, derived, mask(message), instance, line, record
    cursor.lines, cursor.ts, cursor.level, cursor.derived = lineno, ts, level, derived
    cursor.instance, cursor.first_parsed, cursor.record = instance, first_parsed, record
    cursor.first_timed, cursor.orphan = first_timed, orphan


def epoch(moment: datetime, tz: tzinfo) -> float:
    """UTC epoch seconds; a naive time is a wall time in `tz` (fold=0, as timerange.localize)."""
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=tz, fold=0)).timestamp()


class Epochs:
    """`epoch` for many times in one zone: a naive time's zone offset is looked up once per
    minute of wall time (zones change offsets on whole minutes) and kept as the naive time of
    the epoch in that offset, so each time costs one subtraction, exactly `epoch`'s value."""

    def __init__(self, tz: tzinfo) -> None:
        self.tz = tz
        self.anchors: dict[int, datetime] = {}  # minute of wall time -> the epoch as a wall time

    def __call__(self, moment: datetime) -> float:
        if moment.tzinfo is not None:
            return moment.timestamp()
        minute = moment.toordinal() * 1440 + moment.hour * 60 + moment.minute
        anchor = self.anchors.get(minute)
        if anchor is None:
            if len(self.anchors) >= _TOKENS_KEPT:
                self.anchors.clear()
            offset = moment.replace(second=0, microsecond=0, tzinfo=self.tz, fold=0).utcoffset() or timedelta(0)
            anchor = self.anchors[minute] = _NAIVE_EPOCH + offset
        return (moment - anchor).total_seconds()


def split_instance(fields: dict[str, str], message: str) -> tuple[str, str]:
    """(instance, message): a field naming the instance, else a leading `[name]` of the message
    (removed from it), else an `instance=` key in it."""
    if fields:
        for key in _INSTANCE_KEYS:
            if fields.get(key):
                return fields[key], message
    leading = _LEADING_INSTANCE.match(message) if message[:1] == "[" else None
    if leading:
        return leading.group(1), message[leading.end() :]
    keyed = _INSTANCE_FIELD.search(message) if "instance=" in message else None
    return (keyed.group(1) if keyed else ""), message


# --- the index file -------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexedFile:
    """One log file's index: where it is and what it was built from."""

    relative: str  # the log file relative to the environment directory
    digest: str  # "sha256:<hex>" of the file's bytes
    db: Path
    build_id: str
    format: str | None
    lines: int
    first: float | None  # epoch of the first and last timestamp
    last: float | None
    cut: int  # lines longer than LIMITS.max_line_chars, indexed up to that length


def open_index(path: Path, root: Path, context: ParseContext, home: Path | None = None) -> IndexedFile:
    """The index of `path` (a file inside `root`), built now if no current one exists."""
    home = home or index_home()
    home.mkdir(parents=True, exist_ok=True)
    digest = _digest(path, root, home)
    extra = os.environ.get(ENV_EXTRA_PATTERNS, "")
    key = hashlib.sha256(f"{SCHEMA}|{context.tz}|{context.clock.isoformat()}|{extra}".encode()).hexdigest()[:16]
    db = home / f"{digest}-{key}.db"
    relative = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    if not db.exists():
        _build(path, root, context, db, digest)
    with _connect(db) as conn:
        build = conn.execute("SELECT id, format, lines, first, last, cut FROM build").fetchone()
    return IndexedFile(relative, f"sha256:{digest}", db, *build)


def _digest(path: Path, root: Path, home: Path) -> str:
    """The file's sha256, remembered by (real path, inode, size, mtime_ns) so an unchanged file is
    hashed once."""
    real = contained(path, root)
    info = os.stat(real)
    stat_key = hashlib.sha256(f"{real}|{info.st_ino}|{info.st_size}|{info.st_mtime_ns}".encode()).hexdigest()
    record = home / f"stat-{stat_key[:32]}"
    try:
        known = record.read_text().strip()
        if len(known) == 64:
            return known
    except OSError:
        pass
    sha = hashlib.sha256()
    with open_binary(path, root) as handle:
        while chunk := handle.read(1 << 20):
            check_deadline()
            sha.update(chunk)
    digest = sha.hexdigest()
    _write_atomically(record, digest.encode())
    return digest


def file_sha256(path: Path, root: Path) -> str:
    """`sha256:<hex>` of a file inside `root`, through the same stat record as the index."""
    home = index_home()
    home.mkdir(parents=True, exist_ok=True)
    return f"sha256:{_digest(path, root, home)}"


def _write_atomically(target: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        os.write(handle, data)
        os.close(handle)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _build(path: Path, root: Path, context: ParseContext, target: Path, digest: str) -> None:
    """Index `path` into a temporary file, then rename it to `target`. A big file is read in
    parts, one per core (`_bounds`): this process reads the first, worker processes the others
    into files of their own, which are then merged in file order (`_merge`)."""
    import time

    started = time.monotonic()
    with open_text(path, root) as text:
        fmt = detect(_masked(islice(Lines(text), SAMPLE_LINES)), context).format
    with open_binary(path, root) as handle:
        bounds = _bounds(handle, handle.seek(0, 2), _cores())
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=".building-", suffix=".db")
    os.close(descriptor)
    try:
        with _progress(path) as advance, _Workers(path, root, context, fmt, bounds[1:], target.parent) as workers:
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


def _cores() -> int:
    try:
        return max(1, min(MAX_PARTS, len(os.sched_getaffinity(0))))
    except AttributeError:  # not on Linux
        return max(1, min(MAX_PARTS, os.cpu_count() or 1))


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
    cursor: _Cursor
    tops: dict[tuple[int | None, int], int]  # records from its first timestamp on, but the last
    open: tuple[int, int | None, int] | None  # the last record (record, top, unleveled); None: no timestamp


def _build_part(
    path: Path, root: Path, context: ParseContext, fmt: str | None, bounds: tuple[int, int], db: str, advance
) -> _Part:
    """Index the bytes `bounds` of `path` (whole lines) into the SQLite file `db`."""
    reader = LineReader(None if fmt is None else format_named(fmt), context)
    cursor = _Cursor()
    conn = sqlite3.connect(db)
    try:
        conn.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA_SQL)
        with open_binary(path, root) as handle:
            window = io.BufferedReader(_Window(handle, *bounds))
            text = io.TextIOWrapper(window, encoding="utf-8", errors="replace", newline="")
            lines = Lines(text)
            built = _insert(conn, _rows(_masked(iter(lines)), reader, context.tz, cursor), advance)
        conn.commit()
    finally:
        conn.close()
    tally = built.tally
    last_record = None if tally.open is None else (tally.open[0], tally.open[1], int(tally.open[2]))
    return _Part(db, cursor.lines, built.rows, built.first, built.last, lines.cut, cursor, tally.tops, last_record)


class _Window(io.RawIOBase):
    """The bytes [start, end) of an open binary file, read as a file of their own."""

    def __init__(self, handle: BinaryIO, start: int, end: int) -> None:
        handle.seek(start)
        self.handle, self.left = handle, end - start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.handle.read(min(len(buffer), self.left))
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)


def _merge(conn: sqlite3.Connection, part: _Part, before: int, cursor: _Cursor) -> _Cursor:
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
        return _Cursor(
            ts=ended.ts if ended.ts is not None else cursor.ts,
            level=cursor.level,
            derived=cursor.derived,
            instance=cursor.instance,
            first_parsed=None,
            record=record,
        )
    return _Cursor(
        ts=ended.ts if ended.ts is not None else cursor.ts,
        level=ended.level,
        derived=ended.derived,
        instance=ended.instance,
        first_parsed=ended.first_parsed,
        record=record,
    )


def _joined(ended: _Cursor, before: _Cursor) -> tuple[int, int]:
    """Which rows of a part belong to the record the earlier parts ended in (`before.record`):
    those before the part's first timestamp when a timestamp was seen before it (lines with
    none join the open record), else only the orphan record (its first row was a continuation
    line). (rows below this line number join, the part's record id that joins); -1: none."""
    if before.record is None:
        return 0, -1
    if before.ts is not None:
        return ended.first_timed or ended.lines + 1, -1
    return 0, ended.orphan if ended.orphan is not None else -1


class _Workers:
    """Worker processes (`python -c`, a fresh interpreter: the caller may run threads, and its main
    module is never re-imported) indexing the later parts of a file, each into a temporary SQLite
    file next to the index. They are killed when the tool call's deadline passes or the build
    fails, and their files are removed in every case."""

    def __init__(self, path: Path, root: Path, context: ParseContext, fmt: str | None, bounds, home: Path) -> None:
        self.job = (path, root, context, fmt)
        self.bounds = list(bounds)
        self.home = home
        self.files: list[str] = []
        self.running: list[subprocess.Popen[bytes]] = []
        self.started = True  # False: no worker could start, the caller reads the whole file

    def __enter__(self) -> _Workers:
        try:
            for bounds in self.bounds:
                handle, db = tempfile.mkstemp(dir=self.home, prefix=".part-", suffix=".db")
                os.close(handle)
                self.files.append(db)
                worker = subprocess.Popen(
                    [sys.executable, "-c", _WORKER],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                self.running.append(worker)
                assert worker.stdin is not None
                worker.stdin.write(pickle.dumps((*self.job, bounds, db)))
                worker.stdin.close()
        except OSError:
            self.__exit__()
            self.started, self.running = False, []
        return self

    def results(self) -> list[_Part]:
        """The workers' parts in file order, waiting for them (and the deadline)."""
        parts = []
        for worker in self.running:
            while worker.poll() is None:
                check_deadline()
                try:
                    worker.wait(0.05)
                except subprocess.TimeoutExpired:
                    pass
            assert worker.stdout is not None and worker.stderr is not None
            if worker.returncode != 0:
                raise OSError(f"log index worker failed: {worker.stderr.read().decode(errors='replace')[-500:]}")
            parts.append(pickle.loads(worker.stdout.read()))
        return parts

    def __exit__(self, *_: object) -> None:
        for worker in self.running:
            if worker.poll() is None:
                worker.kill()
            worker.wait()
            for stream in (worker.stdout, worker.stderr):
                if stream is not None:
                    stream.close()
        for db in self.files:
            Path(db).unlink(missing_ok=True)


_WORKER = "from evcli.backends.logindex import worker_main; worker_main()"


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

    from evcli.console import err, safe

    columns = (TextColumn("indexing {task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task(safe(path.name), total=size)
        yield lambda consumed: progress.advance(task, consumed)


@contextmanager
def _connect(db: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection whose statements stop at the tool call's deadline."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    expired: list[DeadlineExceeded] = []

    def over_time() -> int:
        try:
            check_deadline()
        except DeadlineExceeded as error:
            expired.append(error)
            return 1
        return 0

    conn.set_progress_handler(over_time, _PROGRESS_OPS)
    try:
        yield conn
    except sqlite3.OperationalError:
        if expired:
            raise expired[0] from None
        raise
    finally:
        conn.close()


# --- queries ----------------------------------------------------------------------------------------


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
            clauses.append("coalesce(unescaped, line) LIKE ? ESCAPE '\\'")
            args.append("%" + _LIKE_SPECIAL.sub(r"\\\g<0>", keyword) + "%")
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


@dataclass
class FileMatches:
    """One file's matches: the newest `limit` rows, counts per level, first/last ts, patterns."""

    rows: list[tuple[Any, ...]]  # (lineno, ts, level, derived, instance, line), newest first
    by_level: dict[int | None, int]
    first: float | None
    last: float | None
    patterns: list[dict[str, Any]] = field(default_factory=list)  # {template, count, first, last, example}
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
    with _connect(indexed.db) as conn:
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
            "SELECT t.text, m.n, m.low, m.high, l.line FROM (SELECT template, count(*) AS n, min(ts) AS low,"
            f" max(ts) AS high, max(lineno) AS example FROM {source}{where} GROUP BY template"
            " ORDER BY n DESC LIMIT ?) AS m JOIN templates AS t ON t.id = m.template"
            " JOIN lines AS l ON l.lineno = m.example ORDER BY m.n DESC",
            [*args, patterns],
        ).fetchall()
        records = conn.execute(f"SELECT count(DISTINCT record) FROM {source}{where}", args).fetchone()[0]
    return FileMatches(rows, by_level, first, last, _pattern_dicts(found), records)


def _from_summary(conn: sqlite3.Connection, wanted: Filter, limit: int, patterns: int) -> FileMatches:
    """A whole-file query without keywords (it filters only by level) from the summaries."""
    where, args = wanted.where()
    counts = conn.execute(f"SELECT level, sum(n), min(low), max(high) FROM summary{where} GROUP BY level", args)
    by_level, first, last = _levels(counts)
    if not by_level:
        return FileMatches([], {}, None, None)
    rows = _newest_rows(conn, "lines", where, args, limit)
    found = conn.execute(
        "SELECT t.text, m.n, m.low, m.high, l.line FROM (SELECT template, sum(n) AS n, min(low) AS low,"
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
    return [{"template": t, "count": n, "first": low, "last": high, "example": line} for t, n, low, high, line in found]
