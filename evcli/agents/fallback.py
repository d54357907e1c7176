"""Answers built without the Composer: after a gate reject, or when the Composer fails.

A gate-reject fallback uses only reason codes and an overview of the tool calls —
never executor claims, which were just shown to cite something false. A composer
fallback uses only the allowed material (claims, hypotheses, gaps and actions), in fixed
wording, and keeps the explanation: it opens with the diagnosis the allowed claims hold
(the likely cause as a hypothesis, the chain from it; evcli.agents.composer.diagnosis_section)
and lists the allowed hypotheses as unconfirmed possible causes; an
action naming a destructive command is shown only behind a review flag. A
verifier-failed answer lists the claims that passed the gate, each marked as not
verified, and the gaps: nothing is stated as confirmed.
The wording is the message catalogue's (evcli/messages), in the question's
language; a language without a catalogue gets English and a note saying so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evcli.agents.actions import flag
from evcli.agents.composer import diagnosis_section, possible_causes
from evcli.agents.projection import AllowedClaim, VerifiedClaim
from evcli.contracts import GateResult, ToolInvocation
from evcli.messages import catalogue, unsupported_note
from evcli.tools.view import call_signature


def _language_note(language: str) -> list[str]:
    """The opening line saying the question's language is not supported yet (none when it is)."""
    note = unsupported_note(language)
    return [note] if note else []


def gate_reject_answer(language: str, gate_result: GateResult, invocations: list[ToolInvocation]) -> dict[str, Any]:
    words = catalogue(language)
    lines = [*_language_note(language), words("fallback.reject_summary"), "", words("fallback.reject_reasons") + ":"]
    lines += [f"- {error.rule} ({error.severity})" for error in gate_result.errors] or [
        "- " + words("fallback.none_recorded")
    ]
    lines += ["", words("fallback.tools") + ":"]
    for invocation in invocations:
        details = invocation.retrieval_details
        status = details.evidence_status if details else "unknown"
        count = len(details.evidence_refs or []) if details else 0
        lines.append(
            f"- #{invocation.invocation_id} {call_signature(invocation)} → {status}, {count} {words('fallback.refs')}"
        )
    return {
        "answer_summary": words("fallback.reject_summary"),
        "recommended_actions": [],
        "user_facing_answer": "\n".join(lines),
    }


def composer_fallback_answer(
    language: str,
    verdict: str,
    allowed_claims: list[AllowedClaim],
    missing_info: list[Any],
    actions: list[Any],
    hypotheses: Sequence[Any] = (),
) -> dict[str, Any]:
    """The answer when the Composer's were refused: the diagnosis and findings of the allowed claims, the
    allowed hypotheses (`hypotheses`, the executor's, shown as unconfirmed), the gaps and the actions."""
    words = catalogue(language)
    lines = _language_note(language) + ([words("fallback.incomplete")] if verdict != "PASS" else [])
    diagnosis = diagnosis_section(language, allowed_claims)
    lines += [*diagnosis, ""] if diagnosis else []
    if allowed_claims:
        lines.append(words("fallback.claims") + ":")
        for claim in allowed_claims:
            text = words("fallback.no_evidence") + "." if claim.no_evidence else claim.claim_text
            lines.append(f"- {text} [{claim.citation}]")
    else:
        lines.append(words("fallback.none"))
    possible = possible_causes(hypotheses)
    if possible:
        lines += ["", words("fallback.hypotheses") + ":"] + [f"- {text}" for text in possible]
    if missing_info:
        lines += ["", words("fallback.gaps") + ":"] + [f"- {item}" for item in missing_info]
    flagged = [flag(str(item), language) for item in actions]  # destructive commands only behind a review flag
    if flagged:
        lines += ["", words("fallback.actions") + ":"] + [f"- {item}" for item in flagged]
    return {
        "answer_summary": words("fallback.summary", n=len(allowed_claims)),
        "recommended_actions": [{"action_text": item, "reason": words("fallback.reason")} for item in flagged],
        "user_facing_answer": "\n".join(lines),
    }


def unverified_answer(language: str, claims: list[VerifiedClaim], missing_info: list[Any]) -> dict[str, Any]:
    """The answer when the Verifier failed: the gate-passed claims shown as not verified, and the gaps."""
    words = catalogue(language)
    lines = [*_language_note(language), words("fallback.unverified")]
    if claims:
        lines += ["", words("fallback.unverified_claims") + ":"]
        lines += [
            f"- {words('fallback.no_evidence') + '.' if claim.rests_on_no_evidence else claim.claim_text}"
            for claim in claims
        ]
    if missing_info:
        lines += ["", words("fallback.gaps") + ":"] + [f"- {item}" for item in missing_info]
    return {
        "answer_summary": words("fallback.unverified"),
        "recommended_actions": [],
        "user_facing_answer": "\n".join(lines),
    }
