"""serve/worker.py's store connection: a worker's commits are not flushed one by one, the web process's are."""

from __future__ import annotations

from evcli.serve.worker import open_worker_store
from evcli.store.db import TraceStore

NORMAL, FULL = 1, 2  # PRAGMA synchronous


def test_a_worker_commits_without_a_flush_each_and_other_connections_keep_full(db_path):
    worker = open_worker_store(str(db_path))
    other = TraceStore(db_path)  # as the web process opens it to accept deliveries
    try:
        assert worker.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert worker.conn.execute("PRAGMA synchronous").fetchone()[0] == NORMAL
        assert other.conn.execute("PRAGMA synchronous").fetchone()[0] == FULL
        worker.create_session("written by a worker")
        assert len(other.list_sessions()) == 1  # committed: seen by another connection at once
    finally:
        worker.close()
        other.close()
