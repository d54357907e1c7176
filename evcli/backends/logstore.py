"""The columnar log index (issue 27): one file's `LogTable` stored as one Parquet file, and the queries
of evcli.backends.logsearch answered from it and the log's own bytes, with the same results.

The store holds the table's columns (line number, byte span, ts, level, derived, template, instance,
record; the increasing ones as differences), its distinct templates and instances, the text of the lines
whose text is not their bytes (`LogTable.text`: masked or cut lines) and the unescaped text of lines
writing JSON escapes; no other line text. It is written as it is read (evcli.backends.logstore_write): one
row group per window of rows (the side-list columns null), then one row group of the side lists (the
number columns null); the metadata (counts, build record) last. This module reads it: a query reads the
log's bytes through a read-only mmap (`open_binary`: contained in the
environment's directory) and matches keywords over them vectorised, two threads at a time (the process's
kept threads, evcli.core.pools; a range of fewer than _INLINE_ROWS rows in the query's own thread): chunks
of lines as one Arrow binary array over the mapped bytes (no copy), matched by pyarrow's RE2 kernels. (Polars'
regex over the same chunks as text cost as much CPU with the UTF-8 check its strings need, measured on
5M lines; binary needs no check and matches bytes that are not UTF-8 as they are.)

Invariants:
  - a store is renamed into place whole (evcli.backends.logstore_write), so `open_store` opens only a
    whole one;
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
    any blank lines after it; a block's last line: up to its own end): a keyword without CR or LF
    that is not all white space cannot match there, and one that can is checked again on the lines'
    text. A keyword holding U+FFFD (a replaced byte or NUL) is matched on the decoded text; one
    holding NUL matches nothing (no text holds one);
  - a line with a `text` or `unescaped` entry is matched on that text only, never on its bytes: a
    secret masked away is not found, and its masked text is;
  - records are contiguous runs of rows (a record is a line with its timestamp and the lines after it
    without one), so the records of matching rows are counted as changes of `record` along them;
  - a query's memory does not grow with the log: it reads the rows a block of row groups at a time
    (`StoredLog.groups`: at least _GROUP_ROWS rows, the increasing columns decoded carrying the rows
    and the end before the block) and merges each block's results (counts, sums per template, the
    newest `limit` rows); it holds one block, the side lists and what it returns. A scan releases the
    mapped pages it read after each chunk (madvise), so they do not count in the process's RSS;
  - the tool call's deadline (check_deadline) is checked before each block and between chunks of rows
    scanned and of lines decoded: a query is stopped with DeadlineExceeded;
  - a `StoredLog` belongs to one thread (its side lists are read on first use, unlocked): each query
    opens its own; its scans and read-ahead on other threads only read the mapped bytes and the store
    and end before the query does (an abandoned one is waited for), so neither is closed under them.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evcli.backends.logsearch import FileMatches, Filter
from evcli.backends.logtable import decoded
from evcli.core.files import check_deadline, open_binary
from evcli.core.pools import Limited, threads

STORE_VERSION = 2  # 2: written in row groups, the side lists in the last one
META_KEY = "evcli.logstore"
STORED = ("skipped", "gap", "length", "ts", "level", "derived", "template", "instance", "back")
SIDE_LISTS = ("templates", "instances", "text_lineno", "text", "unescaped_lineno", "unescaped")
_SCAN_ROWS = 1 << 19  # rows per scanned chunk: the deadline is checked between chunks
# fewer rows are scanned in the query's thread: pyarrow matches about 50 ns a row here (2-core EPYC), so
# 8,192 take 0.4 ms, and handing two halves to other threads and back costs about 0.1 ms of CPU
_INLINE_ROWS = 1 << 13
_GROUP_ROWS = 1 << 16  # rows a query reads at least at a time: smaller row groups are read together
_DECODE_ROWS = 1 << 14  # lines decoded between deadline checks
_THREADS = 2
# a longer keyword is scanned for by its first _PIECE_CHARS characters and checked on the candidates' text:
# RE2 (pyarrow's ignore_case) compiles a long case-folded literal slowly (seconds for 45,000 of one letter)
_PIECE_CHARS = 256
_ASCII_LETTER = re.compile("[A-Za-z]")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


# --- reading ----------------------------------------------------------------------------------------


def _decoded(stored: dict[str, np.ndarray], before: int, previous_end: int) -> dict[str, np.ndarray]:
    """The columns queries read, from the stored ones (evcli.backends.logstore_write._encoded) of rows
    following `before` rows, the last of them ending at `previous_end`."""
    start = stored["gap"].astype(np.int64)
    start[:1] += previous_end
    start[1:] += stored["length"][:-1]
    np.cumsum(start, out=start)
    lineno = np.arange(before + 1, before + len(start) + 1, dtype=np.int64)
    lineno += stored["skipped"]
    columns = {name: stored[name] for name in ("length", "ts", "level", "derived", "template", "instance")}
    return columns | {"lineno": lineno, "start": start, "record": lineno - stored["back"]}


@dataclass
class Group:
    """A block of the table's consecutive rows, decoded (`_decoded`): `StoredLog.groups`' unit."""

    columns: dict[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def __len__(self) -> int:
        return len(self.columns["lineno"])


@dataclass
class StoredLog:
    """A store opened with its log's bytes mapped. Queries read its rows a block at a time (`groups`);
    `column` reads the whole table's columns and keeps them, for callers that want one whole."""

    store: Path
    data: Any  # the log's bytes: an mmap (b"" for an empty file)
    meta: dict[str, Any]
    _columns: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _lists: dict[str, list[Any]] = field(default_factory=dict, repr=False)
    _texts: dict[int, str] | None = field(default=None, repr=False)
    _matched: tuple[np.ndarray, list[str]] | None = field(default=None, repr=False)

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

    def groups(self) -> Iterator[Group]:
        """The table's rows in file order, a block of consecutive row groups at a time (`_blocks`), each
        decoded when it is reached while the next one is read on a kept thread (the first is read here);
        the deadline is checked before each."""
        before = previous_end = 0
        with self._parquet() as parquet:
            blocks = _blocks(parquet)
            ahead: futures.Future[Any] | None = None
            try:
                for at, block in enumerate(blocks):
                    check_deadline()
                    read = self._read(parquet, block) if ahead is None else ahead.result()
                    # one read ahead: the file's reads run while a block is queried
                    ahead = threads().submit(self._read, parquet, blocks[at + 1]) if at + 1 < len(blocks) else None
                    group = Group(_decoded({name: read[name].to_numpy() for name in STORED}, before, previous_end))
                    before += len(group)
                    previous_end = int(group["start"][-1] + group["length"][-1])
                    yield group
            finally:
                if ahead is not None:  # the query stopped early: the file is not closed under the read
                    futures.wait([ahead])

    def column(self, name: str) -> np.ndarray:
        """A number column of the whole table (`_decoded`); all are read at the first use of one."""
        if not self._columns:
            with self._parquet() as parquet:
                read = self._read(parquet, list(range(parquet.num_row_groups - 1)))
            self._columns = _decoded({key: read[key].to_numpy() for key in STORED}, 0, 0)
        return self._columns[name]

    def side(self, name: str) -> list[Any]:
        """A side list (templates, instances, text and unescaped with their line numbers); all are read
        at the first use of one, in one read of the last row group."""
        if not self._lists:
            counts = self.meta["counts"]
            with self._parquet() as parquet:
                group = parquet.read_row_group(
                    parquet.num_row_groups - 1, columns=list(SIDE_LISTS), use_threads=self.rows >= _GROUP_ROWS
                )
            self._lists = {column: group[column][: counts[column]].to_pylist() for column in SIDE_LISTS}
        return self._lists[name]

    def texts(self) -> dict[int, str]:
        """Line number -> text, for the lines whose text is not their bytes decoded."""
        if self._texts is None:
            self._texts = dict(zip(self.side("text_lineno"), self.side("text"), strict=True))
        return self._texts

    def matched_texts(self) -> tuple[np.ndarray, list[str]]:
        """The line numbers (ascending) of the rows matched on their text, not their bytes, with that text:
        the unescaped text where a line has one, else its `text`."""
        if self._matched is None:
            matched = self.texts() | dict(zip(self.side("unescaped_lineno"), self.side("unescaped"), strict=True))
            linenos = np.array(sorted(matched), np.int64)
            self._matched = (linenos, [matched[int(lineno)] for lineno in linenos])
        return self._matched

    def special(self) -> tuple[np.ndarray, list[str]]:
        """`matched_texts` by row of the whole table (`column`)."""
        linenos, texts = self.matched_texts()
        return np.searchsorted(self.column("lineno"), linenos), texts

    def special_in(self, group: Group) -> tuple[np.ndarray, list[str]]:
        """`matched_texts` of the rows of `group`, by row within it."""
        linenos, texts = self.matched_texts()
        if not len(group):
            return np.zeros(0, np.int64), []
        low, high = np.searchsorted(linenos, (group["lineno"][0], group["lineno"][-1] + 1))
        return np.searchsorted(group["lineno"], linenos[low:high]), texts[low:high]

    def text(self, lineno: int, start: int, length: int, texts: dict[int, str]) -> str:
        """A row's text: its `text` entry, else its bytes decoded."""
        known = texts.get(lineno)
        return known if known is not None else decoded(self.data[start : start + length])

    def line(self, row: int, texts: dict[int, str]) -> str:
        """Row `row`'s text (`text`), by row of the whole table (`column`)."""
        return self.text(
            int(self.column("lineno")[row]), int(self.column("start")[row]), int(self.column("length")[row]), texts
        )

    def _parquet(self) -> Any:
        """The store opened for reading, without Arrow's pre-buffering: that hands each read to Arrow's I/O
        threads (for high-latency file systems) and waits for them, and this file is local. With two worker
        processes busy on two cores, a diagnosis's main thread spent 36% of its time in these reads that way,
        7% without (py-spy, issue 27); a query of the host environment's logs alone took 1.62 ms of CPU, 1.51."""
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.store, pre_buffer=False)

    def _read(self, parquet: Any, groups: list[int]) -> Any:
        """The stored columns of row groups `groups`; decoded by Arrow's threads only in a store of at least
        _GROUP_ROWS rows (in a smaller one, handing its few columns to them and back costs more CPU than it
        saves: keyword queries of the host environment's logs took 1.90 ms of CPU each that way, 1.62 ms in
        the query's thread alone; medians of 3 runs)."""
        return parquet.read_row_groups(groups, columns=list(STORED), use_threads=self.rows >= _GROUP_ROWS)

    def release(self, low: int, high: int) -> None:
        """Drop the mapped pages of bytes [low, high) from the process (the page cache keeps them): a
        scan reads each page once, so its resident memory is the chunks in flight, not the log."""
        if isinstance(self.data, mmap.mmap) and low < high:
            start = low - low % mmap.PAGESIZE
            self.data.madvise(mmap.MADV_DONTNEED, start, high - start)


def _blocks(parquet: Any) -> list[list[int]]:
    """The row groups of the table's rows (all but the last) in blocks of consecutive ones, each of at
    least _GROUP_ROWS rows but the last."""
    blocks: list[list[int]] = [[]]
    rows = 0
    for index in range(parquet.num_row_groups - 1):
        if rows >= _GROUP_ROWS:
            blocks.append([])
            rows = 0
        blocks[-1].append(index)
        rows += parquet.metadata.row_group(index).num_rows
    return blocks if blocks[0] else []


def open_store(store: Path, log: Path, root: Path) -> StoredLog:
    """The store at `store` of the log `log` (a file inside `root`), its bytes mapped read-only."""
    import polars as pl

    meta = json.loads(pl.read_parquet_metadata(store)[META_KEY])
    with open_binary(log, root) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size != meta["size"]:
            raise ValueError(f"{store} was built from {meta['size']} bytes, {log} has {size}")
        data: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    return StoredLog(store, data, meta)


# --- the queries ------------------------------------------------------------------------------------


def search(stored: StoredLog, wanted: Filter, limit: int, patterns: int = 20) -> FileMatches:
    """The matches of `wanted` in one file (logsearch.search's results), merged over the row groups."""
    found = _Found(stored, limit)
    for group, keep in selections(stored, wanted):
        found.add(group, np.flatnonzero(keep))
    return found.matches(patterns) if found.rows else FileMatches([], {}, None, None)


def instance_counts(stored: StoredLog, wanted: Filter) -> dict[str, int]:
    """Matching lines per instance (lines naming none left out), by instance text."""
    names = stored.side("instances")
    counts = np.zeros(len(names), np.int64)
    for group, keep in selections(stored, wanted):
        codes = group["instance"][keep]
        counts += np.bincount(codes[codes >= 0], minlength=len(names))
    return dict(sorted((names[code], int(counts[code])) for code in np.flatnonzero(counts)))


def matching_lines(stored: StoredLog, wanted: Filter) -> Iterator[str]:
    """The text of every line `wanted` keeps (its unescaped text where it has one), in file order."""
    texts = stored.texts()
    for group, keep in selections(stored, wanted):
        special_rows, special_texts = stored.special_in(group)
        matched = dict(zip(special_rows.tolist(), special_texts, strict=True))
        for row in _checked(np.flatnonzero(keep).tolist()):
            known = matched.get(row)
            yield known if known is not None else group_line(stored, group, row, texts)


def group_line(stored: StoredLog, group: Group, row: int, texts: dict[int, str]) -> str:
    """The text of `group`'s row `row` (`StoredLog.text`)."""
    return stored.text(int(group["lineno"][row]), int(group["start"][row]), int(group["length"][row]), texts)


# --- which rows a filter keeps ------------------------------------------------------------------------


def selections(stored: StoredLog, wanted: Filter) -> Iterator[tuple[Group, np.ndarray]]:
    """Each block of rows (`StoredLog.groups`) with the mask of its rows `wanted` keeps
    (logsearch.Filter.where, row by row), the caller's to change."""
    scans = Limited(_THREADS)
    for group in stored.groups():
        keep = _kept(group, wanted)
        for keyword in wanted.keywords:
            if not keep.any():
                break
            keep &= _holding(stored, group, keyword, keep, scans)
        yield group, keep


def _kept(group: Group, wanted: Filter) -> np.ndarray:
    """A mask of the group's rows in `wanted`'s range and at its level."""
    ts = group["ts"]
    if wanted.start is not None or wanted.end is not None:
        low = -np.inf if wanted.start is None else wanted.start
        high = np.inf if wanted.end is None else wanted.end
        keep = (ts >= low) & (ts <= high)  # NaN compares false: a line without ts is out
    elif not wanted.whole:
        keep = ~np.isnan(ts)
    else:
        keep = np.ones(len(ts), bool)
    if wanted.level is not None:
        level = group["level"]
        keep &= (level >= wanted.level) if wanted.level_strict else ((level >= wanted.level) | (level < 0))
    return keep


def _holding(stored: StoredLog, group: Group, keyword: str, keep: np.ndarray, scans: Limited) -> np.ndarray:
    """A mask of the group's rows among `keep` whose text holds `keyword` (the module's invariants)."""
    found = np.zeros(len(keep), bool)
    if "\x00" in keyword:
        return found
    holds = _text_matcher(keyword)
    kept = np.flatnonzero(keep)
    texts = stored.texts()
    if "\ufffd" in keyword:  # a replaced byte: only the decoded text shows it
        found[kept] = [holds(group_line(stored, group, row, texts)) for row in _checked(kept.tolist())]
    else:
        first, last = int(kept[0]), int(kept[-1]) + 1
        piece = keyword if keyword.isdigit() else keyword[:_PIECE_CHARS]
        found[first:last] = _scan(stored, group, piece, first, last, scans)
        if piece != keyword or "\r" in keyword or "\n" in keyword or keyword.isspace():  # candidates only
            again = np.flatnonzero(found & keep)
            found[again] = [holds(group_line(stored, group, row, texts)) for row in _checked(again.tolist())]
    special_rows, special_texts = stored.special_in(group)
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


def _scan(stored: StoredLog, group: Group, keyword: str, first: int, last: int, scans: Limited) -> np.ndarray:
    """A mask over the group's rows [first, last): the row's bytes up to the next row's start (the
    group's last row: its end) hold `keyword` (ASCII case folded; digits: a whole number). The rows are
    scanned in chunks of at most _SCAN_ROWS, at least one per thread (fewer than _INLINE_ROWS rows: here,
    in one); the deadline is checked as each chunk's result is taken."""
    if last - first < _INLINE_ROWS:
        check_deadline()
        return _scan_chunk(stored, _offsets(group, first, last), keyword)
    step = min(_SCAN_ROWS, -(-(last - first) // _THREADS))
    chunks = [
        scans.submit(_scan_chunk, stored, _offsets(group, low, min(low + step, last)), keyword)
        for low in range(first, last, step)
    ]
    try:
        parts = []
        for chunk in chunks:
            check_deadline()
            parts.append(chunk.result())
    except BaseException:
        scans.cancel_waiting()
        futures.wait(chunks)  # those started read the mapped bytes: they end before the query closes them
        raise
    return np.concatenate(parts)


def _offsets(group: Group, low: int, high: int) -> np.ndarray:
    """Where the group's rows [low, high) start, then where the last one's scanned bytes end (the next
    row's start, or the group's last row's end)."""
    starts = group["start"]
    return (
        starts[low : high + 1] if high < len(starts) else np.append(starts[low:high], starts[-1] + group["length"][-1])
    )


def _scan_chunk(stored: StoredLog, offsets: np.ndarray, keyword: str) -> np.ndarray:
    """Which of the lines between `offsets` hold `keyword`: pyarrow's RE2 kernels over the mapped bytes
    as one binary array (no copy), whose pages are released after. RE2 reads binary as Latin-1, so
    ignore_case folds ASCII letters only (checked for every byte), and bytes that are not UTF-8 are
    matched as they are."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(stored.data)]
    )
    if keyword.isdigit() and keyword.isascii():
        hits = pc.match_substring_regex(lines, f"(^|[^0-9.]){keyword}([^0-9]|$)")
    else:
        hits = pc.match_substring(lines, keyword, ignore_case=_ASCII_LETTER.search(keyword) is not None)
    del lines
    stored.release(int(offsets[0]), int(offsets[-1]))
    return hits.to_numpy(zero_copy_only=False)


# --- what a search returns ----------------------------------------------------------------------------

_ROW = ("ts", "lineno", "level", "derived", "instance", "start", "length")  # what a returned row shows


class _Found:
    """What a search's matching rows add up to, taken row group by row group in file order: counts per
    level, first and last ts, records, and per template its count, first and last ts and newest row;
    the newest `limit` rows are kept as their columns (`_ROW`), at most `limit` of them between groups."""

    def __init__(self, stored: StoredLog, limit: int) -> None:
        templates = len(stored.side("templates"))
        self.stored, self.limit = stored, limit
        self.rows = self.records = 0
        self.last_record: int | None = None
        self.levels = np.zeros(1 + 128, np.int64)  # by level + 1 (an int8 level is at most 127; -1: none)
        self.first, self.last = np.inf, -np.inf
        self.newest: list[dict[str, np.ndarray]] = []
        self.counts = np.zeros(templates, np.int64)
        self.low, self.high = np.full(templates, np.nan), np.full(templates, np.nan)
        self.examples = {
            name: np.zeros(templates, np.int64) for name in ("lineno", "start", "length", "level", "starts")
        }

    def add(self, group: Group, rows: np.ndarray) -> None:
        if not len(rows):
            return
        ts, records = group["ts"][rows], group["record"][rows]
        self.rows += len(rows)
        self.records += int(np.count_nonzero(records[1:] != records[:-1])) + int(records[0] != self.last_record)
        self.last_record = int(records[-1])
        self.levels += np.bincount(group["level"][rows].astype(np.int64) + 1, minlength=len(self.levels))
        self.first = min(self.first, float(np.fmin.reduce(ts, initial=np.inf)))
        self.last = max(self.last, float(np.fmax.reduce(ts, initial=-np.inf)))
        if self.limit:
            self.newest.append({name: group[name][rows] for name in _ROW})
            if self.limit > 0:  # all rows (a negative limit) are sorted once, at the end
                self.newest = [_newest(self.newest, self.limit)]
        self._add_templates(group, rows, ts)

    def _add_templates(self, group: Group, rows: np.ndarray, ts: np.ndarray) -> None:
        """Per template: count, first and last ts (fmin/fmax skip NaN as SQL's min/max skip NULL), and the
        newest row's example columns (a later group's replace an earlier one's)."""
        codes = group["template"][rows]
        self.counts += np.bincount(codes, minlength=len(self.counts))
        np.fmin.at(self.low, codes, ts)
        np.fmax.at(self.high, codes, ts)
        present, reversed_at = np.unique(codes[::-1], return_index=True)
        newest = rows[len(rows) - 1 - reversed_at]
        example = {name: group[name][newest] for name in ("lineno", "start", "length", "level")}
        example["starts"] = group["record"][newest] == group["lineno"][newest]
        for name, values in example.items():
            self.examples[name][present] = values

    def matches(self, patterns: int) -> FileMatches:
        levels = np.flatnonzero(self.levels)
        return FileMatches(
            self._rows(),
            {(None if code == 0 else int(code) - 1): int(self.levels[code]) for code in levels},
            None if np.isinf(self.first) else self.first,
            None if np.isinf(self.last) else self.last,
            self._patterns(patterns),
            self.records,
        )

    def _rows(self) -> list[tuple[Any, ...]]:
        """(lineno, ts, level, derived, instance, line) of the newest rows, as the SQLite index returns them."""
        names, texts = self.stored.side("instances"), self.stored.texts()
        if not self.newest:
            return []
        return [
            (
                lineno,
                None if np.isnan(ts) else ts,
                None if level < 0 else level,
                derived,
                None if instance < 0 else names[instance],
                self.stored.text(lineno, start, length, texts),
            )
            for ts, lineno, level, derived, instance, start, length in zip(
                *(_newest(self.newest, self.limit)[name].tolist() for name in _ROW), strict=True
            )
        ]

    def _patterns(self, wanted: int) -> list[dict[str, Any]]:
        """The `wanted` commonest templates (count DESC, then template code; negative: all) with their first
        and last ts and their newest line as the example, its level and whether it starts its record."""
        present = np.flatnonzero(self.counts)
        top = present[np.lexsort((present, -self.counts[present]))]
        templates, texts, examples = self.stored.side("templates"), self.stored.texts(), self.examples
        return [
            {
                "template": templates[code],
                "count": int(self.counts[code]),
                "first": None if np.isnan(self.low[code]) else float(self.low[code]),
                "last": None if np.isnan(self.high[code]) else float(self.high[code]),
                "example": self.stored.text(
                    int(examples["lineno"][code]), int(examples["start"][code]), int(examples["length"][code]), texts
                ),
                "level": None if examples["level"][code] < 0 else int(examples["level"][code]),
                "starts_record": bool(examples["starts"][code]),
            }
            for code in (top if wanted < 0 else top[:wanted]).tolist()
        ]


def _newest(parts: list[dict[str, np.ndarray]], limit: int) -> dict[str, np.ndarray]:
    """The `limit` newest of the rows of `parts` (ts DESC, lineno DESC, no ts last; a negative limit: all,
    as in SQL), newest first."""
    rows = {name: np.concatenate([part[name] for part in parts]) for name in _ROW}
    key = np.where(np.isnan(rows["ts"]), -np.inf, rows["ts"])
    if 0 <= limit < len(key):
        kth = np.partition(key, len(key) - limit)[len(key) - limit]
        near = np.flatnonzero(key >= kth)  # the newest `limit` and any rows tied with the oldest of them
        rows, key = {name: values[near] for name, values in rows.items()}, key[near]
    order = np.lexsort((rows["lineno"], key))[::-1]
    return {name: values[order if limit < 0 else order[:limit]] for name, values in rows.items()}
