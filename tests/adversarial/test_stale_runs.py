"""Runs never hang "running": killed runs read as interrupted, Ctrl-C exits 130 and says what was kept.

Real processes (`python -m evcli ask`), real signals, a real SQLite store.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from sqlite_utils import Database

from evcli.store.db import TraceStore
from evcli.store.migrations import migrations

QUESTION = "why is payment-service slow"
KILLS = 100
BATCH = 10
# Each process is killed a random 0-0.8 s after its own run appears in the store (the owner column names
# its pid), so the kills land in planning, tool calls, gating and composing rather than in start-up.
DELAY_S = (0.0, 0.8)
BUDGET_S = 50.0  # on a loaded machine fewer than KILLS fit; at least MIN_KILLS must
MIN_KILLS = 30


def _env(db_path: Path) -> dict[str, str]:
    return dict(os.environ, EVCLI_HOME=str(db_path.parent), NO_COLOR="1", COLUMNS="300")


def _ask(db_path: Path) -> subprocess.Popen:
    # SIGINT as a terminal delivers it: a test runner started in the background has it ignored, and a
    # child inherits that (Python then never raises KeyboardInterrupt, like `nohup`).
    return subprocess.Popen(
        [sys.executable, "-m", "evcli", "ask", QUESTION, "--db", str(db_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(db_path),
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _evcli(db_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evcli", *args, "--db", str(db_path)],
        capture_output=True,
        text=True,
        env=_env(db_path),
        timeout=60,
    )


def _raw_status(db_path: Path, session_id: str) -> str:
    with sqlite3.connect(db_path) as conn:
        return conn.execute("SELECT status FROM diagnosis_run WHERE session_id = ?", [session_id]).fetchone()[0]


def test_sigkilled_asks_never_show_as_running(tmp_path):
    db_path = tmp_path / "evcli.db"
    TraceStore(db_path).close()
    rng = random.Random(11)
    started = time.monotonic()
    kills = 0
    while kills < KILLS and time.monotonic() - started < BUDGET_S:
        kills += _kill_batch(db_path, rng)
    elapsed = time.monotonic() - started

    listed = json.loads(_evcli(db_path, "sessions", "--json", "-n", "1000").stdout)
    statuses = [row["status"] for row in listed]
    raw_active = [r for r in listed if _raw_status(db_path, r["session_id"]) in ("created", "running")]
    print(
        f"{kills} kills in {elapsed:.1f}s: {len(listed)} runs stored, "
        f"{len(raw_active)} left active in the table, shown as {sorted(set(statuses))}"
    )
    assert kills >= MIN_KILLS and raw_active, "too few kills landed inside a run: the probe proves nothing"
    assert not [s for s in statuses if s in ("created", "running")]
    # trace and export show the same status as the listing
    victim = raw_active[0]["session_id"]
    assert "status interrupted" in _evcli(db_path, "trace", victim).stdout
    assert json.loads(_evcli(db_path, "export", victim).stdout)["run"]["status"] == "interrupted"


def _owner_pids(db_path: Path) -> set[int]:
    with sqlite3.connect(db_path) as conn:
        owners = conn.execute("SELECT owner FROM diagnosis_run WHERE owner IS NOT NULL").fetchall()
    return {int(owner.split(":")[1]) for (owner,) in owners}


def _kill_batch(db_path: Path, rng: random.Random) -> int:
    """Start BATCH asks; SIGKILL each at a random delay after its run appeared; return how many were killed."""
    processes = [_ask(db_path) for _ in range(BATCH)]
    due: dict[int, float] = {}
    killed = 0
    deadline = time.monotonic() + 40
    while any(p.poll() is None for p in processes) and time.monotonic() < deadline:
        owners = _owner_pids(db_path)
        now = time.monotonic()
        for process in processes:
            if process.pid in owners and process.pid not in due:
                due[process.pid] = now + rng.uniform(*DELAY_S)
            if process.poll() is None and due.get(process.pid, float("inf")) <= now:
                process.kill()
                killed += 1
        time.sleep(0.01)
    for process in processes:
        if process.poll() is None:
            process.kill()
            killed += 1
        process.communicate(timeout=30)
    return killed


def test_ctrl_c_during_ask_exits_130_marks_the_run_and_says_what_was_kept(tmp_path):
    db_path = tmp_path / "evcli.db"
    TraceStore(db_path).close()
    for _attempt in range(5):  # the signal must land while the run is in progress
        process = _ask(db_path)
        session_id = None
        deadline = time.monotonic() + 10
        while session_id is None and time.monotonic() < deadline and process.poll() is None:
            with sqlite3.connect(db_path) as conn:
                row = conn.execute(
                    "SELECT session_id FROM diagnosis_run WHERE status IN ('created', 'running') "
                    "AND owner LIKE ? LIMIT 1",
                    [f"%:{process.pid}:%"],
                ).fetchone()
            session_id = row and row[0]
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
        if session_id and process.returncode == 130:
            break
    assert process.returncode == 130, (stdout, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: interrupted; "), stderr
    assert f"session {session_id} kept as interrupted with " in lines[0]
    assert "nothing partial" not in lines[0]
    assert _raw_status(db_path, session_id) == "interrupted"
    listed = json.loads(_evcli(db_path, "sessions", "--json").stdout)
    assert {row["session_id"]: row["status"] for row in listed}[session_id] == "interrupted"


def test_a_stage_command_that_ends_normally_leaves_its_run_waiting_not_interrupted(tmp_path):
    db_path = tmp_path / "evcli.db"
    planned = _evcli(db_path, "plan", QUESTION)
    assert planned.returncode == 0, planned.stderr
    session_id = planned.stdout.split()[0]
    listed = json.loads(_evcli(db_path, "sessions", "--json").stdout)
    assert [row["status"] for row in listed] == ["running"]
    assert _evcli(db_path, "execute", session_id).returncode == 0
    assert json.loads(_evcli(db_path, "export", session_id).stdout)["run"]["status"] == "running"


def test_upgrade_from_the_previous_schema_adds_the_owner_and_keeps_old_runs(tmp_path):
    db_path = tmp_path / "evcli.db"
    db = Database(db_path)
    migrations.apply(db, stop_before="m003_run_owner")
    db["diagnosis_run"].insert(
        {
            "session_id": "old-1",
            "question": "q",
            "mode": "chat",
            "status": "running",
            "config": "{}",
            "prompt_audit": "{}",
            "self_evaluation": "{}",
            "annotations": "{}",
            "created_at": "2026-01-01T00:00:00.000000Z",
            "updated_at": "2026-01-01T00:00:00.000000Z",
        }
    )
    db.conn.close()

    store = TraceStore(db_path)
    assert migrations.pending(store.db) == []
    assert "owner" in store.db["diagnosis_run"].columns_dict
    # no owner recorded: nothing says its process died, so it is shown as stored
    assert store.load("old-1").run.status == "running"
    store.db["diagnosis_run"].update("old-1", {"owner": "elsewhere-host:1:1"})
    assert store.load("old-1").run.status == "running"  # another host's process cannot be checked
