"""SQLite connections that stop at the tool call's deadline (the trace index: evcli.backends.traceindex,
tracebuild, tracesearch).

Invariants: a statement checks the deadline every `ops` SQLite VM steps (a progress handler) and, stopped
by it, raises the DeadlineExceeded, not SQLite's "interrupted"; a query connection is read-only and its
own (threads share none).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evcli.core.files import DeadlineExceeded, check_deadline

_PROGRESS_OPS = 20_000  # SQLite VM steps between deadline checks


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
