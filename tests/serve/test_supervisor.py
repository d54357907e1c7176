"""serve/supervisor.py with real worker processes: a worker that cannot start is restarted with a growing pause,
an alert whose owner is gone is queued again by the watcher, and /healthz says what is wrong."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable

import pytest

from evcli.agents.roles import Models
from evcli.serve import WorkerSpec
from evcli.serve.queue import accept
from evcli.serve.supervisor import Supervisor
from evcli.store.db import TraceStore
from tests.serve.conftest import delivery


def _until(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_crash_looping_worker_backs_off_and_an_orphan_is_queued_again(db_path, tmp_path, caplog):
    store = TraceStore(db_path)
    accept(store, delivery({"alertname": "Orphan"}), max_queue=10, repeat_interval_s=3600)
    claimed = store.claim_alert()
    dead = f"{socket.gethostname()}:999999999:1"
    store.conn.execute("UPDATE alert_queue SET owner = ? WHERE id = ?", [dead, claimed["id"]])
    spec = WorkerSpec(db=str(db_path), models=Models(), rules=str(tmp_path / "no-such-rules.toml"))
    supervisor = Supervisor(spec, 1, max_queue_age_s=0.5)

    def logged(words: str) -> bool:
        return any(words in record.getMessage() for record in caplog.records)

    with caplog.at_level(logging.INFO, logger="evcli.serve"):
        supervisor.start()
        try:
            _until(lambda: logged("queued again"), "the watcher to requeue the orphan")
            _until(lambda: logged("a new one starts in 1 s"), "a second quick death")
            healthy, health = supervisor.health()  # within the pause: no live worker
            assert supervisor.restarts == 1
            _until(lambda: supervisor.restarts == 2, "the restart after the pause", 5)
        finally:
            supervisor.stop(timeout_s=5)
    [row] = store.alert_queue_rows()
    assert row["state"] == "queued" and row["owner"] is None  # requeued; no worker could claim it
    assert not healthy and health["status"] == "unhealthy"
    assert "worker 1 is not running (being restarted)" in health["problems"]
    assert any("oldest queued alert has waited" in problem for problem in health["problems"])
    assert health["queue"]["oldest_queued_s"] >= 0.5 and health["queue"]["max_age_s"] == 0.5
    assert health["workers"] == [{"worker": 1, "pid": None, "alive": False, "alert": None, "restarts": 1}]
