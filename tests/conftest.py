"""Shared fixtures: every test gets its own EVCLI_HOME, so no test touches a real store."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_sessions"


@pytest.fixture(autouse=True)
def evcli_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "evcli-home"
    monkeypatch.setenv("EVCLI_HOME", str(home))
    return home


@pytest.fixture
def db_path(evcli_home) -> Path:
    return evcli_home / "evcli.db"


@pytest.fixture
def rules():
    from evcli.gatekeeper.rules import load_rules

    return load_rules(REPO / "rules.toml")


def sample(name: str) -> Path:
    return SAMPLES / f"{name}.json"


@pytest.fixture
def fifo(tmp_path) -> Iterator[Path]:
    """A FIFO named like a JSON document. A command that opened it blocking would hang: a writer
    opens it after 10 s, so such a test fails (the reader sees an empty file) instead of hanging."""
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    done = threading.Event()

    def release_a_blocked_reader() -> None:
        if not done.wait(10):
            with open(path, "wb"):
                pass

    writer = threading.Thread(target=release_a_blocked_reader, daemon=True)
    writer.start()
    yield path
    done.set()
    writer.join()
