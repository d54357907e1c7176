"""The verified projection: the only material the Verifier and Composer may see.

A claim binding is kept only when the Gatekeeper checked it and it passed,
matched by claim id + invocation id + tool + raw_path, and carries the facts the
Gatekeeper matched to a field of its cited item. A claim any of whose facts
disagrees with its field is never projected, whatever severity rules.toml gives
`claim.facts_match`: a false fact never becomes allowed material. Hypotheses,
raw executor text and tool output that no claim cites never reach the Verifier. The Composer
sees less still: the allowed claims, those the Verifier found directly supported,
numbered for citation in the order the Executor wrote them, each with the services its
cited items are about (their service field, as the Gatekeeper matched it).

The diagnosis that opens an answer (`diagnosis_outline`) is chosen from the allowed claims
alone: a root_cause claim is only ever the likely cause stated as a hypothesis, and a step of
the chain from it is a claim its own cited evidence ties to it.
"""

from __future__ import annotations

import re
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
    services: list[str] = Field(default_factory=list)  # the service fields of its cited items, in order


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
            services=_services(claim),
        )
        for number, claim in enumerate(supported, start=1)
    ]


def _services(claim: VerifiedClaim) -> list[str]:
    """The services the claim's cited items are about: each item's service field the Gatekeeper matched."""
    found = [fact.evidence for e in claim.verified_evidence for fact in e.facts if fact.field.endswith(".service")]
    return list(dict.fromkeys(found))


ROOT_CAUSE = "root_cause"  # claim types the diagnosis reads (contracts.ClaimType)
SYMPTOM = "symptom"
SYMPTOM_CAP = 2  # symptoms said under "what is wrong": the answer's opening stays short


class ChainStep(BaseModel):
    """One service on the way from the likely cause to the symptoms: the claims that show it changed
    (`citations`) and what is wrong on it (`symptoms`, citations of the outline's `wrong`)."""

    service: str
    citations: list[int]
    symptoms: list[int] = Field(default_factory=list)


class DiagnosisOutline(BaseModel):
    """What an answer opens with, every part an allowed claim: what is wrong (symptom claims, those on
    the cause's chain first), the likely cause (the first root_cause claim, only ever a hypothesis), the
    chain from its service through the callers its own cited evidence names, each with what is wrong on
    it, and the other root_cause claims (hypotheses too)."""

    wrong: list[AllowedClaim]
    cause: AllowedClaim | None
    chain: list[ChainStep]
    others: list[AllowedClaim]


def diagnosis_outline(claims: list[AllowedClaim]) -> DiagnosisOutline | None:
    """The diagnosis the allowed claims hold; None when they hold no symptom and no root cause (a narrow
    confirmation, a count: nothing to diagnose). A no-evidence claim is never part of it."""
    stated = [claim for claim in claims if not claim.no_evidence]
    causes = [claim for claim in stated if claim.claim_type == ROOT_CAUSE]
    symptoms = [claim for claim in stated if claim.claim_type == SYMPTOM]
    if not causes and not symptoms:
        return None
    cause = causes[0] if causes else None
    chain = _chain(cause, stated) if cause else []
    on_chain = {step.service for step in chain}
    in_chain = {citation for step in chain for citation in step.citations}

    def first_seen(claim: AllowedClaim) -> tuple[bool, bool]:
        # symptoms on the chain's services before the rest, and those the chain does not cite already first
        return not on_chain & set(claim.services[:1]), claim.citation in in_chain

    wrong = sorted(symptoms, key=first_seen)[:SYMPTOM_CAP]
    chain = [
        step.model_copy(
            update={
                "symptoms": [
                    c.citation for c in wrong if c.services[:1] == [step.service] and c.citation not in in_chain
                ]
            }
        )
        for step in chain
    ]
    return DiagnosisOutline(wrong=wrong, cause=cause, chain=chain, others=causes[1:])


def _chain(cause: AllowedClaim, claims: list[AllowedClaim]) -> list[ChainStep]:
    """The cause's service, then each caller its ranking ties to it: a symptom claim cited from the same
    tool call as the cause, about a service the cause's own cited evidence names ("callers affected after
    it: …"). A claim about the cause's own service from that call (its own changes) joins its step."""
    if not cause.services:
        return []
    service = cause.services[0]
    calls = {e.source_invocation_id for e in cause.evidence} - {None}
    told = "\n".join(e.text or "" for e in cause.evidence)
    steps: dict[str, list[int]] = {service: [cause.citation]}
    for claim in claims:
        if claim.claim_type == ROOT_CAUSE or not claim.services:
            continue
        if not calls & {e.source_invocation_id for e in claim.evidence}:
            continue
        subject = claim.services[0]
        if subject == service or (claim.claim_type == SYMPTOM and _names(told, subject)):
            steps.setdefault(subject, []).append(claim.citation)
    return [ChainStep(service=name, citations=citations) for name, citations in steps.items()]


def _names(text: str, service: str) -> bool:
    """Whether the text names the service as a whole name (`order-service`, not `order-service-db`)."""
    return re.search(rf"(?<![\w.-]){re.escape(service)}(?![\w-])", text) is not None
