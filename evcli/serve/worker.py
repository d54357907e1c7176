"""Worker processes: claim the oldest queued alert, diagnose it like `evcli aiops`, record the outcome.

A worker owns the alert it claimed (`alert_queue.owner` = this process) until it records the outcome, so
the alert of a worker killed mid-diagnosis is queued again at the next start (`requeue_orphaned_alerts`);
the diagnosis session's id is recorded with the alert as soon as the session exists, so an alert whose
worker died after its session completed is marked done with that session's verdict, not diagnosed again.
An exception of the diagnosis marks the alert `failed` with the error, logged; it is not retried.
A finished report is posted to `notify_url` (Markdown brief report) when one is set; a failed post is logged.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evcli.serve import WorkerSpec, log_to_stderr

if TYPE_CHECKING:
    from evcli.pipeline import Pipeline
    from evcli.store.db import TraceStore

log = logging.getLogger("evcli.serve")
IDLE_POLL_S = 0.2


def build_pipeline(spec: WorkerSpec, store: TraceStore) -> Pipeline:
    from evcli.gatekeeper.rules import load_rules
    from evcli.pipeline import Pipeline

    rules = load_rules(None if spec.rules is None else Path(spec.rules))
    return Pipeline(store=store, rules=rules, models=spec.models, env_spec=spec.env_config, max_steps=spec.max_steps)


def diagnose_next(pipeline: Pipeline, spec: WorkerSpec) -> dict[str, Any] | None:
    """Claim, diagnose and finish one queued alert; None when nothing is queued."""
    store = pipeline.store
    claimed = store.claim_alert()
    if claimed is None:
        return None
    started = time.monotonic()
    try:
        outcome = _diagnose(
            pipeline, claimed["alert"], lambda session_id: store.attach_session(claimed["id"], session_id)
        )
    except Exception as exc:  # one alert's failure must not stop the worker
        log.error("diagnosis of alert %s (#%s) failed: %s", claimed["alertname"], claimed["id"], exc)
        outcome = {"error": str(exc) or type(exc).__name__}
    outcome["duration_s"] = round(time.monotonic() - started, 4)
    store.finish_alert(claimed["id"], **outcome)
    if "session_id" in outcome:
        log.info(
            "alert %s (#%s): %s, session %s",
            claimed["alertname"],
            claimed["id"],
            outcome["verdict"],
            outcome["session_id"],
        )
        if spec.notify_url:
            notify(spec.notify_url, store, outcome["session_id"], claimed["alertname"])
    return {**claimed, **outcome}


def _diagnose(pipeline: Pipeline, alert: dict[str, Any], on_session: Callable[[str], None]) -> dict[str, Any]:
    from evcli.aiops import AlertInput, diagnose_alert

    report = diagnose_alert(pipeline, AlertInput(**alert), on_session)
    document = pipeline.store.load(report["session_id"])
    return {
        "session_id": report["session_id"],
        "verdict": report["verdict"],
        "tool_errors": sum(not invocation.success for invocation in document.invocations),
        "model_errors": sum(step.status == "error" or bool(step.error) for step in document.steps),
    }


def notify(url: str, store: TraceStore, session_id: str, alertname: str) -> None:
    """Post the Markdown brief report (`text`, as chat incoming webhooks expect) and the session's outcome."""
    import httpx

    from evcli.report import render

    document = store.load(session_id)
    body = {
        "text": render(document, "md", brief=True),
        "session_id": session_id,
        "alertname": alertname,
        "verdict": document.run.verdict,
    }
    try:
        httpx.post(url, json=body, timeout=10).raise_for_status()
    except httpx.HTTPError as exc:
        log.warning("notification of session %s to %s failed: %s", session_id, url, exc)


def drain(pipeline: Pipeline, spec: WorkerSpec) -> list[dict[str, Any]]:
    """Diagnose queued alerts until none is left (`evcli serve --once`)."""
    finished = []
    while (item := diagnose_next(pipeline, spec)) is not None:
        finished.append(item)
    return finished


def worker_main(spec: WorkerSpec, stop: Any) -> None:
    """A worker process: diagnose queued alerts until `stop` is set or the server process is gone."""
    from evcli.store.db import TraceStore

    log_to_stderr()
    parent = os.getppid()
    with TraceStore(Path(spec.db)) as store:
        pipeline = build_pipeline(spec, store)
        while not stop.is_set() and os.getppid() == parent:
            if diagnose_next(pipeline, spec) is None:
                requeue_orphans(store)
                stop.wait(IDLE_POLL_S)


def requeue_orphans(store: TraceStore) -> None:
    """Checked at start and whenever a worker is idle: a killed worker's process may take a while to vanish."""
    requeued, finished = store.requeue_orphaned_alerts()
    if requeued:
        log.warning("%d alert(s) whose diagnosis was interrupted are queued again", requeued)
    if finished:
        log.warning("%d alert(s) whose worker died after the diagnosis completed are marked done", finished)
