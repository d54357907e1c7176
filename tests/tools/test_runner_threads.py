"""run_tool's fetches on the process's kept threads (evcli.core.pools): calls one after another reuse a thread
instead of starting one each; a fetch stuck past its deadline fails the call as before and later calls still
run; a forked child runs its calls on threads of its own."""

from __future__ import annotations

import threading
import time

from evcli.backends.snapshot import SnapshotBackend, demo_env_dir
from evcli.tools.context import build_environment
from evcli.tools.runner import ToolEnvironment, ToolSettings, run_tool
from tests.forked import answer_in_child

SERVICES = ("order-service", "user-service", "payment-service", "inventory-service")


class Recording(SnapshotBackend):
    """The demo snapshot, noting the thread each log search runs on; `hang` makes searches wait for `release`
    without ever checking their deadline."""

    def __init__(self, hang: bool = False) -> None:
        super().__init__(demo_env_dir())
        self.hang, self.release = hang, threading.Event()
        self.ran_on: list[threading.Thread] = []

    def query_logs(self, query):
        self.ran_on.append(threading.current_thread())
        if self.hang:
            self.release.wait(30)
        return super().query_logs(query)


def on(backend: SnapshotBackend, timeout_s: float = 15.0) -> ToolEnvironment:
    env = build_environment(settings=ToolSettings(timeout_s=timeout_s))
    env.backend = backend
    return env


def test_calls_one_after_another_reuse_a_kept_thread():
    backend = Recording()
    env = on(backend)
    for number in range(12):
        invocation = run_tool("query_logs", {"service": SERVICES[number % 4], "query": f"error {number}"}, env)
        assert invocation.success, invocation.error_message
    assert len(backend.ran_on) == 12
    # a thread per call before; now one kept thread (two if another test's thread went idle meanwhile)
    assert len(set(backend.ran_on)) <= 2
    assert all(thread.daemon and thread is not threading.current_thread() for thread in backend.ran_on)


def test_a_fetch_stuck_past_its_deadline_fails_its_call_and_later_calls_still_run():
    stuck = Recording(hang=True)
    try:
        started = time.monotonic()
        failed = run_tool("query_logs", {"service": "order-service"}, on(stuck, timeout_s=0.3))
        took = time.monotonic() - started
        assert (failed.success, failed.error_message) == (False, "timed out after 0.3s")
        assert failed.retrieval_details.evidence_status == "failed"
        assert 0.3 <= took < 0.3 + 1.0 + 1.0  # the deadline, then at most the grace for the fetch to stop

        later = Recording()
        started = time.monotonic()
        for service in SERVICES:
            assert run_tool("query_logs", {"service": service}, on(later)).success
        assert time.monotonic() - started < 5
        assert not stuck.release.is_set() and stuck.ran_on[0].is_alive()  # still stuck meanwhile
        assert stuck.ran_on[0] not in later.ran_on
    finally:
        stuck.release.set()


def test_a_forked_child_runs_its_calls_on_threads_of_its_own():
    """The child searches the runbooks (SQLite; no polars, whose own thread pool does not survive a fork) with
    an environment of its own (a SQLite connection is not carried across a fork)."""
    assert run_tool("query_logs", {"service": "order-service"}, on(Recording())).success  # a thread is kept

    def in_child() -> bytes:
        answer = run_tool("lookup_knowledge", {"query": "heap dump OOMKilled"}, build_environment())
        return b"ran" if answer.success else answer.error_message.encode()[:60]

    assert answer_in_child(in_child) == b"ran"
