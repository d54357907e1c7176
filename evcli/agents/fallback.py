"""Answers built without the Composer: after a gate reject, or when the Composer fails.

A gate-reject fallback uses only reason codes and an overview of the tool calls —
never executor claims, which were just shown to cite something false. A composer
fallback uses only the allowed claims, gaps and actions, in fixed wording; an
action naming a destructive command is shown only behind a review flag.
"""

from __future__ import annotations

from typing import Any

from evcli.agents.actions import flag
from evcli.agents.projection import AllowedClaim
from evcli.contracts import GateResult, ToolInvocation
from evcli.tools.view import call_signature

_TEXT = {
    "en": {
        "reject_summary": "No findings can be reported: the evidence citations failed the code check.",
        "reject_reasons": "Failed checks",
        "tools": "Tool calls made",
        "refs": "evidence refs",
        "claims": "Findings (each cites recorded evidence)",
        "no_evidence": "This query found no matching evidence",
        "gaps": "Missing information",
        "actions": "Next actions",
        "incomplete": "The evidence is incomplete; treat these findings with care.",
        "none": "No finding passed verification.",
        "summary": "{n} verified finding(s).",
        "reason": "from the diagnosis plan",
    },
    "zh": {
        "reject_summary": "无法给出结论：证据引用未通过代码校验。",
        "reject_reasons": "未通过的校验",
        "tools": "已调用的工具",
        "refs": "条证据",
        "claims": "发现（每条都引用了已记录的证据）",
        "no_evidence": "本次查询未检索到匹配证据",
        "gaps": "缺失的信息",
        "actions": "下一步",
        "incomplete": "证据不完整，请谨慎看待以下发现。",
        "none": "没有发现通过核验。",
        "summary": "共 {n} 条已核验的发现。",
        "reason": "来自诊断计划",
    },
}


def _words(language: str) -> dict[str, str]:
    return _TEXT["zh" if language == "zh" else "en"]


def gate_reject_answer(language: str, gate_result: GateResult, invocations: list[ToolInvocation]) -> dict[str, Any]:
    words = _words(language)
    lines = [words["reject_summary"], "", f"{words['reject_reasons']}:"]
    lines += [f"- {error.rule} ({error.severity})" for error in gate_result.errors] or ["- (none recorded)"]
    lines += ["", f"{words['tools']}:"]
    for invocation in invocations:
        details = invocation.retrieval_details
        status = details.evidence_status if details else "unknown"
        count = len(details.evidence_refs or []) if details else 0
        lines.append(f"- #{invocation.invocation_id} {call_signature(invocation)} → {status}, {count} {words['refs']}")
    return {
        "answer_summary": words["reject_summary"],
        "recommended_actions": [],
        "user_facing_answer": "\n".join(lines),
    }


def composer_fallback_answer(
    language: str, verdict: str, allowed_claims: list[AllowedClaim], missing_info: list[Any], actions: list[Any]
) -> dict[str, Any]:
    words = _words(language)
    lines = [words["incomplete"]] if verdict != "PASS" else []
    if allowed_claims:
        lines.append(f"{words['claims']}:")
        for claim in allowed_claims:
            text = words["no_evidence"] + "." if claim.no_evidence else claim.claim_text
            lines.append(f"- {text} [{claim.citation}]")
    else:
        lines.append(words["none"])
    if missing_info:
        lines += ["", f"{words['gaps']}:"] + [f"- {item}" for item in missing_info]
    flagged = [flag(str(item), language) for item in actions]  # destructive commands only behind a review flag
    if flagged:
        lines += ["", f"{words['actions']}:"] + [f"- {item}" for item in flagged]
    return {
        "answer_summary": words["summary"].format(n=len(allowed_claims)),
        "recommended_actions": [{"action_text": item, "reason": words["reason"]} for item in flagged],
        "user_facing_answer": "\n".join(lines),
    }
