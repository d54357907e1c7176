"""The offline engine: plays all four roles deterministically, without a network.

It reads only the structured payload a stage builds (never the prompt text) and
answers with the role's JSON document, or, for the Executor, with tool calls.
Its boundaries are the seeds' (DESIGN §1):

- Planner: a skill chosen by alert, then by the firing alert of the named
  service, then by title terms; steps that name the concrete tool queries.
- Executor: claims are built only from evidence refs. Every binding quotes a
  verbatim span of exactly one ref and every claim text is a template filled
  with values read from that span, so the Gatekeeper and the Verifier can
  check it. Ref text is data to quote: nothing in it changes what the engine
  does. Runbook blocks never become facts of this environment; they feed
  hypotheses (possibilities) and evidence-collection actions. A narrow task
  makes one precise query and never widens it after no evidence.
- Verifier: rule-based entailment over the verified excerpts, capped by the gate.
- Composer: templates over the allowed material only; a no-evidence claim is
  only ever "this query found no matching evidence".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evcli.agents.actions import flag as flag_destructive
from evcli.agents.engine import EngineError, EngineReply, RoleRequest, ToolCall, Turn, Usage
from evcli.agents.intent import TIME_UNITS, Intent, humps
from evcli.canonical import canonical_json
from evcli.contracts import ANSWER_VERSION, NO_EVIDENCE_PATH, EvidenceRef, ToolInvocation
from evcli.errors import BadInput
from evcli.gatekeeper.excerpt import STOP_WORDS, normalize
from evcli.tools.params import validate_params

MODEL = "offline"

METRICS_WINDOW = "30m"  # the tool's own default, named so plans show it
LOG_WINDOW = "1h"
LOG_LIMIT = 20
KNOWLEDGE_LIMIT = 8
NAMED_SERVICE_CAP = 3
DISCOVERED_SERVICE_CAP = 2
NARROW_CLAIM_CAP = 2
SERIES_PER_SERVICE = 2
LOG_SYMPTOM_CAP = 3
HYPOTHESIS_CAP = 2
ACTION_CAP = 3

CRITICAL_TYPES = frozenset({"observation", "negative_observation", "symptom", "root_cause"})
LEVEL_RANK = {"FATAL": 3, "ERROR": 2, "WARN": 1}


class OfflineEngine:
    """The `Engine` behind `--model offline`."""

    name = "offline"

    def complete(self, request: RoleRequest) -> EngineReply:
        handler = _HANDLERS.get(request.role)
        if handler is None:
            raise EngineError(f"offline engine: unknown role {request.role!r}")
        try:
            return handler(request)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise EngineError(f"offline engine: malformed {request.role} payload: {exc!r}") from exc


def _reply(document: dict[str, Any]) -> EngineReply:
    return EngineReply(text=json.dumps(document, ensure_ascii=False), usage=Usage(), model=MODEL)


def _intent(payload: dict[str, Any]) -> Intent:
    raw = payload.get("intent") or {}
    services, alertnames = tuple(raw.get("services") or ()), tuple(raw.get("alertnames") or ())
    alert = payload.get("aiops_alert")
    if isinstance(alert, dict):  # alert-driven run: the alert names what the question may not
        labels = alert.get("labels") if isinstance(alert.get("labels"), dict) else alert
        services = services or tuple(str(labels[key]) for key in ("service",) if labels.get(key))
        alertnames = alertnames or tuple(str(labels[key]) for key in ("alertname",) if labels.get(key))
    return Intent(
        language=payload.get("language") or "en",
        narrow=payload.get("task_scope") == "narrow",
        services=services,
        alertnames=alertnames,
        terms=tuple(raw.get("terms") or ()),
        window=raw.get("window"),
    )


def _zh(intent_or_language: Intent | str) -> bool:
    language = intent_or_language if isinstance(intent_or_language, str) else intent_or_language.language
    return language == "zh"


# --- tool calls ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    name: str
    arguments: dict[str, Any]

    @property
    def key(self) -> str:
        return _call_key(self.name, self.arguments)

    def signature(self) -> str:
        params = ", ".join(f"{key}={value!r}" for key, value in self.arguments.items())
        return f"{self.name}({params})"


def _call_key(name: str, arguments: dict[str, Any]) -> str:
    """Calls compare by their validated parameters, defaults filled in, as the store records them."""
    try:
        arguments = validate_params(name, arguments).model_dump(exclude_none=True)
    except BadInput:
        pass
    return name + canonical_json(arguments)


_LOG_WORDS = re.compile(r"\blogs?\b|\berrors?\b|\bexceptions?\b|日志|错误|报错|异常", re.IGNORECASE)


def _log_query(term: str) -> str:
    return f'"{term}"' if " " in term else term


def _narrow_call(intent: Intent, question: str) -> _Call | None:
    """The one precise query a narrow task allows (seeds 2.4), or None when nothing is precise enough."""
    service = intent.services[0] if intent.services else None
    if intent.alertnames:
        arguments = {"service": service} if service else {}
        arguments |= {"alertname": intent.alertnames[0], "window": intent.window or METRICS_WINDOW}
        return _Call("query_metrics", arguments)
    if service is None:
        return None
    if intent.terms:
        query = _log_query(intent.terms[0])
        return _Call("query_logs", {"service": service, "query": query, "window": intent.window or LOG_WINDOW})
    if _LOG_WORDS.search(question):
        return _Call("query_logs", {"service": service, "level": "ERROR", "window": intent.window or LOG_WINDOW})
    return _Call("query_metrics", {"service": service, "window": intent.window or METRICS_WINDOW})


def _discovery_calls(intent: Intent) -> list[_Call]:
    """Broad task naming no service: which services have alerts (those of the named alerts, if any)."""
    window = intent.window or METRICS_WINDOW
    if intent.alertnames:
        return [_Call("query_metrics", {"alertname": name, "window": window}) for name in intent.alertnames[:2]]
    return [_Call("query_metrics", {"window": window})]


def _service_calls(intent: Intent, services: list[str]) -> list[_Call]:
    window = intent.window or METRICS_WINDOW
    return [_Call("query_metrics", {"service": service, "window": window}) for service in services]


def _evidence_calls(intent: Intent, question: str, services: list[str], alertname: str | None) -> list[_Call]:
    """Runbook lookup first (it is never repeated), then each service's WARN+ logs and its term search."""
    calls = []
    if services or alertname or intent.terms:
        arguments: dict[str, Any] = {"query": _knowledge_query(intent, question, alertname)}
        if alertname:
            arguments["alertname"] = alertname
        if services:
            arguments["service"] = services[0]
        calls.append(_Call("lookup_knowledge", arguments | {"limit": KNOWLEDGE_LIMIT}))
    window = intent.window or LOG_WINDOW
    for service in services:
        calls.append(_Call("query_logs", {"service": service, "level": "WARN", "window": window, "limit": LOG_LIMIT}))
        if intent.terms:
            query = _log_query(intent.terms[0])
            calls.append(
                _Call(
                    "query_logs",
                    {"service": service, "query": query, "level": "WARN", "window": window, "limit": LOG_LIMIT},
                )
            )
    return calls


_QUESTION_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{3,}|[\u4e00-\u9fff]{2,}")
_QUESTION_STOPWORDS = frozenset(
    "what which when where there their this that with from have does doing keeps only just confirm "
    "whether check please could would should about into over last past hour hours minutes currently".split()
)


def _knowledge_query(intent: Intent, question: str, alertname: str | None) -> str:
    """Alert name, intent terms, then the question's own content words; at most 300 characters."""
    words = [alertname] if alertname else []
    words += list(intent.alertnames) + list(intent.terms)
    words += [word for word in _QUESTION_WORD.findall(question) if word.lower() not in _QUESTION_STOPWORDS]
    words.append("排查" if _zh(intent) else "checks")  # lifts the checking steps of a runbook
    unique = list(dict.fromkeys(word for word in words if word))
    query = ""
    for word in unique:
        if len(query) + len(word) + 1 > 300:
            break
        query = f"{query} {word}".strip()
    return query


def _firing_services(alerts: list[dict[str, Any]], cap: int) -> list[str]:
    ordered = [alert for alert in alerts if alert.get("state") == "firing"]
    ordered += [alert for alert in alerts if alert.get("state") == "pending"]
    return list(dict.fromkeys(str(alert["service"]) for alert in ordered if alert.get("service")))[:cap]


def _first_firing_alert(alerts: list[dict[str, Any]], service: str | None) -> str | None:
    for alert in alerts:
        if alert.get("state") == "firing" and (service is None or alert.get("service") == service):
            return alert.get("alertname")
    return None


# --- planner ---------------------------------------------------------------------------


def _plan(request: RoleRequest) -> EngineReply:
    payload = request.payload
    intent = _intent(payload)
    question = payload.get("question", "")
    environment = payload.get("environment") or {}
    alerts = environment.get("alerts") or []
    skills = environment.get("skills") or []
    zh = _zh(intent)

    skill, reason = _choose_skill(intent, alerts, skills)
    if intent.narrow:
        call = _narrow_call(intent, question)
        calls = [call] if call else []
        reasoning = (
            "窄范围确认：一次精确查询，只输出观察；无结果时不放宽关键词、不删除服务名、不扩大服务范围。"
            if zh
            else "Narrow confirmation: one precise query and observations only; "
            "after no evidence the query is not widened."
        )
    else:
        services = list(intent.services[:NAMED_SERVICE_CAP])
        relevant = [a for a in alerts if not intent.alertnames or a.get("alertname") in intent.alertnames]
        calls = [] if services else _discovery_calls(intent)
        services = services or _firing_services(relevant, DISCOVERED_SERVICE_CAP)
        alertname = (intent.alertnames or (None,))[0] or _first_firing_alert(alerts, services[0] if services else None)
        calls += _service_calls(intent, services) + _evidence_calls(intent, question, services, alertname)
        reasoning = (
            "宽范围诊断：先收集告警、指标和日志证据，再查 runbook；runbook 内容只作为假设和排查动作，不作为本环境事实。"
            if zh
            else "Broad diagnosis: collect alerts, metrics and logs first, then runbook guidance; runbook content "
            "becomes hypotheses and checking steps, never facts of this environment."
        )
    plan = [f"{call.signature()} — {_purpose(call, zh)}" for call in calls]
    if not plan:
        plan = [
            "问题未指明可精确查询的服务或告警，无法执行精确查询。"
            if zh
            else "The question names no service or alert precise enough to query."
        ]
    return _reply({"selected_skill": skill, "selection_reason": reason, "plan": plan, "reasoning": reasoning})


def _purpose(call: _Call, zh: bool) -> str:
    if call.name == "query_metrics":
        return "告警与指标序列" if zh else "alerts and metric series"
    if call.name == "lookup_knowledge":
        return (
            "runbook 指引（仅作可能性，不是本环境事实）"
            if zh
            else "runbook guidance (possibilities, not facts of this environment)"
        )
    if call.arguments.get("query"):
        return "匹配关键词的日志" if zh else "log lines matching the keywords"
    return "WARN 及以上级别的日志" if zh else "WARN and ERROR log lines"


def _choose_skill(intent: Intent, alerts: list[dict], skills: list[dict]) -> tuple[str | None, str]:
    zh = _zh(intent)

    def with_alert(alertname: str) -> dict | None:
        return next((s for s in skills if alertname.lower() in (a.lower() for a in s.get("alerts") or [])), None)

    for alertname in intent.alertnames:
        skill = with_alert(alertname)
        if skill:
            return skill["name"], (
                f"问题提到告警 {alertname}，该 skill 处理此告警。"
                if zh
                else f"The question names the {alertname} alert, which this skill handles."
            )
    for service in intent.services:
        for alert in alerts:
            if alert.get("service") == service and alert.get("state") == "firing":
                skill = with_alert(alert.get("alertname", ""))
                if skill:
                    name = alert["alertname"]
                    return skill["name"], (
                        f"{service} 当前有 firing 状态的 {name} 告警，该 skill 处理此告警。"
                        if zh
                        else f"{service} has a firing {name} alert, which this skill handles."
                    )
    scored = []
    for position, skill in enumerate(skills):
        haystack = f"{skill.get('title', '')} {skill.get('name', '')}".lower()
        hits = [term for term in intent.terms if term.lower() in haystack]
        serves = any(service in (skill.get("services") or []) for service in intent.services)
        if hits:
            scored.append((-len(hits), not serves, position, skill, hits))
    if scored:
        *_, skill, hits = min(scored, key=lambda item: item[:3])
        terms = ", ".join(hits)
        return skill["name"], (
            f"skill 标题与问题中的 {terms} 相符。" if zh else f"The skill's title matches {terms} from the question."
        )
    if intent.services:
        serving = [s for s in skills if any(service in (s.get("services") or []) for service in intent.services)]
        if len({s["name"] for s in serving}) == 1:
            return serving[0]["name"], (
                "只有该 skill 覆盖所问服务。" if zh else "It is the only skill covering the service asked about."
            )
    if not intent.services and not intent.narrow:
        for alert in alerts:
            if alert.get("state") == "firing":
                skill = with_alert(alert.get("alertname", ""))
                if skill:
                    name = alert["alertname"]
                    return skill["name"], (
                        f"环境中有 firing 状态的 {name} 告警。" if zh else f"The environment has a firing {name} alert."
                    )
    return None, (
        "没有与问题中的告警、服务或术语相符的 skill。"
        if zh
        else "No skill matches the alerts, services or terms of the question."
    )


# --- executor: deciding the next calls ------------------------------------------------------


def _execute(request: RoleRequest) -> EngineReply:
    payload = request.payload
    transcript = list(request.transcript)
    intent = _intent(payload)
    retry = payload.get("retry_context") or None
    # Refused and failed calls count as done: the same call would only be refused again.
    done = {_call_key(turn.call.name, turn.call.arguments) for turn in transcript}
    done |= {
        _call_key(query.get("tool_name", ""), query.get("input_params") or {})
        for query in (retry or {}).get("completed_queries") or []
    }
    pending = [call for call in _wanted_calls(payload, intent, transcript, retry, done) if call.key not in done]
    # The stage withholds the tools on its last step (`final_step`): then the document is due.
    offered = {(schema.get("function") or schema).get("name") for schema in request.tools or []}
    runnable = [call for call in pending if call.name in offered]
    if runnable and not payload.get("final_step"):
        first = len(transcript) + 1
        calls = [ToolCall(id=f"call-{first + i}", name=c.name, arguments=c.arguments) for i, c in enumerate(runnable)]
        return EngineReply(text="", tool_calls=calls, usage=Usage(), model=MODEL)
    document = _evidence_document(payload, intent, transcript, retry)
    if pending:
        document["missing_info"].append(
            ("步数预算内未执行：" if _zh(intent) else "Not run within the step budget: ")
            + "; ".join(call.signature() for call in pending)
        )
    return _reply(document)


def _wanted_calls(
    payload: dict, intent: Intent, transcript: list[Turn], retry: dict | None, done: set[str]
) -> list[_Call]:
    """Every call the task wants given what is known so far; a phase waits for the results of the one before."""
    question = payload.get("question", "")
    if intent.narrow:
        call = _narrow_call(intent, question)
        return [call] if call else []  # a retry never widens a narrow query either
    results = _results(transcript)
    calls: list[_Call] = []
    services = list(intent.services[:NAMED_SERVICE_CAP])
    if not services:
        discovery = _discovery_calls(intent)
        calls += discovery
        if not all(call.key in done for call in discovery):
            return calls
        alerts = [a for call in discovery if call.key in results for a in results[call.key].output.get("alerts") or []]
        services = _firing_services(alerts, DISCOVERED_SERVICE_CAP)
        if not services:
            services = [
                query["input_params"]["service"]
                for query in (retry or {}).get("completed_queries") or []
                if query.get("tool_name") == "query_metrics" and (query.get("input_params") or {}).get("service")
            ][:DISCOVERED_SERVICE_CAP]
    per_service = _service_calls(intent, services)
    calls += per_service
    if not all(call.key in done for call in per_service):
        return calls
    service_alerts = [
        a for call in per_service if call.key in results for a in results[call.key].output.get("alerts") or []
    ]
    alertname = (intent.alertnames or (None,))[0] or _first_firing_alert(
        service_alerts, services[0] if services else None
    )
    calls += _evidence_calls(intent, question, services, alertname)
    if retry:
        calls += _follow_up_calls(intent, services)
    return calls


def _follow_up_calls(intent: Intent, services: list[str]) -> list[_Call]:
    """Evidence retry of a broad task: the same services over a longer window, errors only."""
    window = "2h" if (intent.window or LOG_WINDOW) != "2h" else "6h"
    calls = []
    for service in services:
        calls.append(_Call("query_metrics", {"service": service, "window": window}))
        calls.append(_Call("query_logs", {"service": service, "level": "ERROR", "window": window, "limit": LOG_LIMIT}))
    return calls


def _results(transcript: list[Turn]) -> dict[str, ToolInvocation]:
    """Successful recorded invocations by call key (a refused call has none)."""
    results = {}
    for turn in transcript:
        if turn.invocation is not None and turn.invocation.success:
            results[_call_key(turn.call.name, turn.call.arguments)] = turn.invocation
    return results


# --- executor: claims from evidence refs -------------------------------------------------


@dataclass(frozen=True)
class _Ref:
    invocation: ToolInvocation
    index: int  # position in its evidence array; -1 for $.no_evidence
    ref: EvidenceRef

    @property
    def array(self) -> str:
        return self.ref.raw_path.split("[", 1)[0].removeprefix("$.")

    @property
    def item(self) -> dict[str, Any]:
        items = self.invocation.output.get(self.array) or []
        return items[self.index] if 0 <= self.index < len(items) and isinstance(items[self.index], dict) else {}

    @property
    def identity(self) -> tuple[int, str]:
        return self.invocation.invocation_id, self.ref.raw_path


_PATH_INDEX = re.compile(r"^\$\.(\w+)\[(\d+)\]$")


def _refs(invocation: ToolInvocation) -> list[_Ref]:
    details = invocation.retrieval_details
    refs = []
    for ref in (details.evidence_refs or []) if details else []:
        match = _PATH_INDEX.match(ref.raw_path)
        refs.append(_Ref(invocation, int(match.group(2)) if match else -1, ref))
    return refs


def _binding(ref: _Ref, excerpt: str | None = None) -> dict[str, Any]:
    return {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": ref.invocation.tool_name,
        "source_invocation_id": ref.invocation.invocation_id,
        "raw_path": ref.ref.raw_path,
        "evidence_excerpt": excerpt if excerpt is not None else ref.ref.text,
    }


def _claim(claim_type: str, text: str, ref: _Ref, excerpt: str | None = None) -> dict[str, Any]:
    return {
        "claim_id": "",
        "claim_type": claim_type,
        "claim_text": text,
        "support_level": "direct",
        "evidence_bindings": [_binding(ref, excerpt)],
    }


def _evidence_document(payload: dict, intent: Intent, transcript: list[Turn], retry: dict | None) -> dict[str, Any]:
    zh = _zh(intent)
    invocations = [turn.invocation for turn in transcript if turn.invocation is not None]
    refs = [ref for invocation in invocations if invocation.success for ref in _refs(invocation)]
    missing: list[str] = []
    claims: list[dict[str, Any]] = []
    hypotheses: list[str] = []
    actions: list[str] = []

    if intent.narrow:
        claims = _narrow_claims(intent, refs, missing)
        missing += _narrow_scope_notes(intent, payload.get("question", ""), invocations)
    else:
        claims = _alert_claims(refs, zh) + _series_claims(intent, refs, zh) + _log_claims(intent, refs, zh, "symptom")
        blocks = [ref for ref in refs if ref.array == "evidence_blocks"]
        doc_rank = _doc_ranks(intent, blocks, _firing_alert_names(refs))
        hypotheses = _hypotheses(intent, blocks, claims, doc_rank)
        actions = _actions(intent, blocks, doc_rank)
        if not blocks:
            missing.append(
                "本次未检索到可参考的 runbook 指引。" if zh else "No runbook guidance was retrieved in this run."
            )
        if hypotheses:
            missing.append(
                "runbook 中的可能原因尚未被本环境的证据证实。"
                if zh
                else "The possible causes from runbooks are not confirmed by evidence from this environment."
            )
    claims += [_negative_claim(ref, zh) for ref in refs if ref.ref.raw_path == NO_EVIDENCE_PATH]
    missing += [_no_evidence_note(ref, zh) for ref in refs if ref.ref.raw_path == NO_EVIDENCE_PATH]
    missing += _call_problems(transcript, zh)
    if intent.narrow:
        claims = claims[:NARROW_CLAIM_CAP]
    queried = [i.retrieval_details.service for i in invocations if i.retrieval_details and i.retrieval_details.service]
    if not actions and not intent.narrow and queried:
        services = ", ".join(dict.fromkeys(queried))
        actions.append(
            f"补充收集 {services} 同一时间窗口内的日志与指标。"
            if zh
            else f"Collect more logs and metrics of {services} for the same time window."
        )

    claims = _merge_retry(claims, retry)
    return {
        "answer_version": ANSWER_VERSION,
        "claims": claims,
        "hypotheses": hypotheses,
        "recommended_actions": actions,
        "missing_info": list(dict.fromkeys(missing)),
    }


def _narrow_claims(intent: Intent, refs: list[_Ref], missing: list[str]) -> list[dict[str, Any]]:
    zh = _zh(intent)
    alerts = _alert_claims(refs, zh)
    if alerts:
        return alerts
    if any(ref.array == "series" for ref in refs):
        if intent.alertnames:
            name = intent.alertnames[0]
            missing.append(
                f"该查询未返回 {name} 告警条目，只返回了指标序列。"
                if zh
                else f"The query returned no {name} alert item, only metric series."
            )
        return _series_claims(intent, refs, zh, cap=1)
    return _log_claims(intent, refs, zh, "observation", cap=NARROW_CLAIM_CAP, symptoms_only=False)


def _narrow_scope_notes(intent: Intent, question: str, invocations: list[ToolInvocation]) -> list[str]:
    zh = _zh(intent)
    notes = []
    if not _narrow_call(intent, question):
        notes.append(
            "问题没有指明可精确查询的服务或告警，因此没有执行查询。"
            if zh
            else "The question names no service or alert precise enough to query, so nothing was queried."
        )
    if len(intent.services) > 1:
        others = ", ".join(intent.services[1:])
        notes.append(
            f"窄范围查询只确认了 {intent.services[0]}，未检查：{others}。"
            if zh
            else f"This narrow query only checked {intent.services[0]}; not checked: {others}."
        )
    if invocations:
        notes.append(
            "本次只确认了所问的对象，未检查其他告警、日志或指标。"
            if zh
            else "Only the item asked about was checked; other alerts, logs and metrics were not."
        )
    return notes


def _alert_fields(text: str) -> dict[str, str]:
    """The fields of an alert ref (`Name, key=value, ...`, see evcli.tools.refs.alert_text) up to the summary."""
    head, _, rest = text.partition(", ")
    fields = {"alertname": head}
    for piece in rest.split(", "):
        key, separator, value = piece.partition("=")
        if not separator or key == "summary":
            break
        fields[key] = value
    return fields


def _alert_excerpt(text: str) -> str:
    """The alert ref up to its duration: the summary and start time restate nothing the claim uses."""
    for marker in (", active_at=", ", summary="):
        if marker in text:
            return text[: text.index(marker)]
    return text


def _alert_claims(refs: list[_Ref], zh: bool) -> list[dict[str, Any]]:
    claims, seen = [], set()
    for ref in refs:
        if ref.array != "alerts" or ref.ref.text in seen:
            continue
        seen.add(ref.ref.text)
        excerpt = _alert_excerpt(ref.ref.text)
        fields = _alert_fields(excerpt)
        name, state, service = fields["alertname"], fields.get("state", ""), fields.get("service")
        values = [f"{key}={fields[key]}" for key in ("current", "duration") if fields.get(key)]
        if zh:
            subject = f"{service} 当前存在" if service else "当前存在"
            text = f"{subject} {state} 状态的 {name} 告警" if state else f"{subject} {name} 告警"
            text += ("，" + "，".join(values) if values else "") + "。"
        else:
            subject = f"{service} has" if service else "There is"
            text = f"{subject} a {state} {name} alert" if state else f"{subject} an {name} alert"
            text += (": " + ", ".join(values) if values else "") + "."
        claims.append(_claim("observation", text, ref, excerpt))
    return claims


_GENERIC_METRIC_WORDS = frozenset("high low usage rate total used max min count per the of".split())
_METRIC_SYNONYMS = {
    "memory": ("memory", "heap"),
    "heap": ("heap", "memory"),
    "response": ("latency",),
    "slow": ("latency",),
    "latency": ("latency",),
    "space": ("disk",),
    "disk": ("disk",),
    "cpu": ("cpu",),
    "pool": ("pool",),
    "gc": ("gc",),
    "oomkilled": ("memory", "heap"),
    "oom": ("memory", "heap"),
    "errors": ("error",),
}


def _metric_words(name: str) -> set[str]:
    words = {word.lower() for part in re.split(r"[\s_./-]+", name) for word in humps(part) or [part]}
    return words - _GENERIC_METRIC_WORDS


def _series_fields(text: str) -> tuple[list[str], dict[str, str]]:
    """Leading words (service, metric) and the key=value statistics of a series ref."""
    words, stats = [], {}
    for piece in text.split(" "):
        key, separator, value = piece.partition("=")
        if separator:
            stats[key] = value
        else:
            words.append(piece)
    return words, stats


def _series_claims(intent: Intent, refs: list[_Ref], zh: bool, cap: int = SERIES_PER_SERVICE) -> list[dict[str, Any]]:
    """Series worth stating: the metric of an alert of the same call, or one the question's terms name."""
    term_words = {
        synonym
        for term in intent.terms
        for word in _metric_words(term)
        for synonym in _METRIC_SYNONYMS.get(word, (word,))
    }
    claims = []
    for invocation_id in dict.fromkeys(ref.invocation.invocation_id for ref in refs):
        own = [ref for ref in refs if ref.invocation.invocation_id == invocation_id]
        alert_names = [_alert_fields(ref.ref.text)["alertname"] for ref in own if ref.array == "alerts"]
        alert_words = {word for name in [*alert_names, *intent.alertnames[:1]] for word in _metric_words(name)}
        related = {synonym for word in alert_words for synonym in _METRIC_SYNONYMS.get(word, (word,))}
        scored = []
        for ref in own:
            if ref.array != "series":
                continue
            words, stats = _series_fields(ref.ref.text)
            if len(words) < 2 or not stats:
                continue
            metric = _metric_words(words[1])
            score = 2 * bool(metric & alert_words) + bool(metric & related) + bool(metric & term_words)
            if score:
                scored.append((-score, ref.index, ref, words, stats))
        for *_, ref, words, stats in sorted(scored, key=lambda item: item[:2])[:cap]:
            service, metric = words[0], words[1]
            values = [f"{key}={stats[key]}" for key in ("min", "max", "last") if key in stats]
            window = stats.get("window")
            if zh:
                where = f"在 window={window} 内" if window else ""
                text = f"{service} 的 {metric} {where}：{'，'.join(values)}。"
            else:
                where = f" over window={window}" if window else ""
                text = f"{service} {metric}{where}: {', '.join(values)}."
            claims.append(_claim("observation", text, ref))
    return claims


_SIGNAL = re.compile(
    r"exception|error|fail|timed? ?out|timeout|refused|unavailable|\boom|out of memory|killed|full gc|saturat"
    r"|reject|exhaust|slow|latency|exceed|above threshold|no space|evict|panic|crash|restart|deadlock|denied"
    r"|could not|cannot|unable|status=5\d\d|\b5\d\d\b",
    re.IGNORECASE,
)
_STACK_FRAME = re.compile(r"^\s*(?:at\s+[\w.$<>]+\(|\.\.\.\s*\d+\s+more|caused by:)", re.IGNORECASE)


def _log_parts(ref: _Ref) -> tuple[str, str, str, str] | None:
    """(service, timestamp, level, message) of a log ref as they appear in its text, or None."""
    item = ref.item
    timestamp = str(item.get("timestamp") or "").replace("T", " ").removesuffix("Z")
    parts = (str(item.get("service") or ""), timestamp, str(item.get("level") or ""), str(item.get("message") or ""))
    if not all(parts) or not all(part in ref.ref.text for part in parts):
        return None
    return parts


def _pattern_key(message: str) -> str:
    """Lines differing only in numbers or in their logger prefix say the same thing."""
    tail = message.rsplit(" - ", 1)[-1]
    return re.sub(r"\d+", "#", tail).lower()[:40]


def _log_claims(
    intent: Intent, refs: list[_Ref], zh: bool, claim_type: str, cap: int = LOG_SYMPTOM_CAP, symptoms_only: bool = True
) -> list[dict[str, Any]]:
    """Distinct log lines, errors first, then lines naming a term of the question, newest first.

    A line is quoted, never obeyed. As a symptom it must show an error signal in its own
    words (an exception, a timeout, a kill, ...), so a WARN line of prose is not promoted."""
    terms = [term.lower() for term in intent.terms]
    candidates = []
    for ref in refs:
        if ref.array != "logs":
            continue
        parts = _log_parts(ref)
        if parts is None:
            continue
        service, timestamp, level, message = parts
        if _STACK_FRAME.match(message) or (symptoms_only and not _SIGNAL.search(message)):
            continue
        term_hit = any(term in message.lower() for term in terms)
        candidates.append(((-LEVEL_RANK.get(level.upper(), 0), not term_hit), timestamp, ref, parts))
    candidates.sort(key=lambda item: (item[1], item[2].identity), reverse=True)  # newest first...
    candidates.sort(key=lambda item: item[0])  # ...within errors first, then lines naming a term
    claims, seen_patterns, seen_texts = [], set(), set()
    for _, _, ref, (service, timestamp, level, message) in candidates:
        pattern = _pattern_key(message)
        if pattern in seen_patterns or ref.ref.text in seen_texts:
            continue
        seen_patterns.add(pattern)
        seen_texts.add(ref.ref.text)
        text = (
            f"{service} 在 {timestamp} 记录了 {level} 日志：{message}"
            if zh
            else f"{service} logged {level} at {timestamp}: {message}"
        )
        claims.append(_claim(claim_type, text, ref))
        if len(claims) == cap:
            break
    return claims


def _no_evidence_scope(text: str) -> tuple[str | None, str | None]:
    """(query, window) as a $.no_evidence ref text states them (evcli.tools.refs.no_evidence_text)."""
    query = re.search(r"(?:^|; )query=([^;]*)", text)
    window = re.search(r"(?:^|; )window=([^;]*)", text)
    return query.group(1) if query else None, window.group(1) if window else None


def _negative_claim(ref: _Ref, zh: bool) -> dict[str, Any]:
    tool = ref.invocation.tool_name
    query, window = _no_evidence_scope(ref.ref.text)
    details = ref.invocation.retrieval_details
    if zh:
        noun = {"query_logs": "日志", "query_metrics": "告警或指标", "lookup_knowledge": "知识库文档"}.get(tool, "证据")
        service = details.service if details else None
        keywords = " ".join(dict.fromkeys(details.keywords)) if details else ""
        if service and service not in ref.ref.text:
            service = None
        if keywords and keywords not in ref.ref.text:
            keywords = ""
        if service and keywords:
            subject = f"{service} 的 {keywords} 相关{noun}"
        elif service:
            subject = f"{service} 的{noun}"
        elif keywords:
            subject = f"{keywords} 相关{noun}"
        else:
            subject = f"匹配的{noun}"
        scope = f"window={window}，total=0" if window else "total=0"
        text = f"当前查询未检索到 {subject}（{scope}）。"
    else:
        target = f" for {query}" if query else ""
        span = f" in the last {window}" if window else ""
        text = f"This query found no matching evidence: {tool}{target}{span} returned total=0."
    return _claim("negative_observation", text, ref)


def _no_evidence_note(ref: _Ref, zh: bool) -> str:
    tool = ref.invocation.tool_name
    query, window = _no_evidence_scope(ref.ref.text)
    scope = ", ".join(
        part for part in (f"query={query}" if query else "", f"window={window}" if window else "") if part
    )
    if zh:
        return f"{tool}（{scope}）未检索到匹配证据；该查询范围之外未检查。"
    return f"{tool} ({scope}) found no matching evidence; nothing outside that query was checked."


def _call_problems(transcript: list[Turn], zh: bool) -> list[str]:
    notes = []
    for turn in transcript:
        signature = _Call(turn.call.name, turn.call.arguments).signature()
        if turn.invocation is None:
            reason = re.sub(r"<[^>]*>", "", turn.view).strip().split("\n", 1)[0]
            notes.append(f"{signature} 未执行：{reason}" if zh else f"{signature} was not run: {reason}")
        elif not turn.invocation.success or (
            turn.invocation.retrieval_details and turn.invocation.retrieval_details.evidence_status == "failed"
        ):
            reason = turn.invocation.error_message or "failed"
            notes.append(
                f"{signature} 调用失败（{reason}），相关证据缺失。"
                if zh
                else f"{signature} failed ({reason}); its evidence is missing."
            )
    return notes


# --- executor: runbook knowledge as possibilities ---------------------------------------------

_CJK = re.compile(r"[\u4e00-\u9fff]")
_LIST_ITEM = re.compile(r"(?:^|\s+)(?:-|\d+\.)\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])|(?<=[。；！？])")
_MAX_ACTION_CHARS = 220
_CAUSAL = re.compile(
    r"\b(?:causes?|caused|means?|points? at|because|leads? to|results? in|due to|runs? dry|slows? down|multiply)\b"
    r"|导致|引起|原因|说明|会让|引发|造成",
    re.IGNORECASE,
)
_CHECK_HEADING = re.compile(r"check|排查|检查|步骤", re.IGNORECASE)
# An item that starts by changing the system is remediation, not evidence collection.
_REMEDIATION = re.compile(
    r"^(?:restart|scale|roll ?back|delete|remove|raise|increase|fail ?over|kill|drop|truncate|compress|cordon"
    r"|switch off|disable|lower|add|move|stop|pause|put)\b|^(?:重启|扩容|回滚|删除|调大|限流|处置|关闭|停止)",
    re.IGNORECASE,
)


def _items(text: str) -> list[str]:
    """The list items of a block (the whole text when it has none)."""
    return [item.strip() for item in _LIST_ITEM.split(text) if item.strip()]


def _sentences(text: str) -> list[str]:
    return [piece.strip() for item in _items(text) for piece in _SENTENCE_END.split(item) if len(piece.strip()) > 12]


def _in_language(sentence: str, zh: bool) -> bool:
    return bool(_CJK.search(sentence)) == zh


_WORD = re.compile(r"[a-z][a-z0-9]{3,}|[\u4e00-\u9fff]{2}")
_COMMON_WORDS = frozenset(
    "this that with from have when than then they their there what which into over only more most "
    "after before about under above while each every other some such very does done used logged alert "
    "window service firing pending current duration".split()
)


def _observed_words(intent: Intent, claims: list[dict[str, Any]]) -> set[str]:
    """Words of the question's alerts and terms and of the claims made: what makes a runbook sentence relevant here."""
    texts = [*intent.alertnames, *intent.terms, *(claim["claim_text"] for claim in claims)]
    words = {word for text in texts for word in _WORD.findall(" ".join(humps(text)).lower() + " " + text.lower())}
    return words - _COMMON_WORDS


def _firing_alert_names(refs: list[_Ref]) -> list[str]:
    """Names of the firing alerts of the services investigated (of any service when none was)."""
    alerts = [ref for ref in refs if ref.array == "alerts"]
    targeted = [ref for ref in alerts if ref.invocation.retrieval_details and ref.invocation.retrieval_details.service]
    fields = [_alert_fields(ref.ref.text) for ref in targeted or alerts]
    return list(dict.fromkeys(alert["alertname"] for alert in fields if alert.get("state") == "firing"))


def _doc_ranks(intent: Intent, blocks: list[_Ref], alertnames: list[str]) -> dict[str, int]:
    """Documents whose title names an alert or term of this task first, then in retrieval order.

    The lookup's service hint lifts every runbook of the service; the title tells which one is
    about *this* alert (HighCPUUsage → "High CPU usage on a JVM service")."""
    names = [*intent.alertnames, *alertnames, *intent.terms]
    focus = {word for name in names for word in _metric_words(name)}
    docs = list(dict.fromkeys(str(ref.item.get("doc")) for ref in blocks))
    titles = {str(ref.item.get("doc")): _WORD.findall(str(ref.item.get("title") or "").lower()) for ref in blocks}

    def score(doc: str) -> int:
        return sum(any(word.startswith(f) or f.startswith(word) for word in titles[doc]) for f in focus)

    return {doc: rank for rank, doc in enumerate(sorted(docs, key=lambda doc: (-score(doc), docs.index(doc))))}


def _hypotheses(
    intent: Intent, blocks: list[_Ref], claims: list[dict[str, Any]], doc_rank: dict[str, int]
) -> list[str]:
    """Causal sentences of the runbooks: the best-ranked document first, and within it the
    sentences sharing most words with what was observed. Sentences with a negation are
    left out: in a runbook they rule things out, which no hypothesis may do."""
    zh = _zh(intent)
    words = _observed_words(intent, claims)
    found = []
    for order, ref in enumerate(blocks):
        block = ref.item
        for sentence in _sentences(str(block.get("text") or "")):
            if _CAUSAL.search(sentence) and not _negated(_comparable(sentence)):
                overlap = len(words & set(_WORD.findall(sentence.lower())))
                rank = doc_rank[str(block.get("doc"))]
                found.append((not _in_language(sentence, zh), rank, -overlap, order, sentence, block))
    found.sort(key=lambda item: item[:4])
    hypotheses = []
    for *_, sentence, block in found[:HYPOTHESIS_CAP]:
        doc = block.get("doc") or "?"
        hypotheses.append(
            f"可能原因（来自 runbook {doc}）：{sentence}" if zh else f"Possible cause (from runbook {doc}): {sentence}"
        )
    return hypotheses


def _actions(intent: Intent, blocks: list[_Ref], doc_rank: dict[str, int]) -> list[str]:
    """Checking steps of the runbooks; remediation steps are not evidence collection and stay out."""
    zh = _zh(intent)
    found = []
    for order, ref in enumerate(blocks):
        block = ref.item
        if not _CHECK_HEADING.search(str(block.get("heading") or "")):
            continue
        for position, item in enumerate(_items(str(block.get("text") or ""))):
            if len(item) > _MAX_ACTION_CHARS:
                item = _SENTENCE_END.split(item)[0]
            if not _REMEDIATION.search(item):
                found.append(
                    (not _in_language(item, zh), doc_rank[str(block.get("doc"))], order, position, item, block)
                )
    found.sort(key=lambda item: item[:4])
    actions = []
    for *_, sentence, block in found[:ACTION_CAP]:
        doc = block.get("doc") or "?"
        actions.append(f"{sentence}（runbook {doc}）" if zh else f"{sentence} (runbook {doc})")
    return actions


def _merge_retry(claims: list[dict[str, Any]], retry: dict | None) -> list[dict[str, Any]]:
    """Number the claims; in an evidence retry keep the verified claims that had no gap before the new ones."""
    kept: list[dict[str, Any]] = []
    if retry:
        gaps = {gap.get("claim_id") for gap in retry.get("gaps") or []}
        for claim in retry.get("verified_claims") or []:
            if claim.get("claim_id") not in gaps:
                kept.append(_as_v2_claim(claim))
    cited = {(b["source_invocation_id"], b["raw_path"]) for claim in kept for b in claim["evidence_bindings"]}
    stated = {claim["claim_text"] for claim in kept}
    fresh = [
        claim
        for claim in claims
        if claim["claim_text"] not in stated
        and not any((b["source_invocation_id"], b["raw_path"]) in cited for b in claim["evidence_bindings"])
    ]
    used = {claim["claim_id"] for claim in kept}
    number = 0
    for claim in fresh:
        number += 1
        while f"claim-{number}" in used:
            number += 1
        claim["claim_id"] = f"claim-{number}"
        used.add(claim["claim_id"])
    return kept + fresh


def _as_v2_claim(claim: dict[str, Any]) -> dict[str, Any]:
    """A prior verified claim as a v2 claim: its bindings, or bindings rebuilt from verified evidence."""
    bindings = claim.get("evidence_bindings")
    if bindings is None:
        bindings = [
            {
                "source_type": "tool_trace",
                "source_id": "",
                "tool_name": evidence.get("tool_name"),
                "source_invocation_id": evidence.get("source_invocation_id"),
                "raw_path": evidence.get("raw_path"),
                "evidence_excerpt": evidence.get("evidence_excerpt") or evidence.get("matched_text"),
            }
            for evidence in claim.get("verified_evidence") or []
        ]
    return {
        "claim_id": claim["claim_id"],
        "claim_type": claim.get("claim_type", "observation"),
        "claim_text": claim.get("claim_text", ""),
        "support_level": claim.get("support_level", "direct"),
        "evidence_bindings": bindings,
    }


# --- verifier ------------------------------------------------------------------------------

_UNIT_WORDS = {
    **TIME_UNITS,
    "%": "%",
    "percent": "%",
    "ms": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "g": "gb",
    "gb": "gb",
    "gib": "gb",
    "mb": "mb",
    "mib": "mb",
    "kb": "kb",
    "kib": "kb",
}
_TOKEN = re.compile(r"[a-z0-9][a-z0-9._:/%+-]*")
_RAW_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/%+-]*")
_NUMBER = re.compile(r"^(\d+(?:\.\d+)?)([a-z%]*)$")
_PAIR = re.compile(r"([a-z_][a-z0-9_.]*)=([^\s,;()\[\]。，；]+)")
_NEGATION_WORDS = frozenset("not no never none nothing nobody neither nor without cannot unable".split())
_ENGLISH_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")
_CJK_NEGATION = re.compile(r"[不没无未非否]")


def _comparable(text: str) -> str:
    """The Gatekeeper's normal form, with a space after a colon that ends a word or number
    ("alert: current", "23:09:02.391: com.example") so it does not glue two facts together."""
    return re.sub(r":(?=[^\d\s])", ": ", normalize(text))


def _tokens(normalized: str) -> list[str]:
    tokens = [token.rstrip("._:/+-") for token in _TOKEN.findall(normalized)]
    merged: list[str] = []
    for token in tokens:  # "25 minutes" -> "25minutes", "3.8 GB" -> "3.8gb"
        if merged and token in _UNIT_WORDS and re.fullmatch(r"\d+(?:\.\d+)?", merged[-1]):
            merged[-1] += token
        else:
            merged.append(token)
    return [token for token in merged if token]


def _number(token: str) -> tuple[float, str] | None:
    match = _NUMBER.match(token)
    if not match:
        return None
    unit = match.group(2)
    return float(match.group(1)), _UNIT_WORDS.get(unit, unit)


def _camel_words(raw: str) -> set[str]:
    tokens = (token.rstrip("._:/+-") for token in _RAW_TOKEN.findall(raw))
    return {token.casefold() for token in tokens if token[1:] != token[1:].lower() and token != token.upper()}


def _negated(normalized: str) -> bool:
    words = _ENGLISH_WORD.findall(normalized)
    return any(word in _NEGATION_WORDS or word.endswith("n't") for word in words) or bool(
        _CJK_NEGATION.search(normalized)
    )


@dataclass(frozen=True)
class _Check:
    verification: str
    facts: list[tuple[str, bool]]
    note: str


def _evidence_numbers(tokens: list[str]) -> list[tuple[float, str]]:
    numbers = []
    for token in tokens:
        for piece in re.split(r"[/:=,()]+", token):
            number = _number(piece)
            if number:
                numbers.append(number)
    return numbers


def _present(token: str, evidence: str) -> bool:
    return re.search(rf"(?<![a-z0-9])(?<![0-9]\.){re.escape(token)}(?![a-z0-9]|\.[0-9])", evidence) is not None


# Words the offline executor's own claim templates add around the quoted facts.
_FRAMING_WORDS = frozenset(
    "logged alert alerts found matching evidence returned query last log logs show shows has there window over".split()
)
_FRAMING_ZH = re.compile("当前查询未检索到|告警或指标|知识库文档|当前存在|状态的|记录了|匹配的|相关|告警|日志|证据|的|在|内")
_CONTENT_WORD = re.compile(r"[a-z]{3,}")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _missing_content(claim_raw: str, claim_text: str, evidence_raw: str, evidence: str) -> list[str]:
    """Content words and CJK terms of the claim the excerpts do not carry (framing words aside)."""
    evidence_words = set(_CONTENT_WORD.findall(evidence))
    evidence_words |= {part.lower() for token in _RAW_TOKEN.findall(evidence_raw) for part in humps(token) or [token]}
    stems = {_stem(word) for word in evidence_words}
    missing = [
        word
        for word in dict.fromkeys(_CONTENT_WORD.findall(claim_text))
        if word not in STOP_WORDS and word not in _FRAMING_WORDS and word not in _UNIT_WORDS and _stem(word) not in stems
    ]
    for run in _CJK_RUN.findall(_FRAMING_ZH.sub(" ", claim_text)):
        missing += [run[i : i + 2] for i in range(len(run) - 1) if run[i : i + 2] not in evidence][:1]
    return missing


def _negation_scope_problem(claim_text: str, evidence: str) -> str:
    """A claim negation whose next content word no negation of the evidence governs."""
    claim_words, evidence_words = _ENGLISH_WORD.findall(claim_text), _ENGLISH_WORD.findall(evidence)
    governed = set()
    for index, negation in enumerate(evidence_words):
        if negation in _NEGATION_WORDS or negation.endswith("n't"):
            following = [w for w in evidence_words[index + 1 : index + 4] if w not in STOP_WORDS and len(w) >= 3]
            governed.update(_stem(word) for word in following[:1])
    for index, word in enumerate(claim_words):
        if word in _NEGATION_WORDS or word.endswith("n't"):
            following = [w for w in claim_words[index + 1 : index + 4] if w not in STOP_WORDS and len(w) >= 3]
            if following and _stem(following[0]) not in governed:
                return f"the evidence does not negate '{following[0]}'"
    return ""


def _check_claim(claim: dict[str, Any]) -> _Check:
    evidence_items = claim.get("verified_evidence") or []
    if not evidence_items:
        return _Check("no_evidence", [], "no verified evidence")
    # Only the quoted excerpts: the rest of a ref is text the claim did not cite.
    texts = [str(item.get("evidence_excerpt") or item.get("matched_text") or "") for item in evidence_items]
    evidence_raw = " \n ".join(text for text in texts if text)
    evidence = _comparable(evidence_raw)
    claim_raw = str(claim.get("claim_text") or "")
    claim_text = _comparable(claim_raw)
    claim_type = claim.get("claim_type")
    paths = [str(item.get("raw_path") or "") for item in evidence_items]

    if claim_type == "negative_observation" and any(path != NO_EVIDENCE_PATH for path in paths):
        return _Check("contradicted", [], "a claim of no evidence rests on positive evidence")

    evidence_pairs: dict[str, set[str]] = {}
    for key, value in _PAIR.findall(evidence):
        evidence_pairs.setdefault(key, set()).add(value.rstrip(".:%"))
    for key, value in _PAIR.findall(claim_text):
        value = value.rstrip(".:%")
        if key in evidence_pairs and value not in evidence_pairs[key]:
            seen = ", ".join(sorted(evidence_pairs[key]))
            return _Check(
                "contradicted", [(f"{key}={value}", False)], f"{key}={value} but the evidence says {key}={seen}"
            )

    evidence_tokens = _tokens(evidence)
    evidence_numbers = _evidence_numbers(evidence_tokens)
    camel = _camel_words(claim_raw)
    facts: list[tuple[str, bool]] = []
    for token in dict.fromkeys(_tokens(claim_text)):
        number = _number(token)
        if number:
            value, unit = number
            found = any(value == seen and (not unit or unit == seen_unit) for seen, seen_unit in evidence_numbers)
            facts.append((token, found))
        elif re.search(r"[0-9]|[a-z0-9][-_.:/][a-z0-9]", token) or token in camel:
            facts.append((token, _present(token, evidence)))
    if _negated(claim_text):
        facts.append(("negation", _negated(evidence)))

    missing = [fact for fact, found in facts if not found]
    if claim_type == "runbook_reference":
        return _Check("indirect_support", facts, "runbook guidance, not a fact of this environment")
    meaning = _meaning_problem(claim_type, claim_raw, claim_text, evidence_raw, evidence) if not missing else ""
    if claim_type == "negative_observation":
        if missing:
            return _Check("no_evidence", facts, "not in the no-evidence record: " + ", ".join(missing))
        if meaning:
            return _Check("indirect_support", facts, meaning)
        return _Check("direct_support", facts, "restates only that this query found no matching evidence")
    if not facts:
        return _Check("indirect_support", facts, "no number or identifier to check against the evidence")
    if missing:
        numeric_or_negation = [fact for fact in missing if fact == "negation" or _number(fact)]
        verification = "no_evidence" if numeric_or_negation else "indirect_support"
        return _Check(verification, facts, "not in the evidence: " + ", ".join(missing))
    if meaning:
        return _Check("indirect_support", facts, meaning)
    return _Check("direct_support", facts, "every number, identifier and negation occurs in the evidence")


def _meaning_problem(claim_type, claim_raw: str, claim_text: str, evidence_raw: str, evidence: str) -> str:
    """Why the excerpts do not carry the claim's meaning: a content word, or its polarity, is not in them."""
    unsaid = _missing_content(claim_raw, claim_text, evidence_raw, evidence)
    if unsaid:
        return "the excerpts do not say: " + ", ".join(unsaid[:5])
    if claim_type == "negative_observation":
        return ""
    if _negated(evidence) and not _negated(claim_text):
        return "the evidence is negated, the claim is not"
    return _negation_scope_problem(claim_text, evidence) if _negated(claim_text) else ""


_VERDICT_RANK = {"PASS": 0, "LOW_CONFID": 1, "REJECT": 2}


def _verify(request: RoleRequest) -> EngineReply:
    payload = request.payload
    claims = payload.get("verified_claims") or []
    gate = payload.get("gatekeeper") or {}
    checks, facts_checked = [], []
    for claim in claims:
        check = _check_claim(claim)
        critical = claim.get("claim_type") in CRITICAL_TYPES
        checks.append(
            {
                "claim_id": claim.get("claim_id"),
                "verification": check.verification,
                "is_critical": critical,
                "note": check.note,
            }
        )
        facts_checked += [
            f"{claim.get('claim_id')}: {fact} ({'found' if found else 'missing'})" for fact, found in check.facts
        ]

    critical = [check for check in checks if check["is_critical"]]
    if any(check["verification"] == "contradicted" for check in checks):
        verdict, reason = "REJECT", "a claim contradicts its evidence"
    elif not checks:
        verdict, reason = "LOW_CONFID", "there is no claim to verify"
    elif all(check["verification"] == "direct_support" for check in critical):
        verdict, reason = "PASS", "every critical claim is directly supported by its verified evidence"
    else:
        verdict, reason = "LOW_CONFID", "some critical claims are not directly supported"
    ceiling = {"reject": "REJECT", "low_confid": "LOW_CONFID"}.get(str(gate.get("severity") or "none"), "PASS")
    if _VERDICT_RANK[ceiling] > _VERDICT_RANK[verdict]:
        verdict = ceiling
        reason += f"; capped at {ceiling} by the gate (severity {gate.get('severity')})"
    direct = sum(check["verification"] == "direct_support" for check in checks)
    return _reply(
        {
            "verdict": verdict,
            "groundedness_score": round(direct / len(checks), 4) if checks else 0.0,
            "critical_fact_count": len(critical),
            "claim_checks": checks,
            "facts_checked": facts_checked,
            "rationale": f"Rule-based entailment: {reason}.",
        }
    )


# --- composer ------------------------------------------------------------------------------

_HYPOTHESIS_PREFIX = re.compile(r"^\s*(?:possible cause|可能原因)\s*", re.IGNORECASE)


def _item_text(item: Any, *keys: str) -> str:
    if isinstance(item, dict):
        return str(next((item[key] for key in keys if item.get(key)), "") or "")
    return str(item or "")


def _no_evidence_sentence(claim: dict[str, Any], zh: bool) -> str:
    evidence = claim.get("evidence") or []
    details = []
    for item in evidence[:1]:
        query, window = _no_evidence_scope(str(item.get("text") or ""))
        details = [str(item.get("tool_name") or "")]
        details += [f"query={query}"] if query else []
        details += [f"window={window}"] if window else []
    scope = (
        (
            ("（" + "，".join(d for d in details if d) + "）")
            if zh
            else (" (" + ", ".join(d for d in details if d) + ")")
        )
        if any(details)
        else ""
    )
    return f"本次查询未检索到匹配证据{scope}" if zh else f"This query found no matching evidence{scope}"


def _unconfirmed(hypothesis: str, zh: bool) -> str:
    """The hypothesis marked as unconfirmed, reusing its own "Possible cause (source):" lead-in."""
    label = "可能原因（未证实）" if zh else "Possible cause (unconfirmed)"
    rest = _HYPOTHESIS_PREFIX.sub("", hypothesis, count=1).strip()
    if rest == hypothesis.strip():
        return f"{label}：{rest}" if zh else f"{label}: {rest}"
    return f"{label}{rest}" if zh else f"{label} {rest}"


def _compose(request: RoleRequest) -> EngineReply:
    payload = request.payload
    zh = _zh(payload.get("language") or "en")
    verdict = payload.get("verdict") or "LOW_CONFID"
    lines: list[str] = []
    findings: list[str] = []
    for claim in payload.get("allowed_claims") or []:
        marker = f"[{claim.get('citation')}]"
        if claim.get("no_evidence") or claim.get("claim_type") == "negative_observation":
            sentence = _no_evidence_sentence(claim, zh)
            findings.append(f"{sentence} {marker}。" if zh else f"{sentence} {marker}.")
        else:
            text = str(claim.get("claim_text") or "").rstrip("。.")
            findings.append(f"{text} {marker}。" if zh else f"{text} {marker}.")

    if verdict == "LOW_CONFID":
        lines.append(
            "证据不完整：以下内容并非全部得到验证。"
            if zh
            else "The evidence is incomplete: not everything below could be verified."
        )
    elif verdict == "REJECT":
        lines.append(
            "证据校验未通过：只能给出下列经允许的内容。"
            if zh
            else "The evidence check failed: only the material below may be stated."
        )
    if findings:
        lines.append("发现：" if zh else "Findings:")
        lines += [f"- {finding}" for finding in findings]
    else:
        lines.append(
            "本次运行中没有经过验证的证据可支撑结论。"
            if zh
            else "No statement in this run is backed by verified evidence."
        )

    hypotheses = [_item_text(h, "hypothesis", "text", "statement") for h in payload.get("allowed_hypotheses") or []]
    hypotheses = [h for h in hypotheses if h.strip()]
    if hypotheses:
        lines.append("可能原因（未证实）：" if zh else "Possible causes (unconfirmed):")
        for hypothesis in hypotheses:
            lines.append("- " + _unconfirmed(hypothesis, zh))

    missing = [_item_text(m, "text", "missing", "description") for m in payload.get("missing_info") or []]
    missing = [m for m in missing if m.strip()]
    if missing:
        lines.append("缺失信息：" if zh else "Missing information:")
        lines += [f"- {item}" for item in missing]

    actions = []
    for action in payload.get("recommended_actions") or []:
        text = _item_text(action, "action_text", "action", "text")
        if text.strip():
            reason = _item_text(action, "reason") if isinstance(action, dict) else ""
            actions.append(
                {
                    # runbook text is data: a destructive command is quoted behind a review flag, never advised
                    "action_text": flag_destructive(text, "zh" if zh else "en"),
                    "reason": reason or ("补充尚缺的证据。" if zh else "Collects evidence that is still missing."),
                }
            )
    if actions:
        lines.append("下一步：" if zh else "Next steps:")
        lines += [f"- {action['action_text']}" for action in actions]

    if findings:
        summary = findings[0]
        if verdict != "PASS":
            summary = ("证据不完整。" if zh else "Evidence is incomplete. ") + summary
    else:
        summary = "没有经过验证的证据可支撑结论。" if zh else "No statement is backed by verified evidence."
    return _reply({"answer_summary": summary, "recommended_actions": actions, "user_facing_answer": "\n".join(lines)})


_HANDLERS: dict[str, Callable[[RoleRequest], EngineReply]] = {
    "planner": _plan,
    "executor": _execute,
    "verifier": _verify,
    "composer": _compose,
}
