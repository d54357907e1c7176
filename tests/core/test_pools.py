"""evcli.core.pools: kept threads reused, a stuck task starving nothing, one pool per process (a forked child
builds its own), a new context per task, idle threads ending, and `Limited`'s bound, order and cancelling."""

from __future__ import annotations

import contextvars
import subprocess
import sys
import threading
import time
from concurrent.futures import CancelledError

import pytest

from evcli.core import pools
from evcli.core.pools import Limited, PerProcess, Threads
from tests.forked import answer_in_child


def current() -> threading.Thread:
    return threading.current_thread()


def until(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_tasks_one_after_another_run_on_one_kept_thread():
    kept = Threads("test-reuse")
    ran_on = [kept.submit(current).result(timeout=5) for _ in range(20)]
    assert len(set(ran_on)) == 1 and ran_on[0] is not current()
    assert ran_on[0].daemon and ran_on[0].is_alive()
    assert (kept.busy, kept.idle) == (0, 1)


def test_a_task_stuck_past_its_deadline_holds_its_thread_and_later_tasks_still_run():
    kept = Threads("test-stuck")
    release = threading.Event()
    stuck = kept.submit(release.wait, 30)
    try:
        assert until(lambda: kept.busy == 1)
        started = time.monotonic()
        ran_on = {kept.submit(current).result(timeout=5) for _ in range(5)}  # one after another
        assert time.monotonic() - started < 2
        assert not stuck.done() and kept.busy == 1
        assert len(ran_on) == 1  # one new thread served them all
    finally:
        release.set()
    assert stuck.result(timeout=5) is True
    assert until(lambda: kept.busy == 0 and kept.idle == 2)  # the stuck one is kept once its task ended


def test_an_exception_reaches_the_caller_and_the_thread_serves_on():
    kept = Threads("test-raise")

    def fail() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        kept.submit(fail).result(timeout=5)
    assert kept.submit(lambda: 7).result(timeout=5) == 7
    assert (kept.busy, kept.idle) == (0, 1)


def test_each_task_starts_in_a_new_empty_context_as_on_a_new_thread():
    kept = Threads("test-context")
    mark: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")

    def set_and_leave() -> threading.Thread:
        mark.set("left by the first task")
        return current()

    def read() -> tuple[str, threading.Thread]:
        return mark.get(), current()

    first = kept.submit(set_and_leave).result(timeout=5)
    seen, second = kept.submit(read).result(timeout=5)
    assert first is second and seen == "unset"


def test_idle_threads_end_after_idle_s_and_at_most_keep_wait():
    kept = Threads("test-idle", keep=1, idle_s=0.2)
    release = threading.Event()
    running = [kept.submit(lambda: (release.wait(5), current())[1]) for _ in range(3)]
    assert until(lambda: kept.busy == 3)
    release.set()
    ran_on = {future.result(timeout=5) for future in running}
    assert len(ran_on) == 3
    assert until(lambda: sum(thread.is_alive() for thread in ran_on) <= 1)  # one kept, the others ended
    assert until(lambda: not any(thread.is_alive() for thread in ran_on))  # and it ends unused
    assert (kept.busy, kept.idle) == (0, 0)
    assert kept.submit(lambda: "again").result(timeout=5) == "again"


def test_retire_idle_ends_the_idle_threads_now_and_leaves_a_running_task_alone():
    pool = Threads(name="evcli-test-retire", idle_s=60.0)
    for future in [pool.submit(time.sleep, 0) for _ in range(3)]:
        future.result(timeout=5)
    release = threading.Event()
    running = pool.submit(release.wait, 5)
    time.sleep(0.05)
    assert pool.idle >= 1 and pool.busy == 1

    pool.retire_idle()

    alive = [t for t in threading.enumerate() if t.name.startswith("evcli-test-retire")]
    assert pool.idle == 0 and len(alive) == 1  # only the one running its task, although idle_s is a minute
    release.set()
    assert running.result(timeout=5) is True
    assert pool.submit(lambda: 7).result(timeout=5) == 7  # the pool serves on


def _exit_with_a_task_running(tmp_path, task_s: float) -> tuple[float, bool]:
    """(seconds, whether the task finished) of a process that exits while its task of `task_s` runs."""
    done = tmp_path / f"done-{task_s}"
    script = (
        "import sys, time\n"
        "from evcli.core import pools\n"
        "pools.EXIT_WAIT_S = 1.0\n"
        f"pools.threads().submit(lambda: (time.sleep({task_s}), open({str(done)!r}, 'w').close()))\n"
        "time.sleep(0.05)\n"
        "sys.exit(3)\n"
    )
    started = time.monotonic()
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 3, ran.stderr
    return time.monotonic() - started, done.exists()


def test_the_exit_waits_for_a_running_task_and_leaves_one_that_never_ends(tmp_path):
    """A daemon thread still inside Arrow or polars when the interpreter finalizes can abort the process (exit
    134 after the error was shown): the exit waits for the running tasks, at most EXIT_WAIT_S."""
    _, finished = _exit_with_a_task_running(tmp_path, 0.4)
    assert finished  # killed at the exit before: the task never finished
    took, finished = _exit_with_a_task_running(tmp_path, 60)
    assert not finished and took < 10


def test_the_process_pool_is_built_once_and_again_in_a_forked_child():
    """A child forked after the parent used its threads has none of them: a task handed to the parent's
    idle thread would never run. The child builds its own pool and its tasks run."""
    parent = pools.threads()
    assert pools.threads() is parent
    assert parent.submit(lambda: 1).result(timeout=5) == 1 and parent.idle >= 1

    def in_child() -> bytes:
        child = pools.threads()
        answer = child.submit(lambda: 42).result(timeout=5)
        return b"its own pool ran it" if child is not parent and answer == 42 else b"wrong"

    assert answer_in_child(in_child, 10) == b"its own pool ran it"


def test_per_process_builds_on_first_use_only():
    built: list[object] = []
    made = PerProcess(lambda: built.append(object()) or built[-1])
    assert built == []
    first = made()
    assert made() is first and len(built) == 1


def test_limited_runs_at_most_its_limit_at_once_the_first_given_first():
    limited = Limited(2)
    lock, running, most, order = threading.Lock(), [0], [0], []
    release = threading.Event()

    def task(number: int) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            order.append(number)
        release.wait(5)
        with lock:
            running[0] -= 1

    started = [limited.submit(task, number) for number in range(6)]
    assert until(lambda: running[0] == 2)
    time.sleep(0.05)
    assert running[0] == 2 and sorted(order) == [0, 1]
    release.set()
    for future in started:
        future.result(timeout=5)
    assert most[0] == 2 and sorted(order) == list(range(6))


def test_limited_to_one_runs_its_tasks_one_by_one_in_the_order_given():
    limited, order = Limited(1), []
    done = [limited.submit(order.append, number) for number in range(20)]
    for future in done:
        future.result(timeout=5)
    assert order == list(range(20))


def test_cancel_waiting_cancels_the_tasks_not_started_which_never_run():
    limited = Limited(1)
    release, ran = threading.Event(), []
    first = limited.submit(release.wait, 5)
    waiting = [limited.submit(ran.append, number) for number in range(3)]
    assert until(lambda: first.running())
    limited.cancel_waiting()
    release.set()
    assert first.result(timeout=5) is True
    for future in waiting:
        with pytest.raises(CancelledError):
            future.result(timeout=5)
    assert limited.submit(ran.append, "after").result(timeout=5) is None
    assert ran == ["after"]


def test_when_no_thread_can_start_the_task_fails_with_that_error(monkeypatch):
    kept = Threads("test-limit")

    def refuse(self) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        kept.submit(lambda: 1).result(timeout=5)
    assert (kept.busy, kept.idle) == (0, 0)
