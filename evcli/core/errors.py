"""Expected failures and the exit codes they map to (DESIGN §8).

Invariant: this module knows no other evcli module. `BackendError` lives here, not in the backends,
so that every layer can name a backend failure without importing a backend.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_LOW_CONFID = 3
EXIT_REJECT = 4
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT


class EvcliError(Exception):
    """An expected failure: one line for the user, a documented exit code."""

    exit_code = EXIT_RUNTIME

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class BadInput(EvcliError):
    """The user gave us something we cannot use (file, option, rules)."""

    exit_code = EXIT_USAGE


class StoreError(EvcliError):
    """The trace store is missing, unreadable or corrupt."""

    exit_code = EXIT_RUNTIME


class NotFound(EvcliError):
    """A session id that is not in the store."""

    exit_code = EXIT_USAGE


class BackendError(Exception):
    """A backend could not answer (unreachable, HTTP error, unreadable file). Not an `EvcliError`: a tool
    records it as `evidence_status: failed`; only where it ends a command is it shown as one line."""


def expected_failure(exc: BaseException) -> EvcliError | None:
    """The one-line error an exception from outside our code stands for, or None if it is a bug.

    The classes mapped here come from the world, not from evcli: the disk, the
    store file, the environment directory, or input deeper/larger than the
    interpreter or SQLite can take.
    """
    import sqlite3

    if isinstance(exc, EvcliError):
        return exc
    if isinstance(exc, sqlite3.Error):
        return store_failure(None, exc)
    if isinstance(exc, BackendError):
        return EvcliError(str(exc), hint=getattr(exc, "hint", None) or "check the environment with `evcli env check`")
    if isinstance(exc, OSError):
        return os_failure(exc)
    if isinstance(exc, RecursionError):
        return BadInput("input is nested too deeply to read")
    if isinstance(exc, OverflowError):
        return BadInput(f"a number is too large: {exc}")
    if isinstance(exc, UnicodeEncodeError) and "surrogates" in str(exc):
        return BadInput("text contains an undecodable character (a lone surrogate); give valid UTF-8")
    return None


def os_failure(exc: OSError) -> EvcliError:
    import errno

    where = f": {exc.filename}" if exc.filename else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return EvcliError(f"disk full{where}")
    return EvcliError(f"{exc.strerror or exc}{where}")


def store_failure(path: object, exc: Exception, *, opening: bool = False) -> StoreError:
    """A sqlite3 error as what it means for the trace store at `path` (`opening`: raised while it was opened)."""
    text = str(exc)
    name = f"trace store {path}" if path else "the store"
    if _disk_full(path, exc):
        return StoreError(f"disk full: cannot write {name}")
    if opening:
        return StoreError(f"cannot open {name}: {text}")
    if "disk I/O error" in text:
        return StoreError(
            f"cannot write {name}: disk I/O error", hint="check the disk and the file size limit (ulimit -f)"
        )
    if "readonly" in text or "read-only" in text:
        return StoreError(f"{name} is read-only", hint="use a writable --db or EVCLI_HOME")
    if "not a database" in text or "malformed" in text:
        return StoreError(f"{name} is corrupt: {text}", hint="restore it from a backup or use another --db")
    if "locked" in text or "busy" in text:
        return StoreError(f"{name} is locked by another process: {text}", hint="try again")
    return StoreError(f"{name}: {text}")


# An I/O error while the store's file system has less room than this is a full disk: SQLite reports ENOSPC as
# "disk I/O error" when it grows the -shm file or pre-sizes the file, and only a plain write as SQLITE_FULL.
_LOW_SPACE_BYTES = 1 << 20


def _disk_full(path: object, exc: Exception) -> bool:
    import sqlite3

    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF  # the primary code of an extended one
    if code == sqlite3.SQLITE_FULL or "database or disk is full" in str(exc):
        return True
    if code != sqlite3.SQLITE_IOERR and "disk I/O error" not in str(exc):
        return False
    free = _free_bytes(path)
    return free is not None and free < _LOW_SPACE_BYTES


def _free_bytes(path: object) -> int | None:
    """The bytes an unprivileged process may still write on the file system holding the file `path`."""
    import os
    from pathlib import Path

    if not path:
        return None
    try:
        stats = os.statvfs(Path(str(path)).parent)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize
