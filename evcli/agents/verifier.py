"""Verifier: judges whether each verified claim follows from its verified evidence.

It sees only the verified projection. Its verdict is then capped by the gate:
low_confid caps PASS to LOW_CONFID, reject can never be PASS.
"""

from __future__ import annotations

from typing import Any

from evcli.agents.calls import StageResult, StepCounter, run_json_stage
from evcli.agents.engine import Engine, RoleRequest
from evcli.agents.prompts import load_prompt
from evcli.contracts import Severity, Verdict, VerifierOutput


def run_verifier(engine: Engine, payload: dict[str, Any], steps: StepCounter) -> StageResult:
    request = RoleRequest(
        role="verifier",
        prompt=load_prompt("verifier"),
        payload=payload,
        response_schema=VerifierOutput.model_json_schema(),
    )
    return run_json_stage(engine, request, steps, VerifierOutput)


def effective_verdict(model_verdict: str, gate_severity: str) -> Verdict:
    """The worse of the model's verdict and what the gate allows."""
    return max(Verdict(model_verdict), Severity(gate_severity).ceiling)


def critical_gaps(output: dict[str, Any]) -> list[dict[str, Any]]:
    """Critical claims the Verifier could not confirm directly (what an evidence retry is for)."""
    return [
        {"claim_id": check.get("claim_id"), "reason": check.get("verification"), "note": check.get("note", "")}
        for check in output.get("claim_checks") or []
        if isinstance(check, dict)
        and check.get("is_critical")
        and check.get("verification") in ("no_evidence", "indirect_support")
    ]
