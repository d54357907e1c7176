"""serve/worker.py: a worker's commits are not flushed one by one (the web process's are), and a finished alert
records its session's failed tool and model calls."""

from __future__ import annotations

from evcli.agents.roles import Models
from evcli.backends.spec import EnvironmentSpec
from evcli.serve import WorkerSpec
from evcli.serve.queue import accept
from evcli.serve.worker import build_pipeline, diagnose_next, open_worker_store
from evcli.store.db import TraceStore
from tests.serve.conftest import HOST_ENV, delivery

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


def test_a_finished_alert_records_its_sessions_failed_tool_calls(db_path, monkeypatch):
    """Every tool call of the diagnosis times out (a deadline of a microsecond): the alert's tool_errors is the
    count of its session's failed invocations, model_errors that of its failed steps."""
    monkeypatch.setenv("EVCLI_TOOL_TIMEOUT_S", "0.000001")
    spec = WorkerSpec(db=str(db_path), models=Models(), env_config=EnvironmentSpec.from_options(HOST_ENV).as_config())
    with open_worker_store(spec.db) as store:
        accept(store, delivery({"alertname": "SSHBruteForce"}), max_queue=10, repeat_interval_s=60)
        finished = diagnose_next(build_pipeline(spec, store), spec)
        document = store.load(finished["session_id"])
        [row] = store.alert_queue_rows("state = 'done'")
    failed = sum(not invocation.success for invocation in document.invocations)
    assert failed > 0 and failed == len(document.invocations)
    assert (row["tool_errors"], row["model_errors"]) == (failed, 0)
