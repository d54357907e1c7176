"""The persistent per-file log index of snapshot logs (DESIGN §5, issue 9).

A log file is read once with the log format registry (`evcli.backends.logformats`): its format is
detected from the first SAMPLE_LINES lines, every line is read with `LineReader`, and the lines
go into one SQLite file per (content digest, parse context) under `$EVCLI_HOME/logindex/`. Queries
by time range, level, keywords and the stats and patterns of their matches run in SQL.

Invariants:
  - an index file is named by the file's sha256, by what completes its timestamps (the
    environment zone and clock), by the extra secret patterns and SCHEMA, so a changed file,
    zone or masking never reads a stale index;
  - every line is masked (evcli.core.redaction) before it is parsed or stored: the index holds
    no secret, and keywords match the masked text that results show;
    a stat record (real path, inode, size, mtime_ns -> sha256) spares re-hashing an unchanged file;
  - an index is built into a private temporary file and renamed into place when complete, so a
    reader never sees half an index and two processes building the same one both end with a
    whole one (the later rename replaces an identical file); a build that is stopped (the deadline,
    an interrupt, a killed process) or fails leaves no index behind, and its worker processes are
    killed; within a process one thread builds a given index file at a time, and the others asking
    for it (the tool calls of one model reply) wait for it, checking their deadline, and read it;
  - a tool call builds the indexes it reads before its deadline starts (the tools' `prepare`,
    evcli.backends.envindex), and `evcli env index` builds them ahead of any call;
  - queries open a connection of their own (`connect`), so threads share none; the template memos
    of `mask` are filled and read one dict operation at a time (a race only computes a template twice);
  - every non-blank line is one row: `lineno` (1-based line of the file), `ts` (UTC epoch seconds,
    a line without its own timestamp takes the previous event's: continuation lines such as stack
    traces, and lines no format reads), `level` (index into LEVELS, NULL when the line has none),
    `derived` (the level came from an access log status), `template` (the message with variable
    parts masked; a container runtime's line: its inner line's), `instance` and the original
    `line` (without its line ending, a container runtime's line as the runtime wrote it), for a line
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
import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evcli.backends.logformats import ParseContext
from evcli.backends.logrows import SCHEMA
from evcli.core.files import DeadlineExceeded, check_deadline, contained, open_binary
from evcli.core.paths import index_home
from evcli.core.redaction import ENV_EXTRA_PATTERNS

_PROGRESS_OPS = 20_000  # SQLite VM steps between deadline checks
_BUILD_WAIT_S = 0.05  # how often a thread waiting for another's build of the same index checks its deadline
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
    built: bool  # built by this call (else an index already built was read)


def open_index(path: Path, root: Path, context: ParseContext, home: Path | None = None) -> IndexedFile:
    """The index of `path` (a file inside `root`), built now if no current one exists."""
    home = home or index_home()
    home.mkdir(parents=True, exist_ok=True)
    digest = _digest(path, root, home)
    extra = os.environ.get(ENV_EXTRA_PATTERNS, "")
    key = hashlib.sha256(f"{SCHEMA}|{context.tz}|{context.clock.isoformat()}|{extra}".encode()).hexdigest()[:16]
    db = home / f"{digest}-{key}.db"
    relative = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    try:
        build = _built(path, root, context, db, digest)
    except sqlite3.DatabaseError:  # a damaged cache file (a full disk, a crash, an edit): it is rebuilt
        db.unlink(missing_ok=True)
        build = _built(path, root, context, db, digest)
    return IndexedFile(relative, f"sha256:{digest}", db, *build)


def _built(path: Path, root: Path, context: ParseContext, db: Path, digest: str) -> tuple[Any, ...]:
    """The build record of the index file `db`, built first when there is none, and whether it was."""
    built = False
    if not db.exists():
        with _building(db):
            if not db.exists():  # not built meanwhile by the thread this one waited for
                from evcli.backends.logbuild import build_index  # only when no index exists yet

                build_index(path, root, context, db, digest)
                built = True
    with connect(db) as conn:
        build = conn.execute("SELECT id, format, lines, first, last, cut FROM build").fetchone()
    if build is None:
        raise sqlite3.DatabaseError("no build record")
    return (*build, built)


_BUILDS: dict[Path, threading.Lock] = {}  # index file -> the lock of its build in this process
_BUILDS_LOCK = threading.Lock()


@contextmanager
def _building(db: Path) -> Iterator[None]:
    """Hold the build of index file `db` in this process; waiting for it checks the call's deadline."""
    with _BUILDS_LOCK:
        lock = _BUILDS.setdefault(db, threading.Lock())
    while not lock.acquire(timeout=_BUILD_WAIT_S):
        check_deadline()
    try:
        yield
    finally:
        lock.release()


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


@contextmanager
def connect(db: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection whose statements stop at the tool call's deadline."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        with stopped_at_deadline(conn):
            yield conn
    finally:
        conn.close()


@contextmanager
def stopped_at_deadline(conn: sqlite3.Connection, ops: int = _PROGRESS_OPS) -> Iterator[sqlite3.Connection]:
    """`conn` with its statements checking the tool call's deadline every `ops` SQLite steps: a statement
    stopped by it raises the DeadlineExceeded."""
    expired: list[DeadlineExceeded] = []

    def over_time() -> int:
        try:
            check_deadline()
        except DeadlineExceeded as error:
            expired.append(error)
            return 1
        return 0

    conn.set_progress_handler(over_time, ops)
    try:
        yield conn
    except sqlite3.OperationalError:
        if expired:
            raise expired[0] from None
        raise
    finally:
        conn.set_progress_handler(None, 0)
