"""Threads kept by a process and reused, instead of a thread or a thread pool started per call (issue 27).

A diagnosis runs tens of tool calls and log queries, each of which ran on threads of its own; starting and
joining them cost CPU that a second worker process on the same cores then lacked. `threads()` is the
process's one set of kept threads; `Limited` runs at most so many tasks of its own on them at once.

Invariants:
  - one `Threads` per process (`threads()`, a `PerProcess`): built on first use, and built anew in a forked
    child, which has none of its parent's threads (a task handed to one of them would never run);
  - a task never waits for a thread of `Threads`: it gets an idle one, or a new one starts. So a task stuck
    past its deadline holds only its own thread, and every later task still runs;
  - a thread goes back to the idle ones once its task returned, and ends after IDLE_S unused or when KEEP
    are idle already: a process that stopped calling keeps no threads (a large gate forks only in a process
    with no other thread, evcli/gatekeeper/parallel.py);
  - each task runs in a new empty `contextvars` context, as it would on a new thread: nothing a task set
    (a tool call's read deadline) is seen by the next one on the same thread;
  - the threads are daemons: a task that never returns cannot keep the process from exiting; the exit waits
    up to EXIT_WAIT_S for the running tasks (a thread inside a C++ library at finalization can abort it);
  - `Limited` starts its tasks in the order given, at most `limit` at once; `cancel_waiting` cancels those
    not started, which then never run.
"""

from __future__ import annotations

import atexit
import contextvars
import itertools
import os
import queue
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

T = TypeVar("T")
KEEP = 16  # idle threads kept at most
IDLE_S = 2.0  # an idle thread ends after this long unused
EXIT_WAIT_S = 5.0  # how long the process's exit waits for tasks still running (one that never ends is left)

_Task = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]
_Inbox = queue.SimpleQueue[_Task | None]  # a thread's tasks; None ends it


class PerProcess(Generic[T]):
    """The object `build()` returns, one per process: built on first use, and again after a fork."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._built: tuple[int, T] | None = None
        self._locks: dict[int, threading.Lock] = {}  # by pid: a lock held in the parent at the fork stays held

    def __call__(self) -> T:
        pid, built = os.getpid(), self._built
        if built is not None and built[0] == pid:
            return built[1]
        with self._locks.setdefault(pid, threading.Lock()):
            if self._built is None or self._built[0] != pid:
                self._built = (pid, self._build())
            return self._built[1]


class Threads:
    """Daemon threads that each run one task at a time and are kept for the next (see the module's invariants)."""

    def __init__(self, name: str = "evcli-pool", keep: int = KEEP, idle_s: float = IDLE_S) -> None:
        self.name, self.keep, self.idle_s = name, keep, idle_s
        self._lock = threading.Condition()  # notified when no task runs (`drain`)
        self._idle: list[_Inbox] = []  # the inboxes of idle threads, the latest idle last
        self._thread_of: dict[_Inbox, threading.Thread] = {}  # each live thread by its inbox
        self._busy = 0
        self._numbers = itertools.count(1)

    @property
    def busy(self) -> int:
        """Threads running a task now."""
        return self._busy

    @property
    def idle(self) -> int:
        """Threads waiting for a task."""
        return len(self._idle)

    def submit(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        """`fn(*args)` on an idle thread, or on a new one when none is idle."""
        future: Future[T] = Future()
        self.run(future, fn, args)
        return future

    def run(self, future: Future[Any], fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        """`fn(*args)` on a thread, its outcome set on `future` (nothing runs if `future` is cancelled by then;
        when no thread can be started, `future` holds that error)."""
        with self._lock:
            self._busy += 1
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = _Inbox()
            thread = threading.Thread(
                target=self._serve, args=(inbox,), name=f"{self.name}-{next(self._numbers)}", daemon=True
            )
            with self._lock:
                self._thread_of[inbox] = thread
            try:
                thread.start()
            except RuntimeError as exc:  # "can't start new thread": the process's limit, or it is exiting
                with self._lock:
                    self._busy -= 1
                    self._thread_of.pop(inbox, None)
                    self._lock.notify_all()
                if future.set_running_or_notify_cancel():
                    future.set_exception(exc)
                return
        inbox.put((future, fn, args))

    def _serve(self, inbox: _Inbox) -> None:
        task: _Task | None = inbox.get()
        while task is not None:
            future, fn, args = task
            outcome = _outcome(future, fn, args)
            with self._lock:  # idle again before the waiter hears: its next task can come to this thread
                self._busy -= 1
                self._lock.notify_all()
                kept = len(self._idle) < self.keep
                if kept:
                    self._idle.append(inbox)
                else:
                    self._thread_of.pop(inbox, None)
            if outcome is not None:
                _settle(future, *outcome)
            del task, future, fn, args, outcome  # nothing of a finished task is held while idle
            if not kept:
                return
            task = self._next(inbox)

    def _next(self, inbox: _Inbox) -> _Task | None:
        """The next task given to this idle thread; None when it ends instead (IDLE_S unused)."""
        try:
            return inbox.get(timeout=self.idle_s)
        except queue.Empty:
            with self._lock:
                if inbox in self._idle:
                    self._idle.remove(inbox)
                    self._thread_of.pop(inbox, None)
                    return None
            return inbox.get()  # taken for a task meanwhile (or retired: None): it is on its way

    def drain(self, timeout_s: float) -> bool:
        """Wait until no task runs, at most `timeout_s`; whether none does."""
        with self._lock:
            return self._lock.wait_for(lambda: self._busy == 0, timeout_s)

    def retire_idle(self) -> None:
        """End every idle thread now, and wait until each has: a process about to fork (a large gate,
        evcli/gatekeeper/parallel.py) keeps no thread it does not need."""
        with self._lock:
            retired, self._idle = self._idle, []
            ending = [self._thread_of.pop(inbox) for inbox in retired if inbox in self._thread_of]
        for inbox in retired:
            inbox.put(None)
        for thread in ending:
            thread.join()


def _outcome(future: Future[Any], fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any] | None:
    """(True, what `fn(*args)` returned) or (False, what it raised), run in a new empty context; None when
    `future` was cancelled before it started."""
    if not future.set_running_or_notify_cancel():
        return None
    try:
        return True, contextvars.Context().run(fn, *args)
    except BaseException as exc:  # handed to whoever waits on the future, as concurrent.futures does
        return False, exc


def _settle(future: Future[Any], returned: bool, value: Any) -> None:
    if returned:
        future.set_result(value)
    else:
        future.set_exception(value)


def _process_threads() -> Threads:
    """The process's threads; at the interpreter's exit it waits up to EXIT_WAIT_S for their running tasks."""
    pool = Threads()
    atexit.register(_drain_at_exit, pool)
    return pool


def _drain_at_exit(pool: Threads) -> None:
    # A daemon thread still inside a C++ library (Arrow, polars) when the interpreter finalizes can abort the
    # process ("terminate called without an active exception", exit 134) after its error was already shown.
    # A task still running at exit has had its deadline cancelled (tools/runner.py), so it ends at its next check.
    pool.drain(EXIT_WAIT_S)


threads = PerProcess(_process_threads)


class Limited:
    """At most `limit` of its tasks at once on the process's `threads()`; the others wait their turn, in order."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._waiting: deque[_Task] = deque()
        self._running = 0

    def submit(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            self._waiting.append((future, fn, args))
        self._start_next()
        return future

    def cancel_waiting(self) -> None:
        """Cancel the tasks not started yet: they never run."""
        with self._lock:
            waiting, self._waiting = self._waiting, deque()
        for future, _, _ in waiting:
            future.cancel()

    def _start_next(self) -> None:
        with self._lock:
            if self._running >= self.limit or not self._waiting:
                return
            self._running += 1
            future, fn, args = self._waiting.popleft()
        future.add_done_callback(self._finished)
        threads().run(future, fn, args)

    def _finished(self, _: Future[Any]) -> None:
        with self._lock:
            self._running -= 1
        self._start_next()
