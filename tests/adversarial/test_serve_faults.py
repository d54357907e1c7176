"""Faults a careful operator inflicts on a real `evcli serve` (issue 28): each probe runs the real server on
127.0.0.1 over real HTTP with a real SQLite file, in bounded time.

kill -9 and SIGSTOP of a worker, a real full disk (a small tmpfs in a private mount namespace), a store
write lock held by another process, a 40 MB session report, a notification peer that sends one byte at a
time, a notify URL with a token in it, and a bind to every interface without a token.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evcli.store.db import TraceStore
from evcli.store.documents import read_document
from tests.conftest import REPO, sample
from tests.serve import conftest as serve_fixtures
from tests.serve.conftest import HOST_ENV, Server, delivery, free_port

start_serve = serve_fixtures.start_serve  # the fixture: a real `evcli serve` process, stopped at teardown

BOUND_S = 15  # how long a probe waits for the server to recover before it fails
HEALTHZ_BUDGET_S = 0.1


def _state(server: Server, alertname: str) -> dict[str, Any] | None:
    rows = server.rows("SELECT * FROM alert_queue WHERE alertname = ? ORDER BY id DESC", (alertname,))
    return dict(rows[0]) if rows else None


def _is(server: Server, alertname: str, *states: str) -> bool:
    row = _state(server, alertname)
    return row is not None and row["state"] in states


def _healthz(server: Server) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    status, body = server.request("/healthz")
    return status, json.loads(body), time.monotonic() - started


def _alive_pids(server: Server) -> list[int]:
    return [worker["pid"] for worker in _healthz(server)[1].get("workers", []) if worker["alive"]]


def _seconds_until(condition: Callable[[], bool], within: float) -> float | None:
    """How long until `condition` held, or None if it did not within `within` seconds."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > within:
            return None
        time.sleep(0.02)
    return time.monotonic() - started


def _current_alert(server: Server, pid: int, within: float) -> dict[str, Any] | None:
    """The alert /healthz says worker `pid` has in hand, once it says one (within `within` seconds)."""
    ends = time.monotonic() + within
    while True:
        workers = _healthz(server)[1].get("workers", [])
        alert = next((worker["alert"] for worker in workers if worker["pid"] == pid), None)
        if alert is not None or time.monotonic() > ends:
            return alert
        time.sleep(0.1)


def _owner_pid(row: dict[str, Any]) -> int:
    return int(row["owner"].split(":")[1])


@contextlib.contextmanager
def _write_lock(db: Path) -> Iterator[sqlite3.Connection]:
    """Another process's write transaction on the store: every writer waits until it ends."""
    conn = sqlite3.connect(db, timeout=30, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
        conn.execute("COMMIT")
    finally:
        conn.close()


@contextlib.contextmanager
def _caught_running(server: Server, prefix: str) -> Iterator[dict[str, Any]]:
    """Post alerts until one is caught `running` with the store write-locked: its worker is stopped mid-diagnosis
    (its next write waits on the lock) until the block ends."""
    for attempt in range(5):
        name = f"{prefix}{attempt}"
        assert server.request("/alerts", delivery({"alertname": name}))[0] == 202
        server.wait_for(lambda name=name: _is(server, name, "running", "done", "failed"), f"{name} claimed")
        with _write_lock(server.db):
            row = _state(server, name)
            assert row is not None
            if row["state"] == "running":
                yield row
                return
    pytest.fail("no diagnosis was caught running in five attempts")


# --- 1. a dead worker is replaced, its alert diagnosed exactly once ------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_a_killed_worker_is_replaced_and_its_alert_diagnosed_exactly_once(start_serve, workers):
    server = start_serve("--workers", str(workers))
    with _caught_running(server, "Killed") as row:
        killed = _owner_pid(row)
        in_hand = _current_alert(server, killed, within=3)  # asserted last: today's healthz shows no worker
        os.kill(killed, signal.SIGKILL)
        killed_at = time.monotonic()
        replaced = lambda: killed not in (pids := _alive_pids(server)) and len(pids) == workers  # noqa: E731
        replaced_s = _seconds_until(replaced, 5)  # the store is still locked: replacing needs no store
    name = row["alertname"]
    assert server.request("/alerts", delivery({"alertname": "AfterKill"}))[0] == 202
    server.wait_for(lambda: _is(server, name, "done") and _is(server, "AfterKill", "done"), "both diagnosed", BOUND_S)
    recovered_s = time.monotonic() - killed_at

    again = _state(server, name)
    assert again is not None and again["attempts"] == 2 and again["error"] is None
    runs = server.rows("SELECT session_id, status FROM diagnosis_run WHERE question LIKE ?", (f"%{name}%",))
    assert [r["session_id"] for r in runs if r["status"] == "completed"] == [again["session_id"]]
    assert server.log.read_text().count("queued again") == 1

    status, health, _ = _healthz(server)
    assert status == 200 and health["status"] == "ok", health
    pids = [worker["pid"] for worker in health["workers"]]
    assert len(pids) == workers and killed not in pids and all(worker["alive"] for worker in health["workers"])
    assert "evcli_serve_worker_restarts_total 1" in server.request("/metrics")[1].decode()
    assert in_hand == {"id": row["id"], "attempt": 1} and replaced_s is not None
    print(
        f"\n[{workers} worker(s)] kill -9 to a new worker: {replaced_s:.2f} s; to both alerts done: {recovered_s:.2f} s"
    )


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_stopping_the_whole_process_group_restarts_nothing_and_leaves_nothing_behind(start_serve, stop):
    """systemd and Ctrl-C signal every process of the group at once: supervision must not fight the stop."""
    server = start_serve("--workers", "2")
    assert server.request("/alerts", delivery(*({"alertname": f"Stop{n}"} for n in range(4))))[0] == 202
    server.wait_for(lambda: _is(server, "Stop0", "running", "done"), "a diagnosis under way")
    os.killpg(server.process.pid, stop)
    server.process.wait(timeout=BOUND_S)
    assert _seconds_until(lambda: not _group(server.process.pid), 5) is not None, _group(server.process.pid)
    log = server.log.read_text()
    assert "a new one starts" not in log and "Traceback" not in log, log
    assert {row["state"] for row in server.rows("SELECT state FROM alert_queue")} <= {"queued", "done"}


def _group(pgid: int) -> list[str]:
    """The processes left in process group `pgid`, as `ps` shows them."""
    listing = subprocess.run(["ps", "-eo", "pgid=,pid=,args="], capture_output=True, text=True).stdout
    return [line for line in listing.splitlines() if line.split()[0] == str(pgid)]


def test_healthz_reports_each_worker_and_turns_unhealthy_when_the_queue_waits_too_long(start_serve):
    server = start_serve("--workers", "1", "--max-queue-age", "2s")
    status, health, _ = _healthz(server)
    assert status == 200 and health["status"] == "ok" and "workers" in health, health
    [worker] = health["workers"]
    assert worker["alive"] is True and worker["alert"] is None
    assert health["queue"]["oldest_queued_s"] is None and health["queue"]["max_age_s"] == 2

    os.kill(worker["pid"], signal.SIGSTOP)  # alive but doing nothing: only the queue's age tells
    try:
        assert server.request("/alerts", delivery({"alertname": "Stuck"}))[0] == 202
        deadline = time.monotonic() + 6
        slowest = 0.0
        while time.monotonic() < deadline:
            status, health, took = _healthz(server)
            slowest = max(slowest, took)
            if status == 503:
                break
            time.sleep(0.1)
        assert status == 503 and health["status"] == "unhealthy", health
        assert health["queue"]["oldest_queued_s"] >= 2 and any("waited" in problem for problem in health["problems"])
        assert slowest < HEALTHZ_BUDGET_S
    finally:
        os.kill(worker["pid"], signal.SIGCONT)
    server.wait_for(lambda: _is(server, "Stuck", "done"), "the diagnosis after SIGCONT", BOUND_S)
    server.wait_for(lambda: _healthz(server)[0] == 200, "healthz ok again", 5)


# --- 2. a full disk ------------------------------------------------------------------------------------
# The store lives on a 16 MiB tmpfs mounted in a private user and mount namespace (`unshare -rm`: no root,
# no loop device), so ENOSPC is real. SQLite resolves /proc/PID/root to `/`, so the test cannot open that
# store from outside: the scenario runs inside the namespace, server and client, and the test checks its exit.

_IN_SMALL_DISK = 'mount -t tmpfs -o size=16m evcli-small-disk "$0" && exec "$@"'


def _namespaces_available() -> bool:
    try:
        probe = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _IN_SMALL_DISK, "/mnt", "true"]
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.parametrize("scenario", ["request", "worker"])
def test_disk_full_is_a_503_naming_it_and_the_worker_survives_it(tmp_path, scenario):
    if not _namespaces_available():
        pytest.skip("unprivileged user and mount namespaces are not available (unshare -rm)")
    disk = tmp_path / "disk"
    disk.mkdir()
    code = f"from tests.adversarial.test_serve_faults import disk_full; disk_full({str(disk)!r}, {scenario!r})"
    argv = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _IN_SMALL_DISK, str(disk)]
    try:
        run = subprocess.run([*argv, sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=25)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the disk-full scenario did not end within 25 s:\n{exc.stdout}\n{exc.stderr}")
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr[-6000:]}"
    print(run.stdout)


def disk_full(directory: str, scenario: str) -> None:
    """Inside the namespace: a full disk while the server accepts a delivery, or while a worker diagnoses."""
    disk = Path(directory)
    port = free_port()
    log = disk.parent / "serve.log"
    argv = [sys.executable, "-m", "evcli", "serve", "--listen", f"127.0.0.1:{port}", "--env", str(HOST_ENV)]
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*argv, "--db", str(disk / "serve.db"), "--workers", "1"],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Server(f"http://127.0.0.1:{port}", disk / "serve.db", log, process)
    try:
        server.wait_for(lambda: _answers(server), "evcli serve on the small disk")
        (_full_while_accepting if scenario == "request" else _full_while_diagnosing)(server, disk)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)


def _full_while_accepting(server: Server, disk: Path) -> None:
    filler = _fill(disk)
    status, body = server.request("/alerts", delivery({"alertname": "WhileFull"}))
    assert status == 503 and "disk full" in json.loads(body)["error"], body
    assert _healthz(server)[0] == 200  # the health check needs no write
    assert "Traceback" not in server.log.read_text(), server.log.read_text()
    print(f"POST /alerts on a full disk: {status} {json.loads(body)['error']}")
    filler.unlink()
    assert server.request("/alerts", delivery({"alertname": "AfterSpace"}))[0] == 202
    server.wait_for(lambda: _is(server, "AfterSpace", "done"), "a diagnosis once space is back", BOUND_S)


def _full_while_diagnosing(server: Server, disk: Path) -> None:
    before = _alive_pids(server)
    with _caught_running(server, "Diagnosing") as row:
        filler = _fill(disk)  # the worker's next write finds the disk full
        logged = len(server.log.read_text())
    met = lambda: any(words in server.log.read_text()[logged:] for words in ("disk full", "disk is full"))  # noqa: E731
    server.wait_for(met, "the worker to meet the full disk", 10)
    time.sleep(1)
    filler.unlink()

    server.wait_for(lambda: _is(server, row["alertname"], "done", "failed"), "the outcome recorded", BOUND_S)
    outcome = _state(server, row["alertname"])
    assert outcome is not None
    assert outcome["state"] == "done" or "disk full" in outcome["error"], outcome
    print(f"the alert diagnosed on a full disk: {outcome['state']} ({outcome['error']})")
    print("\n".join(line for line in server.log.read_text().splitlines() if "(#" in line or "worker" in line))
    assert server.request("/alerts", delivery({"alertname": "AfterSpace"}))[0] == 202
    server.wait_for(lambda: _is(server, "AfterSpace", "done"), "a diagnosis once space is back", BOUND_S)
    assert len(before) == 1 and _alive_pids(server) == before, "the worker died of the full disk"
    assert "evcli_serve_worker_restarts_total 0" in server.request("/metrics")[1].decode()
    assert "Traceback" not in server.log.read_text(), server.log.read_text()
    runs = server.rows("SELECT status FROM diagnosis_run WHERE session_id = ?", (outcome["session_id"],))
    assert all(run["status"] not in ("created", "running") for run in runs), [dict(run) for run in runs]


def _answers(server: Server) -> bool:
    try:
        return server.request("/healthz")[0] in (200, 503)
    except OSError:
        return False


def _fill(directory: Path) -> Path:
    """Write a file until the filesystem has no byte left."""
    filler = directory / "filler"
    with filler.open("wb", buffering=0) as handle:
        for size in (65536, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * size)
    return filler


# --- 3. and 5. notification: a total deadline, and no token in the log ---------------------------------


class _Peer:
    """A webhook receiver on 127.0.0.1: `dribble` sends one byte of an answer every `every` seconds,
    otherwise it answers 500 at once."""

    def __init__(self, *, dribble: bool, every: float = 0.5) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.dribble, self.every = dribble, every
        self.closed = threading.Event()
        self.requests = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        self.requests += 1
        with connection:
            connection.recv(65536)
            answer = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000
            if not self.dribble:
                connection.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
                return
            for byte in answer:
                if self.closed.wait(self.every):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    def close(self) -> None:
        self.closed.set()
        self.listener.close()


@pytest.fixture
def peer() -> Iterator[Callable[..., _Peer]]:
    started: list[_Peer] = []

    def start(**options: Any) -> _Peer:
        started.append(_Peer(**options))
        return started[-1]

    yield start
    for each in started:
        each.close()


def test_a_peer_that_sends_a_byte_at_a_time_holds_a_worker_no_longer_than_the_notify_deadline(start_serve, peer):
    slow = peer(dribble=True, every=0.5)
    url = f"http://127.0.0.1:{slow.port}/hook"
    server = start_serve("--workers", "1", "--notify-url", url, "--notify-timeout", "2s")
    assert server.request("/alerts", delivery({"alertname": "First"}, {"alertname": "Second"}))[0] == 202
    server.wait_for(lambda: _is(server, "First", "done"), "the first diagnosis")
    first_done = time.monotonic()
    server.wait_for(lambda: _is(server, "Second", "done"), "the second diagnosis", BOUND_S)
    held_s = time.monotonic() - first_done
    assert held_s < 5, f"the worker was held {held_s:.1f} s by a 2 s notify deadline"
    log = server.log.read_text()
    assert "no complete answer within 2 s" in log, log[-2000:]
    print(f"\nworker held by the dribbling peer: {held_s:.2f} s (deadline 2 s)")


def test_a_failed_notification_is_logged_without_the_token_of_its_url(start_serve, peer):
    failing = peer(dribble=False)
    url = f"http://hook-user:hook-pass@127.0.0.1:{failing.port}/services/T0K3N-in-path/B99?token=Q-S3CRET&channel=ops"
    server = start_serve("--notify-url", url)
    assert server.request("/alerts", delivery({"alertname": "Notified"}))[0] == 202
    server.wait_for(lambda: "notification of session" in server.log.read_text(), "the failed notification")
    log = server.log.read_text()
    line = next(line for line in log.splitlines() if "notification of session" in line)
    for secret in ("T0K3N-in-path", "B99", "Q-S3CRET", "hook-pass", "hook-user"):
        assert secret not in log, line
    assert f"http://127.0.0.1:{failing.port}/services/***" in line and "500" in line, line


# --- 4. blocking work stays off the event loop ---------------------------------------------------------


def _latencies(server: Server, seconds: float) -> list[float]:
    ends, taken = time.monotonic() + seconds, []
    while time.monotonic() < ends:
        status, _, took = _healthz(server)
        assert status == 200
        taken.append(took)
        time.sleep(0.05)
    return taken


def test_healthz_answers_fast_while_another_process_holds_the_store_lock(start_serve):
    server = start_serve()
    answers: list[int] = []
    with _write_lock(server.db):
        posting = threading.Thread(
            target=lambda: answers.append(server.request("/alerts", delivery({"alertname": "Locked"}))[0])
        )
        posting.start()  # waits for the lock, on the server's side
        time.sleep(0.3)
        taken = _latencies(server, 3)
        listing = time.monotonic()
        assert server.request("/")[0] == 200  # a read needs no write lock
        listing_s = time.monotonic() - listing
    posting.join(BOUND_S)
    assert answers == [202]
    assert max(taken) < HEALTHZ_BUDGET_S and listing_s < 1, (max(taken), listing_s)
    print(f"\nhealthz under a store write lock: max {max(taken) * 1000:.1f} ms over {len(taken)} requests")


def _big_session(db: Path) -> str:
    """A session of 1,000 tool invocations of 200 log lines each: its export document is about 40 MB."""
    document = read_document(sample("broad-order-service"))
    logs = next(invocation for invocation in document.invocations if invocation.tool_name == "query_logs")
    line = logs.output["logs"][0]
    output = {**logs.output, "logs": [dict(line, message=f"{line['message']} #{n}") for n in range(200)]}
    invocations = [logs.model_copy(update={"invocation_id": n + 1, "output": output}) for n in range(1000)]
    with TraceStore(db) as store:
        return store.import_document(document.model_copy(update={"invocations": invocations}))[0]


def test_healthz_answers_fast_while_a_40_mb_report_is_rendered(start_serve, tmp_path):
    db = tmp_path / "big.db"
    session_id = _big_session(db)
    server = start_serve(db=db)
    sizes: list[tuple[int, int]] = []

    def fetch_reports() -> None:
        for path in (f"/sessions/{session_id}.json", f"/sessions/{session_id}") * 2:
            with urllib.request.urlopen(server.url + path, timeout=30) as response:
                sizes.append((response.status, len(response.read())))

    fetching = threading.Thread(target=fetch_reports)
    fetching.start()
    taken = []
    while fetching.is_alive():
        taken.extend(_latencies(server, 0.2))
    fetching.join()
    assert [status for status, _ in sizes] == [200] * 4 and sizes[0][1] > 30_000_000, sizes
    assert max(taken) < HEALTHZ_BUDGET_S, f"healthz took {max(taken) * 1000:.0f} ms while a report rendered"
    print(f"\nhealthz while 40 MB reports render: max {max(taken) * 1000:.1f} ms over {len(taken)} requests")


# --- 6. a bind beyond loopback needs a token -----------------------------------------------------------


def _serve_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "evcli", "serve", "--env", str(HOST_ENV), *args]
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20, env=os.environ | (env or {}))
    except subprocess.TimeoutExpired:
        pytest.fail(f"evcli serve {' '.join(args)} kept running (it served instead of refusing)")


def test_a_bind_beyond_loopback_without_a_token_is_refused_with_a_usage_error(tmp_path):
    for listen in (f"0.0.0.0:{free_port()}", f"[::]:{free_port()}"):
        run = _serve_cli("--listen", listen, "--db", str(tmp_path / "s.db"))
        assert run.returncode == 2, run
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "--token-env" in lines[0], run.stderr
        assert "Traceback" not in run.stderr


def test_a_bind_beyond_loopback_with_a_token_serves(tmp_path):
    port = free_port()
    argv = [sys.executable, "-m", "evcli", "serve", "--env", str(HOST_ENV), "--db", str(tmp_path / "s.db")]
    log = tmp_path / "serve.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*argv, "--listen", f"0.0.0.0:{port}", "--token-env", "EVCLI_TEST_TOKEN"],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=os.environ | {"EVCLI_TEST_TOKEN": "s3cret-token"},
            start_new_session=True,
        )
    server = Server(f"http://127.0.0.1:{port}", tmp_path / "s.db", log, process)
    try:
        server.wait_for(lambda: _answers(server), "evcli serve on every interface")
        assert server.request("/alerts", delivery({"alertname": "A"}))[0] == 401
        assert "reachable from other hosts" in log.read_text() and "token required" in log.read_text()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
