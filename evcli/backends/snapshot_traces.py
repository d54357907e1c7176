"""A snapshot's `traces/` directory: span files indexed once and reused while unchanged (DESIGN §5, traces issue).

```
DIR/traces/*.json|*.jsonl|*.ndjson|*.csv   OTLP JSON lines, Jaeger JSON, Zipkin v2 JSON or a CSV span table
```

Each file's format is detected from its content (evcli.backends.traceformats). The spans of every file
go into one persistent index (evcli.backends.traceindex: keyed by each file's sha256, built streaming,
reused by later processes while the files are unchanged, built again when damaged); queries run on it
in SQL (evcli.backends.tracesearch). A span's service is mapped as the logs' and metrics' are: an
env.toml name or alias, else the Deployment of a Kubernetes pod name (`checkout-7c9f6d8b5-x2k4q` →
checkout), else the name as written. Files are read through `evcli.core.files` (regular files
inside the directory only) and each read file's sha256 is kept for the invocation's digests. A file
that cannot be read is an error naming it; it never stops the other files from being read.

The index is built on first use: by the snapshot's clock (`span`, read when a session is set up, before
any tool call's deadline starts) or by `prepare`; a build under a deadline stops at it and keeps nothing.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from itertools import islice
from pathlib import Path
from typing import TypeVar, overload

from evcli.backends.trace_graph import Quality, TraceAnswer, TraceQuery
from evcli.backends.traceformats import Span, Tally
from evcli.backends.traceindex import (
    Build,
    FileRow,
    file_rows,
    open_trace_index,
    read_build,
    read_names,
    source_files,
)
from evcli.backends.tracesearch import IndexedSpans
from evcli.core.errors import BackendError

TRACES_DIR = "traces"
TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv")
MAX_TRACE_FILE_BYTES = 4 << 30  # one span file; a larger one is refused with its size stated
T = TypeVar("T")


class FileSpans(Sequence[Span]):
    """The spans read from one file, read from the index as they are iterated (never all held at once)."""

    def __init__(self, spans: IndexedSpans, number: int, count: int) -> None:
        self._spans, self._number, self._count = spans, number, count

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Span]:
        return self._spans.file_spans(self._number)

    @overload
    def __getitem__(self, index: int) -> Span: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Span]: ...

    def __getitem__(self, index: int | slice) -> Span | Sequence[Span]:
        if isinstance(index, int) and 0 <= index < self._count:
            return next(islice(iter(self), index, None))
        return list(self)[index]  # a slice or a negative index: every span of the file is read


@dataclass
class IndexedFile(Tally):
    """What one file holds, as indexed: its tally, its spans and their services, traces and starts."""

    spans: Sequence[Span] = ()
    services: list[str] = field(default_factory=list)  # as the environment names them
    first: int | None = None  # the earliest and latest span start, ns
    last: int | None = None
    traces: Callable[[], int] = lambda: 0  # distinct trace ids (counted when asked)


@dataclass
class TraceFile:
    """One file of traces/: what was read from it, or why nothing was."""

    relative: str
    digest: str = ""  # sha256:<hex> of the file
    found: IndexedFile | None = None
    error: str = ""


@dataclass
class TraceResult:
    answer: TraceAnswer
    digests: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # files that could not be read


@dataclass(frozen=True)
class _Opened:
    """An index file and what every query of it reads first."""

    build: Build
    files: list[FileRow]
    spans: IndexedSpans


class SnapshotTraces:
    """The span files of a snapshot directory, answered from their index (opened on first use and kept)."""

    def __init__(self, directory: Path, service_of: Callable[[str], str], zone: tzinfo = UTC) -> None:
        self.directory = directory
        self.service_of = service_of  # a name as written → the environment's service
        self.zone = zone
        self._opened: _Opened | None = None
        self._opening = threading.Lock()  # the tool calls of one model reply share this object

    def paths(self) -> list[Path]:
        root = self.directory / TRACES_DIR
        if not root.is_dir():
            return []
        return sorted(
            path for path in root.iterdir() if path.suffix in TRACE_SUFFIXES and not path.name.startswith(".")
        )

    @property
    def present(self) -> bool:
        return bool(self.paths())

    def prepare(self) -> None:
        """Open the index now, building it when no current one exists (a BackendError when it cannot be)."""
        self._index()

    def _index(self, *, damaged: bool = False) -> _Opened:
        with self._opening:
            if self._opened is None or damaged:
                self._opened = self._open(damaged)
            return self._opened

    def _open(self, damaged: bool) -> _Opened:
        sources = source_files(self.paths(), self.directory, MAX_TRACE_FILE_BYTES)
        try:
            if damaged and self._opened is not None:
                self._opened.spans.db.unlink(missing_ok=True)
            db = open_trace_index(sources, self.directory, self.zone)
            files = file_rows(db)
            return _Opened(read_build(db), files, IndexedSpans(db, read_names(db, self._service), files))
        except (OSError, sqlite3.Error) as error:
            raise BackendError(f"{TRACES_DIR}/: cannot index the span files: {error}") from error

    def _service(self, name: str) -> str:
        return self.service_of(name) if name else ""

    def _read(self, read: Callable[[_Opened], T]) -> T:
        """`read(index)`; an index found damaged while it is read is built again once."""
        try:
            return read(self._index())
        except sqlite3.DatabaseError:
            return read(self._index(damaged=True))

    @property
    def files(self) -> list[TraceFile]:
        return self._read(lambda opened: [self._file(opened, row) for row in opened.files])

    def _file(self, opened: _Opened, row: FileRow) -> TraceFile:
        if row.error:
            return TraceFile(row.relative, row.digest, error=row.error)
        spans, number = opened.spans, row.number
        found = IndexedFile(row.format, row.records, row.spans, row.reasons, FileSpans(spans, number, row.spans))
        found.services, found.first, found.last = spans.file_services(number), row.first, row.last
        found.traces = lambda: spans.file_traces(number)
        return TraceFile(row.relative, row.digest, found)

    @property
    def quality(self) -> Quality:
        """What is wrong with the spans of all files together (counted, never repaired)."""
        return self._read(lambda opened: opened.build.quality)

    def services(self) -> list[str]:
        return self._read(lambda opened: sorted(set(opened.spans.names.mapped.values()) - {""}))

    def call_pairs(self) -> list[tuple[str, str]]:
        """(caller, callee) of every call the spans show (none without traces/)."""
        return self._read(lambda opened: opened.spans.call_pairs()) if self.present else []

    def resolve(self, name: str) -> str | None:
        """A service the spans name, by its name, an alias or a pod of it (case-insensitive)."""
        mapped = self.service_of(name.strip())
        by_lower = {service.lower(): service for service in self.services()}
        return by_lower.get(mapped.lower()) or by_lower.get(name.strip().lower())

    def span(self) -> tuple[datetime, datetime, str] | None:
        """(oldest start, newest end, "traces/") of every span read; None when there is none or the span
        files cannot be indexed (a query states why)."""
        if not self.present:
            return None
        try:
            build = self._read(lambda opened: opened.build)
        except BackendError:
            return None
        if build.first is None or build.ends is None:
            return None
        return _moment(build.first), _moment(build.ends), f"{TRACES_DIR}/"

    def query(self, query: TraceQuery) -> TraceResult:
        """The spans, stats and edges of `query` over every file read; a BackendError when no file
        could be read at all (one bad file among good ones is stated in `errors`)."""
        rows = self._read(lambda opened: opened.files)
        errors = [row.error for row in rows if row.error]
        if errors and len(errors) == len(rows):
            raise BackendError(errors[0])
        digests = {row.relative: row.digest for row in rows if row.digest}
        return TraceResult(self._read(lambda opened: opened.spans.answer(query, self.zone)), digests, errors)


def _moment(nanoseconds: int) -> datetime:
    return datetime.fromtimestamp(nanoseconds // 1_000 / 1e6, UTC)
