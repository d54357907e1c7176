"""Query planning: which tool calls a task wants, shared by the Planner (which
names them) and the Executor (which makes them).

A narrow task makes one precise query and never widens it after no evidence
(seeds 2.4). A call names a time window only when the question does (the intent's
window); otherwise it names none and the backend's default applies: the whole
snapshot, or the last hour of a live backend. A broad task finds the services (named, else those with firing
alerts), reads their alerts and series, then the runbooks once, then each
service's WARN+ logs and term search.
"""

from __future__ import annotations

import re
from typing import Any

from evcli.agents.intent import Intent
from evcli.agents.offline.payload import Call
from evcli.messages import catalogue

RETRY_WINDOWS = ("2h", "6h")  # what an evidence retry widens the question's own window to
LOG_LIMIT = 20
KNOWLEDGE_LIMIT = 8
NAMED_SERVICE_CAP = 3
DISCOVERED_SERVICE_CAP = 2

_LOG_WORDS = re.compile(r"\blogs?\b|\berrors?\b|\bexceptions?\b|日志|错误|报错|异常", re.IGNORECASE)


def _window(intent: Intent) -> dict[str, str]:
    """The question's window as call arguments; none when it names no time (the backend's default range)."""
    return {"window": intent.window} if intent.window else {}


def _log_query(term: str) -> str:
    return f'"{term}"' if " " in term else term


def narrow_call(intent: Intent, question: str) -> Call | None:
    """The one precise query a narrow task allows (seeds 2.4), or None when nothing is precise enough."""
    service = intent.services[0] if intent.services else None
    if intent.alertnames:
        arguments = {"service": service} if service else {}
        arguments |= {"alertname": intent.alertnames[0]} | _window(intent)
        return Call("query_metrics", arguments)
    if service is None:
        return None
    if intent.terms:
        query = _log_query(intent.terms[0])
        return Call(
            "query_logs",
            {"service": service, "query": query} | _window(intent),
        )
    if _LOG_WORDS.search(question):
        return Call(
            "query_logs",
            {"service": service, "level": "ERROR"} | _window(intent),
        )
    return Call("query_metrics", {"service": service} | _window(intent))


def discovery_calls(intent: Intent) -> list[Call]:
    """Broad task naming no service: which services have alerts (those of the named alerts, if any)."""
    window = _window(intent)
    if intent.alertnames:
        return [Call("query_metrics", {"alertname": name} | window) for name in intent.alertnames[:2]]
    return [Call("query_metrics", window)]


def service_calls(intent: Intent, services: list[str]) -> list[Call]:
    window = _window(intent)
    return [Call("query_metrics", {"service": service} | window) for service in services]


def evidence_calls(intent: Intent, question: str, services: list[str], alertname: str | None) -> list[Call]:
    """Runbook lookup first (it is never repeated), then each service's WARN+ logs and its term search."""
    calls = []
    if services or alertname or intent.terms:
        arguments: dict[str, Any] = {"query": _knowledge_query(intent, question, alertname)}
        if alertname:
            arguments["alertname"] = alertname
        if services:
            arguments["service"] = services[0]
        calls.append(Call("lookup_knowledge", arguments | {"limit": KNOWLEDGE_LIMIT}))
    window = _window(intent)
    for service in services:
        calls.append(Call("query_logs", {"service": service, "level": "WARN"} | window | {"limit": LOG_LIMIT}))
        if intent.terms:
            query = _log_query(intent.terms[0])
            calls.append(
                Call(
                    "query_logs",
                    {"service": service, "query": query, "level": "WARN"} | window | {"limit": LOG_LIMIT},
                )
            )
    return calls


def follow_up_calls(intent: Intent, services: list[str]) -> list[Call]:
    """Evidence retry of a broad task: the same services' errors, over a longer window when the question
    named one (none named: the default range stands, there is nothing to widen, and the metrics call
    repeats one already made, so the executor drops it)."""
    window: dict[str, str] = {}
    if intent.window:
        window = {"window": RETRY_WINDOWS[1] if intent.window == RETRY_WINDOWS[0] else RETRY_WINDOWS[0]}
    calls = []
    for service in services:
        calls.append(Call("query_metrics", {"service": service} | window))
        calls.append(Call("query_logs", {"service": service, "level": "ERROR"} | window | {"limit": LOG_LIMIT}))
    return calls


_QUESTION_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{3,}|[\u4e00-\u9fff]{2,}")
_QUESTION_STOPWORDS = frozenset(
    [
        "what",
        "which",
        "when",
        "where",
        "there",
        "their",
        "this",
        "that",
        "with",
        "from",
        "have",
        "does",
        "doing",
        "keeps",
        "only",
        "just",
        "confirm",
        "whether",
        "check",
        "please",
        "could",
        "would",
        "should",
        "about",
        "into",
        "over",
        "last",
        "past",
        "hour",
        "hours",
        "minutes",
        "currently",
    ]
)


def _knowledge_query(intent: Intent, question: str, alertname: str | None) -> str:
    """Alert name, intent terms, then the question's own content words; at most 300 characters."""
    words = [alertname] if alertname else []
    words += list(intent.alertnames) + list(intent.terms)
    words += [word for word in _QUESTION_WORD.findall(question) if word.lower() not in _QUESTION_STOPWORDS]
    words.append(catalogue(intent.language)("knowledge.checks_word"))  # lifts the checking steps of a runbook
    unique = list(dict.fromkeys(word for word in words if word))
    query = ""
    for word in unique:
        if len(query) + len(word) + 1 > 300:
            break
        query = f"{query} {word}".strip()
    return query


def firing_services(alerts: list[dict[str, Any]], cap: int) -> list[str]:
    ordered = [alert for alert in alerts if alert.get("state") == "firing"]
    ordered += [alert for alert in alerts if alert.get("state") == "pending"]
    return list(dict.fromkeys(str(alert["service"]) for alert in ordered if alert.get("service")))[:cap]


def first_firing_alert(alerts: list[dict[str, Any]], service: str | None) -> str | None:
    for alert in alerts:
        if alert.get("state") == "firing" and (service is None or alert.get("service") == service):
            return alert.get("alertname")
    return None
