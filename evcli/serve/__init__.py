"""`evcli serve`: an Alertmanager webhook receiver that diagnoses every firing alert, and a web view of the store.

Invariants: the queue is the `alert_queue` table of the trace store, so what was accepted (a 202) survives a
restart; a delivery is stored whole or not at all (a full queue answers 503 and stores nothing); an alert is
`running` only while a live worker process owns it, so one whose worker died is queued again, never lost;
a finished alert is never claimed again, so nothing is diagnosed twice. The web process only reads and
enqueues, off its event loop (serve/offload.py), and rings the workers awake (serve/doorbell.py); worker
processes (one per `--workers`) claim, diagnose and finish, supervised by the web process
(serve/supervisor.py): a dead one is replaced and its alert queued again.
Faults of the world (a full disk, a locked store, a slow peer) are answered with their reason and never end
a worker or the server.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evcli.agents.roles import Models


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker process needs to rebuild the pipeline: picklable, so it crosses a process spawn."""

    db: str
    models: Models
    env_config: dict[str, Any] = field(default_factory=dict)
    rules: str | None = None
    max_steps: int = 8
    notify_url: str | None = None
    notify_timeout_s: float = 30.0  # the whole notification, connect to last byte (serve/notify.py)
    notify_format: str = "md"  # md: {"text": brief Markdown, ...}; slack: Block Kit {"text", "blocks"}


@dataclass(frozen=True)
class ServeConfig:
    """The server's settings: queue bound, the duplicate window, the optional bearer token, and how long the
    oldest queued alert may wait before /healthz says unhealthy."""

    worker: WorkerSpec
    max_queue: int = 1000
    repeat_interval_s: float = 4 * 3600.0  # Alertmanager's default repeat_interval
    token: str | None = None
    max_queue_age_s: float = 600.0


def ignore_interrupts() -> None:
    """In a worker or render process: Ctrl-C reaches the whole process group, but only the web process acts on
    it, telling its workers to stop after the alert in hand (a worker interrupted mid-diagnosis would leave
    it to be diagnosed again)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def failure_reason(exc: BaseException) -> str:
    """One line for a log or an answer: what an expected failure (disk full, locked store) means, else its type."""
    from evcli.core.errors import expected_failure

    expected = expected_failure(exc)
    return expected.message if expected is not None else f"unexpected {type(exc).__name__}: {exc}"


class _StderrLines(logging.Handler):
    """Writes to the stderr of the moment (a test runner swaps it), not the one at start-up."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(self.format(record) + "\n")


def log_to_stderr() -> None:
    """Server log lines (logger `evcli.serve`) to stderr with a timestamp; idempotent within a process."""
    logger = logging.getLogger("evcli.serve")
    if not any(isinstance(handler, _StderrLines) for handler in logger.handlers):
        handler = _StderrLines()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
