"""Gating a whole session: pick its executor output, gate, keep history.

Without `against`, citations are checked against what the document recorded
only (`GateRun.sources_rechecked` is False and every renderer says so); with
it, each invocation is re-run on that snapshot environment (a directory) or
Prometheus (a URL) first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evcli.contracts import GateResult, SessionDocument
from evcli.core.errors import BadInput
from evcli.gatekeeper.diff import compare
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.provenance import is_url, rederive, session_record, shown
from evcli.gatekeeper.rules import RuleSet


@dataclass(frozen=True)
class GateRun:
    session_id: str
    round: int
    result: GateResult
    seq: int | None = None  # position in the stored history; None for a file
    changes: dict[str, Any] | None = None  # against the previous stored result
    against: str | None = None  # the environment (a directory, or a URL without credentials) re-derived from

    @property
    def sources_rechecked(self) -> bool:
        return self.against is not None


def gate_document(document: SessionDocument, rules: RuleSet, against: Path | str | None = None) -> GateRun:
    """Gate the newest executor output of a session against all its invocations
    (and, with `against`, against the invocations re-run on that environment); the scope
    rules run when the session recorded a question scope."""
    execute = document.latest_stage("execute")
    if execute is None:
        raise BadInput(
            f"session {document.run.session_id} has no executor output to gate",
            hint="only a session that reached the execute stage has citations to check",
        )
    sources = rederive(document, against) if against is not None else None
    record = session_record(document, execute, sources, against)
    result = gate(
        execute.output, document.invocations, rules, record, document.run.config.scope, session_services(document)
    )
    return GateRun(session_id=document.run.session_id, round=execute.round, result=result, against=shown(against))


def against_target(text: str) -> Path | str:
    """What `gate --against` names: a live backend's URL (http:// or https://, kept as text: a Path would
    fold its `//`), else a snapshot directory."""
    return text if is_url(text) else Path(text)


def session_services(document: SessionDocument) -> tuple[str, ...]:
    """The services of the session's environment (a claim naming one must carry it); for a session
    recorded without its environment, the services its invocations searched."""
    known = list(document.run.config.environment.services)
    if not known:
        for invocation in document.invocations:
            details = invocation.retrieval_details
            known += [str(invocation.input_params.get("service") or ""), (details.service or "") if details else ""]
    return tuple(dict.fromkeys(service for service in known if service))


def regate_stored(store, session_id: str, rules: RuleSet, against: Path | str | None = None) -> GateRun:
    """Re-gate a stored session and append the result to its history."""
    document = store.load(session_id)
    run = gate_document(document, rules, against)
    previous = document.gate_results[-1].result if document.gate_results else None
    stored = store.append_gate_result(session_id, run.result, round=run.round)
    changes = compare(previous, run.result) if previous is not None else None
    return GateRun(
        session_id=session_id, round=run.round, result=run.result, seq=stored.seq, changes=changes, against=run.against
    )
