"""CLI tests read whole lines of Rich output: let the console width follow $COLUMNS.

The consoles are created at import time; if $COLUMNS happened to be set then,
Rich would have frozen that width. The runner sets COLUMNS=4000 per call.

`sshd_alertmanager`: a real Alertmanager of the CLI tests' own, holding one alert, for commands run on
live backends.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.backends.conftest import ALERTMANAGER_CONFIG, fetch_json, start_alertmanager, start_process  # noqa: F401


@pytest.fixture(autouse=True)
def _console_width_from_env(monkeypatch):
    from evcli.core.console import err, out

    for console in (out, err):
        monkeypatch.setattr(console, "_width", None, raising=False)


@pytest.fixture(scope="session")
def sshd_alertmanager(start_process, tmp_path_factory) -> str:  # noqa: F811
    """The URL of a real Alertmanager on 127.0.0.1 holding one active SSHBruteForce alert of service sshd."""
    home = tmp_path_factory.mktemp("sshd-alertmanager")
    url = start_alertmanager(start_process, home, ALERTMANAGER_CONFIG, "sshd-alertmanager-log").url
    now = datetime.now(UTC)
    alert = {
        "labels": {"alertname": "SSHBruteForce", "service": "sshd", "severity": "warning"},
        "annotations": {"summary": "many failed sshd logins"},
        "startsAt": (now - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "endsAt": (now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
    }
    fetch_json(url + "/api/v2/alerts", [alert])
    return url
