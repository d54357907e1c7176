"""The columnar log index written (issue 27): a file's `LogTable`, piece by piece as
evcli.backends.logcolumns.read_windows returns it, stored as the Parquet file evcli.backends.logstore reads;
a write that is stopped keeps what it wrote as a partial store that the next write of the same store
continues.

Invariants:
  - `write_store` writes a private temporary file in the target's directory and renames it into place:
    a reader opens only a whole store; a failed or stopped write leaves no temporary file behind;
  - a store holds one row group per piece that has rows (the side-list columns null), then one row group
    of the side lists (the number columns null), and its metadata (counts, build record) last;
  - a write given a `Partial` that is stopped by any exception while it reads or writes its pieces keeps
    the row groups it wrote, the side lists and counts they add up to, and the reader's state after them
    (`Partial.reader`, asked for as each piece arrives), as the partial store `Partial.path`, renamed into
    place whole. A stop inside a piece's write (an interrupt comes between Python's steps, so a row group
    is in the file whole or not at all: the file's size tells which) is settled by counting that piece
    once, its row group written if it was not. It keeps none after an error writing a piece, when it is
    stopped while it copies the partial it continues, or when the reader's state is not at the end of the
    pieces written (their `size` differs); then the partial it continued, if any, is put back;
  - a partial is taken by renaming it to a private name (`take_partial`): one writer continues it, and no
    reader sees it half-written; one that cannot be read, or is of another STORE_VERSION or schema, is
    deleted; its row groups are copied into the new store as they are (columns, not lines: nothing is read
    again from the log), so the store equals the one a write of all the pieces at once makes;
  - a store renamed into place deletes its partial: it is whole.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evcli.backends.logstore import META_KEY, SIDE_LISTS, STORE_VERSION, STORED
from evcli.backends.logtable import LogTable

# measured (bench/bench_logstore.py, 5M mixed lines, columns stored as differences): zstd 0.064 of the
# log, lz4 0.109; their columns read in the same CPU time (0.09 s) and a keyword query took 0.30 s on either
_COMPRESSION = "zstd"
PARTIAL_KEY = "evcli.logstore.partial"
PARTIAL_SUFFIX = ".partial"


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
    lists: dict[str, list[Any]] = field(default_factory=lambda: {name: [] for name in SIDE_LISTS})

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

    def counts(self) -> dict[str, int]:
        return {name: len(values) for name, values in self.lists.items()}

    def mark(self) -> tuple[Any, ...]:
        """What `rewind` returns to: the counts, the first and last ts, and the side lists' lengths."""
        return (self.rows, self.lines, self.size, self.cut, self.end, self.format, self.first, self.last, self.counts())

    def rewind(self, mark: tuple[Any, ...]) -> None:
        """Back to what the pieces added up to when `mark` was taken."""
        *counted, lengths = mark
        self.rows, self.lines, self.size, self.cut, self.end, self.format, self.first, self.last = counted
        for name, length in lengths.items():
            del self.lists[name][length:]

    def meta(self, build: Callable[[float | None, float | None], dict[str, Any]]) -> dict[str, Any]:
        return {
            "version": STORE_VERSION,
            "build": build(*(None if np.isinf(ts) else ts for ts in (self.first, self.last))),
            "rows": self.rows,
            "lines": self.lines,
            "size": self.size,
            "format": self.format,
            "cut": self.cut,
            "counts": self.counts(),
        }


@dataclass(frozen=True)
class Resumed:
    """A partial store taken to be continued: its file (under a private name), the reader's state saved with
    it, and what its pieces add up to."""

    file: Path
    reader: dict[str, Any]
    written: _Written

    @property
    def size(self) -> int:
        """The log's bytes its pieces hold."""
        return self.written.size


@dataclass(frozen=True)
class Partial:
    """Where a stopped write keeps its progress (`path`: the store's name + PARTIAL_SUFFIX), the reader's
    state after the pieces given so far (`reader()`: JSON-able, its `size` the log's bytes they cover), and
    the partial this write continues (None: it starts from the first piece)."""

    path: Path
    reader: Callable[[], dict[str, Any]]
    resumed: Resumed | None = None


def partial_path(store: Path) -> Path:
    """Where the partial store of `store` is kept."""
    return store.with_name(store.name + PARTIAL_SUFFIX)


def write_store(
    pieces: Iterable[LogTable],
    target: Path,
    build: Callable[[float | None, float | None], dict[str, Any]],
    partial: Partial | None = None,
) -> None:
    """Store the table of `pieces` (evcli.backends.logcolumns.read_windows' pieces, or one whole table) at
    `target`, atomically, one row group per piece that has rows, then the side lists' row group;
    `build(first ts, last ts)` is the build record, asked for after the last piece. With `partial`, the
    row groups of the partial it continues come first, and a write stopped while its pieces are read keeps
    what it wrote as the partial (the module's invariants)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=".building-", suffix=".parquet")
    os.close(descriptor)
    resumed = partial.resumed if partial is not None else None
    kept = False
    try:
        with (
            pa.OSFile(temporary, "wb") as sink,
            pq.ParquetWriter(sink, _schema(), compression=_COMPRESSION, write_statistics=False) as writer,
        ):
            writing = _Writing(writer, sink, partial)
            try:
                writing.run(pieces)
            except BaseException as error:
                kept = partial is not None and writing.kept(error)
                raise
            writing.finish(build)
        os.replace(temporary, target)
        if partial is not None:
            partial.path.unlink(missing_ok=True)
    except BaseException:
        progress = Path(temporary) if kept else resumed.file if resumed is not None else None
        if partial is not None and progress is not None:  # this write's, else the partial it continued
            os.replace(progress, partial.path)
        raise
    finally:
        Path(temporary).unlink(missing_ok=True)
        if resumed is not None:
            resumed.file.unlink(missing_ok=True)


@dataclass(frozen=True)
class _Pending:
    """A piece being written: the reader's state after it, the file's size and `_Written.mark` before it."""

    piece: LogTable
    reader: dict[str, Any] | None
    at: int
    mark: tuple[Any, ...]


class _Writing:
    """A store being written: its Parquet writer and file, what the pieces written add up to, the reader's
    state after them (with a `Partial`), and the piece being written (None between pieces), so that a write
    stopped anywhere can be settled to a whole number of pieces (`kept`)."""

    def __init__(self, writer: Any, sink: Any, partial: Partial | None) -> None:
        resumed = partial.resumed if partial is not None else None
        self.writer, self.sink = writer, sink
        self.written = resumed.written if resumed is not None else _Written()
        self.reader_now = partial.reader if partial is not None else None
        self.reader = resumed.reader if resumed is not None else None
        self.resumed = resumed
        self.pending: _Pending | None = None
        self.copied = False

    def run(self, pieces: Iterable[LogTable]) -> None:
        """The continued partial's row groups, copied, then a row group per piece."""
        if self.resumed is not None:
            _copy_row_groups(self.resumed.file, self.writer)
        self.copied = True
        for piece in pieces:
            reader = self.reader_now() if self.reader_now is not None else None
            self.pending = _Pending(piece, reader, self.sink.tell(), self.written.mark())
            self._write(piece)
            self.reader, self.pending = reader, None

    def _write(self, piece: LogTable) -> None:
        if len(piece.lineno):
            self.writer.write_table(_row_group(piece, self.written), row_group_size=len(piece.lineno))
        self.written.add(piece)

    def kept(self, error: BaseException) -> bool:
        """Finish the stopped write as a partial store (the side lists, then the counts and the reader's state
        in its metadata) when it can be one: the partial it continued copied whole, no write error inside
        a piece, and the reader's state at the end of the pieces written."""
        import pyarrow as pa

        if not self.copied or (self.pending is not None and isinstance(error, OSError | pa.ArrowException)):
            return False
        self._settle()
        if self.reader is None or self.written.size == 0 or self.reader.get("size") != self.written.size:
            return False
        saved = {name: value for name, value in asdict(self.written).items() if name != "lists"}
        state = {"version": STORE_VERSION, "written": saved, "counts": self.written.counts(), "reader": self.reader}
        self.writer.write_table(_side_group(self.written))
        self.writer.add_key_value_metadata({PARTIAL_KEY: json.dumps(state)})
        return True

    def _settle(self) -> None:
        """The piece whose write was stopped, counted once: its row group written unless the file holds it
        already (it grew: a stop inside the writer's call comes after the call)."""
        pending = self.pending
        if pending is None:
            return
        grew = self.sink.tell() != pending.at
        self.written.rewind(pending.mark)
        if grew:
            self.written.add(pending.piece)
        else:
            self._write(pending.piece)
        self.reader, self.pending = pending.reader, None

    def finish(self, build: Callable[[float | None, float | None], dict[str, Any]]) -> None:
        """The side lists' row group and the store's metadata."""
        self.writer.write_table(_side_group(self.written))
        self.writer.add_key_value_metadata({META_KEY: json.dumps(self.written.meta(build))})


def take_partial(path: Path) -> Resumed | None:
    """The partial store at `path`, taken to be continued: renamed to a private name first, so one writer
    takes it and none reads it half-written. None when there is none; one that cannot be read, or is of
    another STORE_VERSION or schema, is deleted and None returned."""
    import pyarrow as pa

    taken = path.with_name(f".resuming-{uuid.uuid4().hex}-{path.name}")
    try:
        os.rename(path, taken)
    except FileNotFoundError:
        return None
    try:
        return _resumed(taken)
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
        taken.unlink(missing_ok=True)
        return None
    except BaseException:  # stopped while it was read: left for the next build
        os.replace(taken, path)
        raise


def _resumed(taken: Path) -> Resumed:
    """A taken partial's saved state (ValueError, KeyError or TypeError when it holds none that fits)."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(taken) as parquet:
        state = json.loads((parquet.metadata.metadata or {})[PARTIAL_KEY.encode()])
        if state["version"] != STORE_VERSION or not parquet.schema_arrow.equals(_schema()):
            raise ValueError(f"{taken}: a partial store of another version")
        groups = parquet.num_row_groups - 1
        side = parquet.read_row_group(groups, columns=list(SIDE_LISTS))
        rows = sum(parquet.metadata.row_group(index).num_rows for index in range(groups))
    lists = {name: side[name][: state["counts"][name]].to_pylist() for name in SIDE_LISTS}
    written = _Written(**state["written"], lists=lists)
    if written.rows != rows or written.counts() != state["counts"]:
        raise ValueError(f"{taken}: its counts are not its rows'")
    return Resumed(taken, state["reader"], written)


def _copy_row_groups(source: Path, writer: Any) -> None:
    """The row groups of rows of the partial store `source`, written as they are."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(source) as parquet:
        for index in range(parquet.num_row_groups - 1):
            group = parquet.read_row_group(index)
            writer.write_table(group, row_group_size=group.num_rows)


def _schema() -> Any:
    import pyarrow as pa

    numbers = {"gap": pa.int64(), "ts": pa.float64(), "level": pa.int8(), "derived": pa.int8()}
    side = {name: pa.int32() if name.endswith("_lineno") else pa.large_string() for name in SIDE_LISTS}
    return pa.schema([(name, numbers.get(name, pa.int32())) for name in STORED] + list(side.items()))


def _row_group(piece: LogTable, written: _Written) -> Any:
    """A piece's rows (`_encoded`, continuing the rows written before it), the side lists' columns null."""
    import pyarrow as pa

    schema = _schema()
    numbers = _encoded(piece, written.rows, written.end)
    rows = len(piece.lineno)
    side = [pa.nulls(rows, schema.field(name).type) for name in SIDE_LISTS]
    return pa.table([pa.array(numbers[name], schema.field(name).type) for name in STORED] + side, schema=schema)


def _side_group(written: _Written) -> Any:
    """The last row group: the side lists, each padded with nulls to the longest (at least one row), the
    number columns null."""
    import pyarrow as pa

    schema = _schema()
    rows = max(1, *(len(values) for values in written.lists.values()))
    numbers = [pa.nulls(rows, schema.field(name).type) for name in STORED]
    side = [
        pa.array(values + [None] * (rows - len(values)), schema.field(name).type)
        for name, values in written.lists.items()
    ]
    return pa.table(numbers + side, schema=schema)


def _encoded(table: LogTable, before: int, previous_end: int) -> dict[str, np.ndarray]:
    """The number columns as stored, narrowed, the increasing ones as differences (which compress to
    little and read fast): `skipped` (lines before a row that are not rows: lineno - row - 1), `gap`
    (bytes between the previous row's end and its start), `back` (lineno - record); logstore._decoded
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


def _side_lists(table: LogTable) -> dict[str, list[Any]]:
    return {
        "templates": table.templates,
        "instances": table.instances,
        "text_lineno": list(table.text),
        "text": list(table.text.values()),
        "unescaped_lineno": list(table.unescaped),
        "unescaped": list(table.unescaped.values()),
    }
