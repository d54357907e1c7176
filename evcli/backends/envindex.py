"""A snapshot's indexes built ahead of its queries: `evcli env index DIR`, and the tools' `prepare`.

A snapshot's logs and spans are queried through persistent indexes: one column store per log file
(evcli.backends.logindex) and one SQLite file for the span files of traces/ (evcli.backends.traceindex),
each named by the content of what it indexes, built once and then read by every later process while that
is unchanged.
The first query would build them inside its tool call, under the call's timeout; here they are built
before it.

Invariants:
  - what is built is what a query opens: the snapshot backend reads the same files with the same parse
    context (zone, clock), so a query afterwards builds nothing; an index already built is only read
    (reused: its file is left as it is);
  - the builders write an index into a temporary file renamed into place when complete, so a build that is
    interrupted or fails leaves no part of that index (a log file's keeps a partial store that its next
    build continues, evcli.backends.logindex), and the indexes finished before it stay;
  - the trace index comes first: a log file's parse context and the snapshot's clock read the spans' span;
  - a file that cannot be read is reported with why and never stops the others (`index_environment`);
    before a tool call (`prepare_queries`) an error is left for the call, which reads the same files again
    and states it as it always has.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evcli.core.errors import BackendError, BadInput

if TYPE_CHECKING:  # the snapshot backend is imported where it is first used
    from evcli.backends.snapshot import SnapshotBackend

Action = Literal["built", "reused", "failed"]


@dataclass(frozen=True)
class LogIndexInfo:
    """One log file's index: built now, reused as built before, or why it could not be."""

    path: str  # relative to the snapshot directory
    action: Action
    lines: int = 0  # the non-blank lines indexed
    format: str | None = None
    seconds: float = 0.0  # reading (and building) it in this run
    error: str | None = None
    resumed: int = 0  # bytes of the file a stopped build had indexed, which this run's build continued


@dataclass(frozen=True)
class SpanFileInfo:
    """One span file as the trace index holds it: its spans, or why none were read."""

    path: str
    spans: int = 0
    format: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class TraceIndexInfo:
    """The one index of every span file of traces/."""

    action: Action
    spans: int = 0
    seconds: float = 0.0
    files: list[SpanFileInfo] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class EnvIndexReport:
    directory: str
    name: str
    logs: list[LogIndexInfo]
    traces: TraceIndexInfo | None  # None: the snapshot has no span files

    @property
    def actions(self) -> list[Action]:
        """What happened to each index: the log files' in order, then the trace index's."""
        return [log.action for log in self.logs] + ([self.traces.action] if self.traces is not None else [])

    @property
    def ok(self) -> bool:
        """Every file was read: no index failed and no span file was refused."""
        traces_read = self.traces is None or not any(file.error for file in self.traces.files)
        return "failed" not in self.actions and traces_read

    def as_dict(self) -> dict[str, Any]:
        counts = {action: self.actions.count(action) for action in ("built", "reused", "failed")}
        return {**asdict(self), **counts, "ok": self.ok}


def index_environment(
    directory: Path,
    on_logs: Callable[[LogIndexInfo], None] = lambda _: None,
    on_traces: Callable[[TraceIndexInfo], None] = lambda _: None,
) -> EnvIndexReport:
    """Build, or find current, the trace index and the index of every log file of the snapshot `directory`
    (`on_traces` and `on_logs` are told each as it is done). BadInput when it is no snapshot directory (or
    its env.toml cannot be used); a file that cannot be read is reported in its entry."""
    from evcli.backends.snapshot import SnapshotBackend

    if not directory.is_dir():
        raise BadInput(f"snapshot directory {directory} does not exist or is not a directory")
    backend = SnapshotBackend(directory)
    try:
        name = backend.config.name or directory.name
    except BackendError as error:
        raise BadInput(str(error), hint="check the environment with `evcli env check`") from error
    traces = _trace_index(backend) if backend.traces.present else None
    if traces is not None:
        on_traces(traces)
    logs = []
    for path in backend.log_files():
        logs.append(_log_index(backend, path))
        on_logs(logs[-1])
    return EnvIndexReport(directory=str(directory), name=name, logs=logs, traces=traces)


def _log_index(backend: SnapshotBackend, path: Path) -> LogIndexInfo:
    from evcli.backends.snapshot_logs import open_index_of

    started = time.perf_counter()
    relative = backend.relative(path)
    try:
        indexed = open_index_of(backend, path)
    except BackendError as error:
        return LogIndexInfo(path=relative, action="failed", seconds=_since(started), error=str(error))
    action: Action = "built" if indexed.built else "reused"
    return LogIndexInfo(
        path=relative,
        action=action,
        lines=indexed.lines,
        format=indexed.format,
        seconds=_since(started),
        resumed=indexed.resumed,
    )


def _trace_index(backend: SnapshotBackend) -> TraceIndexInfo:
    """The trace index, reused when a readable one of the current files exists (else built), with its files."""
    from evcli.backends.snapshot_traces import MAX_TRACE_FILE_BYTES
    from evcli.backends.traceindex import index_path, read_build, source_files

    started, traces = time.perf_counter(), backend.traces
    try:
        index = index_path(source_files(traces.paths(), backend.directory, MAX_TRACE_FILE_BYTES), traces.zone)
        reused = _readable(index, read_build)
        traces.prepare()
        files = [
            SpanFileInfo(path=file.relative, error=file.error or None)
            if file.found is None
            else SpanFileInfo(path=file.relative, spans=file.found.read, format=file.found.format)
            for file in traces.files
        ]
    except BackendError as error:
        return TraceIndexInfo(action="failed", seconds=_since(started), error=str(error))
    action: Action = "reused" if reused else "built"
    spans = sum(file.spans for file in files)
    return TraceIndexInfo(action=action, spans=spans, seconds=_since(started), files=files)


def _readable(index: Path, read_build: Callable[[Path], Any]) -> bool:
    """Whether the index file exists and holds a build of the current schema (else it is built again)."""
    if not index.exists():
        return False
    try:
        read_build(index)
    except sqlite3.DatabaseError:
        return False
    return True


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)


def prepare_queries(backend: Any, service: str | None, *, logs: bool) -> None:
    """What a tool call on a snapshot reads before its deadline starts: the snapshot's span and clock (they
    read the spans' span: the trace index), then, with `logs`, the index of each log file a call on
    `service` reads (every file for None, none for a name the snapshot does not know). Nothing for a live
    backend. An error is left for the call to state."""
    from evcli.backends.snapshot import SnapshotBackend

    if not isinstance(backend, SnapshotBackend):
        return
    try:
        backend.span  # noqa: B018 -- read for its cache: it reads the clock too when anything has a time
    except BackendError:
        pass
    if logs:
        _prepare_logs(backend, service)


def _prepare_logs(backend: SnapshotBackend, service: str | None) -> None:
    from evcli.backends.snapshot_logs import open_index_of

    try:
        resolved = backend.resolve_service(service) if service else None
    except BackendError:
        return
    if service and resolved is None:
        return
    for path in backend.log_files(resolved):
        try:
            open_index_of(backend, path)
        except BackendError:
            continue  # the call reports it; the other files are still built before its deadline
