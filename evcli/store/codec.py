"""How each contract model of a session is stored as a row of the trace store, and read back.

Invariants: JSON-valued columns hold canonical JSON (`dump`), booleans are stored as 0/1, and a model read
back from its row equals the model that was stored (export → import → export is byte-identical).
"""

from __future__ import annotations

import json
from typing import Any

from evcli.contracts import AgentStep, GateResult, RunRecord, StageOutput, StoredGateResult, ToolInvocation
from evcli.core.canonical import canonical_json

JSON_RUN_FIELDS = ("config", "prompt_audit", "self_evaluation", "annotations")
_JSON_INVOCATION_FIELDS = ("input_params", "output", "retrieval_details")


def dump(value: Any) -> str | None:
    return None if value is None else canonical_json(value)


def load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def run_row(run: RunRecord, owner: str | None) -> dict[str, Any]:
    row = {**run.model_dump(), "owner": owner}
    for key in JSON_RUN_FIELDS:
        row[key] = dump(row[key])
    return row


def run_from_row(row: dict[str, Any], shown_status: str) -> RunRecord:
    """The run of a `diagnosis_run` row (its owner column dropped), with the status a reader sees."""
    run = {key: value for key, value in row.items() if key != "owner"}
    run["status"] = shown_status
    for key in JSON_RUN_FIELDS:
        run[key] = load(run[key]) or {}
    return RunRecord.model_validate(run)


def step_row(session_id: str, step: AgentStep) -> dict[str, Any]:
    return {"session_id": session_id, **step.model_dump(), "has_tool_call": int(step.has_tool_call)}


def step_from_row(row: dict[str, Any]) -> AgentStep:
    fields = {k: v for k, v in row.items() if k not in ("id", "session_id")}
    fields["has_tool_call"] = bool(fields["has_tool_call"])
    return AgentStep.model_validate(fields)


def invocation_row(session_id: str, invocation: ToolInvocation) -> dict[str, Any]:
    row = invocation.model_dump(mode="json")
    for key in _JSON_INVOCATION_FIELDS:
        row[key] = dump(row[key])
    row["success"] = int(invocation.success)
    return {"session_id": session_id, **row}


def invocation_from_row(row: dict[str, Any]) -> ToolInvocation:
    fields = {k: v for k, v in row.items() if k != "session_id"}
    for key in _JSON_INVOCATION_FIELDS:
        fields[key] = load(fields[key])
    fields["success"] = bool(fields["success"])
    return ToolInvocation.model_validate(fields)


def stage_output_row(session_id: str, output: StageOutput, created_at: str) -> dict[str, Any]:
    row = output.model_dump(mode="json")
    row["output"] = dump(row["output"])
    row["parse_status"] = dump(row["parse_status"])
    return {"session_id": session_id, **row, "created_at": output.created_at or created_at}


def stage_from_row(row: dict[str, Any]) -> StageOutput:
    fields = {k: v for k, v in row.items() if k not in ("id", "session_id")}
    fields["output"] = load(fields["output"])
    fields["parse_status"] = load(fields["parse_status"]) or {}
    return StageOutput.model_validate(fields)


def gate_result_row(session_id: str, stored: StoredGateResult) -> dict[str, Any]:
    result = stored.result
    return {
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


def gate_result_from_row(row: dict[str, Any]) -> StoredGateResult:
    return StoredGateResult(
        seq=row["seq"],
        round=row["round"],
        created_at=row["created_at"],
        result=GateResult.model_validate_json(row["result"]),
    )
