"""Reading one big file in parts, side by side: the worker processes and the byte window of the trace
index build (evcli.backends.tracebuild; the log index reads a file at once, vectorised).

Invariants: a worker is a fresh interpreter (`python -c CODE`: the caller may run threads, and its main
module is never re-imported) that reads the pickled job and its part's bounds and temporary SQLite file from
stdin and writes its pickled result to stdout; workers are killed when the build fails or its deadline
passes, and their temporary files are removed in every case.
"""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

from evcli.core.files import check_deadline

MAX_PARTS = 4  # processes reading one file at most


def cores() -> int:
    """How many parts a file is read in: the CPUs this process may use, at most MAX_PARTS."""
    try:
        return max(1, min(MAX_PARTS, len(os.sched_getaffinity(0))))
    except AttributeError:  # not on Linux
        return max(1, min(MAX_PARTS, os.cpu_count() or 1))


class Window(io.RawIOBase):
    """The bytes [start, end) of an open binary file, read as a file of their own."""

    def __init__(self, handle: BinaryIO, start: int, end: int) -> None:
        handle.seek(start)
        self.handle, self.left = handle, end - start

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.handle.read(min(len(buffer), self.left))
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)


class Workers:
    """One worker process per part in `bounds`, running `code` on (*job, bounds, temporary db); `what` names the
    build in a worker's failure ("log index"). `started` is False when no worker could start: the caller then
    reads the whole file itself."""

    def __init__(self, code: str, what: str, job: tuple[Any, ...], bounds, home: Path, prefix: str) -> None:
        self.code, self.what, self.job, self.bounds = code, what, job, list(bounds)
        self.home, self.prefix = home, prefix
        self.files: list[str] = []
        self.running: list[subprocess.Popen[bytes]] = []
        self.started = True

    def __enter__(self) -> Workers:
        try:
            for bounds in self.bounds:
                handle, db = tempfile.mkstemp(dir=self.home, prefix=self.prefix, suffix=".db")
                os.close(handle)
                self.files.append(db)
                worker = subprocess.Popen(
                    [sys.executable, "-c", self.code],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                self.running.append(worker)
                assert worker.stdin is not None
                worker.stdin.write(pickle.dumps((*self.job, bounds, db)))
                worker.stdin.close()
        except OSError:
            self.__exit__()
            self.started, self.running = False, []
        return self

    def results(self) -> list[Any]:
        """The workers' results in file order, waiting for them (and the deadline)."""
        parts = []
        for worker in self.running:
            while worker.poll() is None:
                check_deadline()
                try:
                    worker.wait(0.05)
                except subprocess.TimeoutExpired:
                    pass
            assert worker.stdout is not None and worker.stderr is not None
            if worker.returncode != 0:
                raise OSError(f"{self.what} worker failed: {worker.stderr.read().decode(errors='replace')[-500:]}")
            parts.append(pickle.loads(worker.stdout.read()))
        return parts

    def __exit__(self, *_: object) -> None:
        for worker in self.running:
            if worker.poll() is None:
                worker.kill()
            worker.wait()
            for stream in (worker.stdout, worker.stderr):
                if stream is not None:
                    stream.close()
        for db in self.files:
            Path(db).unlink(missing_ok=True)
