"""A real `evcli serve` subprocess on 127.0.0.1 (host snapshot environment, offline model), and helpers.

Each server runs in its own process group, so a test can kill -9 the server and its workers at once.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.backends.conftest import free_port, start_process  # noqa: F401  (the fixture, for test_alertmanager)

REPO = Path(__file__).resolve().parents[2]
HOST_ENV = REPO / "evcli" / "envs" / "host"
HOST_ALERTS = Path(__file__).with_name("host-alerts.json")
TIMEOUT = 30


@dataclass
class Server:
    url: str
    db: Path
    log: Path
    process: subprocess.Popen

    def request(self, path: str, body: Any = None, *, token: str | None = None, raw: bytes | None = None):
        """(status, body bytes) of a GET, or a POST of `body` as JSON (or `raw` bytes)."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
        request = urllib.request.Request(self.url + path, data=data, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def rows(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        with sqlite3.connect(self.db, timeout=30) as conn:
            conn.row_factory = sqlite3.Row
            return conn.execute(sql, params).fetchall()

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"evcli serve exited with {self.process.returncode}:\n{self.log.read_text()}")
            if condition():
                return
            time.sleep(0.1)
        pytest.fail(f"timed out waiting for {what}:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """kill -9 of the server and its worker processes (its process group)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


@pytest.fixture
def start_serve(tmp_path) -> Iterator[Callable[..., Server]]:
    """Start `evcli serve` with extra arguments (and environment); every one is stopped at teardown."""
    started: list[Server] = []

    def start(*args: str, db: Path | None = None, env: dict[str, str] | None = None) -> Server:
        db = db or tmp_path / "serve.db"
        port = free_port()
        log = tmp_path / f"serve-{len(started)}.log"
        argv = [sys.executable, "-m", "evcli", "serve", "--listen", f"127.0.0.1:{port}", "--env", str(HOST_ENV)]
        with log.open("wb") as output:
            process = subprocess.Popen(
                [*argv, "--db", str(db), *args],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=os.environ | (env or {}),
                start_new_session=True,
            )
        server = Server(f"http://127.0.0.1:{port}", db, log, process)
        started.append(server)
        server.wait_for(lambda: _healthy(server), "evcli serve to answer /healthz")
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            os.killpg(server.process.pid, signal.SIGTERM)
            try:
                server.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()


def _healthy(server: Server) -> bool:
    try:
        return server.request("/healthz")[0] == 200
    except OSError:
        return False


def delivery(*alerts: dict[str, Any], group_key: str = '{}:{alertname="test"}') -> dict[str, Any]:
    """A webhook v4 delivery of these alerts (each: alertname, status, and optional fingerprint/service)."""
    return {
        "version": "4",
        "groupKey": group_key,
        "status": "firing",
        "receiver": "evcli",
        "alerts": [
            {
                "status": alert.get("status", "firing"),
                "labels": {"alertname": alert["alertname"], "service": alert.get("service", "auth")},
                "annotations": {"summary": alert.get("summary", "Many failed SSH logins")},
                "startsAt": "2026-03-18T08:14:00Z",
                "fingerprint": alert.get("fingerprint", alert["alertname"]),
            }
            for alert in alerts
        ],
    }
