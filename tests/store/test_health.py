"""evcli/store/health.py: the schema version of a store file and SQLite's quick_check of it."""

from __future__ import annotations

import sqlite3

import pytest

from evcli.core.errors import StoreError
from evcli.store import health
from evcli.store.db import TraceStore


def _record_migration(path, name: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('evcli', ?, '2027-01-01')",
            [name],
        )
    finally:
        conn.close()


def test_a_current_store_reports_its_schema_and_a_clean_check(db_path):
    TraceStore(db_path).close()
    assert health.inspect(db_path) == health.StoreHealth(schema_version=health.SCHEMA_VERSION, newer=False, problems=[])


def test_a_migration_this_evcli_does_not_know_is_a_newer_schema(db_path):
    TraceStore(db_path).close()
    _record_migration(db_path, "m007_from_a_later_release")
    assert health.inspect(db_path).newer is True
    with pytest.raises(StoreError, match=r"written by a newer evcli \(schema 7\); upgrade evcli") as refused:
        TraceStore(db_path)
    assert str(db_path) in refused.value.message
    # Another migration set in the same table (another tool's) is not evcli's schema.
    other = db_path.with_name("other.db")
    TraceStore(other).close()
    conn = sqlite3.connect(other, isolation_level=None)
    conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('other', 'x', 'y')")
    conn.close()
    TraceStore(other).close()


def test_a_check_that_cannot_run_warns_instead_of_passing(tmp_path):
    check = health.IntegrityCheck(tmp_path / "absent.db")  # mode=rw never creates the file
    warning = check.warning()
    assert warning is not None and "could not run" in warning
    assert not (tmp_path / "absent.db").exists()


def test_a_clean_store_gives_no_warning(db_path):
    TraceStore(db_path).close()
    assert health.IntegrityCheck(db_path).warning() is None


def test_a_check_is_remembered_until_the_store_changes(db_path, monkeypatch):
    """The result is reused while the file and its WAL are as they were when the check began; a write,
    or RECHECK_AFTER_S, makes the next command check again."""
    TraceStore(db_path).close()
    runs: list[str] = []
    real = health.quick_check

    def counted(path):
        runs.append(str(path))
        return real(path)

    monkeypatch.setattr(health, "quick_check", counted)
    assert health.IntegrityCheck(db_path).problems() == []
    assert health.IntegrityCheck(db_path).problems() == []  # the same file: remembered
    assert len(runs) == 1 and (db_path.parent / (db_path.name + ".checked")).exists()

    with TraceStore(db_path) as store:  # a write changes the file
        store.conn.execute("CREATE TABLE touched (x)")
    assert health.IntegrityCheck(db_path).problems() == []
    assert len(runs) == 2

    monkeypatch.setattr(health, "RECHECK_AFTER_S", -1)  # too old
    health.IntegrityCheck(db_path).problems()
    assert len(runs) == 3


def test_a_remembered_damage_is_still_reported(db_path, monkeypatch):
    TraceStore(db_path).close()
    monkeypatch.setattr(health, "quick_check", lambda path: ["page 7: btreeInitPage() returns error code 11"])
    assert health.IntegrityCheck(db_path).warning() is not None
    monkeypatch.setattr(health, "quick_check", lambda path: [])  # not asked: the file has not changed
    assert "failed SQLite's integrity check" in (health.IntegrityCheck(db_path).warning() or "")


def test_a_read_only_command_leaves_the_check_remembered(tmp_path):
    """Each process opening the store creates an empty WAL anew: that is no change to the stored data, so
    `sessions` after `sessions` does not read the whole file again."""
    import subprocess
    import sys

    db = tmp_path / "evcli.db"
    TraceStore(db).close()

    def sessions() -> str:  # a fresh process each time: the check is remembered once per process anyway
        subprocess.run([sys.executable, "-m", "evcli", "sessions", "--db", str(db)], check=True, capture_output=True)
        return (tmp_path / "evcli.db.checked").read_text(encoding="utf-8")

    assert sessions() == sessions()  # the second process did not check again
