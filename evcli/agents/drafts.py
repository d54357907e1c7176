"""What the Executor and the Composer are shown of their own work: the Gatekeeper's findings on draft
claims (`check_claims`), earlier evidence shown again on a retry, and which words name something of the
session (the post-guard's entities)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evcli.agents.engine import CHECK_CLAIMS
from evcli.contracts import ANSWER_VERSION, GateResult, SessionDocument, ToolInvocation
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.rules import RuleSet


def check_drafts(document: SessionDocument, invocations: list[ToolInvocation], arguments: Any, rules: RuleSet) -> str:
    """What the Gatekeeper says of draft claims, as the model is shown it (`check_claims`)."""
    from evcli.gatekeeper.service import session_services
    from evcli.tools.view import quote

    claims = arguments.get("claims") if isinstance(arguments, dict) else None
    if not isinstance(claims, list):
        return f'<refused tool="{CHECK_CLAIMS}">{CHECK_CLAIMS}: claims must be a list of claim objects</refused>'
    draft = {"answer_version": ANSWER_VERSION, "claims": claims}
    result = gate(draft, invocations, rules, scope=None, services=session_services(document))
    lines = [f'<gate status="{result.status}" severity="{result.severity}">']
    unreadable = [f for f in result.errors if f.rule == "contract.answer_version"]
    for claim in [] if unreadable else claims:  # a draft that does not parse has no claim checked
        claim_id = claim.get("claim_id")
        found = [f for f in result.errors if f.claim_id == claim_id]
        lines.append(
            f"{quote(str(claim_id))}: "
            + ("; ".join(f"fail {f.rule} ({f.severity}): {quote(f.message)}" for f in found) or "pass")
        )
    lines += [f"answer: fail {f.rule}: {quote(f.message)}" for f in result.errors if f.claim_id is None]
    lines.append("</gate>")
    return "\n".join(lines)


def session_entity(document: SessionDocument) -> Callable[[str], bool]:
    """Whether a (normalized) hyphenated word names something of the session: one of its environment's
    services, or a word its evidence writes."""
    from evcli.gatekeeper.checks import session_entity_finder
    from evcli.gatekeeper.excerpt import normalize

    services = {normalize(service) for service in document.run.config.environment.services}
    occurs = session_entity_finder({invocation.invocation_id: invocation for invocation in document.invocations})
    return lambda word: word in services or occurs(word)


RETRY_EVIDENCE_CHARS = 6000  # of one earlier invocation's evidence shown again on an evidence retry


def shown_again(invocation: ToolInvocation) -> str:
    """An earlier invocation as the model was shown it, cut to RETRY_EVIDENCE_CHARS."""
    from evcli.tools.view import model_view

    text = model_view(invocation)
    return text if len(text) <= RETRY_EVIDENCE_CHARS else text[:RETRY_EVIDENCE_CHARS] + "\n… (cut)\n</evidence>"


def repair_context(output: Any, result: GateResult, invocations: list[ToolInvocation]) -> dict[str, Any]:
    """What the Executor's repair round is given after a gate REJECT: each claim the Gatekeeper failed with
    the rules and messages it failed (`repair`), the claims that passed (keep them as they are), and the
    queries run with what they returned, citable again by invocation id."""
    claims = [claim for claim in (output or {}).get("claims") or [] if isinstance(claim, dict)]
    failures: dict[str, list[str]] = {}
    general: list[str] = []
    for finding in result.errors:
        line = f"{finding.rule} ({finding.severity}): {finding.message}"
        if finding.claim_id is None:
            general.append(line)
        else:
            failures.setdefault(finding.claim_id, []).append(line)
    return {
        "repair": [
            {"claim": claim, "failed_rules": failures[str(claim.get("claim_id"))]}
            for claim in claims
            if str(claim.get("claim_id")) in failures
        ],
        "failed_rules": general,  # findings about the document, not one claim
        "passed_claims": [claim for claim in claims if str(claim.get("claim_id")) not in failures],
        "completed_queries": [{"tool_name": i.tool_name, "input_params": i.input_params} for i in invocations],
        "evidence": [shown_again(invocation) for invocation in invocations],
    }
