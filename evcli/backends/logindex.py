"""The persistent per-file log index of snapshot logs (DESIGN §5, issues 9 and 27).

A log file is read once into columns (evcli.backends.logcolumns.read_windows: its format detected from the
first SAMPLE_LINES lines, every line masked and read, vectorised, a window of lines at a time, each stored
as it is read, so a build's memory does not grow with the file) and the columns are stored in one file
per (content digest, parse context) under `$EVCLI_HOME/logindex/` (evcli.backends.logstore). Queries
(evcli.backends.logsearch) read the store's columns and the log's own bytes; no SQLite is involved.

Invariants:
  - an index file is named by the file's sha256, by what completes its timestamps (the environment zone
    and clock), by the extra secret patterns and SCHEMA, so a changed file, zone or masking never reads a
    stale index; a stat record (real path, inode, size, mtime_ns -> sha256) spares re-hashing an
    unchanged file;
  - every line is masked (evcli.core.redaction) when the index is built, before it is parsed: the store
    holds no line text but the masked text of the lines masking changed (and the kept part of lines cut
    at the longest line), so it holds no secret; such a line is matched on its stored text only, so a
    masked secret is never found and its masked text is;
  - a keyword is matched literally and ASCII-case-insensitively over the bytes of the log's lines (or the
    stored text of a line that has one, its JSON-unescaped text first: `连接池` finds a JSON line that wrote
    it escaped); a keyword of digits alone matches a whole number;
  - every non-blank line is one row (evcli.backends.logtable.LogTable): its 1-based line number as
    `grep -n` counts, byte span, ts (UTC epoch seconds; a line without its own timestamp takes the
    previous event's: continuation lines such as stack traces, and lines no format reads), level,
    derived (the level came from an access log status), template (the message with its variable parts
    masked; a container runtime's line: its inner line's), instance and record (the line number of the
    record's first line: a line with a timestamp of its own starts one, a line without one belongs to
    the record of the line before, except that before the first timestamp only continuation lines join);
  - a store is written into a private temporary file and renamed into place when complete, so a reader
    never sees half an index and two processes building the same one both end with a whole one; within a
    process one thread builds a given index file at a time, and the others asking for it (the tool calls
    of one model reply) wait for it, checking their deadline, and read it; a store that cannot be read
    (damaged, or built from another size of file) is deleted and built again;
  - a build stopped (the deadline, an interrupt) or failed after some windows leaves no index, only a
    partial store next to it (`<store>.partial`, evcli.backends.logstore_write: renamed into place whole)
    holding the windows stored and the reading's state after them (logcolumns.Carried); the next build
    of the same index file (same digest, zone, clock, masking, SCHEMA: the same name) takes it (renamed
    to a private name, so two builders never share one) and continues it: its row groups copied, the file
    read from the end of its last window, so the windows end where one whole build ends them and the
    store equals that build's but for its build id and seconds; a partial that cannot be read is deleted
    and the build starts from the first line;
    a build first removes what stopped builds left in the index directory: temporary files older than
    _STALE_S (a process killed outright) and the partials of indexes completed since;
  - a tool call builds the indexes it reads before its deadline starts (the tools' `prepare`,
    evcli.backends.envindex), and `evcli env index` builds them ahead of any call;
  - the tool call's deadline is checked before the file is read, before each window of it and after the
    last (a build that passed it keeps its windows as a partial), and between the chunks a query scans:
    DeadlineExceeded;
  - a build of a file of at least _PROGRESS_MIN_BYTES shows a progress bar of the log's bytes stored on
    stderr (evcli.core.console.err) when stderr is a terminal, and nothing otherwise.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evcli.backends.logformats import ParseContext
from evcli.backends.logstore import STORE_VERSION
from evcli.core.files import check_deadline, contained, open_binary
from evcli.core.paths import index_home
from evcli.core.redaction import ENV_EXTRA_PATTERNS

if TYPE_CHECKING:  # loaded only when an index is built: they load polars and pyarrow
    from evcli.backends.logcolumns import Carried
    from evcli.backends.logstore_write import Resumed
    from evcli.backends.logtable import LogTable

SCHEMA = 13  # part of every index file's name: a change to how lines are read or to what a store holds bumps it
SUFFIX = ".parquet"
_BUILD_WAIT_S = 0.05  # how often a thread waiting for another's build of the same index checks its deadline
_PROGRESS_MIN_BYTES = 8 << 20  # a progress bar only for files that take a noticeable time


@dataclass(frozen=True)
class IndexedFile:
    """One log file's index: where it and its log are, and what it was built from."""

    relative: str  # the log file relative to the environment directory
    digest: str  # "sha256:<hex>" of the file's bytes
    store: Path
    log: Path  # the log file, inside `root` (a query reads its bytes)
    root: Path
    build_id: str
    format: str | None
    lines: int  # the non-blank lines indexed
    first: float | None  # epoch of the first and last timestamp
    last: float | None
    cut: int  # lines longer than LIMITS.max_line_chars, indexed up to that length
    built: bool  # built by this call (else an index already built was read)
    resumed: int = 0  # bytes of the log a stopped build had indexed, which this call's build continued


def open_index(path: Path, root: Path, context: ParseContext, home: Path | None = None) -> IndexedFile:
    """The index of `path` (a file inside `root`), built now if no current one exists."""
    home = home or index_home()
    home.mkdir(parents=True, exist_ok=True)
    digest = _digest(path, root, home)
    extra = os.environ.get(ENV_EXTRA_PATTERNS, "")
    schema = f"{SCHEMA}.{STORE_VERSION}"
    key = hashlib.sha256(f"{schema}|{context.tz}|{context.clock.isoformat()}|{extra}".encode()).hexdigest()[:16]
    store = home / f"{digest}-{key}{SUFFIX}"
    relative = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    try:
        build = _built(path, root, context, store, digest)
    except _Damaged:  # a damaged cache file (a full disk, a crash, an edit): it is rebuilt
        store.unlink(missing_ok=True)
        build = _built(path, root, context, store, digest)
    return IndexedFile(relative, f"sha256:{digest}", store, path, root, *build)


class _Damaged(Exception):
    """A store file that cannot be read as one."""


def _built(path: Path, root: Path, context: ParseContext, store: Path, digest: str) -> tuple[Any, ...]:
    """The build record of the store `store`, built first when there is none, whether it was and the bytes
    its build continued from a partial store."""
    built, resumed = False, 0
    if not store.exists():
        with _building(store):
            if not store.exists():  # not built meanwhile by the thread this one waited for
                resumed = _build(path, root, context, store, digest)
                built = True
    meta = _meta(store, path, root)
    build = meta["build"]
    return build["id"], meta["format"], meta["rows"], build["first"], build["last"], meta["cut"], built, resumed


def _meta(store: Path, path: Path, root: Path) -> dict[str, Any]:
    """The store's metadata (`_Damaged` when it is no whole store of this file)."""
    from polars.exceptions import PolarsError

    from evcli.backends.logstore import open_store

    try:
        with open_store(store, path, root) as stored:
            meta = stored.meta
        if not isinstance(meta.get("build"), dict) or "id" not in meta["build"]:
            raise _Damaged(f"{store}: no build record")
        if meta.get("version") != STORE_VERSION:
            raise _Damaged(f"{store}: a store of another version")
    except (PolarsError, KeyError, ValueError) as error:  # ValueError: json's, and another size of file
        raise _Damaged(str(error)) from error
    return meta


def _build(path: Path, root: Path, context: ParseContext, store: Path, digest: str) -> int:
    """Read `path` in windows into columns and store them at `store` as they come (renamed into place when
    whole): memory does not grow with the file. A stopped build keeps its windows as the store's partial;
    a build that finds one continues it (the module's invariants). Returns the log's bytes taken from it."""
    from evcli.backends import logcolumns  # only when no index exists yet: it loads polars
    from evcli.backends.logstore_write import Partial, partial_path, write_store

    started = time.monotonic()

    def record(first: float | None, last: float | None) -> dict[str, Any]:
        return _record(first, last, digest, time.monotonic() - started)

    check_deadline()
    _sweep(store.parent)
    kept = partial_path(store)
    resumed, carried = _continued(kept)
    done = 0 if resumed is None else resumed.size
    try:
        with _progress(path, done) as reached:
            pieces = _advancing(logcolumns.read_windows(path, root, context, carried=carried), done, reached)
            write_store(pieces, store, record, Partial(kept, carried.saved, resumed))
    finally:
        if resumed is not None:  # write_store puts back or deletes a partial it was given; not one it never was
            resumed.file.unlink(missing_ok=True)
    return done


# A temporary file of a build or a resumed partial this old belongs to no live build (a 5M-line log builds
# in seconds): it was left by a process killed outright, and the next build removes it.
_STALE_S = 3600


def _sweep(home: Path) -> None:
    """Remove what stopped builds left behind in `home`: temporary files older than _STALE_S, and the
    partial store of an index that another build has since completed."""
    from evcli.backends.logstore_write import PARTIAL_SUFFIX

    now = time.time()
    for leftover in (*home.glob(".building-*"), *home.glob(".resuming-*")):
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > _STALE_S:
                leftover.unlink()
    for partial in home.glob(f"*{PARTIAL_SUFFIX}"):
        if partial.with_name(partial.name.removesuffix(PARTIAL_SUFFIX)).exists():
            partial.unlink(missing_ok=True)


def _continued(kept: Path) -> tuple[Resumed | None, Carried]:
    """The partial store at `kept`, taken (logstore_write.take_partial), with the reading's state it saved;
    none (and a fresh state) when there is none or its state cannot be restored (it is deleted)."""
    from evcli.backends.logcolumns import Carried
    from evcli.backends.logstore_write import take_partial

    resumed = take_partial(kept)
    if resumed is None:
        return None, Carried()
    lists = resumed.written.lists
    try:
        return resumed, Carried.restored(resumed.reader, lists["templates"], lists["instances"])
    except (KeyError, TypeError, ValueError):
        resumed.file.unlink(missing_ok=True)
        return None, Carried()


def _advancing(pieces: Iterable[LogTable], done: int, reached: Callable[[int], None]) -> Iterator[LogTable]:
    """`pieces`, the bytes done (from `done` on) told to `reached` as each has been stored."""
    for piece in pieces:
        yield piece
        done += piece.size
        reached(done)


def _record(first: float | None, last: float | None, digest: str, seconds: float) -> dict[str, Any]:
    """The build record a store keeps: its id, what it was built from, the first and last ts."""
    return {
        "id": uuid.uuid4().hex,
        "schema": SCHEMA,
        "digest": digest,
        "first": first,
        "last": last,
        "seconds": round(seconds, 3),
    }


_BUILDS: dict[Path, threading.Lock] = {}  # index file -> the lock of its build in this process
_BUILDS_LOCK = threading.Lock()


@contextmanager
def _building(store: Path) -> Iterator[None]:
    """Hold the build of index file `store` in this process; waiting for it checks the call's deadline."""
    with _BUILDS_LOCK:
        lock = _BUILDS.setdefault(store, threading.Lock())
    while not lock.acquire(timeout=_BUILD_WAIT_S):
        check_deadline()
    try:
        yield
    finally:
        lock.release()


@contextmanager
def _progress(path: Path, done: int) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on the err console while a file of at least _PROGRESS_MIN_BYTES is indexed, only
    when stderr is a terminal: the log's bytes done of its size, percent, rate and time left, starting at
    `done` (a continued build's); it yields the function that sets the bytes done."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size < _PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        yield lambda _: None
        return
    from rich import progress as bar

    from evcli.core.console import err, safe

    columns = (
        bar.TextColumn("indexing {task.description}"),
        bar.BarColumn(),
        bar.TaskProgressColumn(),
        bar.DownloadColumn(),
        bar.TransferSpeedColumn(),
        bar.TimeRemainingColumn(),
    )
    with bar.Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task(safe(path.name), total=size, completed=done)
        yield lambda reached: progress.update(task, completed=reached)


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
