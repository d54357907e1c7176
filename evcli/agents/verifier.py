"""Verifier: judges whether each verified claim follows from its verified evidence.

It sees only the verified projection. Its verdict is then capped by the gate:
low_confid caps PASS to LOW_CONFID, reject can never be PASS. A reply is
checked closed: a claim check with a label outside `LABELS`, or a PASS that
checks none of the claims it was given, is invalid output (never read as PASS).
"""

from __future__ import annotations

from typing import Any

from evcli.agents.calls import StageResult, StepCounter, run_json_stage
from evcli.agents.engine import Engine, RoleRequest
from evcli.agents.prompts import load_prompt
from evcli.contracts import Severity, Verdict, VerifierOutput

LABELS = ("direct_support", "indirect_support", "no_evidence", "contradicted")


def run_verifier(engine: Engine, payload: dict[str, Any], steps: StepCounter) -> StageResult:
    request = RoleRequest(
        role="verifier",
        prompt=load_prompt("verifier"),
        payload=payload,
        response_schema=VerifierOutput.model_json_schema(),
    )
    claim_ids = [claim.get("claim_id") for claim in payload.get("verified_claims") or []]
    return run_json_stage(engine, request, steps, VerifierOutput, lambda output: label_problems(output, claim_ids))


def label_problems(output: VerifierOutput, claim_ids: list[Any]) -> list[str]:
    """What makes a verifier document unusable although it parsed: unknown labels, a PASS judging nothing."""
    problems = []
    for index, check in enumerate(output.claim_checks):
        label = check.get("verification") if isinstance(check, dict) else None
        if label not in LABELS:
            problems.append(
                f"field claim_checks.{index}.verification: {label!r} is not one of {', '.join(LABELS)}"
                if isinstance(check, dict)
                else f"field claim_checks.{index}: not an object"
            )
    checked = {check.get("claim_id") for check in output.claim_checks if isinstance(check, dict)}
    if output.verdict == Verdict.PASS and claim_ids and not checked & set(claim_ids):
        problems.append(f"verdict PASS without a claim check for any of the {len(claim_ids)} claim(s)")
    return problems


def failed_verification(error: str | None) -> dict[str, Any]:
    """The verify stage's document when the Verifier failed for good: LOW_CONFID, no claim confirmed."""
    return {
        "verdict": Verdict.LOW_CONFID.value,
        "groundedness_score": 0.0,
        "critical_fact_count": 0,
        "claim_checks": [],
        "facts_checked": [],
        "rationale": f"verifier failed: {error or 'no usable reply'}",
        "verifier_failed": True,
    }


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
