"""The verified projection: the only material the Verifier and Composer may see.

A claim binding is kept only when the Gatekeeper checked it and it passed,
matched by claim id + invocation id + tool + raw_path. Hypotheses, raw executor
text and tool output that no claim cites never reach the Verifier.
"""

from __future__ import annotations

from typing import Any

from evcli.contracts import NO_EVIDENCE_PATH, GateResult


def verified_claims(executor_output: Any, gate_result: GateResult) -> list[dict[str, Any]]:
    passed = {
        (b.claim_id, b.source_invocation_id, b.tool_name, b.raw_path): b
        for b in gate_result.checked_bindings
        if b.status == "pass"
    }
    claims = executor_output.get("claims") if isinstance(executor_output, dict) else None
    projected = []
    for claim in claims if isinstance(claims, list) else []:
        if not isinstance(claim, dict):
            continue
        claim_id = claim.get("claim_id")
        evidence, seen = [], set()
        for binding in claim.get("evidence_bindings") or []:
            if not isinstance(binding, dict):
                continue
            tool_name, raw_path = binding.get("tool_name"), binding.get("raw_path")
            checked = passed.get((claim_id, binding.get("source_invocation_id"), tool_name, raw_path))
            if checked is None and binding.get("source_invocation_id") is None:
                # a back-filled binding is matched on the id the Gatekeeper resolved
                checked = next(
                    (b for b in passed.values()
                     if b.backfilled and b.claim_id == claim_id and b.tool_name == tool_name and b.raw_path == raw_path),
                    None,
                )
            if checked is None or (checked.source_invocation_id, raw_path) in seen:
                continue
            seen.add((checked.source_invocation_id, raw_path))
            evidence.append(
                {
                    "source_invocation_id": checked.source_invocation_id,
                    "tool_name": checked.tool_name,
                    "raw_path": checked.raw_path,
                    "matched_text": checked.matched_text,
                    "evidence_excerpt": checked.evidence_excerpt,
                }
            )
        if evidence:
            projected.append(
                {
                    "claim_id": claim_id,
                    "claim_type": claim.get("claim_type"),
                    "claim_text": claim.get("claim_text"),
                    "support_level": claim.get("support_level"),
                    "verified_evidence": evidence,
                }
            )
    return projected


def rests_on_no_evidence(claim: dict[str, Any]) -> bool:
    return claim.get("claim_type") == "negative_observation" or all(
        e.get("raw_path") == NO_EVIDENCE_PATH for e in claim.get("verified_evidence") or []
    )
