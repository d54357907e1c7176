"""What a session starts from, read by code before any model runs: the environment overview (services,
aliases, active alerts, skills), the question scope on the environment's clock and zone, where the
question's words occur in the environment's logs, and the payload the Planner and the Executor get.

I/O is limited to the backend and knowledge calls named here and, for a follow-up, reading the continued
session from the store; nothing is written.
"""

from __future__ import annotations

from typing import Any

from evcli.contracts import EnvironmentOverview, GateResult, QuestionScope, SessionDocument
from evcli.errors import EvcliError


def environment_overview(tools: Any) -> EnvironmentOverview:
    """Services, active alerts and declared skills: what the Planner may choose from."""
    from evcli.backends.base import BackendError, parse_window

    backend = tools.backend
    if hasattr(backend, "check_reachable"):
        backend.check_reachable()  # live: no backend answering is an error (exit 1), never a verdict
    services = backend.known_services() or []
    aliases = backend.service_aliases() if hasattr(backend, "service_aliases") else {}
    alerts: list[dict[str, Any]] = []
    try:
        window = parse_window("1h", backend.now())
        result = backend.query_metrics(service=None, alertname=None, metric=None, window=window, series=False)
        alerts = [
            {"alertname": a.get("alertname"), "service": a.get("service"), "state": a.get("state")}
            for a in result.alerts
        ]
    except BackendError:
        pass  # the Executor's own calls will record the failure as evidence status "failed"
    skills: list[dict[str, Any]] = []
    no_runbooks = False
    try:
        skills = tools.knowledge().skills()
    except (EvcliError, BackendError):
        no_runbooks = True  # nothing to look up: a lookup would only fail
    overview = EnvironmentOverview(services=sorted(services), aliases=dict(aliases), alerts=alerts, skills=skills)
    if hasattr(backend, "capabilities"):  # what is configured, or what a snapshot directory holds
        overview.capabilities = [c for c in backend.capabilities() if not (no_runbooks and c == "knowledge")]
    return overview


def _alert_names(backend: Any) -> set[str]:
    """Every alert a snapshot holds, in any state at any time ("is PostgresDeadlocks still firing?" names
    one that resolved an hour ago); live backends: none beyond the active ones (a query per question)."""
    from evcli.backends.base import BackendError

    if not hasattr(backend, "alert_snapshot_names"):
        return set()
    try:
        return set(backend.alert_snapshot_names())
    except BackendError:
        return set()


def question_scope(
    backend: Any, question: str, environment: EnvironmentOverview, previous: QuestionScope | None = None
) -> QuestionScope:
    """What the question asks about, read by code on the environment's clock and zone (DESIGN §2);
    a follow-up inherits what it leaves unsaid from `previous`."""
    from evcli.scope.extract import extract_scope
    from evcli.scope.followup import follow_up
    from evcli.tools.fetch import environment_zone

    scope = extract_scope(
        question,
        services=environment.services,
        aliases=environment.aliases,
        alertnames=sorted({a["alertname"] for a in environment.alerts if a.get("alertname")} | _alert_names(backend)),
        clock=backend.now(),
        tz=environment_zone(backend),
        alerts_served=environment.capabilities is None or "alerts" in environment.capabilities,
    )
    return follow_up(scope, previous, question)


def vocabulary(backend: Any, scope: QuestionScope, environment: EnvironmentOverview) -> dict[str, dict[str, int]]:
    """In which services' logs the question's phrases, tokens and words occur (DESIGN §6): what the
    offline engine searches and ranks services by."""
    from evcli.backends.vocabulary import term_hits
    from evcli.scope.terms import stem

    # a plural or inflected word asked ("failed passwords", "failing") is looked up by its stem too: logs
    # write "Failed password", "failed"
    terms = [form for term in scope.terms for form in (term, stem(term)) if form]
    words = [*scope.phrases, *scope.tokens, *terms, *scope.hosts]
    found = term_hits(backend, words, environment.services) if words else {}
    # well-known software asked about ("postgres") stays a term and an unknown service: its name in a few
    # lines is no source ("Invalid user postgres"); a spelled service name ("nova-api") may be one
    spelled = [name for name in scope.unknown_services if name not in scope.terms]
    return found | _source_names(backend, spelled, environment.services)


SOURCE_SHARE = 0.1  # of a service's lines that name an unknown name, for it to be where they come from


def _source_names(backend: Any, names: list[str], services: list[str]) -> dict[str, dict[str, int]]:
    """The names asked as services that are none here but that a good share of some service's lines
    write (SOURCE_SHARE): where those lines come from ("nova-api" in every nova-api line of the public
    OpenStack logs, which name their file), searched as a word there. A name a few lines mention
    ("Invalid user postgres": a user name an attacker tried) stays an unknown service."""
    from evcli.backends.vocabulary import term_hits

    found = term_hits(backend, names, services) if names else {}
    totals = {service: _lines(backend, service) for service in {s for counts in found.values() for s in counts}}
    kept = {
        name: {service: count for service, count in counts.items() if count >= SOURCE_SHARE * totals[service]}
        for name, counts in found.items()
    }
    return {name: shares for name, shares in kept.items() if shares}


def _lines(backend: Any, service: str) -> int:
    from evcli.backends.base import BackendError, LogQuery

    try:
        return int(backend.query_logs(LogQuery(service=service, keywords=(), level=None, limit=1)).total or 0)
    except (BackendError, ValueError, OSError):
        return 0


def question_payload(store: Any, document: SessionDocument) -> dict[str, Any]:
    """What the Planner and the Executor both get: the question, what code read from it (intent and
    scope), and for a follow-up the question and verified claims of the session it continues."""
    config = document.run.config
    payload: dict[str, Any] = {
        "question": document.run.question,
        "language": config.language,
        "task_scope": config.task_scope,
        "intent": config.intent.model_dump(mode="json"),
    }
    if config.scope is not None:
        payload["scope"] = config.scope.model_dump(mode="json")
    if config.aiops_alert:
        payload["aiops_alert"] = config.aiops_alert
    if config.continues:
        payload["previous_session"] = previous_session(store, config.continues)
    return payload


def previous_session(store: Any, session_id: str) -> dict[str, Any]:
    """The continued session's question and the claims that passed its gate (context, never citable here:
    invocation ids are per session). A session deleted since is named with no claims."""
    from evcli.agents.projection import verified_claims

    try:
        document = store.load(session_id)
    except EvcliError:
        return {"session_id": session_id, "question": None, "verified_claims": []}
    execute = document.latest_stage("execute")
    gate_result = latest_gate(document, execute.round if execute else None)
    claims = verified_claims(execute.output, gate_result) if execute and gate_result else []
    return {
        "session_id": session_id,
        "question": document.run.question,
        "verified_claims": [{"claim_type": claim.claim_type, "claim_text": claim.claim_text} for claim in claims],
    }


def latest_gate(document: SessionDocument, round: int | None) -> GateResult | None:
    """The newest gate result of `round` (any round when None)."""
    results = [g for g in document.gate_results if round is None or g.round == round]
    return results[-1].result if results else None
