"""Waking an idle worker when alerts are queued, instead of leaving it to find them at its next look.

Each worker process gets the read end of a pipe of its own (`Bell`, a `Doorbell`'s other end); the server
process rings every worker's doorbell after a delivery queued alerts and after the watcher queued orphans
again (serve/supervisor.py). Invariants: ringing never blocks and never fails (the write end is
non-blocking: a full pipe already holds a ring, and a worker that died has nothing to wake); a worker reads
every ring waiting before it looks at the queue, so one look answers them all; end of file on the pipe means
the server process is gone (only it holds the write end: spawned processes inherit no other descriptor).
A worker still looks at the store every IDLE_POLL_S (serve/worker.py) without a ring, so alerts another
process queued on the same store are found, and a SIGTERM (which does not cut a wait short) is acted on
within that time.
"""

from __future__ import annotations

import os
import threading
from multiprocessing.connection import Connection, wait

_READ = 4096


class Doorbell:
    """The server's end: the write ends of the workers' pipes, by worker slot."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # a write end is never closed (and its number reused) mid-ring
        self._ends: dict[int, int] = {}

    def add(self, slot: int) -> Bell:
        """A new pipe for the worker about to start in `slot` (replacing the last one's): its `Bell` end
        goes to the worker process (picklable into a spawned process), which `started` then closes here."""
        reader, writer = os.pipe()
        os.set_blocking(reader, False)  # the worker's copy too: one open file, shared flags
        os.set_blocking(writer, False)
        with self._lock:
            old = self._ends.pop(slot, None)
            self._ends[slot] = writer
        if old is not None:
            os.close(old)
        return Bell(Connection(reader, writable=False))

    def ring(self) -> None:
        """Wake every worker waiting for alerts."""
        with self._lock:
            for end in self._ends.values():
                try:
                    os.write(end, b"\0")
                except OSError:  # a full pipe (rung already) or a worker that died (nothing to wake)
                    pass

    def close(self) -> None:
        """Close every write end: each worker sees the server gone."""
        with self._lock:
            ends, self._ends = list(self._ends.values()), {}
        for end in ends:
            os.close(end)


class Bell:
    """A worker's end of its doorbell pipe."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.server_gone = False

    def started(self) -> None:
        """In the server process, once the worker process has its copy: the server keeps no read end."""
        self.connection.close()

    def wait(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for a ring; True when rung (every ring waiting is read, so the next wait
        waits again) or when the server is gone (`server_gone`, and every later wait returns at once)."""
        if self.server_gone:
            return True
        if not wait([self.connection], timeout_s):
            return False
        try:
            while os.read(self.connection.fileno(), _READ):
                pass
            self.server_gone = True  # end of file: every write end is closed
        except BlockingIOError:  # every ring read; the server is still there
            pass
        return True
