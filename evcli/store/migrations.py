"""Forward-only schema migrations of the trace store.

Never edit a migration once released; add a new one. Table and column names
follow the specification (diagnosis_run, agent_step, tool_invocation).
"""

from __future__ import annotations

from sqlite_utils import Database, Migrations

migrations = Migrations("evcli")


@migrations()
def m001_trace_tables(db: Database) -> None:
    db.table("diagnosis_run").create(
        {
            "session_id": str,
            "question": str,
            "mode": str,
            "status": str,
            "verdict": str,
            "config": str,
            "prompt_audit": str,
            "self_evaluation": str,
            "annotations": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="session_id",
        not_null={"session_id", "created_at"},
    )
    db.table("agent_step").create(
        {
            "id": int,
            "session_id": str,
            "agent": str,
            "round": int,
            "step_index": int,
            "model": str,
            "model_input_summary": str,
            "model_output_summary": str,
            "has_tool_call": int,
            "duration_ms": float,
            "prompt_tokens": int,
            "completion_tokens": int,
            "status": str,
            "error": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("session_id", "diagnosis_run", "session_id")],
    )
    db.table("tool_invocation").create(
        {
            "session_id": str,
            "invocation_id": int,
            "round": int,
            "tool_name": str,
            "input_params": str,
            "output": str,
            "output_preview": str,
            "retrieval_details": str,
            "relevance_level": str,
            "dedup_reason": str,
            "duration_ms": float,
            "success": int,
            "error_message": str,
            "created_at": str,
        },
        pk=("session_id", "invocation_id"),
        foreign_keys=[("session_id", "diagnosis_run", "session_id")],
    )
    db.table("stage_output").create(
        {
            "id": int,
            "session_id": str,
            "round": int,
            "stage": str,
            "status": str,
            "output": str,
            "parse_status": str,
            "raw_text": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("session_id", "diagnosis_run", "session_id")],
    )
    db.table("gate_result").create(
        {
            "id": int,
            "session_id": str,
            "seq": int,
            "round": int,
            "rule_set_version": str,
            "rules_hash": str,
            "status": str,
            "severity": str,
            "result": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("session_id", "diagnosis_run", "session_id")],
    )


@migrations()
def m002_lookup_indexes(db: Database) -> None:
    # Listing newest sessions and loading one session must stay fast at 10k+ sessions.
    db.table("diagnosis_run").create_index(["created_at"])
    db.table("agent_step").create_index(["session_id", "round", "step_index"])
    db.table("stage_output").create_index(["session_id", "id"])
    db.table("gate_result").create_index(["session_id", "seq"], unique=True)


@migrations()
def m003_run_owner(db: Database) -> None:
    # host:pid:start of the process writing an active run, so a run whose process died reads as interrupted.
    db.table("diagnosis_run").add_column("owner", str)


@migrations()
def m004_newest_first_index(db: Database) -> None:
    # `evcli sessions`, `last` and prune read newest first with the id as tie-break: one index walk, no sort.
    db.table("diagnosis_run").create_index(["created_at", "session_id"])


@migrations()
def m005_alert_queue(db: Database) -> None:
    # `evcli serve`: each received alert, queued for diagnosis until a worker finishes it (survives restarts).
    # state: queued -> running (owner = the worker process) -> done | failed; resolved alerts are stored
    # as state `resolved`, `resolves` naming the firing row they end.
    db.table("alert_queue").create(
        {
            "id": int,
            "group_key": str,
            "fingerprint": str,
            "alertname": str,
            "status": str,
            "alert": str,
            "state": str,
            "owner": str,
            "attempts": int,
            "resolves": int,
            "session_id": str,
            "verdict": str,
            "duration_s": float,
            "tool_errors": int,
            "model_errors": int,
            "error": str,
            "received_at": str,
            "finished_at": str,
        },
        pk="id",
        not_null={"group_key", "fingerprint", "state", "received_at"},
    )
    db.table("alert_queue").create_index(["state", "id"])
    db.table("alert_queue").create_index(["fingerprint", "group_key", "id"])
    db.table("alert_queue").create_index(["session_id"])


@migrations()
def m006_step_cached_tokens(db: Database) -> None:
    # Prompt tokens a provider read from its prompt cache, per agent step; NULL: not reported (and every
    # step stored before this migration).
    db.table("agent_step").add_column("cached_tokens", int)
