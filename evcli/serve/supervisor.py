"""The worker processes of `evcli serve`, kept running, and the health that /healthz reports.

Invariants: while the server runs, each of the `--workers` slots has a live worker process. The supervisor
thread looks at every slot each CHECK_S; a dead worker (killed, crashed, out of memory) is reaped and
replaced at once, and counted in `restarts`. A slot whose workers keep dying within CRASH_WINDOW_S of their
start waits 1 s, then 2 s, … up to BACKOFF_MAX_S before the next start, so a worker that cannot start does
not spin. The watcher thread is the only one here that touches the store (its own connection): each WATCH_S,
and at once after a death, it queues again the alerts of owners that are gone (a dead worker's alert is
diagnosed again, or marked done when its session had completed: exactly one completed diagnosis either way),
and reads the running alerts and the oldest queued one.
Each worker waits for alerts on a doorbell pipe of its own (serve/doorbell.py), rung by `wake` when a
delivery queued alerts and by the watcher after it queued orphans again; `stop` closes them all first, so
an idle worker ends at once.

/healthz is built from what these two threads last saw, so it never waits for the store or for a process.
It is unhealthy (HTTP 503) when a slot has no live worker, when the oldest queued alert has waited longer
than `--max-queue-age`, or when the store has not answered the watcher for that long (STALE_VIEW_S at least).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evcli.serve import WorkerSpec, failure_reason
from evcli.serve.doorbell import Doorbell

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from evcli.store.db import TraceStore

log = logging.getLogger("evcli.serve")
CHECK_S = 0.25
WATCH_S = 0.5
CRASH_WINDOW_S = 10.0
BACKOFF_MAX_S = 30.0
SPAWN_RETRY_S = 5.0  # after a start that failed in this process (no memory, too many processes)
STALE_VIEW_S = 10 * WATCH_S  # the least age of the watcher's view that /healthz reports, however small the limit
# The rows the watcher reads: every running alert, and the oldest queued one (a constant condition).
_WATCHED = "state = 'running' OR id = (SELECT min(id) FROM alert_queue WHERE state = 'queued')"


@dataclass
class _Slot:
    number: int
    process: BaseProcess | None = None
    started: float = 0.0
    alive: bool = False
    quick_deaths: int = 0
    start_at: float = 0.0
    restarts: int = 0


@dataclass(frozen=True)
class _QueueView:
    """What the watcher last read: when, the running alerts by owner pid, the oldest queued alert's arrival."""

    read_at: float
    running: dict[int, dict[str, Any]] = field(default_factory=dict)
    oldest_queued_at: datetime | None = None


class Supervisor:
    def __init__(self, spec: WorkerSpec, workers: int, max_queue_age_s: float) -> None:
        import multiprocessing

        self.spec, self.max_queue_age_s = spec, max_queue_age_s
        self._context = multiprocessing.get_context("spawn")
        self._halt = threading.Event()
        self._death = threading.Event()
        self._slots = [_Slot(number) for number in range(1, workers + 1)]
        self._doorbell = Doorbell()
        self._view = _QueueView(time.monotonic())
        self._threads = [
            threading.Thread(target=self._supervise, name="evcli-supervisor", daemon=True),
            threading.Thread(target=self._watch, name="evcli-queue-watch", daemon=True),
        ]

    @property
    def restarts(self) -> int:
        return sum(slot.restarts for slot in self._slots)

    def start(self) -> None:
        for slot in self._slots:
            self._spawn(slot)
        for thread in self._threads:
            thread.start()

    def wake(self) -> None:
        """Alerts were queued: wake the idle workers (serve/doorbell.py)."""
        self._doorbell.ring()

    def halt(self) -> None:
        """No more restarts (the server is shutting down: its workers may be stopped by the same signal)."""
        self._halt.set()

    def stop(self, timeout_s: float = 30.0) -> None:
        """No more restarts; each worker finishes the alert in hand (SIGTERM), killed after `timeout_s` (its alert
        is queued again at the next start). Idempotent."""
        self.halt()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout_s)
        self._doorbell.close()  # an idle worker stops at once
        processes = [slot.process for slot in self._slots if slot.process is not None]
        for process in processes:
            process.terminate()
        ends = time.monotonic() + timeout_s
        for process in processes:
            process.join(max(0.0, ends - time.monotonic()))
            if process.is_alive():
                log.warning("worker pid %d did not stop within %g s; killed", process.pid, timeout_s)
                process.kill()
                process.join()

    # --- the supervisor thread -----------------------------------------------------------------------

    def _spawn(self, slot: _Slot) -> None:
        from evcli.serve.worker import worker_main

        bell = self._doorbell.add(slot.number)
        process = self._context.Process(
            target=worker_main, args=(self.spec, bell), name=f"evcli-worker-{slot.number}", daemon=True
        )
        try:
            process.start()
        finally:
            bell.started()
        slot.process, slot.started, slot.alive = process, time.monotonic(), True

    def _supervise(self) -> None:
        while not self._halt.wait(CHECK_S):
            for slot in self._slots:
                try:
                    self._check(slot, time.monotonic())
                except Exception as exc:  # supervision must outlive any one failure (e.g. no memory to fork)
                    slot.start_at = time.monotonic() + SPAWN_RETRY_S
                    log.error(
                        "cannot start worker %d: %s; trying again in %g s",
                        slot.number,
                        failure_reason(exc),
                        SPAWN_RETRY_S,
                    )

    def _check(self, slot: _Slot, now: float) -> None:
        process = slot.process
        if process is not None and process.is_alive():
            return
        if process is not None:  # it died: is_alive() reaped it, so its pid no longer reads as an owner
            slot.alive, slot.process = False, None
            slot.quick_deaths = slot.quick_deaths + 1 if now - slot.started < CRASH_WINDOW_S else 1
            wait = 0.0 if slot.quick_deaths == 1 else min(2.0 ** (slot.quick_deaths - 2), BACKOFF_MAX_S)
            slot.start_at = now + wait
            log.error(
                "worker %d (pid %d) %s; %s",
                slot.number,
                process.pid,
                _death(process.exitcode),
                f"a new one starts in {wait:g} s" if wait else "a new one starts now",
            )
            self._death.set()
        if now >= slot.start_at and not self._halt.is_set():
            self._spawn(slot)
            slot.restarts += 1

    # --- the watcher thread --------------------------------------------------------------------------

    def _watch(self) -> None:
        store: TraceStore | None = None
        requeue, failing = False, ""
        while not self._halt.is_set():
            requeue = requeue or self._death.is_set()
            self._death.clear()
            try:
                store = store or _open(self.spec.db)
                self._look(store, requeue)
                requeue, failing = False, ""
            except Exception as exc:  # the store is locked, full or gone: the view ages and /healthz says so
                if failure_reason(exc) != failing:
                    failing = failure_reason(exc)
                    log.warning("the queue watcher cannot use the store: %s", failing)
            self._death.wait(WATCH_S)
        if store is not None:
            store.close()

    def _look(self, store: TraceStore, requeue: bool) -> None:
        """Requeue orphans when a worker died or a running alert's owner is gone, then read the view."""
        from evcli.serve.worker import requeue_orphans
        from evcli.store.ownership import owner_alive

        rows = store.alert_queue_rows(_WATCHED)
        if requeue or any(not owner_alive(row["owner"] or "") for row in rows if row["state"] == "running"):
            requeue_orphans(store)
            self.wake()
            rows = store.alert_queue_rows(_WATCHED)
        running = {_pid(row["owner"]): {"id": row["id"], "attempt": row["attempts"]} for row in rows if row["owner"]}
        queued = [row["received_at"] for row in rows if row["state"] == "queued"]
        oldest = datetime.fromisoformat(queued[0]) if queued else None
        self._view = _QueueView(time.monotonic(), running, oldest)

    # --- /healthz ------------------------------------------------------------------------------------

    def health(self) -> tuple[bool, dict[str, Any]]:
        """(healthy, the /healthz document): each worker, the queue's age, and the problems found."""
        view, limit = self._view, self.max_queue_age_s
        problems = [f"worker {slot.number} is not running (being restarted)" for slot in self._slots if not slot.alive]
        waited = None if view.oldest_queued_at is None else (datetime.now(UTC) - view.oldest_queued_at).total_seconds()
        if waited is not None and waited > limit:
            problems.append(f"the oldest queued alert has waited {waited:.0f} s (limit {limit:g} s, --max-queue-age)")
        unread = time.monotonic() - view.read_at
        if unread > max(limit, STALE_VIEW_S):
            problems.append(f"the store has not answered the queue watcher for {unread:.0f} s")
        workers = [self._worker(slot, view) for slot in self._slots]
        queue = {
            "oldest_queued_s": None if waited is None else round(waited, 1),
            "max_age_s": limit,
            "read_s_ago": round(unread, 1),
        }
        document = {"status": "unhealthy" if problems else "ok", "problems": problems, "workers": workers}
        return not problems, {**document, "queue": queue}

    @staticmethod
    def _worker(slot: _Slot, view: _QueueView) -> dict[str, Any]:
        process = slot.process  # read once: the supervisor thread may replace it meanwhile
        pid = None if process is None else process.pid
        alert = None if pid is None else view.running.get(pid)
        return {"worker": slot.number, "pid": pid, "alive": slot.alive, "alert": alert, "restarts": slot.restarts}


def _open(db: str) -> TraceStore:
    from evcli.store.db import TraceStore

    return TraceStore(Path(db))


def _pid(owner: str) -> int:
    pid = owner.split(":")[1]
    return int(pid) if pid.isdigit() else 0


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"was killed by {signal.Signals(-exitcode).name}"
    return f"exited with status {exitcode}"
