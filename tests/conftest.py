"""Shared fixtures: every test gets its own EVCLI_HOME, so no test touches a real store."""

from __future__ import annotations

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
