"""Gating a whole session: pick its executor output, gate, keep history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evcli.contracts import GateResult, SessionDocument
from evcli.errors import BadInput
from evcli.gatekeeper.diff import compare
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.rules import RuleSet


@dataclass(frozen=True)
class GateRun:
    session_id: str
    round: int
    result: GateResult
    seq: int | None = None  # position in the stored history; None for a file
    changes: dict[str, Any] | None = None  # against the previous stored result


def gate_document(document: SessionDocument, rules: RuleSet) -> GateRun:
    """Gate the newest executor output of a session against all its invocations."""
    execute = document.latest_stage("execute")
    if execute is None:
        raise BadInput(
            f"session {document.run.session_id} has no executor output to gate",
            hint="only a session that reached the execute stage has citations to check",
        )
    result = gate(execute.output, document.invocations, rules)
    return GateRun(session_id=document.run.session_id, round=execute.round, result=result)


def regate_stored(store, session_id: str, rules: RuleSet) -> GateRun:
    """Re-gate a stored session and append the result to its history."""
    document = store.load(session_id)
    run = gate_document(document, rules)
    previous = document.gate_results[-1].result if document.gate_results else None
    stored = store.append_gate_result(session_id, run.result, round=run.round)
    changes = compare(previous, run.result) if previous is not None else None
    return GateRun(session_id=session_id, round=run.round, result=run.result, seq=stored.seq, changes=changes)
