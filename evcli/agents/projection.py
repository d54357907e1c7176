"""The verified projection: the only material the Verifier and Composer may see.

A claim binding is kept only when the Gatekeeper checked it and it passed,
matched by claim id + invocation id + tool + raw_path, and carries the facts the
Gatekeeper matched to a field of its cited item. A claim any of whose facts
disagrees with its field is never projected, whatever severity rules.toml gives
`claim.facts_match`: a false fact never becomes allowed material. Hypotheses,
raw executor text and tool output that no claim cites never reach the Verifier. The Composer
sees less still: the allowed claims, those the Verifier found directly supported,
numbered for citation in the order the Executor wrote them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from evcli.contracts import NO_EVIDENCE_PATH, CheckedBinding, GateResult


class VerifiedFact(BaseModel):
    """A fact the claim states and the field of the cited item the Gatekeeper found it equal to."""

    field: str
    claim: str
    evidence: str


class VerifiedEvidence(BaseModel):
    source_invocation_id: int | None
    tool_name: str | None
    raw_path: str | None
    matched_text: str | None
    evidence_excerpt: str | None
    facts: list[VerifiedFact] = Field(default_factory=list)


class VerifiedClaim(BaseModel):
    """A claim with only the bindings that passed the gate (what the Verifier judges)."""

    claim_id: Any
    claim_type: Any
    claim_text: Any
    support_level: Any
    verified_evidence: list[VerifiedEvidence]

    @property
    def rests_on_no_evidence(self) -> bool:
        return self.claim_type == "negative_observation" or all(
            e.raw_path == NO_EVIDENCE_PATH for e in self.verified_evidence
        )


class AllowedEvidence(BaseModel):
    tool_name: str | None
    source_invocation_id: int | None
    raw_path: str | None
    text: str | None


class AllowedClaim(BaseModel):
    """A verified claim the Verifier found directly supported, with its citation number."""

    citation: int
    claim_id: Any
    claim_type: Any
    claim_text: Any
    no_evidence: bool
    evidence: list[AllowedEvidence]


def verified_claims(executor_output: Any, gate_result: GateResult) -> list[VerifiedClaim]:
    passed = {
        (b.claim_id, b.source_invocation_id, b.tool_name, b.raw_path): b
        for b in gate_result.checked_bindings
        if b.status == "pass"
    }
    false_facts = {b.claim_id for b in gate_result.checked_bindings if any(not fact.ok for fact in b.facts)}
    claims = executor_output.get("claims") if isinstance(executor_output, dict) else None
    projected = []
    for claim in claims if isinstance(claims, list) else []:
        if not isinstance(claim, dict) or claim.get("claim_id") in false_facts:
            continue
        evidence = _verified_evidence(claim, passed)
        if evidence:
            projected.append(
                VerifiedClaim(
                    claim_id=claim.get("claim_id"),
                    claim_type=claim.get("claim_type"),
                    claim_text=claim.get("claim_text"),
                    support_level=claim.get("support_level"),
                    verified_evidence=evidence,
                )
            )
    return projected


def _verified_evidence(claim: dict[str, Any], passed: dict[tuple[Any, ...], CheckedBinding]) -> list[VerifiedEvidence]:
    claim_id = claim.get("claim_id")
    evidence: list[VerifiedEvidence] = []
    seen: set[tuple[int | None, str | None]] = set()
    for binding in claim.get("evidence_bindings") or []:
        if not isinstance(binding, dict):
            continue
        tool_name, raw_path = binding.get("tool_name"), binding.get("raw_path")
        checked = passed.get((claim_id, binding.get("source_invocation_id"), tool_name, raw_path))
        if checked is None and binding.get("source_invocation_id") is None:
            # a back-filled binding is matched on the id the Gatekeeper resolved
            checked = next(
                (
                    b
                    for b in passed.values()
                    if b.backfilled and b.claim_id == claim_id and b.tool_name == tool_name and b.raw_path == raw_path
                ),
                None,
            )
        if checked is None or (checked.source_invocation_id, raw_path) in seen:
            continue
        seen.add((checked.source_invocation_id, raw_path))
        evidence.append(
            VerifiedEvidence(
                source_invocation_id=checked.source_invocation_id,
                tool_name=checked.tool_name,
                raw_path=checked.raw_path,
                matched_text=checked.matched_text,
                evidence_excerpt=checked.evidence_excerpt,
                facts=[
                    VerifiedFact(field=fact.field, claim=fact.claim, evidence=fact.evidence)
                    for fact in checked.facts
                    if fact.ok
                ],
            )
        )
    return evidence


def directly_supported(claims: list[VerifiedClaim], verifier_output: dict[str, Any]) -> list[VerifiedClaim]:
    """The claims the Verifier judged `direct_support`, in their order, and the root causes stated as
    hypotheses (support_level indirect) it judged `indirect_support`: their facts are in the evidence,
    the cause is inferred, and the Composer states them as such."""
    verdicts = {
        check.get("claim_id"): check.get("verification")
        for check in verifier_output.get("claim_checks") or []
        if isinstance(check, dict)
    }
    return [
        claim
        for claim in claims
        if verdicts.get(claim.claim_id) == "direct_support"
        or (is_hypothesis(claim) and verdicts.get(claim.claim_id) == "indirect_support")
    ]


def is_hypothesis(claim: VerifiedClaim) -> bool:
    return claim.claim_type == "root_cause" and claim.support_level == "indirect"


def allowed_claims(
    executor_output: Any, gate_result: GateResult, verifier_output: dict[str, Any]
) -> list[AllowedClaim]:
    """What the Composer may state, numbered from 1 for citation."""
    supported = directly_supported(verified_claims(executor_output, gate_result), verifier_output)
    return [
        AllowedClaim(
            citation=number,
            claim_id=claim.claim_id,
            claim_type=claim.claim_type,
            claim_text=claim.claim_text,
            no_evidence=claim.rests_on_no_evidence,
            evidence=[
                AllowedEvidence(
                    tool_name=e.tool_name,
                    source_invocation_id=e.source_invocation_id,
                    raw_path=e.raw_path,
                    text=e.matched_text,
                )
                for e in claim.verified_evidence
            ],
        )
        for number, claim in enumerate(supported, start=1)
    ]
