"""Opening an SQLite file the way every evcli store does: autocommit, WAL, a busy timeout."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

BUSY_TIMEOUT_S = 30.0
_WAL_RETRY_S = 0.05


def connect_wal(path: Path) -> sqlite3.Connection:
    """An autocommit connection to `path` in WAL mode that waits up to BUSY_TIMEOUT_S for locks.

    Switching a new file to WAL takes an exclusive lock for which SQLite does not call the busy
    handler: processes opening the same new file at once get "database is locked" at once (two eval
    workers building the knowledge index did). The switch is retried until the timeout instead."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        ends = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return conn
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= ends:
                    raise
                time.sleep(_WAL_RETRY_S)
    except BaseException:
        conn.close()
        raise
