"""The trace store under faults (issue 28): a newer schema, a damaged page, concurrent maintenance, a full disk,
questions far beyond SQLite's LIKE pattern limit.

Real `evcli` processes (`python -m evcli`) on real SQLite files; the full disk is a real tmpfs of a few hundred KiB
mounted in a user namespace (`unshare`), skipped where user namespaces are not allowed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evcli.core.errors import StoreError
from evcli.store.db import TraceStore
from evcli.store.documents import read_document, to_canonical
from evcli.store.query import SessionQuery
from tests.conftest import SAMPLES

QUESTION = "why is payment-service slow"
TIMEOUT_S = 60
NEWER_SCHEMA = "this store was written by a newer evcli (schema 7); upgrade evcli"


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, EVCLI_HOME=str(tmp_path / "home"), NO_COLOR="1", COLUMNS="300")


def _run(tmp_path: Path, *args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evcli", *map(str, args)],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=TIMEOUT_S,
    )


def _start(tmp_path: Path, *args: str | Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "evcli", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )


SEED_SAMPLES = [
    SAMPLES / f"{name}.json"
    for name in ("broad-order-service", "narrow-payment-highcpu", "negative-inventory-hikaricp")
]


def _seed(path: Path, copies: int = 4) -> list[str]:
    """A store holding the three real sample sessions `copies` times (under new ids, oldest first), its WAL checkpointed into
    the file and no connection left open. Returns the ids."""
    ids = []
    with TraceStore(path) as store:
        for copy in range(copies):
            for sample in SEED_SAMPLES:
                document = read_document(sample)
                session_id, _ = store.import_document(document, new_id=f"c{copy:03d}-{document.run.session_id}")
                ids.append(session_id)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return ids


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stored_ids(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT session_id FROM diagnosis_run ORDER BY session_id")]


def _quick_check(path: Path) -> list[str]:
    """What SQLite's quick_check says of the file: ["ok"], its findings, or the error that stopped it."""
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    finally:
        conn.close()


def _one_error_line(run: subprocess.CompletedProcess, code: int, *fragments: str) -> str:
    assert run.returncode == code, (run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


# --- 1. a store written by a newer evcli ----------------------------------------------------------------------------


def _from_a_newer_evcli(path: Path) -> None:
    """What a later evcli's migration m007 could leave behind: a new table, a new column, its name recorded."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("CREATE TABLE run_label (session_id TEXT, label TEXT)")
        conn.execute("ALTER TABLE diagnosis_run ADD COLUMN priority TEXT NOT NULL DEFAULT 'p3'")
        conn.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
            "VALUES ('evcli', 'm007_run_labels', '2027-01-01 00:00:00')"
        )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


@pytest.mark.parametrize(
    "command",
    [
        ("ask", QUESTION),
        ("sessions",),
        ("trace", "last"),
        ("export", "--all", "-o", "{tmp}/out"),
        ("import", str(SAMPLES / "narrow-payment-highcpu.json"), "--new-id", "imported-1"),
        ("sessions", "prune", "--older-than", "1d"),
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_a_store_of_a_newer_schema_is_refused_before_anything_is_written(tmp_path, command):
    db_path = tmp_path / "evcli.db"
    before_ids = _seed(db_path)
    _from_a_newer_evcli(db_path)
    before = _digest(db_path)

    run = _run(tmp_path, *(part.format(tmp=tmp_path) for part in command), "--db", db_path)

    _one_error_line(run, 1, str(db_path), NEWER_SCHEMA)
    assert run.stdout == ""
    assert _digest(db_path) == before  # not one byte of the file changed
    wal = db_path.with_name(db_path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert _stored_ids(db_path) == sorted(before_ids)
    assert not (tmp_path / "out").exists()


def test_an_older_schema_is_still_migrated_forward(tmp_path):
    from sqlite_utils import Database

    from evcli.store.migrations import migrations

    db_path = tmp_path / "evcli.db"
    migrations.apply(Database(db_path), stop_before="m005_alert_queue")
    run = _run(tmp_path, "sessions", "--json", "--db", db_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []
    assert "alert_queue" in {row[0] for row in sqlite3.connect(db_path).execute("SELECT name FROM sqlite_master")}


# --- 2. a damaged page ------------------------------------------------------------------------------------------------


def _damage_page(path: Path, table: str) -> int:
    """Overwrite the first leaf page of `table` (the rows inserted first) with random bytes; returns its number."""
    page, page_size = _leaf_page(path, table)
    with path.open("r+b") as file:
        file.seek((page - 1) * page_size)
        file.write(random.Random(page).randbytes(page_size))
    return page


def _damage_page_header(path: Path, table: str) -> int:
    """Two bytes of a leaf page's header (where its cell content starts) overwritten: every row on it still reads,
    but its free space no longer adds up."""
    page, page_size = _leaf_page(path, table)
    with path.open("r+b") as file:
        file.seek((page - 1) * page_size + 5)
        file.write(b"\x00\x10")
    return page


def _leaf_page(path: Path, table: str) -> tuple[int, int]:
    """(number, size) of the first leaf page holding rows of `table`, never the file's header page."""
    conn = sqlite3.connect(path)
    try:
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        (page,) = conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY path LIMIT 1", [table]
        ).fetchone()
    finally:
        conn.close()
    assert page > 1
    return int(page), int(page_size)


def _assert_warned(run: subprocess.CompletedProcess, db_path: Path) -> str:
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, run.stderr
    assert str(db_path) in warnings[0] and "integrity check" in warnings[0], warnings[0]
    return warnings[0]


def test_a_damaged_page_of_session_rows_is_warned_about_by_sessions_trace_and_export(tmp_path):
    db_path = tmp_path / "evcli.db"
    ids = _seed(db_path, copies=8)
    _damage_page(db_path, "tool_invocation")  # holds the rows of the first session
    assert _quick_check(db_path) != ["ok"]
    newest = ids[-1]

    listed = _run(tmp_path, "sessions", "--json", "-n", "1000", "--db", db_path)
    _assert_warned(listed, db_path)
    assert len(json.loads(listed.stdout)) == len(ids)  # the list still works
    _assert_warned(_run(tmp_path, "sessions", "--db", db_path), db_path)
    traced = _run(tmp_path, "trace", newest, "--db", db_path)
    _assert_warned(traced, db_path)
    assert f"session {newest}" in traced.stdout
    exported = _run(tmp_path, "export", newest, "--db", db_path)
    _assert_warned(exported, db_path)
    assert json.loads(exported.stdout)["run"]["session_id"] == newest
    # Exporting every session reads the damaged page itself: one error line that says so.
    _one_error_line(_run(tmp_path, "export", "--all", "-o", tmp_path / "out", "--db", db_path), 1, "corrupt")


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: _damage_page(path, "alert_queue"),  # table data no session command reads
        lambda path: _damage_page_header(path, "gate_result"),  # session rows that all still read
    ],
    ids=["alert_queue page garbage", "gate_result page header"],
)
def test_damage_no_read_meets_is_still_warned_about_by_export_all_and_trace(tmp_path, damage):
    db_path = tmp_path / "evcli.db"
    ids = _seed(db_path)
    with TraceStore(db_path) as store:
        alerts = [
            {"group_key": f"g{n}", "fingerprint": f"f{n}", "alertname": "HighCPU", "status": "firing", "alert": {}}
            for n in range(40)
        ]
        store.enqueue_alerts(alerts, max_queue=100, repeat_since="2000-01-01")
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    damage(db_path)
    assert _quick_check(db_path) != ["ok"]

    exported = _run(tmp_path, "export", "--all", "-o", tmp_path / "out", "--db", db_path)
    _assert_warned(exported, db_path)
    assert len(list((tmp_path / "out").glob("*.json"))) == len(ids)
    _assert_warned(_run(tmp_path, "trace", "last", "--db", db_path), db_path)


def test_doctor_reports_the_store_integrity_and_schema(tmp_path):
    db_path = tmp_path / "evcli.db"
    _seed(db_path)
    healthy = _run(tmp_path, "doctor", "--no-model-call", "--json", "--db", db_path)
    assert healthy.returncode == 0, healthy.stderr
    (store_row,) = [row for row in json.loads(healthy.stdout)["checks"] if row["check"] == "store"]
    assert store_row["status"] == "ok" and store_row["target"] == str(db_path)
    assert "schema 6" in store_row["detail"] and "quick_check ok" in store_row["detail"]

    _damage_page(db_path, "tool_invocation")
    damaged = _run(tmp_path, "doctor", "--no-model-call", "--json", "--db", db_path)
    assert damaged.returncode == 1
    (store_row,) = [row for row in json.loads(damaged.stdout)["checks"] if row["check"] == "store"]
    assert store_row["status"] == "fail" and "quick_check" in store_row["detail"], store_row
    assert store_row["remedy"]

    newer = tmp_path / "newer.db"
    _seed(newer)
    _from_a_newer_evcli(newer)
    before = _digest(newer)
    refused = _run(tmp_path, "doctor", "--no-model-call", "--json", "--db", newer)
    (store_row,) = [row for row in json.loads(refused.stdout)["checks"] if row["check"] == "store"]
    assert store_row["status"] == "fail" and "newer evcli (schema 7)" in store_row["detail"], store_row
    assert _digest(newer) == before


def test_the_integrity_check_runs_once_per_process(tmp_path):
    from evcli.store import health

    db_path = tmp_path / "evcli.db"
    _seed(db_path)
    with TraceStore(db_path, must_exist=True) as store:
        first = store.check_integrity()
        assert first.problems() == []
        assert store.check_integrity() is first
    with TraceStore(db_path, must_exist=True) as store:
        assert store.check_integrity() is first
    assert health.quick_check(db_path) == []


# --- 3. concurrent maintenance ---------------------------------------------------------------------------------------


def test_concurrent_prunes_and_deletes_never_fail_on_a_session_another_one_removed(tmp_path):
    db_path = tmp_path / "evcli.db"
    ids = _seed(db_path, copies=8)
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE diagnosis_run SET created_at = '2020-01-01T00:00:00.000000Z'")
    # The test holds the write lock while every command starts and reads its list of sessions; once it lets go,
    # the commands run one after the other, each on a list another one has already emptied (in part or whole).
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    half = len(ids) // 2
    commands = [
        *[("sessions", "prune", "--older-than", "1d", "--json") for _ in range(3)],
        ("sessions", "delete", *ids[:half], "--json"),
        ("sessions", "delete", *ids[half - 5 :], "--json"),
    ]
    processes = [_start(tmp_path, *command, "--db", db_path) for command in commands]
    _wait_until_all_opened(processes, db_path)
    time.sleep(1.5)  # from opening the store to waiting for the write lock takes milliseconds
    holder.execute("ROLLBACK")
    holder.close()
    results = [(process, *process.communicate(timeout=TIMEOUT_S)) for process in processes]

    deleted: list[str] = []
    already_gone = 0
    for process, stdout, stderr in results:
        assert process.returncode == 0, (process.args[3:5], stderr)
        report = json.loads(stdout)
        deleted += report["deleted" if "delete" in process.args else "sessions"]
        already_gone += len(report["already_gone"])
    assert sorted(deleted) == sorted(ids)  # every session deleted exactly once
    assert already_gone > 0  # the race did happen: some command found sessions gone
    assert _stored_ids(db_path) == []
    assert _quick_check(db_path) == ["ok"]


def _wait_until_all_opened(processes: list[subprocess.Popen], db_path: Path) -> None:
    """Until every process has the store file open (Linux: /proc/PID/fd), at most TIMEOUT_S."""
    deadline = time.monotonic() + TIMEOUT_S
    waiting = list(processes)
    while waiting and time.monotonic() < deadline:
        waiting = [process for process in waiting if process.poll() is None and not _has_open(process.pid, db_path)]
        time.sleep(0.05)
    assert not waiting, "not every command opened the store"


def _has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(link) == str(path) for link in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # a descriptor closed while it was read
        return False


def test_delete_says_how_many_were_already_gone(tmp_path):
    db_path = tmp_path / "evcli.db"
    ids = _seed(db_path)
    with TraceStore(db_path) as store:
        assert store.delete_sessions(ids[:2]).deleted == ids[:2]
        outcome = store.delete_sessions(ids[:3])
    assert outcome.deleted == ids[2:3] and outcome.already_gone == ids[:2]


# --- 4. a full disk ---------------------------------------------------------------------------------------------------

_FULL_DISK_SCRIPT = r"""
set -u
mount -t tmpfs -o size=2m tmpfs "$MNT"
cp "$SEED" "$MNT/evcli.db"
dd if=/dev/zero of="$MNT/filler" bs=4096 2>/dev/null
truncate -s "-$FREE" "$MNT/filler"
"$PY" -m evcli ask "$QUESTION" --db "$MNT/evcli.db" >"$OUT/ask.out" 2>"$OUT/ask.err"
echo $? >"$OUT/ask.rc"
rm "$MNT/filler"
"$PY" -m evcli export --all -o "$OUT/after" --db "$MNT/evcli.db" 2>"$OUT/export.err"
echo $? >"$OUT/export.rc"
cp "$MNT/evcli.db" "$OUT/after.db"
"""


def _user_namespaces() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True, timeout=TIMEOUT_S
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _user_namespaces(), reason="needs unshare and user namespaces to mount a small tmpfs")
@pytest.mark.parametrize("free_kib", [0, 16, 48, 200])
def test_a_full_disk_during_ask_is_named_and_loses_nothing_stored(tmp_path, free_kib):
    seed = tmp_path / "seed.db"
    ids = _seed(seed)
    with TraceStore(seed) as store:
        before = {session_id: to_canonical(store.load(session_id)) for session_id in ids}
    mount, out = tmp_path / "mnt", tmp_path / "out"
    mount.mkdir()
    out.mkdir()
    env = dict(_env(tmp_path), MNT=str(mount), SEED=str(seed), OUT=str(out), FREE=f"{free_kib}K", PY=sys.executable)
    env["QUESTION"] = QUESTION
    subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "bash", "-c", _FULL_DISK_SCRIPT],
        env=env,
        timeout=4 * TIMEOUT_S,
        check=True,
    )

    ask = subprocess.CompletedProcess(
        "ask", int((out / "ask.rc").read_text()), (out / "ask.out").read_text(), (out / "ask.err").read_text()
    )
    _one_error_line(ask, 1, "disk full", str(mount / "evcli.db"))
    assert "I/O error" not in ask.stderr
    assert (out / "export.rc").read_text().strip() == "0", (out / "export.err").read_text()
    for session_id, document in before.items():  # every session stored before the full disk, unchanged
        assert (out / "after" / f"{session_id}.json").read_text().strip() == document
    assert _quick_check(out / "after.db") == ["ok"]


def test_a_full_store_is_named_disk_full_with_its_path(tmp_path):
    """SQLITE_FULL itself: the page limit of the connection reached while a run is written."""
    db_path = tmp_path / "evcli.db"
    ids = _seed(db_path)
    with TraceStore(db_path) as store:
        (pages,) = store.conn.execute("PRAGMA page_count").fetchone()
        store.conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(StoreError) as caught:
            store.create_session("x" * 200_000)
    from evcli.core.errors import expected_failure

    failure = expected_failure(caught.value)
    assert failure is not None and failure.exit_code == 1
    assert failure.message.startswith("disk full") and str(db_path) in failure.message
    assert "\n" not in failure.message
    assert _stored_ids(db_path) == sorted(ids)


# --- 5. questions beyond the LIKE pattern limit -------------------------------------------------------------------


def _long_question(size: int) -> str:
    return (QUESTION + " " + "x" * size)[:size]


def test_sessions_query_finds_a_100_kb_question(tmp_path):
    db_path = tmp_path / "evcli.db"
    question = _long_question(100_000)
    with TraceStore(db_path) as store:
        wanted = store.create_session(question).session_id
        store.create_session("something else entirely")
    run = _run(tmp_path, "sessions", "-q", question, "--json", "--db", db_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert [row["session_id"] for row in json.loads(run.stdout)] == [wanted]


def test_a_1_mb_question_is_stored_and_searched(tmp_path):
    db_path = tmp_path / "evcli.db"
    question = _long_question(1_000_000)
    with TraceStore(db_path) as store:
        wanted = store.create_session(question).session_id
        store.create_session("something else entirely")
        for text in (question, question.upper(), question[400_000:900_000], "PAYMENT-service"):
            found = store.list_sessions(10, SessionQuery(text=text))
            assert [row["session_id"] for row in found] == [wanted], text[:40]
        assert store.list_sessions(10, SessionQuery(text=question + "y")) == []
        assert [row["session_id"] for row in store.list_sessions(10, SessionQuery(text="%"))] == []
        assert len(store.list_sessions(10, SessionQuery(text="_"))) == 0


def test_ask_takes_a_100_kb_question(tmp_path):
    """The question's words are looked up in the logs: a keyword over SQLite's LIKE limit uses instr()."""
    db_path = tmp_path / "evcli.db"
    run = _run(tmp_path, "ask", _long_question(100_000), "--db", db_path)
    assert "pattern too complex" not in run.stderr
    assert run.returncode in (0, 3, 4), run.stderr[-2000:]
