"""The offline Planner: a skill chosen by alert, then by the firing alert of the
named service, then by title terms; steps that name the concrete tool queries of
the compiled plan (plan.py) laid out in advance: the ones the offline Executor
makes, as far as they can be known before any result."""

from __future__ import annotations

from typing import Any

from evcli.agents.engine import EngineReply, RoleRequest
from evcli.agents.offline.payload import Ask, Call, intent_of, reply
from evcli.agents.offline.plan import Known, compile_plan
from evcli.messages import Catalogue, catalogue


def plan(request: RoleRequest) -> EngineReply:
    payload = request.payload
    intent = intent_of(payload)
    question = payload.get("question", "")
    environment = payload.get("environment") or {}
    alerts = environment.get("alerts") or []
    skills = environment.get("skills") or []
    words = catalogue(intent.language)

    skill, reason = _choose_skill(intent, alerts, skills, words)
    compiled = compile_plan(intent, question, Known.foreseen(alerts))  # the plan the Executor runs
    narrow = intent.narrow or intent.names_only_unknown
    reasoning = words("plan.reasoning.narrow" if narrow else "plan.reasoning.broad")
    steps = [f"{call.signature()} — {_purpose(call, words)}" for call in compiled.calls]
    steps += [words("plan.then_suspects")] if compiled.then_suspects else []
    steps = steps or [words("plan.nothing_precise")]
    return reply(
        {
            "selected_skill": skill,
            "selection_reason": reason,
            "plan": steps,
            "reasoning": reasoning,
        }
    )


def _purpose(call: Call, words: Catalogue) -> str:
    if call.name == "query_metrics":
        return words("purpose.metrics")
    if call.name == "lookup_knowledge":
        return words("purpose.knowledge")
    if call.name == "find_changes":
        return words("purpose.changes")
    if call.name == "query_traces":
        return words("purpose.traces")
    if call.arguments.get("query"):
        return words("purpose.log_query")
    return words("purpose.log_level")


def _choose_skill(
    intent: Ask,
    alerts: list[dict[str, Any]],
    skills: list[dict[str, Any]],
    words: Catalogue,
) -> tuple[str | None, str]:
    def with_alert(alertname: str) -> dict[str, Any] | None:
        return next(
            (s for s in skills if alertname.lower() in (a.lower() for a in s.get("alerts") or [])),
            None,
        )

    for alertname in intent.alertnames:
        skill = with_alert(alertname)
        if skill:
            return skill["name"], words("skill.named_alert", alertname=alertname)
    for service in intent.services:
        for alert in alerts:
            if alert.get("service") == service and alert.get("state") == "firing":
                skill = with_alert(alert.get("alertname", ""))
                if skill:
                    return skill["name"], words("skill.service_firing", service=service, name=alert["alertname"])
    scored = []
    for position, skill in enumerate(skills):
        haystack = f"{skill.get('title', '')} {skill.get('name', '')}".lower()
        hits = [term for term in intent.terms if term.lower() in haystack]
        serves = any(service in (skill.get("services") or []) for service in intent.services)
        if hits:
            scored.append((-len(hits), not serves, position, skill, hits))
    if scored:
        *_, skill, hits = min(scored, key=lambda item: item[:3])
        return skill["name"], words("skill.title_terms", terms=", ".join(hits))
    if intent.services:
        serving = [s for s in skills if any(service in (s.get("services") or []) for service in intent.services)]
        if len({s["name"] for s in serving}) == 1:
            return serving[0]["name"], words("skill.only_service")
    if not intent.services and not intent.narrow:
        for alert in alerts:
            if alert.get("state") == "firing":
                skill = with_alert(alert.get("alertname", ""))
                if skill:
                    return skill["name"], words("skill.environment_firing", name=alert["alertname"])
    return None, words("skill.none")
