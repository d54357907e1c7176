"""The claims the Gatekeeper rejected in a session, and which of them were honest.

A claim is *rejected* when a stored gate result of the session has a reject-severity finding that
names it. Every gated draft counts, each in its round: a first draft that a repair round fixed
still had a claim rejected. The draft a gate result checked is the executor output of its round
written last before it.

A rejected claim counts as *honest* when it passes every reject rule once each of its excerpts is
replaced by the whole text of the ref it cites (the claim text, claim type, tool names, invocation
ids and raw paths unchanged, gated against the same invocations with the same rules). Such a claim
cites real evidence (the invocation exists, ran that tool and succeeded; the ref exists), and
what it states agrees with the item it cites by the Gatekeeper's own fact checks; what failed was
the excerpt the model chose: too short to carry the claim's numbers, not verbatim, a rendering the
ref does not hold. A claim citing a ref that does not exist, stating a value its item contradicts,
asserting a cause in an observation or binding a negative to real evidence stays rejected and is
not honest.

Limits: honesty is judged by the same rules that rejected the claim, so a rule too strict for the
whole ref too (a paraphrase the fact checks cannot match) leaves an honest claim counted as not
honest; a fact the ref holds only outside the words the claim names can make a careless claim pass.
It is a measure of what the model was blamed for, not a judgement of what it meant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evcli.contracts import ANSWER_VERSION, SessionDocument, Severity, StageOutput, StoredGateResult, ToolInvocation
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.paths import item_path
from evcli.gatekeeper.rules import RuleSet


@dataclass(frozen=True)
class RejectedClaim:
    round: int
    claim_id: str
    claim_text: str
    rules: tuple[str, ...]  # the reject rules it failed
    honest: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "claim_id": self.claim_id,
            "claim_text": self.claim_text,
            "rules": list(self.rules),
            "honest": self.honest,
        }


def rejected_claims(document: SessionDocument, rules: RuleSet) -> list[RejectedClaim]:
    """Every claim a stored gate result of the session rejected, in gate order, judged honest or not."""
    rejected = []
    for stored in document.gate_results:
        draft = _gated_draft(document, stored)
        claims = {c.get("claim_id"): c for c in (draft or {}).get("claims") or [] if isinstance(c, dict)}
        failed: dict[str, list[str]] = {}
        for finding in stored.result.errors:
            if finding.severity == Severity.REJECT.value and finding.claim_id is not None:
                failed.setdefault(finding.claim_id, []).append(finding.rule)
        for claim_id, failed_rules in failed.items():
            claim = claims.get(claim_id)
            rejected.append(
                RejectedClaim(
                    round=stored.round,
                    claim_id=claim_id,
                    claim_text=str((claim or {}).get("claim_text") or ""),
                    rules=tuple(dict.fromkeys(failed_rules)),
                    honest=claim is not None and is_honest(claim, document, rules),
                )
            )
    return rejected


def is_honest(claim: dict[str, Any], document: SessionDocument, rules: RuleSet) -> bool:
    """Whether `claim` passes every reject rule with each excerpt replaced by the whole ref it cites."""
    from evcli.gatekeeper.service import session_services

    draft = {"answer_version": ANSWER_VERSION, "claims": [with_whole_refs(claim, document.invocations)]}
    result = gate(
        draft, document.invocations, rules, scope=document.run.config.scope, services=session_services(document)
    )
    return not any(
        finding.severity == Severity.REJECT.value and finding.claim_id in (claim.get("claim_id"), None)
        for finding in result.errors
    )


def with_whole_refs(claim: dict[str, Any], invocations: list[ToolInvocation]) -> dict[str, Any]:
    """The claim with each binding's excerpt replaced by the text of the ref it cites (kept when there is none)."""
    bindings = claim.get("evidence_bindings")
    if not isinstance(bindings, list):
        return claim
    by_id = {invocation.invocation_id: invocation for invocation in invocations}
    return {**claim, "evidence_bindings": [_whole_ref(binding, by_id) for binding in bindings]}


def _whole_ref(binding: Any, by_id: dict[int, ToolInvocation]) -> Any:
    if not isinstance(binding, dict):
        return binding
    invocation_id = binding.get("source_invocation_id")
    invocation = by_id.get(invocation_id) if isinstance(invocation_id, int) else None
    details = invocation.retrieval_details if invocation is not None else None
    refs = (details.evidence_refs if details else None) or []
    item = item_path(str(binding.get("raw_path") or ""))
    text = next((ref.text for ref in refs if ref.raw_path == item), None)
    return binding if text is None else {**binding, "evidence_excerpt": text}


def _gated_draft(document: SessionDocument, stored: StoredGateResult) -> dict[str, Any] | None:
    """The executor output of the gate result's round written last before it."""
    drafts: list[StageOutput] = [
        output
        for output in document.stage_outputs
        if output.stage == "execute"
        and output.round == stored.round
        and (not stored.created_at or not output.created_at or output.created_at <= stored.created_at)
    ]
    output = drafts[-1].output if drafts else None
    return output if isinstance(output, dict) else None
