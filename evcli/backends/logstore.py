"""The columnar log index (issue 27): one file's `LogTable` stored as one Parquet file, and the queries
of evcli.backends.logsearch answered from it and the log's own bytes, with the same results.

The store holds the table's columns (line number, byte span, ts, level, derived, template, instance,
record; the increasing ones as differences), its distinct templates and instances, the text of the lines whose text is not their bytes
(`LogTable.text`: masked or cut lines) and the unescaped text of lines writing JSON escapes; no other
line text. It is written as it is read: one row group per window of rows (the side-list columns null),
then one row group of the side lists (the number columns null); the metadata (counts, build record) last. A query reads the log's bytes through a read-only mmap (`open_binary`: contained in the
environment's directory) and matches keywords over them vectorised, two threads at a time: chunks of
lines as one Arrow binary array over the mapped bytes (no copy), matched by pyarrow's RE2 kernels. (Polars'
regex over the same chunks as text cost as much CPU with the UTF-8 check its strings need, measured on
5M lines; binary needs no check and matches bytes that are not UTF-8 as they are.)

Invariants:
  - `write_store` writes a private temporary file in the target's directory and renames it into place:
    a reader opens only a whole store; a failed or stopped write leaves no temporary file behind;
  - `open_store` refuses a store whose recorded size is not the log's (the bytes changed);
  - results equal logsearch's over the SQLite index built from the same file: a line's text is
    `LogTable.text` or else its bytes decoded (`logtable.decoded`); a keyword matches the line's
    unescaped text when it has one, else that text (SQLite's coalesce(unescaped, line)), literally and
    ASCII-case-insensitively (LIKE); a keyword of ASCII digits matches a whole number (no digit after
    it, no digit or '.' before it); rows are ordered by ts DESC, lineno DESC, a line without ts last;
    patterns by count DESC, ties by template code (first appearance first: SQLite leaves the order of
    ties to its sorter, which differs between queries of one file, so here it is defined);
  - matching the bytes equals matching the decoded text: a keyword is valid UTF-8, so a match starts
    where the decoder is in step and decodes to the keyword, and ASCII folding of bytes folds only
    ASCII letters. A line is matched over its bytes up to the next line's start (its line end and
    any blank lines after it): a keyword without CR or LF that is not all white space cannot match
    there, and one that can is checked again on the lines' text. A keyword holding U+FFFD (a
    replaced byte or NUL) is matched on the decoded text; one holding NUL matches nothing (no text
    holds one);
  - a line with a `text` or `unescaped` entry is matched on that text only, never on its bytes: a
    secret masked away is not found, and its masked text is;
  - records are contiguous runs of rows (a record is a line with its timestamp and the lines after it
    without one), so the records of matching rows are counted as changes of `record` along them;
  - the tool call's deadline (check_deadline) is checked between chunks of rows scanned and of lines
    decoded: a query is stopped with DeadlineExceeded;
  - a `StoredLog` belongs to one thread (its columns are read on first use, unlocked): each query opens
    its own; its scan threads only read the mapped bytes and return before the query does.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evcli.backends.logsearch import FileMatches, Filter
from evcli.backends.logtable import LogTable, decoded
from evcli.core.files import check_deadline, open_binary

STORE_VERSION = 2  # 2: written in row groups, the side lists in the last one
# measured (bench/bench_logstore.py, 5M mixed lines, columns stored as differences): zstd 0.064 of the
# log, lz4 0.109; their columns read in the same CPU time (0.09 s) and a keyword query took 0.30 s on either
_COMPRESSION = "zstd"
_META_KEY = "evcli.logstore"
_STORED = ("skipped", "gap", "length", "ts", "level", "derived", "template", "instance", "back")
_SIDE_LISTS = ("templates", "instances", "text_lineno", "text", "unescaped_lineno", "unescaped")
_SCAN_ROWS = 1 << 19  # rows per scanned chunk: the deadline is checked between chunks
_DECODE_ROWS = 1 << 14  # lines decoded between deadline checks
_THREADS = 2
# a longer keyword is scanned for by its first _PIECE_CHARS characters and checked on the candidates' text:
# RE2 (pyarrow's ignore_case) compiles a long case-folded literal slowly (seconds for 45,000 of one letter)
_PIECE_CHARS = 256
_ASCII_LETTER = re.compile("[A-Za-z]")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


# --- writing ----------------------------------------------------------------------------------------


def write_store(
    pieces: Iterable[LogTable], target: Path, build: Callable[[float | None, float | None], dict[str, Any]]
) -> None:
    """Store the table of `pieces` (evcli.backends.logcolumns.read_windows' pieces, or one whole table) at
    `target`, atomically (see the module's invariants), one row group per piece that has rows, then the
    side lists' row group; `build(first ts, last ts)` is the build record, asked for after the last piece."""
    import pyarrow.parquet as pq

    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=".building-", suffix=".parquet")
    os.close(descriptor)
    try:
        written = _Written()
        with pq.ParquetWriter(temporary, _schema(), compression=_COMPRESSION, write_statistics=False) as writer:
            for piece in pieces:
                if len(piece.lineno):
                    writer.write_table(_row_group(piece, written), row_group_size=len(piece.lineno))
                written.add(piece)
            writer.write_table(_side_group(written))
            writer.add_key_value_metadata({_META_KEY: json.dumps(written.meta(build))})
        os.replace(temporary, target)
    finally:
        Path(temporary).unlink(missing_ok=True)


@dataclass
class _Written:
    """What the pieces written so far add up to: the side lists, the counts, the first and last ts and the
    last row's end (the next row's `gap` counts from it)."""

    rows: int = 0
    lines: int = 0
    size: int = 0
    cut: int = 0
    end: int = 0
    format: str | None = None
    first: float = np.inf
    last: float = -np.inf
    lists: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in _SIDE_LISTS})

    def add(self, piece: LogTable) -> None:
        self.rows += len(piece.lineno)
        self.lines += piece.lines
        self.size += piece.size
        self.cut += piece.cut
        self.format = piece.format
        if len(piece.lineno):
            self.end = int(piece.end[-1])
            self.first = min(self.first, float(np.fmin.reduce(piece.ts, initial=np.inf)))
            self.last = max(self.last, float(np.fmax.reduce(piece.ts, initial=-np.inf)))
        for name, values in _side_lists(piece).items():
            self.lists[name].extend(values)

    def meta(self, build: Callable[[float | None, float | None], dict[str, Any]]) -> dict[str, Any]:
        return {
            "version": STORE_VERSION,
            "build": build(*(None if np.isinf(ts) else ts for ts in (self.first, self.last))),
            "rows": self.rows,
            "lines": self.lines,
            "size": self.size,
            "format": self.format,
            "cut": self.cut,
            "counts": {name: len(values) for name, values in self.lists.items()},
        }


def _schema() -> Any:
    import pyarrow as pa

    numbers = {"gap": pa.int64(), "ts": pa.float64(), "level": pa.int8(), "derived": pa.int8()}
    side = {name: pa.int32() if name.endswith("_lineno") else pa.large_string() for name in _SIDE_LISTS}
    return pa.schema([(name, numbers.get(name, pa.int32())) for name in _STORED] + list(side.items()))


def _row_group(piece: LogTable, written: _Written) -> Any:
    """A piece's rows (`_encoded`, continuing the rows written before it), the side lists' columns null."""
    import pyarrow as pa

    schema = _schema()
    numbers = _encoded(piece, written.rows, written.end)
    rows = len(piece.lineno)
    side = [pa.nulls(rows, schema.field(name).type) for name in _SIDE_LISTS]
    return pa.table([pa.array(numbers[name], schema.field(name).type) for name in _STORED] + side, schema=schema)


def _side_group(written: _Written) -> Any:
    """The last row group: the side lists, each padded with nulls to the longest (at least one row), the
    number columns null."""
    import pyarrow as pa

    schema = _schema()
    rows = max(1, *(len(values) for values in written.lists.values()))
    numbers = [pa.nulls(rows, schema.field(name).type) for name in _STORED]
    side = [
        pa.array(values + [None] * (rows - len(values)), schema.field(name).type)
        for name, values in written.lists.items()
    ]
    return pa.table(numbers + side, schema=schema)


def _encoded(table: LogTable, before: int, previous_end: int) -> dict[str, np.ndarray]:
    """The number columns as stored, narrowed, the increasing ones as differences (which compress to
    little and read fast): `skipped` (lines before a row that are not rows: lineno - row - 1), `gap`
    (bytes between the previous row's end and its start), `back` (lineno - record); `_decoded`
    inverts it. `table`'s rows follow `before` rows, the last of them ending at `previous_end`."""
    length = (table.end - table.start).astype(np.int64)
    previous_ends = np.concatenate(([previous_end], table.end[:-1])).astype(np.int64)
    return {
        "skipped": (table.lineno - np.arange(before + 1, before + len(table.lineno) + 1)).astype(np.int32),
        "gap": table.start.astype(np.int64) - previous_ends,
        "length": length.astype(np.int32),
        "ts": table.ts.astype(np.float64),
        "level": table.level.astype(np.int8),
        "derived": table.derived.astype(np.int8),
        "template": table.template.astype(np.int32),
        "instance": table.instance.astype(np.int32),
        "back": (table.lineno - table.record).astype(np.int32),
    }


def _decoded(stored: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The columns queries read, from `_encoded`'s."""
    start = stored["gap"].astype(np.int64)
    start[1:] += stored["length"][:-1]
    np.cumsum(start, out=start)
    lineno = np.arange(1, len(start) + 1, dtype=np.int64)
    lineno += stored["skipped"]
    columns = {name: stored[name] for name in ("length", "ts", "level", "derived", "template", "instance")}
    return columns | {"lineno": lineno, "start": start, "record": lineno - stored["back"]}


def _side_lists(table: LogTable) -> dict[str, list[Any]]:
    return {
        "templates": table.templates,
        "instances": table.instances,
        "text_lineno": list(table.text),
        "text": list(table.text.values()),
        "unescaped_lineno": list(table.unescaped),
        "unescaped": list(table.unescaped.values()),
    }


# --- reading ----------------------------------------------------------------------------------------


@dataclass
class StoredLog:
    """A store opened with its log's bytes mapped; columns are read on first use and kept."""

    store: Path
    data: Any  # the log's bytes: an mmap (b"" for an empty file)
    meta: dict[str, Any]
    _columns: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _lists: dict[str, list[Any]] = field(default_factory=dict, repr=False)
    _texts: dict[int, str] | None = field(default=None, repr=False)
    _special: tuple[np.ndarray, list[str]] | None = field(default=None, repr=False)

    def __enter__(self) -> StoredLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            self.data.close()

    @property
    def rows(self) -> int:
        return int(self.meta["rows"])

    def column(self, name: str) -> np.ndarray:
        """A number column of the table (`_decoded`); all are read at the first use of one."""
        if not self._columns:
            import polars as pl

            frame = pl.read_parquet(self.store, columns=list(_STORED), n_rows=self.rows)
            self._columns = _decoded({name: frame[name].to_numpy() for name in _STORED})
        return self._columns[name]

    def side(self, name: str) -> list[Any]:
        """A side list (templates, instances, text and unescaped with their line numbers); all are read
        at the first use of one, in one read of the last row group."""
        if not self._lists:
            import pyarrow.parquet as pq

            counts = self.meta["counts"]
            with pq.ParquetFile(self.store) as parquet:
                group = parquet.read_row_group(parquet.num_row_groups - 1, columns=list(_SIDE_LISTS))
            self._lists = {column: group[column][: counts[column]].to_pylist() for column in _SIDE_LISTS}
        return self._lists[name]

    def texts(self) -> dict[int, str]:
        """Line number -> text, for the lines whose text is not their bytes decoded."""
        if self._texts is None:
            self._texts = dict(zip(self.side("text_lineno"), self.side("text"), strict=True))
        return self._texts

    def special(self) -> tuple[np.ndarray, list[str]]:
        """The rows matched on their text, not their bytes (ascending), with that text: the unescaped
        text where a line has one, else its `text`."""
        if self._special is None:
            matched = self.texts() | dict(zip(self.side("unescaped_lineno"), self.side("unescaped"), strict=True))
            linenos = np.array(sorted(matched), np.int64)
            rows = np.searchsorted(self.column("lineno"), linenos)
            self._special = (rows, [matched[int(lineno)] for lineno in linenos])
        return self._special

    def line(self, row: int, texts: dict[int, str]) -> str:
        """Row `row`'s text: its `text` entry, else its bytes decoded."""
        known = texts.get(int(self.column("lineno")[row]))
        if known is not None:
            return known
        start = int(self.column("start")[row])
        return decoded(self.data[start : start + int(self.column("length")[row])])


def open_store(store: Path, log: Path, root: Path) -> StoredLog:
    """The store at `store` of the log `log` (a file inside `root`), its bytes mapped read-only."""
    import polars as pl

    meta = json.loads(pl.read_parquet_metadata(store)[_META_KEY])
    with open_binary(log, root) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size != meta["size"]:
            raise ValueError(f"{store} was built from {meta['size']} bytes, {log} has {size}")
        data: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    return StoredLog(store, data, meta)


# --- the queries ------------------------------------------------------------------------------------


def search(stored: StoredLog, wanted: Filter, limit: int, patterns: int = 20) -> FileMatches:
    """The matches of `wanted` in one file (logsearch.search's results)."""
    rows = np.flatnonzero(selected(stored, wanted))
    if not len(rows):
        return FileMatches([], {}, None, None)
    by_level, first, last = _levels(stored, rows)
    return FileMatches(
        _newest_rows(stored, rows, limit),
        by_level,
        first,
        last,
        _patterns(stored, rows, patterns),
        _records(stored, rows),
    )


def instance_counts(stored: StoredLog, wanted: Filter) -> dict[str, int]:
    """Matching lines per instance (lines naming none left out), by instance text."""
    codes = stored.column("instance")[selected(stored, wanted)]
    counts = np.bincount(codes[codes >= 0])
    names = stored.side("instances")
    return dict(sorted((names[code], int(counts[code])) for code in np.flatnonzero(counts)))


def matching_lines(stored: StoredLog, wanted: Filter) -> Iterator[str]:
    """The text of every line `wanted` keeps (its unescaped text where it has one), in file order."""
    rows = np.flatnonzero(selected(stored, wanted))
    special_rows, special_texts = stored.special()
    matched = dict(zip(special_rows.tolist(), special_texts, strict=True))
    texts = stored.texts()
    for done, row in enumerate(rows.tolist()):
        if done % _DECODE_ROWS == 0:
            check_deadline()
        known = matched.get(row)
        yield known if known is not None else stored.line(row, texts)


# --- which rows a filter keeps ------------------------------------------------------------------------


def selected(stored: StoredLog, wanted: Filter) -> np.ndarray:
    """A mask of the rows `wanted` keeps (logsearch.Filter.where, row by row)."""
    ts = stored.column("ts")
    if wanted.start is not None or wanted.end is not None:
        low = -np.inf if wanted.start is None else wanted.start
        high = np.inf if wanted.end is None else wanted.end
        keep = (ts >= low) & (ts <= high)  # NaN compares false: a line without ts is out
    elif not wanted.whole:
        keep = ~np.isnan(ts)
    else:
        keep = np.ones(len(ts), bool)
    if wanted.level is not None:
        level = stored.column("level")
        keep &= (level >= wanted.level) if wanted.level_strict else ((level >= wanted.level) | (level < 0))
    for keyword in wanted.keywords:
        if not keep.any():
            break
        keep &= _holding(stored, keyword, keep)
    return keep


def _holding(stored: StoredLog, keyword: str, keep: np.ndarray) -> np.ndarray:
    """A mask of the rows among `keep` whose text holds `keyword` (the module's invariants)."""
    found = np.zeros(len(keep), bool)
    if "\x00" in keyword:
        return found
    holds = _text_matcher(keyword)
    kept = np.flatnonzero(keep)
    if "\ufffd" in keyword:  # a replaced byte: only the decoded text shows it
        texts = stored.texts()
        found[kept] = [holds(stored.line(row, texts)) for row in _checked(kept.tolist())]
    else:
        first, last = int(kept[0]), int(kept[-1]) + 1
        piece = keyword if keyword.isdigit() else keyword[:_PIECE_CHARS]
        found[first:last] = _scan(stored, piece, first, last)
        if piece != keyword or "\r" in keyword or "\n" in keyword or keyword.isspace():  # candidates only
            texts = stored.texts()
            again = np.flatnonzero(found & keep)
            found[again] = [holds(stored.line(row, texts)) for row in _checked(again.tolist())]
    special_rows, special_texts = stored.special()
    inside = keep[special_rows]
    found[special_rows[inside]] = [
        holds(text) for text, kept_row in zip(special_texts, inside, strict=True) if kept_row
    ]
    return found & keep


def _checked(rows: list[int]) -> Iterator[int]:
    """`rows`, the deadline checked every _DECODE_ROWS of them."""
    for done, row in enumerate(rows):
        if done % _DECODE_ROWS == 0:
            check_deadline()
        yield row


def _text_matcher(keyword: str) -> Callable[[str], bool]:
    """Whether a line's text holds `keyword` as SQLite's LIKE / whole-number GLOB decides."""
    if keyword.isdigit() and keyword.isascii():
        number = re.compile(rf"(?<![0-9.]){keyword}(?![0-9])")
        return lambda text: number.search(text) is not None
    lowered = keyword.translate(_ASCII_LOWER)
    return lambda text: lowered in text.translate(_ASCII_LOWER)


def _scan(stored: StoredLog, keyword: str, first: int, last: int) -> np.ndarray:
    """A mask over rows [first, last): the row's bytes up to the next row's start hold `keyword`
    (ASCII case folded; digits: a whole number). Chunks run on _THREADS threads; the deadline is
    checked as each chunk's result is taken."""
    starts = stored.column("start")
    bounds = [(at, min(at + _SCAN_ROWS, last)) for at in range(first, last, _SCAN_ROWS)]
    with ThreadPoolExecutor(_THREADS) as pool:
        futures: list[Future[np.ndarray]] = [
            pool.submit(_scan_chunk, stored.data, _offsets(starts, low, high, len(stored.data)), keyword)
            for low, high in bounds
        ]
        try:
            parts = []
            for future in futures:
                check_deadline()
                parts.append(future.result())
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return np.concatenate(parts) if parts else np.zeros(0, bool)


def _offsets(starts: np.ndarray, low: int, high: int, size: int) -> np.ndarray:
    """Where rows [low, high) start, then where the last one's scanned bytes end (the next row's start,
    or the file's end)."""
    return starts[low : high + 1] if high < len(starts) else np.append(starts[low:high], size)


def _scan_chunk(data: Any, offsets: np.ndarray, keyword: str) -> np.ndarray:
    """Which of the lines between `offsets` hold `keyword`: pyarrow's RE2 kernels over the mapped bytes
    as one binary array (no copy). RE2 reads binary as Latin-1, so ignore_case folds ASCII letters only
    (checked for every byte), and bytes that are not UTF-8 are matched as they are."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    if keyword.isdigit() and keyword.isascii():
        hits = pc.match_substring_regex(lines, f"(^|[^0-9.]){keyword}([^0-9]|$)")
    else:
        hits = pc.match_substring(lines, keyword, ignore_case=_ASCII_LETTER.search(keyword) is not None)
    return hits.to_numpy(zero_copy_only=False)


# --- what a search returns ----------------------------------------------------------------------------


def _levels(stored: StoredLog, rows: np.ndarray) -> tuple[dict[int | None, int], float | None, float | None]:
    """Counts per level (None first, as SQLite groups NULL), and the first and last ts."""
    counts = np.bincount(stored.column("level")[rows].astype(np.int64) + 1)
    by_level: dict[int | None, int] = {
        (None if code == 0 else int(code) - 1): int(counts[code]) for code in np.flatnonzero(counts)
    }
    ts = stored.column("ts")[rows]
    timed = ts[~np.isnan(ts)]
    if not len(timed):
        return by_level, None, None
    return by_level, float(timed.min()), float(timed.max())


def _newest_rows(stored: StoredLog, rows: np.ndarray, limit: int) -> list[tuple[Any, ...]]:
    """The `limit` newest rows (ts DESC, lineno DESC, no ts last; a negative limit: all, as in SQL)."""
    key = stored.column("ts")[rows]
    key = np.where(np.isnan(key), -np.inf, key)
    if 0 <= limit < len(rows):
        if limit == 0:
            return []
        kth = np.partition(key, len(key) - limit)[len(key) - limit]
        near = np.flatnonzero(key >= kth)  # the newest `limit` and any rows tied with the oldest of them
        rows, key = rows[near], key[near]
    order = np.lexsort((stored.column("lineno")[rows], key))[::-1]
    chosen = rows[order if limit < 0 else order[:limit]]
    return [_row(stored, int(row)) for row in chosen]


def _row(stored: StoredLog, row: int) -> tuple[Any, ...]:
    """(lineno, ts, level, derived, instance, line) as the SQLite index returns them."""
    ts = float(stored.column("ts")[row])
    level = int(stored.column("level")[row])
    instance = int(stored.column("instance")[row])
    return (
        int(stored.column("lineno")[row]),
        None if np.isnan(ts) else ts,
        None if level < 0 else level,
        int(stored.column("derived")[row]),
        None if instance < 0 else stored.side("instances")[instance],
        stored.line(row, stored.texts()),
    )


def _patterns(stored: StoredLog, rows: np.ndarray, wanted: int) -> list[dict[str, Any]]:
    """The `wanted` commonest templates of the rows (count DESC, then template code; a negative
    `wanted`: all) with their first and last ts and their newest line as the example."""
    codes = stored.column("template")[rows]
    counts = np.bincount(codes)
    present = np.flatnonzero(counts)
    top = present[np.lexsort((present, -counts[present]))]
    low, high, newest = _template_spans(stored, rows, codes, len(counts))
    texts = stored.texts()
    return [
        {
            "template": stored.side("templates")[code],
            "count": int(counts[code]),
            "first": None if np.isnan(low[code]) else float(low[code]),
            "last": None if np.isnan(high[code]) else float(high[code]),
            **_example(stored, int(newest[code]), texts),
        }
        for code in (top if wanted < 0 else top[:wanted]).tolist()
    ]


def _template_spans(
    stored: StoredLog, rows: np.ndarray, codes: np.ndarray, templates: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per template code: the first and last ts of the rows (NaN: none has one; fmin/fmax skip NaN as
    SQL's min/max skip NULL) and the newest row."""
    ts = stored.column("ts")[rows]
    low, high = np.full(templates, np.nan), np.full(templates, np.nan)
    newest = np.full(templates, -1, np.int64)
    np.fmin.at(low, codes, ts)
    np.fmax.at(high, codes, ts)
    np.maximum.at(newest, codes, rows)
    return low, high, newest


def _example(stored: StoredLog, row: int, texts: dict[int, str]) -> dict[str, Any]:
    """A pattern's example line, its level and whether it starts its record."""
    level = int(stored.column("level")[row])
    return {
        "example": stored.line(row, texts),
        "level": None if level < 0 else level,
        "starts_record": bool(stored.column("record")[row] == stored.column("lineno")[row]),
    }


def _records(stored: StoredLog, rows: np.ndarray) -> int:
    """Distinct records of the rows: records are contiguous runs, so changes of `record` along them."""
    records = stored.column("record")[rows]
    return int(np.count_nonzero(records[1:] != records[:-1])) + 1
