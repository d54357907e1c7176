"""Which process owns a run that is being written, and what a reader sees of a run whose owner is gone.

An owner is `host:pid:start` (the start time tells a pid reused by a later process apart); an
active run (created, running) whose owner no longer runs reads as interrupted.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

ACTIVE_STATUSES = ("created", "running")
INTERRUPTED = "interrupted"


def _start_ticks(pid: int) -> str | None:
    """The start time of process `pid` (clock ticks since boot), or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return ""  # /proc unreadable: existence is all we can know
    return stat.rsplit(")", 1)[1].split()[19]


def process_identity() -> str:
    """`host:pid:start`: names this process and no later one that reuses its pid."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_ticks(os.getpid()) or ''}"


def owner_alive(owner: str) -> bool:
    """Whether the process named by `owner` still runs; an owner on another host counts as alive."""
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    if not Path("/proc/self/stat").exists():
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True
    found = _start_ticks(int(pid_text))
    return found is not None and (not start or not found or found == start)


def shown_status(status: str, owner: str | None) -> str:
    """The status a reader sees: an active run whose owner is gone was interrupted."""
    if status in ACTIVE_STATUSES and owner and not owner_alive(owner):
        return INTERRUPTED
    return status
