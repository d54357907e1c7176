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

Opening a store written by a newer evcli (a migration this one does not know)
is refused before anything is written; the schema and SQLite's quick_check
live in evcli/store/health.py, how each model becomes a row in
evcli/store/codec.py. Deleting a session another process deleted first is
skipped and counted, never an error, so concurrent prunes and deletes all end.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

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
from evcli.core.canonical import canonical_json
from evcli.core.errors import BadInput, NotFound, StoreError, store_failure
from evcli.core.time import now_iso
from evcli.store import codec
from evcli.store.documents import check_session_id
from evcli.store.health import SCHEMA_MIGRATIONS, IntegrityCheck, applied_migrations, check_integrity, newer_schema
from evcli.store.ownership import ACTIVE_STATUSES, INTERRUPTED, owner_alive, process_identity, shown_status
from evcli.store.query import ENV_DIR_SQL, ENV_LIVE_SQL, SessionQuery, environment_label, iso_utc
from evcli.store.sqlite import connect_wal

if TYPE_CHECKING:
    from sqlite_utils import Database

__all__ = ["SCHEMA_MIGRATIONS", "Deletion", "TraceStore"]
# Runs this process is writing and has not yet finished or released, by session id.
_owned: dict[str, TraceStore] = {}


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


_TABLES = ("diagnosis_run", "agent_step", "tool_invocation", "stage_output", "gate_result")
_FAILED = ("failed", INTERRUPTED)
_FAILED_VERDICTS = ("LOW_CONFID", "REJECT")


class _QueueFull(Exception):
    """Raised inside a write transaction to roll back a delivery that does not fit in the alert queue."""


class Deletion(BaseModel):
    """What a delete did: the sessions it deleted, and those another process had deleted first (skipped)."""

    model_config = ConfigDict(frozen=True)

    deleted: list[str]
    already_gone: list[str]


_ERROR_COUNTS = (
    "SELECT (SELECT count(*) FROM tool_invocation WHERE session_id = :session AND NOT success),"
    " (SELECT count(*) FROM agent_step WHERE session_id = :session AND (status = 'error' OR error != ''))"
)


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
            self._close_quietly()
            raise store_failure(self.path, exc, opening=True) from exc
        except StoreError:
            self._close_quietly()
            raise
        except OSError as exc:
            raise StoreError(f"cannot open trace store {self.path}: {exc.strerror or exc}") from exc

    @property
    def db(self) -> Database:
        """The sqlite-utils view of the connection, for writes and migrations."""
        if self._db is None:
            from sqlite_utils import Database

            self._db = Database(self.conn)
        return self._db

    def _migrate(self) -> None:
        applied = applied_migrations(self.conn)
        if refusal := newer_schema(self.path, applied):
            raise refusal
        if applied >= set(SCHEMA_MIGRATIONS):
            return
        from evcli.store.migrations import migrations

        # Both are re-read under the write lock: another process may have migrated meanwhile, even a newer evcli.
        with self._write():
            if refusal := newer_schema(self.path, applied_migrations(self.conn)):
                raise refusal
            migrations.apply(self.db)

    def check_integrity(self) -> IntegrityCheck:
        """SQLite's quick_check of this store's file, started in the background (once per process)."""
        return check_integrity(self.path)

    def close(self) -> None:
        self.conn.close()

    def _close_quietly(self) -> None:
        if hasattr(self, "conn"):
            with contextlib.suppress(sqlite3.Error):
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
        row = {key: codec.dump(value) if key in codec.JSON_RUN_FIELDS else value for key, value in fields.items()}
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

    def delete_sessions(self, session_ids: list[str]) -> Deletion:
        """Delete these sessions and every row they own in one transaction, then VACUUM.

        A session another process deleted first (a concurrent delete or prune) is skipped and counted as
        already gone; a run another live process is still writing is refused (nothing is deleted)."""
        with self._write():
            present = [session_id for session_id in session_ids if self._deletable(session_id)]
            for table in reversed(_TABLES):  # children before the run they reference
                self.conn.executemany(
                    f"DELETE FROM {table} WHERE session_id = ?", [[session_id] for session_id in present]
                )
        if present:
            self.vacuum()
        return Deletion(deleted=present, already_gone=[sid for sid in session_ids if sid not in set(present)])

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

    def _deletable(self, session_id: str) -> bool:
        """Whether the session is still stored; refused (BadInput) while another live process writes it."""
        found = self.conn.execute(
            "SELECT status, owner FROM diagnosis_run WHERE session_id = ?", [session_id]
        ).fetchone()
        if found is None:
            return False
        if found[0] in ACTIVE_STATUSES and found[1] and owner_alive(found[1]) and session_id not in _owned:
            raise BadInput(f"session {session_id} is still being written by another process", hint="wait for it")
        return True

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
                        codec.invocation_from_row(row)
                        for row in self._rows("tool_invocation", session_id, "invocation_id")
                    ]
                )
            (last,) = self.conn.execute(
                "SELECT coalesce(max(invocation_id), 0) FROM tool_invocation WHERE session_id = ?", [session_id]
            ).fetchone()
            stored = invocation.model_copy(
                update={"invocation_id": last + 1, "created_at": invocation.created_at or now_iso()}
            )
            self._insert("tool_invocation", codec.invocation_row(session_id, stored))
        return stored

    def record_step(self, session_id: str, step: AgentStep) -> None:
        self._require(session_id)
        with self._write():
            self._insert("agent_step", codec.step_row(session_id, step))

    def record_stage_output(self, session_id: str, output: StageOutput) -> None:
        self._require(session_id)
        with self._write():
            self._insert("stage_output", codec.stage_output_row(session_id, output, now_iso()))

    def append_gate_result(self, session_id: str, result: GateResult, *, round: int = 1) -> StoredGateResult:
        """Add a gate result to the session's history; earlier results are never touched."""
        self._require(session_id)
        with self._write():
            (last,) = self.conn.execute(
                "SELECT coalesce(max(seq), 0) FROM gate_result WHERE session_id = ?", [session_id]
            ).fetchone()
            stored = StoredGateResult(seq=last + 1, round=round, created_at=now_iso(), result=result)
            self._insert("gate_result", codec.gate_result_row(session_id, stored))
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
        return SessionDocument(
            run=codec.run_from_row(dict(found), shown_status(found["status"], found["owner"])),
            steps=[codec.step_from_row(r) for r in self._rows("agent_step", session_id, "round, step_index, id")],
            invocations=[
                codec.invocation_from_row(r) for r in self._rows("tool_invocation", session_id, "invocation_id")
            ],
            stage_outputs=[codec.stage_from_row(r) for r in self._rows("stage_output", session_id, "id")],
            gate_results=[codec.gate_result_from_row(r) for r in self._rows("gate_result", session_id, "seq")],
        )

    def error_counts(self, session_id: str) -> dict[str, int]:
        """The session's failed tool calls and failed model calls, as `load` would give them
        (`not invocation.success`; `step.status == "error" or bool(step.error)`) without loading the session:
        a serve worker counts them after each diagnosis (loading the whole document cost 1.1 ms of each)."""
        tools, models = self.conn.execute(_ERROR_COUNTS, {"session": session_id}).fetchone()
        return {"tool_errors": tools, "model_errors": models}

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
                    self._insert("agent_step", codec.step_row(session_id, step))
                for invocation in document.invocations:
                    self._insert("tool_invocation", codec.invocation_row(session_id, invocation))
                for output in document.stage_outputs:
                    self._insert("stage_output", codec.stage_output_row(session_id, output, now_iso()))
                for gate_result in document.gate_results:
                    self._insert("gate_result", codec.gate_result_row(session_id, gate_result))
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
        row = {**alert, "alert": codec.dump(alert["alert"]), "attempts": 0, "received_at": now_iso()}
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
        return {**dict(row), **claimed, "alert": codec.load(row["alert"])}

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
        return [{**dict(row), "alert": codec.load(row["alert"])} for row in self.conn.execute(query, params or [])]

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
        self._insert("diagnosis_run", codec.run_row(run, self._own(run.session_id, run.status)))

    def _insert(self, table: str, row: dict[str, Any]) -> None:
        self.db.table(table).insert(row)
