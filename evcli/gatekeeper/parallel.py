"""A large session's claims checked on all usable cores: one part in the caller, each other part in a
forked child.

Why: gating 10,000 bindings is CPU work on many small texts (about 0.1 ms a binding) and one Python
process runs on one core. A claim's checks depend only on the claim, the session's invocations and what
checking earlier claims cached about those invocations (their re-derived refs, the typed values of their
cited items: the same whichever claim reads them first). So the claims can be cut into contiguous
parts, checked apart, and the parts' outcomes joined in claim order: the same bindings, findings and
order as checking the claims one after the other.

Invariants: the result is exactly `[check(part) for part in parts]`. Only a session of at least
`MIN_WEIGHT` bindings is split (below it a fork costs more than it saves), only where `os.fork` exists,
more than one core is usable and the process runs no other thread once the idle kept threads of earlier tool
calls are ended (evcli.core.pools) (a fork copies only the calling
thread: a lock another thread held would stay held in the child). A child inherits the caller's memory
(nothing is sent to it), sends `encode(outcome)` back through a pipe and leaves with `os._exit`,
running no exit handler and flushing no buffer of the caller. When a child fails in any way (or what it
sent does not decode), the caller checks that part itself, so an error is raised as the sequential run
raises it; when the caller fails, its children are killed and reaped.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

__all__ = ["MIN_WEIGHT", "in_parts", "usable_cores"]

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")

MIN_WEIGHT = 2000  # bindings: below this a session is checked in one process
_MAX_PARTS = 8


def in_parts(
    items: Sequence[Item],
    weights: Sequence[int],
    check: Callable[[Sequence[Item]], Outcome],
    encode: Callable[[Outcome], bytes],
    decode: Callable[[bytes], Outcome],
) -> list[Outcome]:
    """`check` of contiguous parts of `items` (of about equal `weights`), in order: one part per usable
    core when the session may be split (see the module's invariants), else one part (all of them)."""
    count = min(usable_cores(), _MAX_PARTS) if _may_fork(sum(weights)) else 1
    if count < 2:
        return [check(items)]
    parts = _parts(items, weights, count)
    children: list[_Child] = []
    try:
        children += [_start(part, check, encode) for part in parts[1:]]
        outcomes = [check(parts[0])]
        for part, child in zip(parts[1:], children, strict=True):
            outcomes.append(_collect(child, decode, partial(check, part)))
    finally:
        for child in children:
            child.stop()
    return outcomes


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _may_fork(weight: int) -> bool:
    if weight < MIN_WEIGHT or not hasattr(os, "fork"):
        return False
    from evcli.core.pools import threads

    threads().retire_idle()  # the kept idle threads of earlier tool calls end now: they hold no lock to inherit
    return threading.active_count() == 1


# The caller's part is this much heavier than a child's: a child's part takes longer than the same weight in the
# caller (it also encodes what it sends, and its first write to each page it shares with the caller copies it).
# Measured with gate() on bench_core's 10,000 real bindings, in a process that read them from a file (2 cores,
# best of 4, the shares alternating): 1.0 1.233 s, 1.05 1.189 s, 1.1 1.201 s, 1.15 1.235 s, 1.2 1.254 s.
_CALLER_SHARE = 1.06


def _parts(items: Sequence[Item], weights: Sequence[int], count: int) -> list[Sequence[Item]]:
    """`items` cut into `count` contiguous parts, the first (the caller's) `_CALLER_SHARE` times the others'
    weight (a part may be empty)."""
    total, cuts, running = sum(weights), [0], 0
    shares = [_CALLER_SHARE, *[1.0] * (count - 1)]
    ends = [total * sum(shares[: part + 1]) / sum(shares) for part in range(count - 1)]
    for index, weight in enumerate(weights):
        running += weight
        while len(cuts) < count and running >= ends[len(cuts) - 1]:
            cuts.append(index + 1)
    cuts += [len(items)] * (count + 1 - len(cuts))
    return [items[start:end] for start, end in zip(cuts, cuts[1:], strict=False)]


class _Child:
    def __init__(self, pid: int, read_end: int) -> None:
        self.pid = pid
        self.pipe = os.fdopen(read_end, "rb")
        self.reaped = False

    def reap(self) -> int:
        """Wait for the child to exit; its wait status (0: it sent its whole outcome)."""
        _, status = os.waitpid(self.pid, 0)
        self.reaped = True
        return status

    def stop(self) -> None:
        """Kill and reap the child unless it was reaped already; close the pipe."""
        self.pipe.close()
        if not self.reaped:
            os.kill(self.pid, signal.SIGKILL)
            self.reap()


def _start(
    part: Sequence[Item], check: Callable[[Sequence[Item]], Outcome], encode: Callable[[Outcome], bytes]
) -> _Child:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: check its part, send it, leave without any of the caller's cleanup
        status = 1
        try:
            os.close(read_end)
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(encode(check(part)))
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    return _Child(pid, read_end)


def _collect(child: _Child, decode: Callable[[bytes], Outcome], again: Callable[[], Outcome]) -> Outcome:
    """What the child sent, decoded; `again()` (its part checked here) when it failed or sent nothing usable."""
    sent = child.pipe.read()
    try:
        outcome = decode(sent)  # decoded while the child's exit tears its memory down
    except Exception:  # not what the child meant to send: check the part here, as the sequential run would
        child.reap()
        return again()
    return outcome if child.reap() == 0 else again()
