from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
from sqlite_utils import Database

from evcli.contracts import AgentStep, EvidenceRef, RetrievalDetails, SessionDocument, ToolInvocation
from evcli.core.canonical import canonical_json
from evcli.core.errors import BadInput, NotFound, StoreError
from evcli.kb.index import KnowledgeIndex
from evcli.store.db import TraceStore
from evcli.store.documents import read_document, to_canonical
from evcli.store.migrations import migrations
from tests.conftest import SAMPLES, sample

TABLES = {"diagnosis_run", "agent_step", "tool_invocation", "stage_output", "gate_result"}


def _invocation(tool="query_logs") -> ToolInvocation:
    return ToolInvocation(
        invocation_id=0,
        tool_name=tool,
        input_params={"service": "inventory-service", "query": "HikariCP"},
        retrieval_details=RetrievalDetails(
            evidence_status="no_evidence",
            evidence_refs=[EvidenceRef(raw_path="$.no_evidence", text="query_logs returned no evidence; total=0")],
        ),
    )


def test_blank_database_gets_every_table_wal_and_busy_timeout(db_path):
    store = TraceStore(db_path)
    assert TABLES <= set(store.db.table_names())
    assert [m.name for m in migrations.applied(store.db)] == [
        "m001_trace_tables",
        "m002_lookup_indexes",
        "m003_run_owner",
        "m004_newest_first_index",
        "m005_alert_queue",
        "m006_step_cached_tokens",
    ]
    plan = store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT session_id FROM diagnosis_run ORDER BY created_at DESC, session_id DESC LIMIT 1"
    ).fetchall()
    assert "TEMP B-TREE" not in " ".join(row[-1] for row in plan)  # newest first walks an index, no sort
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    # Opening again applies nothing twice.
    assert migrations.pending(TraceStore(db_path).db) == []


def test_schema_migrations_constant_lists_every_migration():
    from evcli.store.db import SCHEMA_MIGRATIONS

    assert [m.name for m in migrations.pending(Database(memory=True))] == list(SCHEMA_MIGRATIONS)


def test_reading_an_up_to_date_store_does_not_load_sqlite_utils(db_path):
    import subprocess
    import sys

    TraceStore(db_path).close()
    code = (
        "import sys; from evcli.store.db import TraceStore; "
        f"s = TraceStore({str(db_path)!r}, must_exist=True); s.list_sessions(5); "
        "print('sqlite_utils' in sys.modules)"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "False"


def test_upgrade_from_previous_schema_keeps_rows(db_path):
    db_path.parent.mkdir(parents=True)
    db = Database(db_path)
    migrations.apply(db, stop_before="m002_lookup_indexes")
    db["diagnosis_run"].insert(
        {
            "session_id": "old-1",
            "question": "q",
            "mode": "chat",
            "status": "created",
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
    assert store.load("old-1").run.question == "q"
    index_columns = [index.columns for index in store.db["gate_result"].indexes]
    assert ["session_id", "seq"] in index_columns


def test_invocation_ids_count_per_session(db_path):
    store = TraceStore(db_path)
    first, second = store.create_session("a"), store.create_session("b")
    ids_first = [store.record_invocation(first.session_id, _invocation()).invocation_id for _ in range(3)]
    ids_second = [store.record_invocation(second.session_id, _invocation()).invocation_id for _ in range(2)]
    assert ids_first == [1, 2, 3]
    assert ids_second == [1, 2]
    rows = list(store.db["tool_invocation"].rows_where("session_id = ?", [first.session_id]))
    assert [r["invocation_id"] for r in rows] == [1, 2, 3]
    assert json.loads(rows[0]["retrieval_details"])["evidence_refs"][0]["raw_path"] == "$.no_evidence"


def test_unknown_session_is_not_found(db_path):
    store = TraceStore(db_path)
    with pytest.raises(NotFound, match="unknown session 'nope'"):
        store.load("nope")
    with pytest.raises(NotFound):
        store.record_invocation("nope", _invocation())


def test_export_import_round_trips_byte_for_byte(tmp_path, db_path):
    original = read_document(sample("broad-order-service"))
    store = TraceStore(db_path)
    session_id, created = store.import_document(original)
    assert created
    exported = to_canonical(store.load(session_id))
    assert exported == canonical_json(json.loads(sample("broad-order-service").read_text()))

    # and once more through a second database
    other = TraceStore(tmp_path / "other.db")
    other.import_document(SessionDocument.model_validate_json(exported))
    assert to_canonical(other.load(session_id)) == exported


def test_importing_twice_is_idempotent_and_conflicts_are_refused(db_path):
    store = TraceStore(db_path)
    document = read_document(sample("narrow-payment-highcpu"))
    assert store.import_document(document) == (document.run.session_id, True)
    assert store.import_document(document) == (document.run.session_id, False)
    assert store.db["diagnosis_run"].count == 1
    assert store.db["tool_invocation"].count == len(document.invocations)

    changed = document.model_copy(update={"run": document.run.model_copy(update={"question": "something else"})})
    with pytest.raises(BadInput, match="already exists with different content"):
        store.import_document(changed)
    assert store.load(document.run.session_id).run.question == document.run.question

    copy_id, created = store.import_document(changed, new_id="copy-1")
    assert (copy_id, created) == ("copy-1", True)
    assert store.load("copy-1").run.question == "something else"


def test_gate_results_are_appended_never_overwritten(db_path, rules):
    from evcli.gatekeeper.service import regate_stored

    store = TraceStore(db_path)
    session_id, _ = store.import_document(read_document(sample("narrow-payment-highcpu")))
    first = regate_stored(store, session_id, rules)
    second = regate_stored(store, session_id, rules)
    history = store.load(session_id).gate_results
    assert [g.seq for g in history] == [1, 2, 3]  # the sample carries one recorded result
    assert (first.seq, second.seq) == (2, 3)
    assert second.changes["unchanged"] is True


def test_interrupted_import_leaves_nothing_partial(db_path, monkeypatch):
    store = TraceStore(db_path)
    kept, _ = store.import_document(read_document(sample("narrow-payment-highcpu")))
    calls = {"n": 0}
    original = TraceStore._insert

    def interrupt_on_third_invocation(self, table, row):
        calls["n"] += table == "tool_invocation"
        if calls["n"] == 3:
            raise KeyboardInterrupt
        original(self, table, row)

    monkeypatch.setattr(TraceStore, "_insert", interrupt_on_third_invocation)
    with pytest.raises(KeyboardInterrupt):
        store.import_document(read_document(sample("broad-order-service")))
    assert not store.has_session("sample-broad-order-service")
    assert store.db["tool_invocation"].count == 1
    assert store.load(kept).run.session_id == kept


def test_corrupt_database_is_a_store_error(tmp_path):
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(StoreError, match="cannot open trace store"):
        TraceStore(corrupt)
    assert corrupt.read_bytes().startswith(b"this is not")  # left as it was


def test_missing_database_is_an_error_only_when_required(tmp_path):
    with pytest.raises(StoreError, match="no trace store at"):
        TraceStore(tmp_path / "absent.db", must_exist=True)
    assert not (tmp_path / "absent.db").exists()
    TraceStore(tmp_path / "created.db")
    assert (tmp_path / "created.db").exists()


def _writer(db_path: str, worker: int, sessions: int, shared: str, start) -> None:
    store = TraceStore(db_path)
    start.wait()  # both processes write at the same moment, not one after the other
    for index in range(sessions):
        run = store.create_session(f"worker {worker} question {index}")
        for _ in range(3):
            store.record_invocation(run.session_id, _invocation())
        store.record_invocation(shared, _invocation(tool=f"tool_{worker}"))


def test_two_processes_writing_at_once_lose_nothing(db_path):
    store = TraceStore(db_path)
    shared = store.create_session("shared").session_id
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    workers = [context.Process(target=_writer, args=(str(db_path), w, 60, shared, start)) for w in range(2)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0

    assert store.db["diagnosis_run"].count == 1 + 120
    shared_ids = [
        row["invocation_id"]
        for row in store.db["tool_invocation"].rows_where("session_id = ?", [shared], order_by="invocation_id")
    ]
    assert shared_ids == list(range(1, 121))
    per_session = store.db.execute(
        "SELECT count(*), min(invocation_id), max(invocation_id) FROM tool_invocation WHERE session_id != ? GROUP BY session_id",
        [shared],
    ).fetchall()
    assert len(per_session) == 120 and {tuple(row) for row in per_session} == {(3, 1, 3)}
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_every_sample_session_loads_and_reexports_identically():
    for path in sorted(SAMPLES.glob("*.json")):
        document = read_document(path)
        assert to_canonical(document) == canonical_json(json.loads(path.read_text())), path.name


def _stored_as(store: TraceStore, session_id: str, created_at: str) -> None:
    document = read_document(sample("narrow-payment-highcpu"))
    run = document.run.model_copy(update={"session_id": session_id, "created_at": created_at})
    store.import_document(document.model_copy(update={"run": run}))


def test_resolve_last_id_and_unique_prefix(db_path):
    store = TraceStore(db_path)
    with pytest.raises(NotFound, match="no session"):
        store.resolve("last")
    _stored_as(store, "abc-1", "2026-01-01T00:00:00Z")
    _stored_as(store, "abc-2", "2026-01-02T00:00:00Z")
    _stored_as(store, "xyz_9", "2025-12-31T00:00:00Z")
    assert store.resolve("last") == "abc-2"  # newest by creation time, not by id
    assert store.resolve("abc-1") == "abc-1"
    assert store.resolve("xy") == "xyz_9"
    with pytest.raises(BadInput, match="ambiguous: abc-1, abc-2"):
        store.resolve("abc")
    with pytest.raises(NotFound, match="unknown session 'ABC'"):
        store.resolve("ABC")  # ids are case-sensitive
    with pytest.raises(BadInput, match="not a valid session id"):
        store.resolve("xyz%")  # not a session id pattern → rejected before any query
    _stored_as(store, "abc", "2026-01-03T00:00:00Z")
    assert store.resolve("abc") == "abc"  # an exact id wins over being a prefix of others


def _open_new_file(opener, path: str, start, results) -> None:
    start.wait()  # every process opens the new file at the same moment
    try:
        opener(Path(path)).conn.close()
        results.put("ok")
    except StoreError as exc:
        results.put(exc.message)


@pytest.mark.parametrize("opener", [TraceStore, KnowledgeIndex])
def test_processes_opening_one_new_file_at_once_all_open_it(tmp_path, opener):
    # Switching a new file to WAL locks it without SQLite's busy handler: before connect_wal, one of
    # four processes got "database is locked" in about a third of such rounds.
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    for round_ in range(10):
        start = context.Barrier(4)
        path = str(tmp_path / f"round{round_}.db")
        workers = [context.Process(target=_open_new_file, args=(opener, path, start, results)) for _ in range(4)]
        for process in workers:
            process.start()
        for process in workers:
            process.join(60)
        assert [results.get(timeout=5) for _ in workers] == ["ok"] * 4


def test_error_counts_are_what_the_stored_session_holds(tmp_path):
    """A step failed by its status or by an error text (not an empty one); only the session's own rows."""
    with TraceStore(tmp_path / "evcli.db") as store:
        session, other = (store.create_session(question).session_id for question in ("counted", "not counted"))
        for number, success in enumerate((True, False, False, True), start=1):
            store.record_invocation(session, _tool_call(number, success))
        store.record_invocation(other, _tool_call(1, False))
        for index, (status, error) in enumerate(
            [("completed", None), ("error", None), ("completed", "model timed out"), ("completed", ""), ("error", "x")]
        ):
            store.record_step(session, AgentStep(agent="executor", step_index=index, status=status, error=error))
        store.record_step(other, AgentStep(agent="executor", step_index=0, status="error"))
        document = store.load(session)
        counted = store.error_counts(session)
    assert counted == {
        "tool_errors": sum(not invocation.success for invocation in document.invocations),
        "model_errors": sum(step.status == "error" or bool(step.error) for step in document.steps),
    }
    assert counted == {"tool_errors": 2, "model_errors": 3}


def _tool_call(number: int, success: bool) -> ToolInvocation:
    return ToolInvocation(
        invocation_id=number,
        tool_name="query_logs",
        input_params={"service": "auth", "query": f"call {number}"},
        success=success,
        error_message=None if success else "timed out after 15s",
    )
