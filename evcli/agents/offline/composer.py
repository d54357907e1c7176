"""The offline Composer: catalogue templates over the allowed material only.

The answer opens with the diagnosis the allowed claims hold (what is wrong, the likely
cause as a hypothesis, the chain from it: evcli.agents.composer.diagnosis_section), then
the findings, possible causes, missing information and next steps. A no-evidence claim is
only ever "this query found no matching evidence"; hypotheses are marked unconfirmed; a
runbook step naming a destructive command is quoted behind a review flag, never advised
(evcli/agents/actions.py). A question in a language without a catalogue is answered in
English, and the answer says so first.
"""

from __future__ import annotations

from typing import Any

from evcli.agents.actions import flag as flag_destructive
from evcli.agents.composer import diagnosis_section, item_text, possible_causes
from evcli.agents.engine import EngineReply, RoleRequest
from evcli.agents.offline.claims import no_evidence_range, no_evidence_scope
from evcli.agents.offline.payload import reply
from evcli.agents.projection import AllowedClaim
from evcli.messages import Catalogue, catalogue, unsupported_note


def _no_evidence_sentence(claim: dict[str, Any], words: Catalogue) -> str:
    details: list[str] = []
    for item in (claim.get("evidence") or [])[:1]:
        query, window = no_evidence_scope(str(item.get("text") or ""))
        details = [str(item.get("tool_name") or "")]
        details += [f"query={query}"] if query else []
        details += [f"window={window}"] if window else []
        searched = None if window else no_evidence_range(str(item.get("text") or ""))
        details += [f"range={searched}"] if searched else []
    shown = [detail for detail in details if detail]
    scope = words("compose.scope", details=words.join(shown)) if shown else ""
    return words("compose.no_evidence", scope=scope)


def _findings(claims: list[dict[str, Any]], words: Catalogue) -> list[str]:
    findings = []
    for claim in claims:
        marker = f"[{claim.get('citation')}]"
        if claim.get("no_evidence") or claim.get("claim_type") == "negative_observation":
            text = _no_evidence_sentence(claim, words)
        else:
            text = str(claim.get("claim_text") or "").rstrip("。.")
        findings.append(words("compose.finding", text=text, marker=marker))
    return findings


def _actions(payload: dict[str, Any], words: Catalogue) -> list[dict[str, str]]:
    actions = []
    for action in payload.get("recommended_actions") or []:
        text = item_text(action, "action_text", "action", "text")
        if text.strip():
            reason = item_text(action, "reason") if isinstance(action, dict) else ""
            actions.append(
                {
                    # runbook text is data: a destructive command is quoted behind a review flag, never advised
                    "action_text": flag_destructive(text, words.language),
                    "reason": reason or words("compose.action_reason"),
                }
            )
    return actions


def _section(lines: list[str], heading_id: str, items: list[str], words: Catalogue) -> None:
    if items:
        lines.append(words(heading_id))
        lines += [f"- {item}" for item in items]


def compose(request: RoleRequest) -> EngineReply:
    payload = request.payload
    language = payload.get("language") or "en"
    words = catalogue(language)
    verdict = payload.get("verdict") or "LOW_CONFID"
    note = unsupported_note(language)
    lines: list[str] = [note] if note else []
    claims = payload.get("allowed_claims") or []
    findings = _findings(claims, words)
    if verdict == "LOW_CONFID":
        lines.append(words("compose.low_confid"))
    elif verdict == "REJECT":
        lines.append(words("compose.reject"))
    lines += diagnosis_section(language, [AllowedClaim.model_validate(claim) for claim in claims])
    if findings:
        _section(lines, "compose.findings", findings, words)
    else:
        lines.append(words("compose.no_findings"))

    _section(lines, "compose.hypotheses", possible_causes(payload.get("allowed_hypotheses") or []), words)
    missing = [item_text(m, "text", "missing", "description") for m in payload.get("missing_info") or []]
    _section(lines, "compose.missing", [m for m in missing if m.strip()], words)
    actions = _actions(payload, words)
    _section(
        lines,
        "compose.next_steps",
        [action["action_text"] for action in actions],
        words,
    )

    if findings:
        summary = findings[0] if verdict == "PASS" else words("compose.summary_incomplete") + findings[0]
    else:
        summary = words("compose.summary_none")
    return reply(
        {
            "answer_summary": summary,
            "recommended_actions": actions,
            "user_facing_answer": "\n".join(lines),
        }
    )
