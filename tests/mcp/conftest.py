"""`evcli mcp` as a client meets it: a `python -m evcli mcp` subprocess over stdio, or one serving
streamable HTTP on a free 127.0.0.1 port, driven by the MCP SDK's own `Client`.

Each test runs its client scenario under `run_scenario` (a deadline), against the test's own store
(`db_path`, under the EVCLI_HOME every test gets).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.backends.conftest import free_port
from tests.conftest import REPO

SCENARIO_TIMEOUT_S = 90  # a whole scenario, diagnose included (offline: a few seconds)
READY_TIMEOUT_S = 30

Connect = Callable[[], AbstractAsyncContextManager[Any]]


def run_scenario(scenario: Callable[[], Awaitable[None]]) -> None:
    """Run an async client scenario; it fails instead of hanging past SCENARIO_TIMEOUT_S."""

    async def bounded() -> None:
        with anyio.fail_after(SCENARIO_TIMEOUT_S):
            await scenario()

    anyio.run(bounded)


def _argv(db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "evcli", "mcp", "--db", str(db), *extra]


@pytest.fixture
def stdio_client(db_path, tmp_path) -> Connect:
    """A Client that starts `python -m evcli mcp` and talks to it over its stdin and stdout."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client as stdio_transport

    log = tmp_path / "mcp-stdio.log"

    @asynccontextmanager
    async def connect():
        argv = _argv(db_path)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ), cwd=str(REPO))
        with log.open("a") as errlog:
            async with Client(stdio_transport(params, errlog=errlog)) as client:
                yield client

    return connect


class HttpServer:
    """`evcli mcp --http` in its own process group; stopped with SIGTERM at teardown."""

    def __init__(self, db: Path, log: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = log
        with log.open("wb") as output:
            self.process = subprocess.Popen(
                _argv(db, "--http", "--port", str(self.port), *extra),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=os.environ | (env or {}),
                cwd=REPO,
                start_new_session=True,
            )
        self._wait_listening()

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"evcli mcp --http exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        pytest.fail(f"evcli mcp --http did not listen within {READY_TIMEOUT_S}s:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture
def start_http(db_path, tmp_path) -> Iterator[Callable[..., HttpServer]]:
    """Start `evcli mcp --http` on a free loopback port with extra arguments; all are stopped at teardown."""
    started: list[HttpServer] = []

    def start(*extra: str, env: dict[str, str] | None = None) -> HttpServer:
        server = HttpServer(db_path, tmp_path / f"mcp-http-{len(started)}.log", *extra, env=env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def http_client(url: str, token: str | None = None) -> Any:
    """A Client of the streamable HTTP endpoint `url`, sending `token` as a bearer token when given."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    if token is None:
        return Client(url)
    headers = {"Authorization": f"Bearer {token}"}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers)))


@pytest.fixture(params=["stdio", "http"])
def connect(request, stdio_client, start_http) -> Connect:
    """A client of `evcli mcp` on the demo environment, over each transport in turn."""
    if request.param == "stdio":
        return stdio_client
    server = start_http()
    return lambda: http_client(server.url)
