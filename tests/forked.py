"""A function run in a forked child and its answer read back: for what must hold in a process forked from this one."""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Callable


def answer_in_child(work: Callable[[], bytes], timeout_s: float = 30) -> bytes:
    """What `work()` returned in a child forked now (at most 64 bytes), b"raised" when it raised, b"(no answer)"
    when nothing came within `timeout_s` (the child is then killed); the child is always reaped."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only os._exit leaves it (no pytest teardown here)
        try:
            os.write(write, work())
        except BaseException:
            os.write(write, b"raised")
        finally:
            os._exit(0)
    os.close(write)
    ready: list[int] = []
    try:
        ready, _, _ = select.select([read], [], [], timeout_s)
        return os.read(read, 64) if ready else b"(no answer)"
    finally:
        os.close(read)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
