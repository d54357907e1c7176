"""`evcli sessions`, `evcli export`, `evcli import`, and how every command treats a bad store."""

from __future__ import annotations

import json
import os

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from evcli.cli import app
from evcli.core.canonical import canonical_json
from evcli.store.db import TraceStore
from tests.cli._util import (
    assert_clean_error,
    counts,
    evcli,
    gate_rows,
    import_sample,
    load_json,
    snapshot,
)
from tests.conftest import sample

THREE = ("narrow-payment-highcpu", "broad-order-service", "negative-inventory-hikaricp")


def _expected_export(path) -> str:
    return canonical_json(load_json(path)) + "\n"


# --- sessions ----------------------------------------------------------------------------------------


def test_sessions_on_empty_default_store(db_path):
    run = evcli("sessions")

    assert run.exit_code == 0, run
    assert run.stdout == ""
    assert run.stderr.strip() == "no sessions stored yet"
    assert set(counts(db_path).values()) == {0}  # the default store was created, empty


def test_sessions_on_empty_named_store(tmp_path):
    db = tmp_path / "empty.db"
    TraceStore(db).close()

    run = evcli("sessions", "--db", db)
    assert run.exit_code == 0, run
    assert run.stdout == ""
    assert "no sessions stored yet" in run.stderr

    run = evcli("sessions", "--db", db, "--json")
    assert run.exit_code == 0, run
    assert run.json() == []


def test_sessions_lists_newest_first(tmp_path):
    db = tmp_path / "x.db"
    documents = {}
    for name in THREE:
        documents[import_sample(sample(name), db)] = load_json(sample(name))
    newest = sorted(documents, key=lambda sid: documents[sid]["run"]["created_at"], reverse=True)

    run = evcli("sessions", "--db", db, "--json", "--limit", 2)

    assert run.exit_code == 0, run
    rows = run.json()
    assert [row["session_id"] for row in rows] == newest[:2]
    assert newest[:2] == ["sample-negative-inventory-hikaricp", "sample-broad-order-service"]
    for row in rows:
        assert {"session_id", "question", "invocations", "gate_severity"} <= set(row)
        document = documents[row["session_id"]]
        assert row["question"] == document["run"]["question"]
        assert row["invocations"] == len(document["invocations"])
        assert row["gate_severity"] == document["gate_results"][-1]["result"]["severity"] == "none"
    assert [row["invocations"] for row in rows] == [1, 5]

    run = evcli("sessions", "--db", db)
    assert run.exit_code == 0, run
    for sid in THREE:
        assert f"sample-{sid}" in run.stdout
    assert run.stderr == ""


def test_sessions_gate_severity_follows_the_newest_gate_result(tmp_path):
    db = tmp_path / "x.db"
    sid = import_sample(sample("fault-excerpt-invented-text"), db)

    assert evcli("sessions", "--db", db, "--json").json()[0]["gate_severity"] is None
    assert evcli("gate", sid, "--db", db).exit_code == 4

    run = evcli("sessions", "--db", db, "--json")
    assert run.exit_code == 0, run
    (row,) = run.json()
    assert (row["session_id"], row["gate_severity"]) == (sid, "reject")
    assert [r["severity"] for r in gate_rows(db, sid)] == ["reject"]


def test_sessions_limit_must_be_positive(tmp_path):
    db = tmp_path / "x.db"
    TraceStore(db).close()

    run = evcli("sessions", "--db", db, "--limit", 0)

    assert run.exit_code == 2, run
    assert run.stdout == ""
    assert "--limit" in run.stderr


# --- export ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", THREE)
def test_export_stdout_and_file_are_the_same_canonical_json(name, tmp_path):
    db = tmp_path / "x.db"
    path = sample(name)
    sid = import_sample(path, db)
    out_file = tmp_path / "out.json"

    to_stdout = evcli("export", sid, "--db", db)
    to_file = evcli("export", sid, "--db", db, "-o", out_file)

    assert to_stdout.exit_code == 0, to_stdout
    assert to_stdout.stderr == ""
    assert to_stdout.stdout == _expected_export(path)
    assert to_file.exit_code == 0, to_file
    assert to_file.stdout == ""
    assert f"exported {sid} to {out_file}" in to_file.stderr
    assert out_file.read_text(encoding="utf-8") == to_stdout.stdout


def test_export_then_import_elsewhere_round_trips(tmp_path):
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    sid = import_sample(sample("broad-order-service"), first)
    assert evcli("gate", sid, "--db", first).exit_code == 0  # history now has 2 results
    exported = tmp_path / "exported.json"
    assert evcli("export", sid, "--db", first, "-o", exported).exit_code == 0

    assert import_sample(exported, second) == sid
    assert evcli("export", sid, "--db", second).stdout == exported.read_text(encoding="utf-8")
    assert snapshot(second)["gate_result"] == snapshot(first)["gate_result"]
    assert len(gate_rows(second, sid)) == 2


def test_export_unknown_session(tmp_path):
    db = tmp_path / "x.db"
    TraceStore(db).close()
    out_file = tmp_path / "out.json"

    assert_clean_error(evcli("export", "nope-1", "--db", db, "-o", out_file), 2, "unknown session 'nope-1'")
    assert not out_file.exists()


def test_export_onto_a_symlink_replaces_the_link_not_the_file_it_points_to(tmp_path):
    db = tmp_path / "x.db"
    sid = import_sample(sample("narrow-payment-highcpu"), db)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "out").mkdir()
    link = tmp_path / "out" / "session.json"
    link.symlink_to(victim)

    run = evcli("export", sid, "--db", db, "-o", link)

    assert run.exit_code == 0, run
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text() == _expected_export(sample("narrow-payment-highcpu"))
    assert [path.name for path in link.parent.iterdir()] == ["session.json"]


def test_export_to_stdout_escapes_c1_and_bidi_and_stays_the_same_json(tmp_path):
    db = tmp_path / "x.db"
    store = TraceStore(db)
    question = "why \x1b]0;title\x07 \x9b2J \u202egnp.exe\u202c \u2066x\u2069?"
    sid = store.create_session(question).session_id
    store.close()
    out_file = tmp_path / "out.json"

    shown = evcli("export", sid, "--db", db)
    assert evcli("export", sid, "--db", db, "-o", out_file).exit_code == 0

    assert shown.exit_code == 0, shown
    raw = shown.result.stdout
    assert not [c for c in ("\x1b", "\x07", "\x9b", "\u202e", "\u202c", "\u2066", "\u2069") if c in raw], raw
    assert "\\u009b2J \\u202egnp.exe\\u202c" in raw
    assert json.loads(raw) == json.loads(out_file.read_text(encoding="utf-8"))
    assert json.loads(raw)["run"]["question"] == question


# --- import --------------------------------------------------------------------------------------------------


def test_import_stores_the_document(tmp_path):
    db = tmp_path / "x.db"
    path = sample("broad-order-service")
    document = load_json(path)

    run = evcli("import", path, "--db", db)

    assert run.exit_code == 0, run
    assert run.stdout.strip() == "sample-broad-order-service"
    assert f"imported {path} as sample-broad-order-service" in run.stderr
    assert counts(db) == {
        "diagnosis_run": 1,
        "agent_step": len(document["steps"]),
        "tool_invocation": len(document["invocations"]),
        "stage_output": len(document["stage_outputs"]),
        "gate_result": len(document["gate_results"]),
    }


def test_import_same_file_twice_changes_nothing(tmp_path):
    db = tmp_path / "x.db"
    path = sample("narrow-payment-highcpu")
    import_sample(path, db)
    before = snapshot(db)

    run = evcli("import", path, "--db", db)

    assert run.exit_code == 0, run
    assert run.stdout.strip() == "sample-narrow-payment-highcpu"
    assert "already stored with identical content; nothing changed" in run.stderr
    assert counts(db)["diagnosis_run"] == 1
    assert snapshot(db) == before

    run = evcli("import", path, "--db", db, "--json")
    assert run.exit_code == 0, run
    assert run.json() == {"session_id": "sample-narrow-payment-highcpu", "created": False}
    assert snapshot(db) == before


def test_import_changed_copy_under_same_id_is_refused(tmp_path):
    db = tmp_path / "x.db"
    path = sample("narrow-payment-highcpu")
    sid = import_sample(path, db)
    before = snapshot(db)
    changed = load_json(path)
    changed["run"]["question"] = "Is payment-service on fire?"
    changed_path = tmp_path / "changed.json"
    changed_path.write_text(json.dumps(changed), encoding="utf-8")

    run = evcli("import", changed_path, "--db", db)

    line = assert_clean_error(run, 2, f"session {sid} already exists with different content")
    assert "--new-id" in line
    assert snapshot(db) == before
    assert TraceStore(db).load(sid).run.question == load_json(path)["run"]["question"]

    run = evcli("import", changed_path, "--db", db, "--new-id", "other")

    assert run.exit_code == 0, run
    assert run.stdout.strip() == "other"
    assert counts(db)["diagnosis_run"] == 2
    store = TraceStore(db)
    assert store.load("other").run.question == "Is payment-service on fire?"
    assert store.load(sid).run.question == load_json(path)["run"]["question"]
    changed["run"]["session_id"] = "other"
    assert evcli("export", "other", "--db", db).stdout == canonical_json(changed) + "\n"
    listed = evcli("sessions", "--db", db, "--json")
    assert listed.exit_code == 0, listed
    assert {r["session_id"] for r in listed.json()} == {sid, "other"}


def test_import_new_id_json_output(tmp_path):
    db = tmp_path / "x.db"
    path = sample("negative-inventory-hikaricp")
    import_sample(path, db)

    run = evcli("import", path, "--db", db, "--new-id", "copy-1", "--json")

    assert run.exit_code == 0, run
    assert run.json() == {"session_id": "copy-1", "created": True}
    assert counts(db)["diagnosis_run"] == 2
    assert counts(db)["tool_invocation"] == 2 * len(load_json(path)["invocations"])


@pytest.mark.parametrize(
    "content, fragment",
    [("not json at all", "is not valid JSON"), (json.dumps([1, 2, 3]), "is not an evcli session document")],
    ids=["not-json", "not-a-session"],
)
def test_import_bad_file_writes_nothing(content, fragment, tmp_path):
    db = tmp_path / "x.db"
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")

    assert_clean_error(evcli("import", path, "--db", db), 2, fragment, str(path))
    assert not db.exists()


def test_import_missing_file(tmp_path):
    db = tmp_path / "x.db"

    assert_clean_error(evcli("import", tmp_path / "gone.json", "--db", db), 2, "no such file")
    assert not db.exists()


def test_import_refuses_a_fifo_a_device_and_an_oversized_file_without_reading_them(tmp_path, fifo):
    db = tmp_path / "x.db"
    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as handle:
        handle.truncate(3 << 30)  # 3 GiB of holes

    assert_clean_error(
        evcli("import", fifo, "--db", db), 2, f"cannot read {fifo}: refused: not a regular file (a FIFO)"
    )
    assert_clean_error(evcli("import", "/dev/zero", "--db", db), 2, "not a regular file (a character device)")
    assert_clean_error(
        evcli("import", sparse, "--db", db), 2, f"{sparse} is larger than 64 MiB, the limit for a session document"
    )
    assert not db.exists()


# --- missing and corrupt stores, for every command that reads one -----------------------------------------------


STORE_COMMANDS = {
    "gate": ("gate", "sample-narrow-payment-highcpu"),
    "trace": ("trace", "sample-narrow-payment-highcpu"),
    "sessions": ("sessions",),
    "export": ("export", "sample-narrow-payment-highcpu"),
}


@pytest.mark.parametrize("command", sorted(STORE_COMMANDS))
def test_missing_store_named_by_db(command, tmp_path):
    missing = tmp_path / "missing.db"

    assert_clean_error(evcli(*STORE_COMMANDS[command], "--db", missing), 1, "no trace store at", str(missing))
    assert not missing.exists()


@pytest.mark.parametrize("command", [*sorted(STORE_COMMANDS), "import"])
def test_corrupt_store_is_left_alone(command, tmp_path):
    corrupt = tmp_path / "corrupt.db"
    data = os.urandom(16384)
    corrupt.write_bytes(data)
    args = ("import", sample("narrow-payment-highcpu")) if command == "import" else STORE_COMMANDS[command]

    assert_clean_error(evcli(*args, "--db", corrupt), 1, "cannot open trace store", str(corrupt))
    assert corrupt.read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == ["corrupt.db"]


def test_export_all_writes_one_canonical_file_per_session(tmp_path):
    from evcli.core.canonical import canonical_json

    db = tmp_path / "all.db"
    names = ["narrow-payment-highcpu", "broad-order-service"]
    for name in names:
        assert evcli("import", sample(name), "--db", db).exit_code == 0
    out_dir = tmp_path / "exports"
    run = evcli("export", "--all", "-o", out_dir, "--db", db)
    assert run.exit_code == 0, run
    written = sorted(p.name for p in out_dir.glob("*.json"))
    assert written == ["sample-broad-order-service.json", "sample-narrow-payment-highcpu.json"]
    for name in names:
        assert (out_dir / f"sample-{name}.json").read_text() == canonical_json(
            json.loads(sample(name).read_text())
        ) + "\n"
    assert evcli("export", "--all", "--db", db).exit_code == 2
    assert evcli("export", "--db", db).exit_code == 2


# --- finding and managing sessions (issue 13) ------------------------------------------------------


def _store_of_six(tmp_path):
    """Six sessions: sample copies whose environment, verdict, status, mode and age differ."""
    from datetime import UTC, datetime, timedelta

    db = tmp_path / "six.db"
    now = datetime.now(UTC)
    made = {
        # id: (question, env config, verdict, status, mode, age)
        "a-demo-pass": ("Why is order-service failing?", {}, "PASS", "completed", "chat", timedelta(days=40)),
        "b-host-low": (
            "Is sshd seeing 50% failed logins?",
            {"env_dir": "/x/evcli/envs/host"},
            "LOW_CONFID",
            "completed",
            "chat",
            timedelta(days=35),
        ),
        "c-host-failed": (
            "disk full on web-01",
            {"env_dir": "/x/evcli/envs/host"},
            None,
            "failed",
            "chat",
            timedelta(days=31),
        ),
        "d-live-aiops": (
            "HighCPUUsage payment-service",
            {"prometheus": "http://p:9090"},
            "PASS",
            "completed",
            "aiops",
            timedelta(days=2),
        ),
        "e-incident": (
            "Why is checkout slow?",
            {"env_dir": "/srv/incident-0708"},
            "REJECT",
            "completed",
            "chat",
            timedelta(hours=3),
        ),
        "f-demo-new": ("Why is ORDER-service slow?", {}, "PASS", "completed", "chat", timedelta(minutes=5)),
    }
    for session_id, (question, env, verdict, status, mode, age) in made.items():
        import_sample(sample("narrow-payment-highcpu"), db, "--new-id", session_id)
        with TraceStore(db) as store:
            store.conn.execute(
                "UPDATE diagnosis_run SET question = ?, config = json_set(config, '$.env', json(?)), verdict = ?,"
                " status = ?, mode = ?, created_at = ? WHERE session_id = ?",
                [
                    question,
                    json.dumps(env),
                    verdict,
                    status,
                    mode,
                    (now - age).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    session_id,
                ],
            )
    return db


def _listed(db, *args):
    run = evcli("sessions", "--db", db, "--json", *args)
    assert run.exit_code == 0, run
    return [row["session_id"] for row in run.json()]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), ["f-demo-new", "e-incident", "d-live-aiops", "c-host-failed", "b-host-low", "a-demo-pass"]),
        (("--env", "host"), ["c-host-failed", "b-host-low"]),
        (("--env", "demo"), ["f-demo-new", "a-demo-pass"]),
        (("--env", "live"), ["d-live-aiops"]),
        (("--env", "incident-0708"), ["e-incident"]),
        (("--verdict", "low_confid"), ["b-host-low"]),
        (("--status", "failed"), ["c-host-failed"]),
        (("--mode", "aiops"), ["d-live-aiops"]),
        (("--since", "7d"), ["f-demo-new", "e-incident", "d-live-aiops"]),
        (("--since", "1h"), ["f-demo-new"]),
        (("-q", "order-service"), ["f-demo-new", "a-demo-pass"]),  # case-insensitive
        (("-q", "50%"), ["b-host-low"]),  # % is text, not a wildcard
        (("-q", "_"), []),
        (("--env", "host", "--verdict", "LOW_CONFID"), ["b-host-low"]),
        (("--verdict", "PASS", "-n", "1"), ["f-demo-new"]),
    ],
)
def test_sessions_filters(tmp_path, args, expected):
    assert _listed(_store_of_six(tmp_path), *args) == expected


def test_sessions_since_a_time_and_a_bad_since(tmp_path):
    from datetime import UTC, datetime, timedelta

    db = _store_of_six(tmp_path)
    moment = (datetime.now(UTC) - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    assert _listed(db, "--since", moment) == ["f-demo-new", "e-incident", "d-live-aiops"]
    assert_clean_error(evcli("sessions", "--db", db, "--since", "last tuesday"), 2, "cannot read time")


def test_sessions_table_keeps_ids_whole_at_80_columns_and_shows_the_environment(tmp_path):
    db = _store_of_six(tmp_path)
    import_sample(sample("negative-inventory-hikaricp"), db)  # the longest sample id, a CJK question
    result = CliRunner().invoke(app, ["sessions", "--db", str(db)], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["session", "created", "env", "outcome", "question"]
    assert all(cell_len(line) <= 80 for line in lines)
    by_id = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(by_id) == {
        "a-demo-pass",
        "b-host-low",
        "c-host-failed",
        "d-live-aiops",
        "e-incident",
        "f-demo-new",
        "sample-negative-inventory-hikaricp",
    }
    assert by_id["b-host-low"][2:4] == ["host", "LOW_CONFID"]
    assert by_id["c-host-failed"][2:4] == ["host", "failed"]
    assert by_id["d-live-aiops"][2] == "live"
    wide = evcli("sessions", "--db", db).stdout.splitlines()  # 4000 columns: every column, whole questions
    assert wide[0].split() == ["session", "created", "env", "mode", "status", "verdict", "gate", "tools", "question"]
    assert any(line.rstrip().endswith("  Is sshd seeing 50% failed logins?") for line in wide)


def test_sessions_no_match_says_so(tmp_path):
    run = evcli("sessions", "--db", _store_of_six(tmp_path), "-q", "nothing like this")
    assert run.exit_code == 0 and run.stdout == "", run
    assert run.stderr.strip() == "no session matches"


def test_sessions_delete_by_id_prefix_and_last(tmp_path):
    db = _store_of_six(tmp_path)
    before = counts(db)
    run = evcli("sessions", "delete", "b-host", "last", "a-demo-pass", "--db", db)
    assert run.exit_code == 0, run
    assert run.stdout.split() == ["b-host-low", "f-demo-new", "a-demo-pass"]
    assert "deleted 3 sessions" in run.stderr
    assert _listed(db) == ["e-incident", "d-live-aiops", "c-host-failed"]
    after = counts(db)
    assert after["diagnosis_run"] == 3
    assert all(after[table] == before[table] // 6 * 3 for table in after)  # their child rows went too


def test_sessions_delete_unknown_or_ambiguous_deletes_nothing(tmp_path):
    db = _store_of_six(tmp_path)
    before = snapshot(db)
    assert_clean_error(evcli("sessions", "delete", "a-demo-pass", "zzz", "--db", db), 2, "unknown session 'zzz'")
    assert_clean_error(evcli("sessions", "delete", "a-demo-pass", "", "--db", db), 2)
    assert snapshot(db) == before


def test_sessions_prune_dry_run_then_prune_keeping_failed(tmp_path):
    db = _store_of_six(tmp_path)
    before = snapshot(db)
    run = evcli("sessions", "prune", "--older-than", "30d", "--dry-run", "--db", db)
    assert run.exit_code == 0, run
    assert run.stdout.split() == ["a-demo-pass", "b-host-low", "c-host-failed"]  # oldest first
    assert "would delete 3 sessions" in run.stderr
    assert snapshot(db) == before

    run = evcli("sessions", "prune", "--older-than", "30d", "--keep-failed", "--db", db, "--json")
    assert run.exit_code == 0, run
    assert run.json()["sessions"] == ["a-demo-pass"]
    assert _listed(db) == ["f-demo-new", "e-incident", "d-live-aiops", "c-host-failed", "b-host-low"]

    run = evcli("sessions", "prune", "--older-than", "1d", "--db", db)
    assert run.stdout.split() == ["b-host-low", "c-host-failed", "d-live-aiops"]
    assert _listed(db) == ["f-demo-new", "e-incident"]
    assert_clean_error(evcli("sessions", "prune", "--older-than", "soon", "--db", db), 2, "cannot read 'soon'")


def test_prune_shrinks_the_file_with_vacuum(tmp_path):
    db = tmp_path / "big.db"
    for index in range(30):
        import_sample(sample("broad-order-service"), db, "--new-id", f"s{index}")
    with TraceStore(db) as store:
        store.conn.execute("UPDATE diagnosis_run SET created_at = '2020-01-01T00:00:00.000000Z'")
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = db.stat().st_size
    run = evcli("sessions", "prune", "--older-than", "30d", "--db", db, "--json")
    assert run.exit_code == 0, run
    assert len(run.json()["sessions"]) == 30
    assert db.stat().st_size < size / 4
    assert counts(db) == dict.fromkeys(counts(db), 0)


def test_sessions_stats(tmp_path):
    db = _store_of_six(tmp_path)
    run = evcli("sessions", "--stats", "--db", db, "--json")
    assert run.exit_code == 0, run
    stats = run.json()
    assert stats["size_bytes"] >= db.stat().st_size > 0
    assert stats["rows"]["diagnosis_run"] == 6
    assert stats["by_environment"] == {"demo": 2, "host": 2, "incident-0708": 1, "live": 1}
    assert stats["by_verdict"] == {"-": 1, "LOW_CONFID": 1, "PASS": 3, "REJECT": 1}
    assert stats["oldest"] < stats["newest"]
    text = evcli("sessions", "--stats", "--db", db).stdout
    assert "sessions  6" in text and "size      " in text and "host 2" in text


def test_prune_and_delete_leave_a_run_another_live_process_is_writing(tmp_path):
    import subprocess
    import sys

    from evcli.store.ownership import process_identity

    db = _store_of_six(tmp_path)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with TraceStore(db) as store:  # a-demo-pass: running, owned by the live sleeper
            owner = process_identity().rsplit(":", 2)[0] + f":{sleeper.pid}:"
            store.conn.execute(
                "UPDATE diagnosis_run SET status = 'running', owner = ? WHERE session_id = 'a-demo-pass'", [owner]
            )
        run = evcli("sessions", "prune", "--older-than", "30d", "--db", db, "--json")
        assert run.json()["sessions"] == ["b-host-low", "c-host-failed"]
        assert_clean_error(evcli("sessions", "delete", "a-demo-pass", "--db", db), 2, "still being written")
        assert _listed(db, "--status", "running") == ["a-demo-pass"]
    finally:
        sleeper.kill()
        sleeper.wait()
    assert _listed(db, "--status", "interrupted") == ["a-demo-pass"]  # its owner is gone now
    assert evcli("sessions", "delete", "a-demo-pass", "--db", db).exit_code == 0
