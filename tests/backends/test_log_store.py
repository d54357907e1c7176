"""The columnar log store (evcli/backends/logstore.py): its queries give exactly what the SQLite index's
gave over the same file (`SqlIndex`: the index's table and the queries of evcli/backends/logsearch.py as
they were before issue 27, kept here as the reference), for a grid of filters on several logs (the
differential test), and the store is written atomically, small, free of secrets and stopped by the
deadline."""

from __future__ import annotations

import itertools
import random
import re
import sqlite3
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from evcli.backends import logstore, logstore_write
from evcli.backends.logformats import ParseContext
from evcli.backends.logsearch import FileMatches, Filter
from evcli.backends.logtable import LogTable, decoded, reference_table
from evcli.core import files
from evcli.core.files import Deadline, DeadlineExceeded, deadline_scope
from tests.backends.test_log_index import LOG

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))  # the bench scripts import each other as top-level modules
from bench_tools import write_log, write_mixed_log  # noqa: E402

CONTEXT = ParseContext(datetime(2026, 7, 9, 23, 10, tzinfo=UTC), ZoneInfo("Asia/Shanghai"))
LONG = "".join(random.Random(5).choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ", k=45_000))  # past SQLite's LIKE limit
ESCAPED = "\\u8fde\\u63a5\\u6c60"  # 连接池 as a JSON line writes it
EDGES = (
    "no timestamp before the first event\n"
    "\tat a frame before any timestamp\n"
    "  \n"
    "2026-07-09 06:50:00.000 ERROR [pay-1] c.e.Pay - status: 500 len: 12 time: 0.1 nul\x00here\r\n"
    "2026-07-09 06:51:00.000 INFO [pay-1] c.e.Pay - status: 200 len: 1500 time: 0.500\r\n"
    "2026-07-09 06:52:00.000 WARN [pay-2] c.e.Pay - disk 91% full on data_1 path C:\\tmp\\x lone\rcr\n"
    "\u3000 \t\n"
    "2026-07-09 06:53:00.000 ERROR [pay-2] c.e.Pay - \u8fde\u63a5\u6c60 exhausted; MiXeD Case Timeout\n"
    '{"ts": "2026-07-09T06:54:00Z", "level": "error", "msg": "' + ESCAPED + ' timeout 500"}\n'
    "2026-07-09 06:55:00.000 DEBUG [pay-3] c.e.Pay - invalid \xff\xfe bytes then 500\n"
    "2026-07-09 06:55:00.000 INFO [pay-3] c.e.Pay - same second, " + LONG + " tail\n"
    "2026-07-09 06:54:30.000 WARN [pay-3] c.e.Pay - clock went back; 5000 requests, 500.\n"
    "java.lang.IllegalStateException: pool closed\n"
    "\tat com.example.Pool.get(Pool.java:500)\n"
    "2026-07-09 06:56:00.000 INFO [pay-1] c.e.Pay - Authorization: Bearer 0123456789abcdef01234567 ok\n"
    "2026-07-09 06:57:00.000 ERROR [pay-1] c.e.Pay - password=hunter2secret on db connect timeout\n"
    "ends without a newline 500"
)
KEYWORDS = [
    (),
    ("",),
    ("timeout",),
    ("TIMEOUT",),
    ("mixed case",),
    ("500",),
    ("1500",),
    ("0.500",),
    ("5000",),
    ("%",),
    ("_",),
    ("\\",),
    ("1%",),
    ("a_1",),
    ("c:\\tmp",),
    ("连接池",),
    ("\\u8fde",),
    ("\ufffd",),
    ("nul\ufffdhere",),
    (" ",),
    ("\t",),
    ("lone\rcr",),
    ("hunter2secret",),
    ("0123456789abcdef01234567",),
    ("ord-1", "error"),
    ("pool", "500"),
    ("ü",),
]
LEVELS = [(None, False), (2, False), (4, False), (3, True)]


# --- the reference: the SQLite index's table and queries (evcli/backends/logsearch.py before issue 27) ----

_LIKE_LONGEST = 40_000
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_LIKE_SPECIAL = re.compile(r"[\\%_]")
_TEXT = "coalesce(unescaped, line)"
_NUMBER_MATCH = (
    f"{_TEXT} = ? OR {_TEXT} GLOB ? || '[^0-9]*' OR {_TEXT} GLOB '*[^0-9.]' || ? || '[^0-9]*'"
    f" OR {_TEXT} GLOB '*[^0-9.]' || ?"
)
_EXAMPLE = "l.line, l.level, l.record = l.lineno"


def _where(wanted: Filter) -> tuple[str, list[Any]]:
    """logsearch.Filter.where as it was."""
    clauses: list[str] = []
    args: list[Any] = []
    if wanted.start is not None or wanted.end is not None:
        clauses.append("ts BETWEEN ? AND ?")
        args += [
            -float("inf") if wanted.start is None else wanted.start,
            float("inf") if wanted.end is None else wanted.end,
        ]
    elif not wanted.whole:
        clauses.append("ts IS NOT NULL")
    if wanted.level is not None:
        clauses.append("level >= ?" if wanted.level_strict else "(level >= ? OR level IS NULL)")
        args.append(wanted.level)
    for keyword in wanted.keywords:
        if keyword.isdigit() and keyword.isascii():
            clauses.append(f"({_NUMBER_MATCH})")
            args += [keyword] * 4
        elif len(keyword.encode("utf-8")) > _LIKE_LONGEST:
            clauses.append("instr(lower(coalesce(unescaped, line)), ?) > 0")
            args.append(keyword.translate(_ASCII_LOWER))
        else:
            clauses.append("coalesce(unescaped, line) LIKE ? ESCAPE '\\'")
            args.append("%" + _LIKE_SPECIAL.sub(r"\\\g<0>", keyword) + "%")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


class SqlIndex:
    """A table's rows in an in-memory SQLite index as the index stored them (`line`: the masked text),
    queried with the index's SQL (its row path: its summary tables gave the same counts)."""

    def __init__(self, table: LogTable, data: bytes) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.executescript(
            "CREATE TABLE templates (id INTEGER PRIMARY KEY, text TEXT UNIQUE);"
            "CREATE TABLE lines (lineno INTEGER PRIMARY KEY, ts REAL, level INTEGER, derived INTEGER,"
            " template INTEGER, instance TEXT, line TEXT, unescaped TEXT, record INTEGER);"
        )
        self.conn.executemany("INSERT INTO templates VALUES (?, ?)", enumerate(table.templates))
        self.conn.executemany("INSERT INTO lines VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", _sql_rows(table, data))
        self.conn.execute("CREATE INDEX lines_ts ON lines (ts)")

    def search(self, wanted: Filter, limit: int, patterns: int) -> FileMatches:
        where, args = _where(wanted)
        rows = self.conn.execute(f"SELECT level, count(*), min(ts), max(ts) FROM lines{where} GROUP BY level", args)
        counts = rows.fetchall()
        by_level = {level: count for level, count, _, _ in counts}
        if not by_level:
            return FileMatches([], {}, None, None)
        lows = [low for _, _, low, _ in counts if low is not None]
        highs = [high for *_, high in counts if high is not None]
        newest = self.conn.execute(
            "SELECT lineno, ts, level, derived, instance, line FROM lines"
            f"{where} ORDER BY ts DESC, lineno DESC LIMIT ?",
            [*args, limit],
        ).fetchall()
        found = self.conn.execute(
            f"SELECT t.text, m.n, m.low, m.high, {_EXAMPLE} FROM (SELECT template, count(*) AS n, min(ts) AS low,"
            f" max(ts) AS high, max(lineno) AS example FROM lines{where} GROUP BY template"
            " ORDER BY n DESC LIMIT ?) AS m JOIN templates AS t ON t.id = m.template"
            " JOIN lines AS l ON l.lineno = m.example ORDER BY m.n DESC",
            [*args, patterns],
        ).fetchall()
        keys = ("template", "count", "first", "last", "example", "level", "starts_record")
        found_patterns = [dict(zip(keys, (*values[:-1], bool(values[-1])), strict=True)) for values in found]
        records = self.conn.execute(f"SELECT count(DISTINCT record) FROM lines{where}", args).fetchone()[0]
        first, last = min(lows, default=None), max(highs, default=None)
        return FileMatches(newest, by_level, first, last, found_patterns, records)

    def instance_counts(self, wanted: Filter) -> dict[str, int]:
        where, args = _where(wanted)
        where = (where + " AND" if where else " WHERE") + " instance IS NOT NULL AND instance != ''"
        return dict(
            self.conn.execute(f"SELECT instance, count(*) FROM lines{where} GROUP BY instance", args).fetchall()
        )

    def matching_lines(self, wanted: Filter) -> list[str]:
        where, args = _where(wanted)
        return [row[0] for row in self.conn.execute(f"SELECT {_TEXT} FROM lines{where} ORDER BY lineno", args)]


def _sql_rows(table: LogTable, data: bytes) -> Iterator[tuple[Any, ...]]:
    for row, lineno in enumerate(table.lineno.tolist()):
        line = table.text.get(lineno, decoded(data[table.start[row] : table.end[row]]))
        ts, level, instance = float(table.ts[row]), int(table.level[row]), int(table.instance[row])
        yield (
            lineno,
            None if ts != ts else ts,
            None if level < 0 else level,
            int(table.derived[row]),
            int(table.template[row]),
            None if instance < 0 else table.instances[instance],
            line,
            table.unescaped.get(lineno),
            int(table.record[row]),
        )


@pytest.fixture(autouse=True)
def one_row_group_at_a_time(monkeypatch):
    """Queries read the row groups one at a time, however small: their results are merged across many. A
    group of the generated logs (thousands of rows) is scanned on other threads in chunks, a smaller one in
    the query's thread: both ways are compared with the SQLite index."""
    monkeypatch.setattr(logstore, "_GROUP_ROWS", 1)
    monkeypatch.setattr(logstore, "_INLINE_ROWS", 1000)


# --- the differential test ------------------------------------------------------------------------------


def _ranges(first: float, last: float) -> list[tuple[float | None, float | None, bool]]:
    middle = (first + last) / 2
    return [(None, None, True), (None, None, False), (middle, None, False), (first, middle, False)]


def _stores(tmp: Path, name: str, text: bytes, window: int) -> tuple[SqlIndex, logstore.StoredLog]:
    """The SQLite index and the store of one log, built from the same file: the index from its reference
    table, the store a `window` of bytes at a time, so queries merge many row groups (a window of 1: a
    row group per line)."""
    from evcli.backends import logcolumns

    path = tmp / name
    path.write_bytes(text)
    table = reference_table(path, tmp, CONTEXT)
    logstore_write.write_store(
        logcolumns.read_windows(path, tmp, CONTEXT, window), tmp / f"{name}.parquet", lambda *_: {"id": name}
    )
    return SqlIndex(table, text), logstore.open_store(tmp / f"{name}.parquet", path, tmp)


def _edges_bytes() -> bytes:
    return EDGES.encode("utf-8").replace("\xff\xfe".encode(), b"\xff\xfe").replace(b"0.1 ", b"0.1 \xe8\xbf ")


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Iterator[dict[str, tuple[SqlIndex, logstore.StoredLog]]]:
    tmp = tmp_path_factory.mktemp("logs")
    mixed, secrets = tmp / "mixed.src", tmp / "secrets.src"
    write_mixed_log(mixed, 20_000)
    write_log(secrets, 4_000, "pay", seed=3)
    found = {
        "log": _stores(tmp, "log.log", (LOG * 3).encode(), 1),
        "edges": _stores(tmp, "edges.log", _edges_bytes(), 1),  # bytes that are not UTF-8
        "edges_utf8": _stores(tmp, "edges_utf8.log", EDGES.encode(), 1 << 20),
        "mixed": _stores(tmp, "mixed.log", mixed.read_bytes(), 1 << 18),
        "secrets": _stores(tmp, "secrets.log", secrets.read_bytes(), 1 << 16),
    }
    with pytest.MonkeyPatch.context() as patch:  # lines cut at the longest line keep their first part
        patch.setattr(files, "LIMITS", files.ReadLimits(max_line_chars=120))
        found["cut"] = _stores(tmp, "cut.log", _edges_bytes(), 1)
    yield found
    for _, stored in found.values():
        stored.close()


def _filters(stored: logstore.StoredLog, keywords: list[tuple[str, ...]]) -> list[Filter]:
    ts = stored.column("ts")
    timed = ts[ts == ts]
    first, last = (float(timed.min()), float(timed.max())) if len(timed) else (0.0, 0.0)
    return [
        Filter(start, end, words, level, strict, whole)
        for (start, end, whole), (level, strict), words in itertools.product(_ranges(first, last), LEVELS, keywords)
    ]


def _same(indexed: SqlIndex, stored: logstore.StoredLog, wanted: Filter, limit: int, patterns: int) -> None:
    expected = indexed.search(wanted, limit, -1)  # every pattern: SQLite's sorter returns ties in any order
    codes = {template: code for code, template in enumerate(stored.side("templates"))}
    ranked = sorted(expected.patterns, key=lambda pattern: (-pattern["count"], codes[pattern["template"]]))
    expected.patterns = ranked if patterns < 0 else ranked[:patterns]
    assert logstore.search(stored, wanted, limit, patterns) == expected, wanted
    assert logstore.instance_counts(stored, wanted) == indexed.instance_counts(wanted), wanted
    assert list(logstore.matching_lines(stored, wanted)) == indexed.matching_lines(wanted), wanted


@pytest.mark.parametrize("name", ["log", "edges", "edges_utf8", "cut"])
def test_every_query_equals_the_sqlite_index_on_small_logs(logs, name):
    indexed, stored = logs[name]
    for index, wanted in enumerate(_filters(stored, KEYWORDS)):
        limit, patterns = ((3, 2), (50, 20))[index % 2]
        _same(indexed, stored, wanted, limit, patterns)


@pytest.mark.parametrize("name", ["mixed", "secrets"])
def test_every_query_equals_the_sqlite_index_on_generated_logs(logs, name):
    indexed, stored = logs[name]
    words = [(), ("timeout",), ("ORD-12",), ("500",), ("payment-gateway", "timeout"), ("bearer",), ("%",), ("Ü",)]
    for wanted in _filters(stored, words):
        _same(indexed, stored, wanted, 20, 20)
    _same(indexed, stored, Filter(None, None, (), None, whole=True), -1, -1)


@pytest.mark.parametrize("name", ["edges", "edges_utf8", "cut"])
def test_a_keyword_longer_than_sqlite_like_patterns_matches_alike(logs, name):
    indexed, stored = logs[name]
    for words in ((LONG.lower(),), (LONG[:300] + "x",), ("Y" * 45_000,), (LONG[1000:2000],)):
        for wanted in (Filter(None, None, words, None, whole=True), Filter(None, None, words, 4, level_strict=True)):
            _same(indexed, stored, wanted, 5, 5)


def test_matching_lines_are_in_file_order(logs):
    _, stored = logs["edges"]
    lines = list(logstore.matching_lines(stored, Filter(None, None, ("500",), None, whole=True)))
    starts = ["2026-07-09 06:50:00.000 ERROR", '{"ts"', "2026-07-09 06:55:00.000 DEBUG", "2026-07-09 06:54:30.000"]
    assert [line[: len(start)] for line, start in zip(lines, starts, strict=False)] == starts
    assert lines[4:] == ["\tat com.example.Pool.get(Pool.java:500)", "ends without a newline 500"]
    assert "连接池 timeout 500" in lines[1]  # the JSON line's unescaped text


def test_a_secret_is_not_found_and_its_masked_text_is(logs):
    _, stored = logs["edges"]
    for secret in ("hunter2secret", "0123456789abcdef01234567"):
        assert logstore.search(stored, Filter(None, None, (secret,), None, whole=True), 10).total == 0
    bearer = logstore.search(stored, Filter(None, None, ("bearer",), None, whole=True), 10)
    assert bearer.total == 1 and "0123456789abcdef01234567" not in bearer.rows[0][5]
    assert stored.store.read_bytes().find(b"hunter2secret") == -1


def test_the_store_is_at_most_0_6_of_the_log(logs):
    _, stored = logs["mixed"]
    assert stored.store.stat().st_size <= 0.6 * len(stored.data)


@pytest.mark.parametrize("window", [1, 5000, 1 << 20])
def test_a_store_written_in_windows_holds_the_reference_table(tmp_path, window):
    """Rows, difference-encoded columns, codes numbered across windows, side lists and counts of a store
    written a window at a time (logcolumns.read_windows) are the reference reading's."""
    import numpy as np
    import pyarrow.parquet as pq

    from evcli.backends import logcolumns

    path = tmp_path / "mixed.log"
    write_mixed_log(path, 2000)
    path.write_bytes(path.read_bytes() + (LOG * 3).encode() + _edges_bytes())
    expected = reference_table(path, tmp_path, CONTEXT)
    target = tmp_path / "mixed.parquet"
    logstore_write.write_store(
        logcolumns.read_windows(path, tmp_path, CONTEXT, window), target, lambda *span: {"span": list(span)}
    )
    with logstore.open_store(target, path, tmp_path) as stored:
        for name in ("lineno", "start", "ts", "level", "derived", "template", "instance", "record"):
            np.testing.assert_array_equal(stored.column(name), getattr(expected, name), err_msg=name)
        np.testing.assert_array_equal(stored.column("length"), expected.end - expected.start)
        assert (stored.side("templates"), stored.side("instances")) == (expected.templates, expected.instances)
        assert stored.texts() == expected.text
        assert dict(zip(stored.side("unescaped_lineno"), stored.side("unescaped"), strict=True)) == expected.unescaped
        meta = stored.meta
        assert (meta["rows"], meta["lines"], meta["size"], meta["format"], meta["cut"]) == (
            len(expected.lineno),
            expected.lines,
            expected.size,
            expected.format,
            expected.cut,
        )
        timed = expected.ts[~np.isnan(expected.ts)]
        assert meta["build"] == {"span": [timed.min(), timed.max()]}
    assert (pq.ParquetFile(target).num_row_groups > 2) == (window < 1 << 20)


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_or_stopped_write_leaves_no_store_and_no_temporary_file(tmp_path, error):
    path = tmp_path / "pay.log"
    path.write_text(LOG)
    table = reference_table(path, tmp_path, CONTEXT)

    def pieces() -> Iterator[LogTable]:
        yield table  # one row group written, then the reading fails or is interrupted
        raise error

    (tmp_path / "stores").mkdir()
    with pytest.raises(type(error)):
        logstore_write.write_store(pieces(), tmp_path / "stores" / "pay.parquet", lambda *_: {})
    assert list((tmp_path / "stores").iterdir()) == []


def test_a_reader_sees_the_old_store_or_the_new_one_never_a_partial_one(tmp_path):
    path = tmp_path / "pay.log"
    path.write_text(LOG)
    table = reference_table(path, tmp_path, CONTEXT)
    target = tmp_path / "pay.parquet"
    logstore_write.write_store([table], target, lambda *_: {"id": "first"})
    (tmp_path / ".building-stale.parquet").write_bytes(b"PAR1 half")  # a crashed writer's temporary file
    logstore_write.write_store([table], target, lambda *_: {"id": "second"})
    with logstore.open_store(target, path, tmp_path) as stored:
        assert stored.meta["build"] == {"id": "second"}
        assert logstore.search(stored, Filter(None, None, ("timeout",), None, whole=True), 5).total == 4


def test_a_changed_log_is_refused(tmp_path):
    path = tmp_path / "pay.log"
    path.write_text(LOG)
    logstore_write.write_store([reference_table(path, tmp_path, CONTEXT)], tmp_path / "pay.parquet", lambda *_: {})
    path.write_text(LOG + LOG)
    with pytest.raises(ValueError, match="built from"):
        logstore.open_store(tmp_path / "pay.parquet", path, tmp_path)


def test_the_deadline_stops_a_query(logs, monkeypatch):
    _, stored = logs["mixed"]
    monkeypatch.setattr(logstore, "_SCAN_ROWS", 64)
    deadline = Deadline(0.05)
    time.sleep(0.06)
    with deadline_scope(deadline), pytest.raises(DeadlineExceeded):
        logstore.search(stored, Filter(None, None, ("timeout",), None, whole=True), 10)
    with deadline_scope(deadline), pytest.raises(DeadlineExceeded):
        list(logstore.matching_lines(stored, Filter(None, None, (), None, whole=True)))


@pytest.mark.parametrize("text", ["", " \n\n\t\n"])
def test_a_file_without_rows_matches_nothing(tmp_path, text):
    path = tmp_path / "empty.log"
    path.write_text(text)
    logstore_write.write_store([reference_table(path, tmp_path, CONTEXT)], tmp_path / "empty.parquet", lambda *_: {})
    with logstore.open_store(tmp_path / "empty.parquet", path, tmp_path) as stored:
        for wanted in (Filter(None, None, (), None, whole=True), Filter(None, None, ("x",), 2)):
            assert logstore.search(stored, wanted, 5) == FileMatches([], {}, None, None)
            assert logstore.instance_counts(stored, wanted) == {}
            assert list(logstore.matching_lines(stored, wanted)) == []


def test_a_query_holds_a_block_of_rows_not_the_file(tmp_path, monkeypatch):
    """A query reads the store a block of row groups at a time: its peak traced memory (numpy's arrays
    among it), for a whole-file query and a keyword query, grows less than 1.2x from N lines to 2N."""
    import tracemalloc

    from evcli.backends import logcolumns

    monkeypatch.setattr(logstore, "_GROUP_ROWS", 2000)
    peaks = {}
    for lines in (20_000, 40_000):
        path, target = tmp_path / f"{lines}.log", tmp_path / f"{lines}.parquet"
        write_mixed_log(path, lines)
        logstore_write.write_store(logcolumns.read_windows(path, tmp_path, CONTEXT, 1 << 17), target, lambda *_: {})
        with logstore.open_store(target, path, tmp_path) as stored:
            stored.matched_texts()  # the side lists: read once, whatever the query
            tracemalloc.start()
            for words in ((), ("ord-12",)):
                wanted = Filter(None, None, words, None, whole=True)
                assert logstore.search(stored, wanted, 50).total > 0
                assert logstore.instance_counts(stored, wanted)
                assert any(True for _ in logstore.matching_lines(stored, wanted))
            peaks[lines] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    assert peaks[40_000] <= 1.2 * peaks[20_000], peaks
