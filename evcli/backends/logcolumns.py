"""One log file read as columns without a per-line Python loop (issue 27): `read_windows` returns it in
pieces, a window of whole lines at a time, so memory does not grow with the file; `read_table` (the
pieces joined) returns exactly what evcli.backends.logtable.reference_table returns.

A window's bytes are split at b"\\n" with numpy and read as one polars string column. Each line then takes
one of two paths:
  - the vector path: formats are tried in `LineReader`'s order (the detected one, blank, continuation,
    the others), each by its shape (evcli.backends.logformats.shapes, values read by
    evcli.backends.logshapes_values) or, for JSON lines and logfmt, by its key-value pairs
    (evcli.backends.logshapes_structured), or for a container runtime's line (container_json, cri) by
    unwrapping it (evcli.backends.logshapes_container) and reading its inner line as WrapperFormat.wrapped
    does: continuation, the inner formats in order, then leading_level, at the runtime's time; a line a
    format's lead or sniff rules out, or its reader surely rejects, goes on to the next format, as
    `LineReader.read` does;
  - the Python path (`LineReader.read`, logrows' helpers), line by line, for every line the vector
    path cannot vouch for: a line masking may change (the SCREEN, evcli.backends.logshapes_screen), one inside a
    private key block, one with a control character (tab aside) or a byte above 127 that is not part
    of a SAFE character's UTF-8 (evcli.backends.logshapes_unicode), one writing a JSON `\\u`
    escape, one cut at the longest line, and one a format may read that has no shape or whose reading
    the shape does not take (an impossible date, a level word outside the shape's table).
Records, the forward-filled time and what continuation lines inherit are then computed with numpy over
the window's rows, continuing what the windows before it left (`_assemble`, `Carried`: the rules of
logrows.line_rows); template and instance codes are numbered across windows by first appearance. Two
windows are read at once, in threads (polars matches without the GIL); their pieces are assembled in
order.

Invariants: the screen flags a superset of the lines `Redactor.mask_stream` changes (it is built from
the redactor's own keyword table, base64 shape, escape folding and extra patterns, a SAFE character read
as an ASCII stand-in; a pattern polars cannot read flags every line); a vector-read line is printable ASCII, tabs and SAFE characters, on which
Python's and Rust's regexes (`\\w`, `\\d`, `\\s`, `\\b`, case-insensitive matching), `strip`, masking's
folding and the Python readers' `int`, `isdigit`, `lower` and `upper` agree with the vector path; it
uses character positions only (polars' `str.slice` and `len_chars` count characters), byte offsets
come from the bytes; no key block spans two windows (`_window_ends`), and a
line's reading depends on no other line, so a window reads its lines as the whole file would, in
any thread (a window's thread shares nothing it writes: its ParseContext's memo is its own).
"""

from __future__ import annotations

import mmap
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import chain, islice, pairwise
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from evcli.backends.base import LEVELS
from evcli.backends.logformats import (
    FORMATS,
    SAMPLE_LINES,
    LineKind,
    LineReader,
    LogFormat,
    ParseContext,
    detect,
    format_named,
)
from evcli.backends.logformats.base import CONTINUATION
from evcli.backends.logformats.shapes import LEADS, SHAPES, Shape, split_rest
from evcli.backends.logrows import Epochs, mask, masked_lines, split_instance
from evcli.backends.logshapes_container import Unwrapped, inner_names, unwrap_cri, unwrap_docker
from evcli.backends.logshapes_structured import read_json, read_logfmt
from evcli.backends.logshapes_unicode import (
    screened_lines,
    templates,
    unsafe_lines,
    unsafe_read_as_ascii,
)
from evcli.backends.logshapes_values import (
    _BLANK,
    _COLUMNS,
    _CONTINUED,
    _NO_LEVEL,
    _PARSED,
    _PYTHON,
    _SCHEMA,
    _UNREAD,
    _UNRECOGNISED,
    VARIABLE,
    _leading_level,
    _shape_frame,
    rows_frame,
)
from evcli.backends.logtable import LogTable, decoded, read_alone, unescaped_text
from evcli.core import files, redaction
from evcli.core.files import Lines, check_deadline, open_binary, open_text

STRUCTURED = {"json": read_json, "logfmt": read_logfmt}  # formats read as key-value pairs, not by a shape
WRAPPERS = {"container_json": unwrap_docker, "cri": lambda lines, tz, _: unwrap_cri(lines, tz)}  # runtimes' lines


# bytes read per window (whole lines). Measured, two windows read at once (1M bench_tools.write_mixed_log
# lines, 2 cores): 6 MB and 8 MB the same CPU time (2.8 s), 4 MB 6% more (polars' per-call overhead); the
# Python memory of test_snapshot's streamed build, 6 MB: 23-24 MB for both sizes, 8 MB: 25 MB and 32 MB
# (the two windows' peaks meet more often in more windows); one window at a time, 8 MB: 310 MB peak RSS,
# 16 MB: 460 MB; the whole file at once: 740 MB for 1M lines
WINDOW_BYTES = 6 << 20
_WORKERS = 2  # windows read at once: polars matches without the GIL, so two threads keep two cores busy
_SPLIT_BYTES = 1 << 20  # bytes of a window searched for line ends at a time
_KEY_LINES = redaction.MAX_KEY_BLOCK_LINES + 1  # lines before a window's start that must hold no key block
_ODD_BYTE = np.isin(np.arange(256), [*range(9), *range(11, 32), 127])  # control bytes but tab and newline


def read_table(path: Path, root: Path, context: ParseContext, window: int = WINDOW_BYTES) -> LogTable:
    """The LogTable of a file, equal to `reference_table(path, root, context)` (see the module docstring):
    `read_windows`' pieces joined."""
    return joined(list(read_windows(path, root, context, window)))


def read_windows(
    path: Path, root: Path, context: ParseContext, window: int | None = None, carried: Carried | None = None
) -> Iterator[LogTable]:
    """The file's LogTable in pieces, one per window of about `window` bytes of whole lines (None:
    WINDOW_BYTES; at least one piece): `joined` of them equals `reference_table`'s table, and memory does not
    grow with the file. With `carried` (a state `Carried.saved` kept after the pieces before it, or a fresh
    `Carried()`), the pieces continue it from its `size` (a window end: the following windows end where a
    read of the whole file ends them, `_window_ends`) and it is kept current: after a piece is returned it
    is the state after it.

    A piece's rows, line numbers, byte offsets, records and codes are the whole table's; its `templates`
    and `instances` are the ones first used in it (the whole list is the pieces' lists in order), its `text`
    and `unescaped` its own lines', its `lines`, `size` and `cut` its window's. No window starts within
    MAX_KEY_BLOCK_LINES lines after a `PRIVATE KEY` (`_window_ends`), so no key block spans two windows
    and each window masks its lines as masking the whole file does. The format is detected once, from the
    file's first lines; the deadline is checked before each window and after the last. Windows are read
    _WORKERS at a time in threads (`_read_window`: a window's reading depends on no other window), and
    their pieces assembled in order in this one (`_assemble`): at most _WORKERS + 1 windows are held at
    once."""
    with open_text(path, root) as handle:
        fmt = detect(masked_lines(islice(Lines(handle), SAMPLE_LINES)), context).format
    first = None if fmt is None else format_named(fmt)
    redactor = redaction.Redactor.from_env()
    carried = Carried() if carried is None else carried
    carried.format = fmt
    with open_binary(path, root) as binary, ThreadPoolExecutor(_WORKERS) as pool:
        size = os.fstat(binary.fileno()).st_size
        # mapped to find the windows' ends (their pages only are touched); a window's bytes are read (pread),
        # so the file's pages do not stay in the process's memory
        data: Any = mmap.mmap(binary.fileno(), 0, access=mmap.ACCESS_READ) if size else b""

        def submit(begin: int, end: int) -> Future[_WindowRead]:
            check_deadline()
            return pool.submit(_read_window, os.pread(binary.fileno(), end - begin, begin), context, first, redactor)

        try:
            spans = pairwise(chain([carried.size], _window_ends(data, window or WINDOW_BYTES, carried.size)))
            reads = deque(submit(*span) for span in islice(spans, _WORKERS))
            while reads:
                read = reads.popleft().result()
                reads.extend(submit(*span) for span in islice(spans, 1))
                yield _assemble(read, carried)
        finally:
            if isinstance(data, mmap.mmap):
                data.close()
    check_deadline()


def _read_window(
    data: bytes, context: ParseContext, first: LogFormat | None, redactor: redaction.Redactor
) -> _WindowRead:
    """One window's lines read (see read_windows), vectorised, its Python path's lines by a LineReader. Runs
    in a worker thread: the context's memo (a cache of year-inferred times, cleared when full) is the
    window's own."""
    source = _Source(data)
    cut = source.cut_lines()
    context = replace(context, memo={})
    python = source.odd_lines() | screened_lines(source.column, redactor, beyond_ascii=source.beyond_ascii)
    python[list(cut)] = True
    reading = _Reading(source.column, context, python)
    reading.run(first)
    texts = _key_blocks(source, cut, redactor, python)
    reading.to_python(python)
    reading.python_rows(source, texts, cut, redactor, LineReader(first, context))
    frame = pl.concat([frame.select(list(_SCHEMA)).cast(_SCHEMA) for frame in reading.frames]).sort("row")  # type: ignore[arg-type]
    cuts = sum(pieces for _, pieces in cut.values())
    return _WindowRead(frame, source.starts, source.ends, len(data), cuts, reading.texts, reading.unescaped)


def _window_ends(data: Any, window: int, start: int = 0) -> Iterator[int]:
    """Where the windows from `start` on end: line starts about `window` bytes apart (the file's end last; an
    empty file is one empty window), each more than MAX_KEY_BLOCK_LINES lines after any `PRIVATE KEY` (so no
    key block is open there: a BEGIN line masks at most MAX_KEY_BLOCK_LINES lines after it). Each end
    depends on the one before it only, so the ends after one of them, given as `start`, are the ones a
    start at 0 gives after it (none after the file's end)."""
    if start and start >= len(data):
        return
    end = start
    while True:
        end = _line_start_after(data, end + window, 1)
        key = _key_before(data, end)
        while key >= 0:
            end = _line_start_after(data, key, _KEY_LINES + 1)
            key = _key_before(data, end)
        yield end
        if end == len(data):
            return


def _line_start_after(data: Any, at: int, newlines: int) -> int:
    """The start of the line after the `newlines`-th b"\\n" from byte `at` on (the file's end if none)."""
    for _ in range(newlines):
        newline = data.find(b"\n", at) if at < len(data) else -1
        if newline < 0:
            return len(data)
        at = newline + 1
    return at


def _key_before(data: Any, start: int) -> int:
    """Where the last `PRIVATE KEY` in the _KEY_LINES lines before the line starting at `start` is (-1:
    none, or `start` is the file's end)."""
    if start >= len(data):
        return -1
    position = start - 1
    for _ in range(_KEY_LINES):
        if position <= 0:
            break
        position = data.rfind(b"\n", 0, position)
    return int(data.rfind(b"PRIVATE KEY", max(position, 0), start))


def joined(pieces: list[LogTable]) -> LogTable:
    """The whole table of `read_windows`' pieces."""
    columns = {
        name: np.concatenate([getattr(piece, name) for piece in pieces])
        for name in ("lineno", "start", "end", "ts", "level", "derived", "template", "instance", "record")
    }
    return LogTable(
        **columns,
        templates=[text for piece in pieces for text in piece.templates],
        instances=[text for piece in pieces for text in piece.instances],
        text={lineno: text for piece in pieces for lineno, text in piece.text.items()},
        unescaped={lineno: text for piece in pieces for lineno, text in piece.unescaped.items()},
        lines=sum(piece.lines for piece in pieces),
        size=sum(piece.size for piece in pieces),
        format=pieces[0].format,
        cut=sum(piece.cut for piece in pieces),
    )


class _Source:
    """A file's bytes and lines: line i is data[starts[i]:ends[i]] (its line end excluded), as `grep -n`
    counts lines; `column` holds the lines as polars strings, as written where they are printable ASCII
    and SAFE characters (`unsafe` marks the others: their bytes above 127 read as `?`, and the Python path
    reads them); `beyond_ascii`: whether any byte is above 127."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.bytes = np.frombuffer(data, np.uint8)
        # searched a slice at a time: a mask of the whole window would be as big as its bytes
        newlines = np.concatenate(
            [np.zeros(0, np.intp)]
            + [
                np.flatnonzero(self.bytes[at : at + _SPLIT_BYTES] == 10) + at
                for at in range(0, len(data), _SPLIT_BYTES)
            ]
        )
        ends = newlines if not len(data) or data[-1:] == b"\n" else np.append(newlines, len(data))
        self.starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64) if len(ends) else np.zeros(0, np.int64)
        self.ends = ends.astype(np.int64)
        carriage = (self.ends > self.starts) & (self.bytes[np.maximum(self.ends - 1, 0)] == 13)
        self.ends = self.ends - carriage
        self.lines = len(self.starts)
        self.unsafe = unsafe_lines(self.bytes, self.starts)
        self.beyond_ascii = bool(len(data) and self.bytes.max() > 127)
        self.column = self._column()

    def _column(self) -> pl.Series:
        data = self.data
        if self.unsafe.any():  # their bytes above 127 read as `?`: the column is valid UTF-8
            data = unsafe_read_as_ascii(self.bytes, self.starts, self.unsafe).tobytes()
        offsets = np.append(self.starts, len(self.data)).astype(np.int64)
        array = pa.LargeStringArray.from_buffers(self.lines, pa.py_buffer(offsets), pa.py_buffer(data))
        return pl.Series("line", array).str.strip_chars_end("\r\n")

    def odd_lines(self) -> np.ndarray:
        """Lines holding a control character but tab (their line end aside), a byte above 127 that is not
        part of a SAFE character (evcli.backends.logshapes_unicode), or a JSON `\\u` escape."""
        flagged = self.column.str.contains("\\u", literal=True).to_numpy() | self.unsafe
        # looked up in the bytes with numpy (faster than a regex over the column), a slice at a time: the
        # masks of a whole window would be as big as its bytes, in each of the windows read at once
        odd = np.concatenate(
            [np.zeros(0, np.intp)]
            + [
                np.flatnonzero(_ODD_BYTE[self.bytes[at : at + _SPLIT_BYTES]]) + at
                for at in range(0, len(self.data), _SPLIT_BYTES)
            ]
        )
        lines = np.searchsorted(self.starts, odd, "right") - 1
        flagged[lines[odd < self.ends[lines]]] = True  # a line's own bytes (a b"\r" ending it aside)
        return flagged

    def text(self, row: int) -> str:
        return decoded(self.data[self.starts[row] : self.ends[row]])

    def cut_lines(self) -> dict[int, tuple[str, int]]:
        """{line: (its text as evcli.core.files.Lines reads it, lines cut)} of the lines that may reach the
        longest line (logtable.read_alone)."""
        limit = files.LIMITS.max_line_chars
        lengths = np.append(self.starts[1:], len(self.data)) - self.starts
        cut: dict[int, tuple[str, int]] = {}
        for row in np.flatnonzero(lengths >= limit):
            kept, was_cut = read_alone(self.data[self.starts[row] : self.starts[row] + lengths[row]])
            cut[int(row)] = (kept.rstrip("\r\n").replace("\x00", "\ufffd"), int(was_cut))
        return cut


def _key_blocks(
    source: _Source, cut: dict[int, tuple[str, int]], redactor: redaction.Redactor, python: np.ndarray
) -> dict[int, str]:
    """Masked texts of the lines of private key blocks (a BEGIN line without its END, then up to
    MAX_KEY_BLOCK_LINES lines through the END line), masked as `mask_stream` masks them; marks them Python."""
    candidates = np.flatnonzero(source.column.str.contains("-----BEGIN", literal=True).to_numpy())
    masked: dict[int, str] = {}
    block_end = -1
    for row in candidates:
        if row <= block_end:
            continue
        text = _line_text(source, cut, int(row))
        begin = redaction._KEY_BEGIN.search(text)
        if begin is None or redaction._KEY_END.search(text, begin.end()):
            continue
        stop = min(int(row) + redaction.MAX_KEY_BLOCK_LINES, source.lines - 1)
        rows = list(range(int(row), stop + 1))
        texts = [_line_text(source, cut, index) for index in rows]
        ended = next((i for i, line in enumerate(texts[1:], 1) if redaction._KEY_END.search(line)), len(texts) - 1)
        block_end = rows[ended]
        for index, line in zip(rows[: ended + 1], redactor.mask_lines(texts[: ended + 1]), strict=True):
            masked[index] = line
        python[rows[0] : block_end + 1] = True
    return masked


def _line_text(source: _Source, cut: dict[int, tuple[str, int]], row: int) -> str:
    return cut[row][0] if row in cut else source.text(row)


def _extracted(lines: pl.Series, pattern: str) -> pl.DataFrame:
    """The groups of `pattern` (anchored at `^`) in each of `lines` (all null where it does not match) and
    `m_` ("" where it does); a last group taking the rest of the line is sliced off the line
    (logformats.shapes.split_rest)."""
    split = split_rest(pattern)
    if split is None:
        return lines.str.extract_groups("^(?P<m_>)" + pattern[1:]).struct.unnest()
    head, rest = split
    groups = lines.str.extract_groups("^(?P<m_>)(?P<head_>" + head[1:] + ")").struct.unnest()
    return groups.with_columns(lines.str.slice(groups["head_"].str.len_chars()).alias(rest)).drop("head_")


class _Reading:
    """Per line: what it became (`kind`) and, for a row, its own time (µs since the epoch as a float, NaN:
    none), level, derived flag, instance and template; then `table` assembles the records."""

    def __init__(self, column: pl.Series, context: ParseContext, python: np.ndarray) -> None:
        self.column = column
        self.context = context
        self.kind = np.where(python, _PYTHON, 0).astype(np.int8)
        self.frames: list[pl.DataFrame] = []

    def to_python(self, python: np.ndarray) -> None:
        """Lines a key block sends to the Python path, whatever the vector path read; `python` is every line
        masking may change (with the screen's, marked before the vector path ran; the Python path reads the
        others as they are written)."""
        self.masking = python
        self.kind[python] = _PYTHON
        self.frames = [frame.filter(pl.Series(~python[frame["row"].to_numpy()])) for frame in self.frames]

    def pending(self) -> np.ndarray:
        return np.flatnonzero(self.kind == 0)

    def run(self, first: LogFormat | None) -> None:
        """The vector path over every line not marked Python, in `LineReader.read`'s order."""
        others = [candidate for candidate in FORMATS if candidate is not first]
        if first is not None:
            self.read_format(first.name, first=True)
        self.read_plain()
        for candidate in others:
            if not len(self.pending()):
                return
            self.read_format(candidate.name)
        rows = self.pending()
        self.kind[rows] = _UNRECOGNISED
        self.add(rows, self.column.gather(rows).str.strip_chars(" \t"), unrecognised=True)

    def read_plain(self) -> None:
        """Blank lines (no row) and continuation lines (a row inheriting the event before it)."""
        rows = self.pending()
        lines = self.column.gather(rows)
        blank = lines.str.contains(r"^[ \t]*$").to_numpy()
        self.kind[rows[blank]] = _BLANK
        continued = ~blank & lines.str.contains("^(?:" + CONTINUATION.pattern + ")").to_numpy()
        self.kind[rows[continued]] = _CONTINUED
        self.add(rows[continued], lines.filter(continued).str.strip_chars(" \t"), unrecognised=False)

    def add(self, rows: np.ndarray, texts: pl.Series, *, unrecognised: bool) -> None:
        """Rows without a reading of their own (continuation, unrecognised): their template is the line's."""
        self.frames.append(
            pl.DataFrame(
                {
                    "row": rows.astype(np.int64),
                    "parsed": np.zeros(len(rows), bool),
                    "unrecognised": np.full(len(rows), unrecognised),
                    "ts": np.full(len(rows), np.nan),
                    "level": np.full(len(rows), _NO_LEVEL, np.int8),
                    "derived": np.zeros(len(rows), bool),
                    "instance": pl.Series([None] * len(rows), dtype=pl.String),
                    "template": templates(texts, VARIABLE),
                }
            )
        )

    def read_format(self, name: str, *, first: bool = False) -> None:
        """The pending lines a format reads: those its lead matches, by its shape (or key-value pairs, or
        unwrapping) where the reading is certain, else by Python; the others, and those its reader surely
        rejects, stay pending for the next format."""
        lead = LEADS.get(name)
        rows = self.pending()
        if not len(rows):
            return
        if lead is None:
            self.kind[rows] = _PYTHON
            return
        shape = SHAPES.get(name)
        rows = rows[self.column.gather(rows).str.contains(lead).to_numpy()]  # the others stay pending
        if shape is not None and shape.sniff and not first:  # lines its sniff refuses stay pending
            lines = self.column.gather(rows)
            rows = rows[np.logical_and.reduce([lines.str.contains(sniff).to_numpy() for sniff in shape.sniff])]
        if not len(rows):
            return
        if shape is not None:
            rows = rows[~self.read_shape(rows, shape)]
        elif name in WRAPPERS:
            unwrapped = WRAPPERS[name](self.column.gather(rows), self.context.tz, not first)
            self.read_inner(rows[unwrapped.read], unwrapped, inner_names(name))
            rows = rows[~np.isin(np.arange(len(rows)), unwrapped.read) & ~unwrapped.rejected]
        elif name in STRUCTURED:
            frame, rejected = STRUCTURED[name](self.column.gather(rows), self.context)
            read = frame["row"].to_numpy()
            self.kind[rows[read]] = _PARSED
            self.frames.append(frame.with_columns(row=pl.Series(rows[read])))
            rows = rows[~np.isin(np.arange(len(rows)), read) & ~rejected]
        self.kind[rows] = _PYTHON

    def read_inner(self, rows: np.ndarray, unwrapped: Unwrapped, inner: list[str]) -> None:
        """`rows` as WrapperFormat.wrapped reads them: each inner line (`unwrapped.texts`) read by its own
        `_Reading` as a line reaching formats `inner` (no first format, no blank rule), at the runtime's time;
        a row whose inner line goes to Python goes to Python whole."""
        texts = unwrapped.texts
        reading = _Reading(texts, self.context, unwrapped.odd)  # their outer lines' characters are SAFE
        reading.run_inner(inner)
        self.kind[rows] = np.where(
            reading.kind == _PYTHON, _PYTHON, np.where(reading.kind == _CONTINUED, _CONTINUED, _PARSED)
        )
        seconds = unwrapped.micros / 1_000_000
        for frame in reading.frames:
            inner_rows = frame["row"].to_numpy()
            ts = np.where(frame["parsed"].to_numpy(), seconds[inner_rows], np.nan)
            self.frames.append(frame.with_columns(row=pl.Series(rows[inner_rows]), ts=pl.Series(ts)))

    def run_inner(self, inner: list[str]) -> None:
        """WrapperFormat.wrapped's reading of the lines (an inner line each): a continuation line, else the
        first of formats `inner` that reads it, else base.leading_level of it (no blank before it needed)."""
        rows = self.pending()
        lines = self.column.gather(rows)
        continued = lines.str.contains("^(?:" + CONTINUATION.pattern + ")").to_numpy()
        self.kind[rows[continued]] = _CONTINUED
        self.add(rows[continued], lines.filter(continued).str.strip_chars(" \t"), unrecognised=False)
        for name in inner:
            self.read_format(name)
        rows = self.pending()
        frame = pl.DataFrame({"row": rows.astype(np.int64), "ts": np.full(len(rows), np.nan)})
        frame = _leading_level(frame.with_columns(message_=self.column.gather(rows)), blank=False)
        unread = frame["level"].to_numpy() == _UNREAD
        self.kind[rows] = np.where(unread, _PYTHON, _PARSED)
        self.frames.append(rows_frame(frame.filter(pl.Series(~unread)), pl.lit(None, pl.String)))

    def read_shape(self, rows: np.ndarray, shape: Shape) -> np.ndarray:
        """Reads `rows` by `shape`; True where it read the line."""
        groups = self.groups(rows, shape)
        matched = pl.col("m_").is_not_null()
        for name in shape.required:
            matched &= pl.col(name).is_not_null()
        if shape.unsure:
            matched &= ~self.column.gather(rows).str.contains(shape.unsure)
        groups = groups.filter(matched)
        if not len(groups):
            return np.zeros(len(rows), bool)
        read = _shape_frame(groups, shape, self.context)
        done = read["row"].to_numpy()
        self.kind[done] = _PARSED
        self.frames.append(read)
        return np.isin(rows, done, assume_unique=True)

    def groups(self, rows: np.ndarray, shape: Shape) -> pl.DataFrame:
        """The groups of `shape`'s pattern in each of `rows`, in their order (and `row`): by branch where it has
        branches, a row's groups those of the first branch that matches it (another branch's null)."""
        lines = self.column.gather(rows)
        if not shape.branches:
            return _extracted(lines, shape.pattern).with_columns(pl.Series("row", rows))
        frames, left = [], np.arange(len(rows))
        for branch in shape.branches:
            matched = lines.gather(left).str.contains(branch).to_numpy()
            taken, left = left[matched], left[~matched]
            frames.append(_extracted(lines.gather(taken), branch).with_columns(pl.Series("row", rows[taken])))
        frames.append(pl.DataFrame({"row": rows[left]}))  # matched by no branch: every group null
        return pl.concat(frames, how="diagonal").sort("row")

    def python_rows(
        self,
        source: _Source,
        masked: dict[int, str],
        cut: dict[int, tuple[str, int]],
        redactor: redaction.Redactor,
        reader: LineReader,
    ) -> None:
        """The Python path: each line masked and read as logrows.line_rows reads it."""
        rows = np.flatnonzero(self.kind == _PYTHON)
        epochs = Epochs(self.context.tz)
        records: dict[str, list[object]] = {name: [] for name in _COLUMNS}
        self.texts: dict[int, str] = {}
        self.unescaped: dict[int, str] = {}
        values: tuple[object, ...]
        for row in rows.tolist():
            written = _line_text(source, cut, row)
            line = masked[row] if row in masked else redactor.mask_line(written) if self.masking[row] else written
            if line != source.text(row):
                self.texts[row + 1] = line
            decoded_escapes = unescaped_text(line)
            if decoded_escapes is not None:
                self.unescaped[row + 1] = decoded_escapes
            kind, _, parsed = reader.read(line)
            if kind is LineKind.BLANK:
                self.kind[row] = _BLANK
                continue
            if parsed is None or parsed.continues:
                text = line if parsed is None else parsed.message
                values = (
                    row,
                    False,
                    kind is not LineKind.CONTINUATION,
                    np.nan,
                    _NO_LEVEL,
                    False,
                    None,
                    mask(text.strip()),
                )
            else:
                ts = np.nan if parsed.timestamp is None else epochs(parsed.timestamp)
                level = _NO_LEVEL if parsed.level is None else LEVELS.index(parsed.level)
                instance, message = split_instance(parsed.fields, parsed.message)
                values = (row, True, False, ts, level, parsed.level_derived, instance or None, mask(message))
            for name, value in zip(_COLUMNS, values, strict=True):
                records[name].append(value)
        self.frames.append(pl.DataFrame(records, schema=_SCHEMA))


@dataclass
class Carried:
    """What a window's rows take from the windows before it (the state logrows.line_rows carries from line
    to line): the format, lines and bytes before it, the last row's record (0: no row yet), the last ts
    (NaN: none), whether a timestamp was seen, the level, derived flag and instance code of the last parsed
    row (-1, -1: none), and the codes of the templates and instances seen (numbered by first appearance)."""

    format: str | None = None
    lines: int = 0
    size: int = 0
    record: int = 0
    ts: float = np.nan
    timed: bool = False
    level: int = _NO_LEVEL
    derived: bool = False
    instance: int = -1
    templates: dict[str, int] = field(default_factory=dict)
    instances: dict[str, int] = field(default_factory=dict)

    def saved(self) -> dict[str, Any]:
        """The state as JSON values, but for the codes (the templates and instances lists in order give them)."""
        kept = {name: getattr(self, name) for name in ("format", "lines", "size", "record", "timed")}
        last = [int(self.level), bool(self.derived), int(self.instance)]
        return kept | {"ts": None if np.isnan(self.ts) else float(self.ts), "last": last}

    @classmethod
    def restored(cls, saved: dict[str, Any], templates: list[str], instances: list[str]) -> Carried:
        """The state `saved` kept, with the codes of `templates` and `instances` (in the order of their codes)."""
        level, derived, instance = saved["last"]
        ts = np.nan if saved["ts"] is None else float(saved["ts"])
        kept = {name: saved[name] for name in ("format", "lines", "size", "record", "timed")}
        return cls(
            **kept,
            ts=ts,
            level=int(level),
            derived=bool(derived),
            instance=int(instance),
            templates={text: code for code, text in enumerate(templates)},
            instances={text: code for code, text in enumerate(instances)},
        )


@dataclass(frozen=True)
class _WindowRead:
    """A window read (`_read_window`) but for what the windows before it decide: its rows (`_SCHEMA`, by row),
    its lines' spans (line i: bytes starts[i]:ends[i] of the window), its size, lines cut, and the texts of
    its Python path's lines by 1-based line number in the window; not its bytes (it waits to be assembled)."""

    frame: pl.DataFrame
    starts: np.ndarray
    ends: np.ndarray
    size: int
    cut: int
    texts: dict[int, str]
    unescaped: dict[int, str]


def _assemble(read: _WindowRead, carried: Carried) -> LogTable:
    """The rules of logrows.line_rows over a window's rows at once, continuing `carried` (and updating it):
    a line with a timestamp of its own starts a record; before the file's first timestamp every parsed and
    unrecognised line does too, and so does the file's first row; ts is forward-filled; a continuation or
    unrecognised row takes the level, derived flag and instance of the last parsed row."""
    frame = read.frame
    rows = frame["row"].to_numpy()
    count = len(rows)
    order = np.arange(count)
    parsed = frame["parsed"].to_numpy()
    own_ts = frame["ts"].to_numpy()
    timed = ~np.isnan(own_ts)
    lineno = rows + 1 + carried.lines
    before = np.zeros(count, bool) if carried.timed else order <= (np.argmax(timed) if timed.any() else count)
    starts = (parsed & (timed | before)) | (~parsed & frame["unrecognised"].to_numpy() & before)
    starts[:1] |= carried.record == 0
    last_start = np.maximum.accumulate(np.where(starts, order, -1)) if count else order
    last_timed = np.maximum.accumulate(np.where(timed, order, -1)) if count else order
    last_parsed = np.maximum.accumulate(np.where(parsed, order, -1)) if count else order
    inherited, has_parsed = np.maximum(last_parsed, 0), last_parsed >= 0
    templates, template = _global_codes(frame["template"], carried.templates)
    instances, instance = _global_codes(frame["instance"], carried.instances)
    table = LogTable(
        lineno=lineno,
        start=read.starts[rows] + carried.size,
        end=read.ends[rows] + carried.size,
        ts=np.where(last_timed >= 0, own_ts[np.maximum(last_timed, 0)], carried.ts),
        level=np.where(has_parsed, frame["level"].to_numpy()[inherited], carried.level).astype(np.int8),
        derived=np.where(has_parsed, frame["derived"].to_numpy()[inherited], carried.derived),
        template=template,
        instance=np.where(has_parsed, instance[inherited], carried.instance).astype(np.int32),
        record=np.where(last_start >= 0, lineno[np.maximum(last_start, 0)], carried.record).astype(np.int64),
        templates=templates,
        instances=instances,
        text={lineno + carried.lines: text for lineno, text in read.texts.items()},
        unescaped={lineno + carried.lines: text for lineno, text in read.unescaped.items()},
        lines=len(read.starts),
        size=read.size,
        format=carried.format,
        cut=read.cut,
    )
    _carry(carried, table, timed.any())
    return table


def _carry(carried: Carried, table: LogTable, timed: bool) -> None:
    """`carried` after `table`'s window."""
    carried.lines += table.lines
    carried.size += table.size
    carried.timed |= bool(timed)
    if len(table.lineno):
        carried.record = int(table.record[-1])
        carried.ts = float(table.ts[-1])
        carried.level, carried.derived = int(table.level[-1]), bool(table.derived[-1])
        carried.instance = int(table.instance[-1])


def _global_codes(values: pl.Series, codes: dict[str, int]) -> tuple[list[str], np.ndarray]:
    """Each value's code in `codes` (-1: null), the values not in it added in order of first appearance;
    returns them too."""
    distinct = values.drop_nulls().unique().sort()
    local = distinct.search_sorted(values.fill_null("")).to_numpy().astype(np.int64)
    present = values.is_not_null().to_numpy()
    used, first_rows = np.unique(local[present], return_index=True)
    texts, added = distinct.to_list(), []
    new_code = np.full(len(texts) + 1, -1, np.int32)
    for code in used[np.argsort(first_rows, kind="stable")].tolist():
        if texts[code] not in codes:
            codes[texts[code]] = len(codes)
            added.append(texts[code])
        new_code[code] = codes[texts[code]]
    return added, np.where(present, new_code[local], -1).astype(np.int32)
