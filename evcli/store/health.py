"""The store file itself: which schema wrote it, and whether SQLite still finds every page sound.

Invariants: the schema version of a store is the number of evcli migrations recorded in it; a store that records a
migration this evcli does not know was written by a newer evcli and is refused before anything is written to it.
SQLite's quick_check runs at most once per store file per process, in a background thread on its own connection that
never creates, migrates or writes the file; a command starts it when it opens the store, so the check overlaps the
command's own reads and rendering, and waits for it only at the end. Its result is remembered next to the store
(`<store>.checked`: the file's and its WAL's identity, size and modification time when the check began) and reused
while neither changed, for at most RECHECK_AFTER_S: reading the whole file costs about 0.15 s for 10,000 sessions, and
`sessions` and `trace` are read far more often than the store is written. `evcli doctor` always checks afresh.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from evcli.core.errors import StoreError
from evcli.store.sqlite import BUSY_TIMEOUT_S

# Every migration in evcli/store/migrations.py, oldest first (a test keeps them in step).
SCHEMA_MIGRATIONS = (
    "m001_trace_tables",
    "m002_lookup_indexes",
    "m003_run_owner",
    "m004_newest_first_index",
    "m005_alert_queue",
    "m006_step_cached_tokens",
)
SCHEMA_VERSION = len(SCHEMA_MIGRATIONS)
RECHECK_AFTER_S = 6 * 3600  # a page damaged without a write (a failing disk) is found within this long
_SHOWN_PROBLEMS = 5  # quick_check stops after this many findings; a warning shows the first and counts the rest
_DAMAGE_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def applied_migrations(conn: sqlite3.Connection) -> set[str]:
    """The evcli migrations recorded in the store of `conn` (none in a blank file)."""
    try:
        rows = conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = 'evcli'").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return set()
    return {str(row[0]) for row in rows}


def newer_schema(path: Path, applied: set[str]) -> StoreError | None:
    """The refusal of a store that records migrations this evcli does not know, else None."""
    if applied <= set(SCHEMA_MIGRATIONS):
        return None
    return StoreError(
        f"{path}: this store was written by a newer evcli (schema {len(applied)}); upgrade evcli",
        hint=f"this evcli reads schema {SCHEMA_VERSION} and older; nothing was written",
    )


class StoreHealth(BaseModel):
    """What `evcli doctor` reports of a store file."""

    model_config = ConfigDict(frozen=True)

    schema_version: int
    newer: bool  # written by a newer evcli
    problems: list[str]  # what quick_check reported; empty when it found nothing wrong


def inspect(path: Path) -> StoreHealth:
    """The schema version and the quick_check result of the existing store at `path`, without writing to it."""
    conn = _connect_existing(path)
    try:
        applied = applied_migrations(conn)
    except sqlite3.DatabaseError as exc:
        return StoreHealth(schema_version=0, newer=False, problems=[str(exc)])
    finally:
        conn.close()
    return StoreHealth(
        schema_version=len(applied),
        newer=newer_schema(path, applied) is not None,
        problems=quick_check(path),
    )


def quick_check(path: Path) -> list[str]:
    """SQLite's quick_check of every page of the store at `path`: the problems it finds, [] when it finds none.

    Damage that stops the walk itself (a page that is not a b-tree page at all) is one problem; an error that is not
    damage (the file cannot be opened) is raised. The file is read with read() calls, never memory-mapped: a read
    error of a failing disk must come back as an error, not as a SIGBUS that kills the process."""
    conn = _connect_existing(path)
    try:
        rows = [str(row[0]) for row in conn.execute(f"PRAGMA quick_check({_SHOWN_PROBLEMS})")]
    except sqlite3.DatabaseError as exc:
        if (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF not in _DAMAGE_CODES:
            raise
        return [str(exc)]
    finally:
        conn.close()
    if rows == ["ok"]:
        return []
    # One finding a line; SQLite heads them with the schema name ("*** in database main ***").
    return [line for row in rows for line in row.splitlines() if line.strip() and not line.startswith("***")]


def _connect_existing(path: Path) -> sqlite3.Connection:
    """A connection to the existing file at `path` that never creates it (mode=rw: WAL readers need the -shm)."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=BUSY_TIMEOUT_S)


class IntegrityCheck:
    """quick_check of one store file, running in a background thread from the moment it is started."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._problems: list[str] = []
        self._failure: str | None = None  # why the check could not run
        self._thread = threading.Thread(target=self._run, name="evcli-quick-check", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            signature = _signature(self.path)
            remembered = _remembered(self.path, signature)
            if remembered is not None:
                self._problems = remembered
                return
            self._problems = quick_check(self.path)
            _remember(self.path, signature, self._problems)
        except Exception as exc:  # noqa: BLE001 - a check that could not run must not pass for a clean one
            self._failure = " ".join(str(exc).split()) or type(exc).__name__

    def problems(self) -> list[str]:
        """What quick_check found ([] for nothing), once it has finished."""
        self._thread.join()
        return self._problems

    def warning(self) -> str | None:
        """One line for stderr when the check found damage or could not run, else None."""
        problems = self.problems()
        if self._failure is not None:
            return f"SQLite's integrity check of the trace store {self.path} could not run: {self._failure}"
        if not problems:
            return None
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        return (
            f"the trace store {self.path} failed SQLite's integrity check ({problems[0]}{more}); "
            "sessions stored in its damaged pages may be incomplete or unreadable: restore it from a backup "
            "(`evcli doctor` checks it again)"
        )


_started: dict[Path, IntegrityCheck] = {}
_started_lock = threading.Lock()


def check_integrity(path: Path) -> IntegrityCheck:
    """The quick_check of the store at `path`, started on the first call in this process."""
    key = path.resolve()
    with _started_lock:
        if key not in _started:
            _started[key] = IntegrityCheck(key)
        return _started[key]


def _signature(path: Path) -> list[list[int]]:
    """Identity, size and modification time of the store file and of its WAL (absent or empty: zeros; every
    process that opens the store creates an empty WAL anew, which changes nothing stored)."""
    found = []
    for part in (path, path.with_name(path.name + "-wal")):
        try:
            status = part.stat()
        except FileNotFoundError:
            found.append([0, 0, 0])
            continue
        found.append([status.st_ino, status.st_size, status.st_mtime_ns] if status.st_size else [0, 0, 0])
    return found


def _checked_file(path: Path) -> Path:
    return path.with_name(path.name + ".checked")


def _remembered(path: Path, signature: list[list[int]]) -> list[str] | None:
    """The problems the last check found, when the store has not changed since it began and it is recent."""
    try:
        record = json.loads(_checked_file(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("signature") != signature:
        return None
    age = time.time() - float(record.get("checked_at") or 0)
    problems = record.get("problems")
    if not 0 <= age <= RECHECK_AFTER_S or not isinstance(problems, list):
        return None
    return [str(problem) for problem in problems]


def _remember(path: Path, signature: list[list[int]], problems: list[str]) -> None:
    """Write the check's result next to the store (atomically); a directory that refuses it is left alone."""
    target = _checked_file(path)
    record = {"signature": signature, "checked_at": time.time(), "problems": problems}
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(record), encoding="utf-8")
        os.replace(temporary, target)
    except OSError:
        temporary.unlink(missing_ok=True)
