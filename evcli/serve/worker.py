"""Worker processes: claim the oldest queued alert, diagnose it like `evcli aiops`, record the outcome.

A worker owns the alert it claimed (`alert_queue.owner` = this process) until it records the outcome, so
the alert of a worker killed mid-diagnosis is queued again (`requeue_orphans`, run at start and by the
supervisor's watcher once the owner is gone); the diagnosis session's id is recorded with the alert as
soon as the session exists, so an alert whose worker died after its session completed is marked done with
that session's verdict, not diagnosed again.
An exception of the diagnosis marks the alert `failed` with its reason in one line (`disk full: …`), logged,
and the session it started `interrupted`; it is not retried. A store that cannot be written (disk full,
locked past the busy timeout) never ends a worker: claiming, or recording an outcome the worker holds, is
retried after RETRY_S, doubling up to RETRY_MAX_S, until the store takes it again.
A finished report is posted to `notify_url` (serve/notify.py) when one is set; a failed post is logged.
A worker with nothing queued waits for the server's ring (serve/doorbell.py: rung when alerts are queued),
looking at the queue every IDLE_POLL_S all the same. A worker stops after the alert in hand on SIGTERM or
once the server process is gone (`StopRequest`, or its doorbell closed); Ctrl-C is left to the server
process.
A worker's connection commits without flushing each transaction to disk (`open_worker_store`); a process
crash loses nothing it committed, and a power loss can only take the newest commits, as a kill would.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evcli.core.errors import StoreError
from evcli.serve import WorkerSpec, failure_reason, ignore_interrupts, log_to_stderr

if TYPE_CHECKING:
    from evcli.pipeline import Pipeline
    from evcli.serve.doorbell import Bell
    from evcli.store.db import TraceStore

log = logging.getLogger("evcli.serve")
IDLE_POLL_S = 1.0  # an idle worker looks at the queue this often unrung (alerts another process queued)
STOP_CHECK_S = 0.2  # how often a pause checks whether to stop
RETRY_S = 0.5
RETRY_MAX_S = 10.0
STORE_FAILURES = (StoreError, sqlite3.Error, OSError)
Pause = Callable[[float], bool]  # wait this long; True when the worker should stop instead


def build_pipeline(spec: WorkerSpec, store: TraceStore) -> Pipeline:
    from evcli.gatekeeper.rules import load_rules
    from evcli.pipeline import Pipeline

    rules = load_rules(None if spec.rules is None else Path(spec.rules))
    return Pipeline(store=store, rules=rules, models=spec.models, env_spec=spec.env_config, max_steps=spec.max_steps)


def diagnose_next(pipeline: Pipeline, spec: WorkerSpec, pause: Pause | None = None) -> dict[str, Any] | None:
    """Claim, diagnose and finish one queued alert; None when nothing is queued.

    With `pause`, an outcome the store refuses is retried until it is recorded (or `pause` says stop);
    without it (`--once`), the store's failure is raised."""
    store = pipeline.store
    claimed = store.claim_alert()
    if claimed is None:
        return None
    started = time.monotonic()
    sessions: list[str] = []

    def on_session(session_id: str) -> None:
        sessions.append(session_id)
        store.attach_session(claimed["id"], session_id)

    try:
        outcome = _diagnose(pipeline, claimed["alert"], on_session)
    except Exception as exc:  # one alert's failure must not stop the worker
        outcome = {"error": failure_reason(exc)}
        log.error("diagnosis of alert %s (#%s) failed: %s", claimed["alertname"], claimed["id"], outcome["error"])
    outcome["duration_s"] = round(time.monotonic() - started, 4)
    if not _record(store, claimed, outcome, sessions, pause):
        return {**claimed, **outcome}
    if "session_id" in outcome:
        log.info(
            "alert %s (#%s): %s, session %s",
            claimed["alertname"],
            claimed["id"],
            outcome["verdict"],
            outcome["session_id"],
        )
        if spec.notify_url:
            from evcli.serve.notify import notify

            notify(
                spec.notify_url,
                store,
                outcome["session_id"],
                claimed["alertname"],
                spec.notify_timeout_s,
                spec.notify_format,
            )
    return {**claimed, **outcome}


def _diagnose(pipeline: Pipeline, alert: dict[str, Any], on_session: Callable[[str], None]) -> dict[str, Any]:
    from evcli.aiops import AlertInput, diagnose_alert

    report = diagnose_alert(pipeline, AlertInput(**alert), on_session)
    session_id = report["session_id"]
    return {"session_id": session_id, "verdict": report["verdict"], **pipeline.store.error_counts(session_id)}


def _record(
    store: TraceStore, claimed: dict[str, Any], outcome: dict[str, Any], sessions: list[str], pause: Pause | None
) -> bool:
    """Store the outcome (and mark a failed diagnosis's session interrupted); False if told to stop first."""
    delay = RETRY_S
    while True:
        try:
            if "error" in outcome:
                for session_id in sessions:  # a no-op for a session that had completed
                    store.mark_interrupted(session_id)
            store.finish_alert(claimed["id"], **outcome)
            return True
        except STORE_FAILURES as exc:
            if pause is None:
                raise
            log.warning(
                "cannot record the outcome of alert %s (#%s): %s; retrying in %g s",
                claimed["alertname"],
                claimed["id"],
                failure_reason(exc),
                delay,
            )
            if pause(delay):
                return False
            delay = min(2 * delay, RETRY_MAX_S)


def drain(pipeline: Pipeline, spec: WorkerSpec) -> list[dict[str, Any]]:
    """Diagnose queued alerts until none is left (`evcli serve --once`)."""
    finished = []
    while (item := diagnose_next(pipeline, spec)) is not None:
        finished.append(item)
    return finished


class StopRequest:
    """When a worker should stop after the alert in hand: on SIGTERM (the supervisor stopping it, or a whole
    process group being stopped) or once the server process is gone. A flag set by a signal handler, not a
    shared semaphore: a process killed while holding one would block every other process on it for good."""

    def __init__(self) -> None:
        import signal

        self.parent, self.requested = os.getppid(), False
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.requested = True

    def __call__(self) -> bool:
        return self.requested or os.getppid() != self.parent

    def pause(self, seconds: float) -> bool:
        """Wait `seconds`, or less if a stop is requested meanwhile; True when it was."""
        ends = time.monotonic() + seconds
        while not self():
            left = ends - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, STOP_CHECK_S))
        return True


def open_worker_store(db: str) -> TraceStore:
    """The store as a worker writes it: `synchronous = NORMAL` on this connection only.

    Under the default (FULL) every commit fsyncs the WAL while it holds the store's one write lock, and a
    diagnosis commits about 30 times (steps, tool calls, stages), so two workers queue behind each other's
    fsyncs. Measured on a loaded machine (issue 27), BEGIN and COMMIT took 158-310 ms of each diagnosis with
    two workers under FULL (20-178 ms with one), and 9-24 ms under NORMAL (6-9 ms with one).
    Under NORMAL a commit is written to the WAL and synced at the next checkpoint (or with the next FULL
    commit: the web process accepting a delivery keeps FULL, so a 202 stays durable). A crashed process
    loses nothing; a power loss can roll back only the newest commits, always a prefix of them, so the store
    is left as a killed worker leaves it: the alert is queued again, or marked done if its session completed
    (`requeue_orphans`); only a report already posted to `notify_url` may then be posted twice."""
    from evcli.store.db import TraceStore

    store = TraceStore(Path(db))
    store.conn.execute("PRAGMA synchronous = NORMAL")
    return store


def worker_main(spec: WorkerSpec, bell: Bell) -> None:
    """A worker process: diagnose queued alerts until told to stop (SIGTERM) or the server process is gone;
    with nothing queued, wait for the server's ring (serve/doorbell.py) or IDLE_POLL_S."""
    ignore_interrupts()
    stop = StopRequest()
    log_to_stderr()
    with open_worker_store(spec.db) as store:
        pipeline = build_pipeline(spec, store)
        delay = RETRY_S
        while not stop() and not bell.server_gone:
            try:
                item = diagnose_next(pipeline, spec, stop.pause)
            except STORE_FAILURES as exc:  # the claim: the store is full, locked or unreadable for now
                log.warning(
                    "worker %d cannot claim an alert: %s; retrying in %g s", os.getpid(), failure_reason(exc), delay
                )
                stop.pause(delay)
                delay = min(2 * delay, RETRY_MAX_S)
                continue
            delay = RETRY_S
            if item is None:
                bell.wait(IDLE_POLL_S)


def requeue_orphans(store: TraceStore) -> None:
    """Alerts whose worker died: queued again, or done when their session had completed (at start and by the
    supervisor after a worker died)."""
    requeued, finished = store.requeue_orphaned_alerts()
    if requeued:
        log.warning("%d alert(s) whose diagnosis was interrupted are queued again", requeued)
    if finished:
        log.warning("%d alert(s) whose worker died after the diagnosis completed are marked done", finished)
