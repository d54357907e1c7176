"""`evcli tool NAME --session SESSION`: a call recorded into a session runs on that session's environment.

Without an environment option the call runs on the session's own (its snapshot or its live backends);
naming the same environment is accepted; naming another one is refused with one line and exit 2, and
nothing is recorded: evidence of two systems would be cited side by side.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.cli._util import assert_clean_error, evcli


def invocations(db: Path, session_id: str) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        found = conn.execute(
            "SELECT * FROM tool_invocation WHERE session_id = ? ORDER BY invocation_id", [session_id]
        ).fetchall()
        return [dict(row) for row in found]
    finally:
        conn.close()


def asked(*options: str) -> str:
    run = evcli("ask", "Is SSHBruteForce firing?", *options, "--json")
    assert run.exit_code == 0, run
    return run.json()["session_id"]


def test_a_call_into_a_live_session_runs_on_the_sessions_backends(sshd_alertmanager, db_path):
    session = asked("--alertmanager", sshd_alertmanager)
    before = len(invocations(db_path, session))

    run = evcli("tool", "query_metrics", "--alertname", "SSHBruteForce", "--session", "last", "--json")

    assert run.exit_code == 0, run
    assert run.stderr.strip() == f"recorded as invocation #{before + 1} of session {session}"
    alerts = run.json()["output"]["alerts"]
    assert [(a["alertname"], a["service"]) for a in alerts] == [("SSHBruteForce", "sshd")]
    recorded = invocations(db_path, session)
    assert len(recorded) == before + 1
    assert "SSHBruteForce" in json.loads(recorded[-1]["output"])["alerts"][0]["alertname"]


def test_a_call_naming_the_demo_is_refused_for_a_live_session(sshd_alertmanager, db_path):
    session = asked("--alertmanager", sshd_alertmanager)
    before = invocations(db_path, session)

    run = evcli("tool", "query_metrics", "--service", "payment-service", "--env", "demo", "--session", session)

    assert_clean_error(run, 2, f"session {session} ran on alertmanager {sshd_alertmanager}", "the demo environment")
    assert invocations(db_path, session) == before


@pytest.mark.parametrize(
    ("session_options", "call_options", "named"),
    [
        ((), ("--env", "edge"), "evcli/envs/edge"),
        (("--env", "edge"), ("--env", "host"), "evcli/envs/host"),
        ((), ("--alertmanager", "http://127.0.0.1:9"), "alertmanager http://127.0.0.1:9"),
    ],
)
def test_a_call_naming_another_environment_is_refused_and_not_recorded(db_path, session_options, call_options, named):
    session = asked(*session_options)
    before = invocations(db_path, session)

    run = evcli("tool", "query_metrics", "--service", "payment-service", *call_options, "--session", session)

    line = assert_clean_error(run, 2, f"session {session} ran on", named)
    assert "drop --env and the backend options" in line
    assert invocations(db_path, session) == before


@pytest.mark.parametrize("call_options", [(), ("--env", "demo")])
def test_a_call_naming_the_sessions_own_environment_is_recorded(db_path, call_options):
    session = asked()  # the demo, named by nothing
    before = len(invocations(db_path, session))

    run = evcli("tool", "query_metrics", "--service", "payment-service", *call_options, "--session", session)

    assert run.exit_code == 0, run
    assert len(invocations(db_path, session)) == before + 1


def test_a_call_naming_other_runbooks_is_refused(db_path, tmp_path):
    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "disk.md").write_text("# Disk full\n\nDelete old logs.\n", encoding="utf-8")
    session = asked()  # the demo, with its own runbooks
    before = invocations(db_path, session)

    run = evcli("tool", "lookup_knowledge", "--query", "disk full", "--runbooks", runbooks, "--session", session)

    assert_clean_error(run, 2, f"session {session} looks runbooks up in", str(runbooks.resolve()))
    assert invocations(db_path, session) == before
