"""The trace store: one SQLite file, one class.

Every write runs in a `BEGIN IMMEDIATE` transaction so two processes writing
the same database queue on the busy timeout instead of failing mid-way (a
deferred transaction that upgrades to a write lock can fail at once in WAL
mode), and a Ctrl-C mid-write rolls back cleanly.

A run in progress (status `created` or `running`) records its owner: host,
pid and the process start time. A process that stops writing normally
releases its runs (owner NULL: a stage-by-stage session waiting for its next
command); a process killed while it owns one leaves an owner that no longer
exists, and such a run reads back as `interrupted`.

Reads use the sqlite3 connection directly; sqlite-utils (which takes ~0.1 s to
import) is loaded only to migrate or write, so `evcli trace` and
`evcli sessions` start fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evcli.canonical import canonical_json
from evcli.contracts import (
    AgentStep,
    GateResult,
    Mode,
    RunRecord,
    SessionConfig,
    SessionDocument,
    StageOutput,
    StoredGateResult,
    ToolInvocation,
)
from evcli.errors import BadInput, NotFound, StoreError, store_failure
from evcli.store.documents import check_session_id
from evcli.store.ownership import ACTIVE_STATUSES, INTERRUPTED, owner_alive, process_identity, shown_status
from evcli.store.query import ENV_DIR_SQL, ENV_LIVE_SQL, SessionQuery, environment_label, iso_utc
from evcli.store.sqlite import connect_wal

if TYPE_CHECKING:
    from sqlite_utils import Database

DB_FILENAME = "evcli.db"
# Every migration in evcli/store/migrations.py, oldest first (a test keeps them in step).
SCHEMA_MIGRATIONS = (
    "m001_trace_tables",
    "m002_lookup_indexes",
    "m003_run_owner",
    "m004_newest_first_index",
    "m005_alert_queue",
)
_JSON_RUN_FIELDS = ("config", "prompt_audit", "self_evaluation", "annotations")
# Runs this process is writing and has not yet finished or released, by session id.
_owned: dict[str, TraceStore] = {}


def default_db_path() -> Path:
    """`$EVCLI_HOME/evcli.db`, else the per-user app dir."""
    home = os.environ.get("EVCLI_HOME")
    if home:
        return Path(home).expanduser() / DB_FILENAME
    import typer  # deferred: only needed when no EVCLI_HOME is set

    return Path(typer.get_app_dir("evcli")) / DB_FILENAME


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_session_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


def interrupt_owned_runs() -> list[tuple[str, str]]:
    """Mark every run this process still owns as interrupted; (session id, what it keeps) for each.

    Called on Ctrl-C or a failed command. A store that cannot be written any
    more (disk full) keeps the owner, so the run reads back as interrupted anyway.
    """
    marked = []
    for session_id, store in list(_owned.items()):
        try:
            if store.mark_interrupted(session_id):
                marked.append((session_id, store.kept_summary(session_id)))
        except (sqlite3.Error, StoreError):
            marked.append((session_id, "what was written before the failure"))
    _owned.clear()
    return marked


def release_owned_runs() -> None:
    """A command ends normally: the runs it wrote wait, unowned, for the next stage command."""
    for session_id, store in list(_owned.items()):
        with contextlib.suppress(sqlite3.Error, StoreError):
            with store._write():
                store.conn.execute("UPDATE diagnosis_run SET owner = NULL WHERE session_id = ?", [session_id])
    _owned.clear()


def _dump(value: Any) -> str | None:
    return None if value is None else canonical_json(value)


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


_TABLES = ("diagnosis_run", "agent_step", "tool_invocation", "stage_output", "gate_result")
_FAILED = ("failed", INTERRUPTED)
_FAILED_VERDICTS = ("LOW_CONFID", "REJECT")


class _QueueFull(Exception):
    """Raised inside a write transaction to roll back a delivery that does not fit in the alert queue."""


class TraceStore:
    def __init__(self, path: Path, *, must_exist: bool = False) -> None:
        self.path = Path(path)
        if must_exist and not self.path.exists():
            raise StoreError(
                f"no trace store at {self.path}", hint="pass --db with an existing file, or set EVCLI_HOME"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = connect_wal(self.path)
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._db: Database | None = None
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open trace store {self.path}: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"cannot open trace store {self.path}: {exc.strerror or exc}") from exc

    @property
    def db(self) -> Database:
        """The sqlite-utils view of the connection, for writes and migrations."""
        if self._db is None:
            from sqlite_utils import Database

            self._db = Database(self.conn)
        return self._db

    def _applied_migrations(self) -> set[str]:
        try:
            rows = self.conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = 'evcli'").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            return set()
        return {row[0] for row in rows}

    def _migrate(self) -> None:
        if self._applied_migrations() >= set(SCHEMA_MIGRATIONS):
            return
        from evcli.store.migrations import migrations

        # pending() is re-read under the write lock: another process may have migrated meanwhile.
        with self._write():
            migrations.apply(self.db)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                if conn.in_transaction:  # SQLite ends the transaction itself on a full disk
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            raise store_failure(self.path, exc) from exc

    # --- sessions ----------------------------------------------------------

    def create_session(self, question: str, *, mode: Mode = "chat", config: SessionConfig | None = None) -> RunRecord:
        stamp = now_iso()
        run = RunRecord(
            session_id=new_session_id(),
            question=question,
            mode=mode,
            config=config or SessionConfig(),
            created_at=stamp,
            updated_at=stamp,
        )
        with self._write():
            self._insert_run(run)
        return run

    def has_session(self, session_id: str) -> bool:
        return bool(self.conn.execute("SELECT 1 FROM diagnosis_run WHERE session_id = ?", [session_id]).fetchone())

    def update_run(self, session_id: str, **fields: Any) -> None:
        self._require(session_id)
        row = {key: _dump(value) if key in _JSON_RUN_FIELDS else value for key, value in fields.items()}
        row["updated_at"] = now_iso()
        if "status" in fields:
            row["owner"] = self._own(session_id, fields["status"])
        with self._write():
            self.db.table("diagnosis_run").update(session_id, row)

    def mark_interrupted(self, session_id: str) -> bool:
        """Set an active run to interrupted and drop its owner; False if it had already ended."""
        with self._write():
            cursor = self.conn.execute(
                "UPDATE diagnosis_run SET status = ?, owner = NULL, updated_at = ? WHERE session_id = ? AND status IN (?, ?)",
                [INTERRUPTED, now_iso(), session_id, *ACTIVE_STATUSES],
            )
        _owned.pop(session_id, None)
        return cursor.rowcount > 0

    def kept_summary(self, session_id: str) -> str:
        """What an interrupted run keeps, in words: its stored stages and counts."""
        stages = [
            row[0]
            for row in self.conn.execute(
                "SELECT stage FROM stage_output WHERE session_id = ? GROUP BY stage ORDER BY min(id)", [session_id]
            )
        ]
        (invocations,) = self.conn.execute(
            "SELECT count(*) FROM tool_invocation WHERE session_id = ?", [session_id]
        ).fetchone()
        (gates,) = self.conn.execute("SELECT count(*) FROM gate_result WHERE session_id = ?", [session_id]).fetchone()
        parts = [
            f"stages {', '.join(stages)}" if stages else "no stage output",
            f"{invocations} tool invocation{'s' * (invocations != 1)}",
            f"{gates} gate result{'s' * (gates != 1)}",
        ]
        return ", ".join(parts)

    def _own(self, session_id: str, status: str) -> str | None:
        """The owner column for a run entering `status`: this process while it is active."""
        if status in ACTIVE_STATUSES:
            _owned[session_id] = self
            return process_identity()
        _owned.pop(session_id, None)
        return None

    def list_sessions(self, limit: int = 20, query: SessionQuery | None = None) -> list[dict[str, Any]]:
        """Newest first, with counts, the environment and the latest gate outcome of each session
        that matches `query`."""
        where, params = (query or SessionQuery()).where()
        # A shown status of an active run depends on its owner: filter those after reading.
        after_read = query is not None and query.status in (*ACTIVE_STATUSES, INTERRUPTED)
        rows = self.conn.execute(
            f"""
            SELECT r.session_id, r.question, r.mode, r.status, r.owner, r.verdict, r.created_at,
                   {ENV_DIR_SQL} AS env_dir, {ENV_LIVE_SQL} AS env_live,
                   (SELECT count(*) FROM tool_invocation t WHERE t.session_id = r.session_id) AS invocations,
                   (SELECT g.severity FROM gate_result g WHERE g.session_id = r.session_id
                     ORDER BY g.seq DESC LIMIT 1) AS gate_severity
            FROM diagnosis_run r {where} ORDER BY r.created_at DESC, r.session_id DESC LIMIT ?
            """,
            [*params, -1 if after_read else min(limit, 2**63 - 1)],
        )
        listed = []
        for row in map(dict, rows):
            row["status"] = shown_status(row["status"], row.pop("owner"))
            row["environment"] = environment_label(row.pop("env_dir"), bool(row.pop("env_live")))
            if not after_read or (query is not None and row["status"] == query.status):
                listed.append(row)
        return listed[:limit]

    def delete_sessions(self, session_ids: list[str]) -> list[str]:
        """Delete these sessions and every row they own in one transaction, then VACUUM.

        A run another live process is still writing is refused (nothing is deleted)."""
        with self._write():
            for session_id in session_ids:
                self._require_deletable(session_id)
            for table in reversed(_TABLES):  # children before the run they reference
                self.conn.executemany(
                    f"DELETE FROM {table} WHERE session_id = ?", [[session_id] for session_id in session_ids]
                )
        if session_ids:
            self.vacuum()
        return session_ids

    def prunable(self, older_than: datetime, *, keep_failed: bool = False) -> list[str]:
        """Ids of the sessions created before `older_than`, oldest first, that a prune deletes: never an
        active run, and with `keep_failed` none that ended badly (status failed or interrupted, verdict
        LOW_CONFID or REJECT)."""
        rows = self.conn.execute(
            "SELECT session_id, status, owner, verdict FROM diagnosis_run WHERE created_at < ? "
            "ORDER BY created_at, session_id",
            [iso_utc(older_than)],
        ).fetchall()
        chosen = []
        for session_id, status, owner, verdict in rows:
            shown = shown_status(status, owner)
            if shown in ACTIVE_STATUSES or (keep_failed and (shown in _FAILED or verdict in _FAILED_VERDICTS)):
                continue
            chosen.append(str(session_id))
        return chosen

    def vacuum(self) -> None:
        """Give the pages of deleted rows back to the file system (VACUUM runs outside a transaction;
        in WAL mode the smaller file appears only once the log is checkpointed into it)."""
        try:
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError as exc:
            raise store_failure(self.path, exc) from exc

    def stats(self) -> dict[str, Any]:
        """The file's size on disk (with its WAL), rows per table, sessions by status, verdict and
        environment, and the oldest and newest session."""
        files = [self.path, self.path.with_name(self.path.name + "-wal")]
        counted: dict[str, Any] = {
            "path": str(self.path),
            "size_bytes": sum(file.stat().st_size for file in files if file.exists()),
            "rows": {table: self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in _TABLES},
        }
        sessions = self.list_sessions(2**62)
        for key in ("status", "verdict", "environment", "mode"):
            tally: dict[str, int] = {}
            for row in sessions:
                tally[row[key] or "-"] = tally.get(row[key] or "-", 0) + 1
            counted[f"by_{key}"] = dict(sorted(tally.items()))
        counted["oldest"] = sessions[-1]["created_at"] if sessions else None
        counted["newest"] = sessions[0]["created_at"] if sessions else None
        return counted

    def _require_deletable(self, session_id: str) -> None:
        found = self.conn.execute(
            "SELECT status, owner FROM diagnosis_run WHERE session_id = ?", [session_id]
        ).fetchone()
        if found is None:
            raise NotFound(f"unknown session {session_id!r}", hint="list sessions with `evcli sessions`")
        if found[0] in ACTIVE_STATUSES and found[1] and owner_alive(found[1]) and session_id not in _owned:
            raise BadInput(f"session {session_id} is still being written by another process", hint="wait for it")

    # --- recording ---------------------------------------------------------

    def record_invocation(
        self,
        session_id: str,
        invocation: ToolInvocation,
        *,
        check: Callable[[list[ToolInvocation]], None] | None = None,
    ) -> ToolInvocation:
        """Store a tool call under the session's next id (1, 2, 3, ...); the given id is ignored.

        `check` is shown the session's stored invocations inside the same write transaction and
        refuses the call by raising: a cap checked there holds however many processes race."""
        self._require(session_id)
        with self._write():
            if check is not None:
                check(
                    [
                        self._invocation_from_row(row)
                        for row in self._rows("tool_invocation", session_id, "invocation_id")
                    ]
                )
            (last,) = self.conn.execute(
                "SELECT coalesce(max(invocation_id), 0) FROM tool_invocation WHERE session_id = ?", [session_id]
            ).fetchone()
            stored = invocation.model_copy(
                update={"invocation_id": last + 1, "created_at": invocation.created_at or now_iso()}
            )
            self._insert_invocation(session_id, stored)
        return stored

    def record_step(self, session_id: str, step: AgentStep) -> None:
        self._require(session_id)
        with self._write():
            self._insert_step(session_id, step)

    def record_stage_output(self, session_id: str, output: StageOutput) -> None:
        self._require(session_id)
        with self._write():
            self._insert_stage_output(session_id, output)

    def append_gate_result(self, session_id: str, result: GateResult, *, round: int = 1) -> StoredGateResult:
        """Add a gate result to the session's history; earlier results are never touched."""
        self._require(session_id)
        with self._write():
            (last,) = self.conn.execute(
                "SELECT coalesce(max(seq), 0) FROM gate_result WHERE session_id = ?", [session_id]
            ).fetchone()
            stored = StoredGateResult(seq=last + 1, round=round, created_at=now_iso(), result=result)
            self._insert_gate_result(session_id, stored)
        return stored

    # --- documents -----------------------------------------------------------

    def resolve(self, reference: str) -> str:
        """The session id `reference` names: `last` (the newest session), an id, or a unique prefix of one."""
        if reference == "last":
            newest = self.conn.execute(
                "SELECT session_id FROM diagnosis_run ORDER BY created_at DESC, session_id DESC LIMIT 1"
            ).fetchone()
            if newest is None:
                raise NotFound("no session is stored yet", hint="run `evcli ask` first")
            return str(newest[0])
        check_session_id(reference)
        rows = self.conn.execute(  # substr, not LIKE: ids are case-sensitive
            "SELECT session_id FROM diagnosis_run WHERE substr(session_id, 1, ?) = ? LIMIT 6",
            [len(reference), reference],
        ).fetchall()
        ids = sorted(str(row[0]) for row in rows)
        if reference in ids or len(ids) == 1:
            return reference if reference in ids else ids[0]
        if not ids:
            raise NotFound(f"unknown session {reference!r}", hint="list sessions with `evcli sessions`")
        raise BadInput(
            f"session prefix {reference!r} is ambiguous: {', '.join(ids[:5])}{' …' if len(ids) > 5 else ''}",
            hint="give more of the id",
        )

    def load(self, session_id: str) -> SessionDocument:
        check_session_id(session_id)
        found = self.conn.execute("SELECT * FROM diagnosis_run WHERE session_id = ?", [session_id]).fetchone()
        if found is None:
            raise NotFound(f"unknown session {session_id!r}", hint="list sessions with `evcli sessions`")
        run = dict(found)
        run["status"] = shown_status(run["status"], run.pop("owner"))
        for key in _JSON_RUN_FIELDS:
            run[key] = _load(run[key]) or {}
        return SessionDocument(
            run=RunRecord.model_validate(run),
            steps=[self._step_from_row(r) for r in self._rows("agent_step", session_id, "round, step_index, id")],
            invocations=[
                self._invocation_from_row(r) for r in self._rows("tool_invocation", session_id, "invocation_id")
            ],
            stage_outputs=[self._stage_from_row(r) for r in self._rows("stage_output", session_id, "id")],
            gate_results=[
                StoredGateResult(
                    seq=r["seq"],
                    round=r["round"],
                    created_at=r["created_at"],
                    result=GateResult.model_validate_json(r["result"]),
                )
                for r in self._rows("gate_result", session_id, "seq")
            ],
        )

    def import_document(self, document: SessionDocument, *, new_id: str | None = None) -> tuple[str, bool]:
        """Store an exported session. Returns (session_id, created).

        Importing a document that is already stored unchanged is a no-op; a
        different document under the same id is refused, never merged.
        """
        if new_id is not None:  # model_copy skips validation: check the id here
            check_session_id(new_id)
            document = document.model_copy(update={"run": document.run.model_copy(update={"session_id": new_id})})
        session_id = document.run.session_id
        with self._write():
            if self.has_session(session_id):
                if canonical_json(self.load(session_id).model_dump(mode="json")) == canonical_json(
                    document.model_dump(mode="json")
                ):
                    return session_id, False
                raise BadInput(
                    f"session {session_id} already exists with different content",
                    hint="import it under another id with --new-id",
                )
            try:
                self._insert_run(document.run)
                for step in document.steps:
                    self._insert_step(session_id, step)
                for invocation in document.invocations:
                    self._insert_invocation(session_id, invocation)
                for output in document.stage_outputs:
                    self._insert_stage_output(session_id, output)
                for gate_result in document.gate_results:
                    self._insert_gate_result(session_id, gate_result)
            except (sqlite3.IntegrityError, OverflowError) as exc:  # duplicate ids, ids beyond 64 bits
                raise BadInput(f"session {session_id} cannot be stored: {exc}") from exc
        return session_id, True

    # --- alert queue (evcli serve) --------------------------------------------

    def enqueue_alerts(self, alerts: list[dict[str, Any]], *, max_queue: int, repeat_since: str) -> dict | None:
        """Store a delivery's alerts in one transaction: each firing one queued for diagnosis unless the same
        group key and fingerprint fired since `repeat_since` (a duplicate), each resolved one recorded and linked
        to the firing row it ends. None (and nothing stored) when the queued ones would not fit in `max_queue`.

        An alert is a dict of group_key, fingerprint, alertname, status (firing | resolved) and alert (JSON)."""
        counts = {"queued": 0, "duplicates": 0, "resolved": 0}
        try:
            with self._write():
                depth = self.conn.execute(
                    "SELECT count(*) FROM alert_queue WHERE state IN ('queued', 'running')"
                ).fetchone()[0]
                for alert in alerts:
                    counts[self._enqueue_one(alert, repeat_since)] += 1
                if depth + counts["queued"] > max_queue:
                    raise _QueueFull  # rolls the whole delivery back
        except _QueueFull:
            return None
        return counts

    def _enqueue_one(self, alert: dict[str, Any], repeat_since: str) -> str:
        last = self.conn.execute(
            "SELECT id, status, received_at FROM alert_queue WHERE fingerprint = ? AND group_key = ? "
            "ORDER BY id DESC LIMIT 1",
            [alert["fingerprint"], alert["group_key"]],
        ).fetchone()
        firing = alert["status"] == "firing"
        if (
            last is not None
            and last["status"] == alert["status"]
            and (not firing or last["received_at"] >= repeat_since)
        ):
            return "duplicates"
        row = {**alert, "alert": _dump(alert["alert"]), "attempts": 0, "received_at": now_iso()}
        row["state"] = "queued" if firing else "resolved"
        if not firing and last is not None:
            row["resolves"] = last["id"]
        self.db.table("alert_queue").insert(row)
        return "queued" if firing else "resolved"

    def claim_alert(self) -> dict[str, Any] | None:
        """The oldest queued alert, now `running` and owned by this process; None when nothing is queued."""
        with self._write():
            row = self.conn.execute("SELECT * FROM alert_queue WHERE state = 'queued' ORDER BY id LIMIT 1").fetchone()
            if row is None:
                return None
            claimed = {"state": "running", "owner": process_identity(), "attempts": row["attempts"] + 1}
            self.db.table("alert_queue").update(row["id"], claimed)
        return {**dict(row), **claimed, "alert": _load(row["alert"])}

    def finish_alert(self, alert_id: int, **outcome: Any) -> None:
        """A claimed alert is done (`session_id`, `verdict`, `duration_s`, error counts) or failed (`error`)."""
        state = "failed" if outcome.get("error") else "done"
        with self._write():
            self.db.table("alert_queue").update(
                alert_id, {**outcome, "state": state, "owner": None, "finished_at": now_iso()}
            )

    def attach_session(self, alert_id: int, session_id: str) -> None:
        """The session diagnosing a claimed alert, recorded as soon as it exists."""
        with self._write():
            self.conn.execute("UPDATE alert_queue SET session_id = ? WHERE id = ?", [session_id, alert_id])

    def requeue_orphaned_alerts(self) -> tuple[int, int]:
        """Alerts whose diagnosing process died: queued again, or done when their session had completed
        (the process died before recording the outcome). Returns (queued again, marked done)."""
        with self._write():
            rows = self.conn.execute(
                "SELECT q.id, q.owner, r.status, r.verdict FROM alert_queue q "
                "LEFT JOIN diagnosis_run r ON r.session_id = q.session_id WHERE q.state = 'running'"
            ).fetchall()
            orphans = [row for row in rows if not owner_alive(row["owner"] or "")]
            requeued = finished = 0
            for row in orphans:
                if row["status"] == "completed":
                    self.conn.execute(
                        "UPDATE alert_queue SET state = 'done', owner = NULL, verdict = ?, finished_at = ? WHERE id = ?",
                        [row["verdict"], now_iso(), row["id"]],
                    )
                    finished += 1
                else:
                    self.conn.execute("UPDATE alert_queue SET state = 'queued', owner = NULL WHERE id = ?", [row["id"]])
                    requeued += 1
        return requeued, finished

    def alert_queue_stats(self, buckets: tuple[float, ...]) -> dict[str, Any]:
        """Aggregates of the alert queue for /metrics, in SQL (no row is loaded): rows per state, finished
        diagnoses per verdict (`failed` for an error), error sums, and duration counts at most each bucket."""
        states = dict(self.conn.execute("SELECT state, count(*) FROM alert_queue GROUP BY state").fetchall())
        finished = "FROM alert_queue WHERE state IN ('done', 'failed')"
        verdicts = self.conn.execute(
            f"SELECT CASE WHEN state = 'failed' THEN 'failed' ELSE coalesce(verdict, 'none') END, count(*) "
            f"{finished} GROUP BY 1"
        ).fetchall()
        bucket_sql = ", ".join("sum(coalesce(duration_s, 0) <= ?)" for _ in buckets)
        row = self.conn.execute(
            f"SELECT count(*), coalesce(sum(duration_s), 0), coalesce(sum(tool_errors), 0), "
            f"coalesce(sum(model_errors), 0){', ' + bucket_sql if buckets else ''} {finished}",
            list(buckets),
        ).fetchone()
        return {
            "states": states,
            "verdicts": dict(verdicts),
            "count": row[0],
            "duration_sum": row[1],
            "tool_errors": row[2],
            "model_errors": row[3],
            "buckets": [value or 0 for value in row[4:]],
        }

    def alert_queue_rows(self, where: str = "", params: list[Any] | None = None) -> list[dict[str, Any]]:
        """Rows of the alert queue, oldest first; `where` is a constant SQL condition of the caller."""
        query = f"SELECT * FROM alert_queue {('WHERE ' + where) if where else ''} ORDER BY id"
        return [{**dict(row), "alert": _load(row["alert"])} for row in self.conn.execute(query, params or [])]

    # --- rows --------------------------------------------------------------

    def _require(self, session_id: str) -> None:
        """A session about to be written: it must exist, and an active one becomes this process's."""
        if not self.has_session(session_id):
            raise NotFound(f"unknown session {session_id!r}", hint="list sessions with `evcli sessions`")
        if session_id not in _owned:
            with self._write():
                claimed = self.conn.execute(
                    "UPDATE diagnosis_run SET owner = ? WHERE session_id = ? AND status IN (?, ?)",
                    [process_identity(), session_id, *ACTIVE_STATUSES],
                ).rowcount
            if claimed:
                _owned[session_id] = self

    def _rows(self, table: str, session_id: str, order_by: str) -> list[dict[str, Any]]:
        # table and order_by are constants of this class, never user input
        query = f"SELECT * FROM {table} WHERE session_id = ? ORDER BY {order_by}"
        return [dict(row) for row in self.conn.execute(query, [session_id])]

    def _insert_run(self, run: RunRecord) -> None:
        row = {**run.model_dump(), "owner": self._own(run.session_id, run.status)}
        for key in _JSON_RUN_FIELDS:
            row[key] = _dump(row[key])
        self.db.table("diagnosis_run").insert(row)

    def _insert_step(self, session_id: str, step: AgentStep) -> None:
        self.db.table("agent_step").insert(
            {"session_id": session_id, **step.model_dump(), "has_tool_call": int(step.has_tool_call)}
        )

    def _insert_invocation(self, session_id: str, invocation: ToolInvocation) -> None:
        row = invocation.model_dump(mode="json")
        for key in ("input_params", "output", "retrieval_details"):
            row[key] = _dump(row[key])
        row["success"] = int(invocation.success)
        self.db.table("tool_invocation").insert({"session_id": session_id, **row})

    def _insert_stage_output(self, session_id: str, output: StageOutput) -> None:
        row = output.model_dump(mode="json")
        row["output"] = _dump(row["output"])
        row["parse_status"] = _dump(row["parse_status"])
        self.db.table("stage_output").insert(
            {"session_id": session_id, **row, "created_at": output.created_at or now_iso()}
        )

    def _insert_gate_result(self, session_id: str, stored: StoredGateResult) -> None:
        result = stored.result
        self.db.table("gate_result").insert(
            {
                "session_id": session_id,
                "seq": stored.seq,
                "round": stored.round,
                "rule_set_version": result.rule_set_version,
                "rules_hash": result.rules_hash,
                "status": result.status,
                "severity": result.severity,
                "result": canonical_json(result.model_dump(mode="json")),
                "created_at": stored.created_at,
            }
        )

    @staticmethod
    def _step_from_row(row: dict[str, Any]) -> AgentStep:
        row = {k: v for k, v in row.items() if k not in ("id", "session_id")}
        row["has_tool_call"] = bool(row["has_tool_call"])
        return AgentStep.model_validate(row)

    @staticmethod
    def _invocation_from_row(row: dict[str, Any]) -> ToolInvocation:
        row = {k: v for k, v in row.items() if k != "session_id"}
        for key in ("input_params", "output", "retrieval_details"):
            row[key] = _load(row[key])
        row["success"] = bool(row["success"])
        return ToolInvocation.model_validate(row)

    @staticmethod
    def _stage_from_row(row: dict[str, Any]) -> StageOutput:
        row = {k: v for k, v in row.items() if k not in ("id", "session_id")}
        row["output"] = _load(row["output"])
        row["parse_status"] = _load(row["parse_status"]) or {}
        return StageOutput.model_validate(row)
