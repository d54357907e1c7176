"""What a session starts from, read by code before any model runs: the environment overview (services,
aliases, active alerts, skills), the question scope on the environment's clock and zone, where the
question's words occur in the environment's logs, and the payload the Planner and the Executor get;
and the environment a later tool call into a stored session runs on (always the session's own).

I/O is limited to the backend and knowledge calls named here and, for a follow-up, reading the continued
session from the store; nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evcli.contracts import EnvironmentOverview, GateResult, Query, SessionDocument
from evcli.core.errors import BadInput, EvcliError

if TYPE_CHECKING:
    from evcli.agents.reading import ReadingReview
    from evcli.backends.spec import EnvironmentSpec


def environment_overview(tools: Any) -> EnvironmentOverview:
    """Services, active alerts and declared skills: what the Planner may choose from."""
    from evcli.backends.base import parse_window
    from evcli.core.errors import BackendError

    backend = tools.backend
    if hasattr(backend, "check_reachable"):
        backend.check_reachable()  # live: no backend answering is an error (exit 1), never a verdict
    known = backend.known_services()
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
    # no part can tell the services (Alertmanager alone takes every name as given): those its alerts name
    services = known if known is not None else {a["service"] for a in alerts if a.get("service")}
    overview = EnvironmentOverview(services=sorted(services), aliases=dict(aliases), alerts=alerts, skills=skills)
    if hasattr(backend, "capabilities"):  # what is configured, or what a snapshot directory holds
        overview.capabilities = _served(backend.capabilities(), knowledge=not no_runbooks)
    return overview


def _served(capabilities: list[str], *, knowledge: bool) -> list[str]:
    """What the evidence backend serves, with knowledge as the runbooks answer it: the knowledge backend
    is built from the runbooks directories whatever serves the evidence, so live backends given
    `--runbooks DIR` look runbooks up as a snapshot does, and a snapshot without any does not."""
    from evcli.backends.registry import Capability

    order = [capability.value for capability in Capability]
    kept = {name for name in capabilities if name != Capability.KNOWLEDGE.value}
    kept |= {Capability.KNOWLEDGE.value} if knowledge else set()
    return sorted(kept, key=lambda name: order.index(name) if name in order else len(order))


def _alert_names(backend: Any) -> set[str]:
    """Every alert a snapshot holds, in any state at any time ("is PostgresDeadlocks still firing?" names
    one that resolved an hour ago); live backends: none beyond the active ones (a query per question)."""
    from evcli.core.errors import BackendError

    if not hasattr(backend, "alert_snapshot_names"):
        return set()
    try:
        return set(backend.alert_snapshot_names())
    except BackendError:
        return set()


def question_scope(
    backend: Any, question: str, environment: EnvironmentOverview, previous: Query | None = None
) -> Query:
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
    return follow_up(scope, previous)


def vocabulary(backend: Any, scope: Query, environment: EnvironmentOverview) -> dict[str, dict[str, int]]:
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
    from evcli.backends.base import LogQuery
    from evcli.core.errors import BackendError

    try:
        return int(backend.query_logs(LogQuery(service=service, keywords=(), level=None, limit=1)).total or 0)
    except (BackendError, ValueError, OSError):
        return 0


def question_payload(store: Any, document: SessionDocument, reading: Any = None) -> dict[str, Any]:
    """What the Planner and the Executor both get: the question, what code read from it (intent and
    scope), and for a follow-up the question and verified claims of the session it continues. `reading`:
    the Planner's proposed reading of the question (the Executor's payload), whose checked part widens the
    scope (evcli.agents.reading); the scope stored with the session, which the Gatekeeper checks, stays."""
    from evcli.agents.reading import widened

    config = document.run.config
    payload: dict[str, Any] = {
        "question": document.run.question,
        "language": config.language,
        "task_scope": config.task_scope,
        "intent": config.intent,
    }
    if config.scope is not None:
        review = reviewed_reading(document, reading)
        scope = widened(config.scope, review.accepted) if review is not None else config.scope
        payload["scope"] = scope.model_dump(mode="json")
    if config.aiops_alert:
        payload["aiops_alert"] = config.aiops_alert
    if config.continues:
        payload["previous_session"] = previous_session(store, config.continues)
    if config.scope is not None:
        payload["compiled_plan"] = compiled_plan(payload | {"environment": config.environment.model_dump(mode="json")})
    return payload


def compiled_plan(payload: dict[str, Any]) -> dict[str, Any]:
    """The search plan code compiled from the reading (evcli.agents.offline.plan), laid out before any call:
    the calls the offline engine makes as far as they are known in advance, and whether the services it
    searches next are those what changed ranks first. Both engines get it; a model starts from it."""
    from evcli.agents.offline.payload import intent_of
    from evcli.agents.offline.plan import Known, compile_plan

    alerts = (payload.get("environment") or {}).get("alerts") or []
    plan = compile_plan(intent_of(payload), payload.get("question", ""), Known.foreseen(alerts))
    return {
        "calls": [{"tool": call.name, "arguments": call.arguments} for call in plan.calls],
        "then_suspects": plan.then_suspects,
    }


def reviewed_reading(document: SessionDocument, proposal: Any) -> ReadingReview | None:
    """A proposed reading checked against the session's question, scope and environment; None when there is
    no proposal or no scope to widen (a session recorded before question scopes)."""
    from evcli.agents.reading import review_reading

    scope = document.run.config.scope
    if proposal is None or scope is None:
        return None
    return review_reading(proposal, scope, document.run.question, document.run.config.environment)


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


def session_environment(session_id: str, stored: Mapping[str, Any], named: EnvironmentSpec) -> EnvironmentSpec:
    """The environment a tool call recorded into session `session_id` runs on: the session's own
    (`stored`, its config's env) when the call names none, `named` when it names the same one (with its
    credentials, which the stored form masks). Another one is refused (BadInput, exit 2): its evidence
    would be cited beside evidence of another system."""
    from evcli.backends.spec import EnvironmentSpec
    from evcli.core.redaction import Redactor

    session = EnvironmentSpec.from_config(stored)
    if named == EnvironmentSpec():
        return session
    masked = EnvironmentSpec.from_config(Redactor.from_env().mask(named.as_config()))
    hint = "drop --env and the backend options: the call then runs on the session's environment"
    if _evidence_place(masked) != _evidence_place(session):
        raise BadInput(f"session {session_id} ran on {_described(session)}, not on {_described(named)}", hint=hint)
    if _runbooks(masked) != _runbooks(session):
        raise BadInput(
            f"session {session_id} looks runbooks up in {', '.join(_runbooks(session)) or 'none'},"
            f" not in {', '.join(_runbooks(named))}",
            hint=hint,
        )
    return named


def _evidence_place(spec: EnvironmentSpec) -> tuple[tuple[str, str], ...] | str:
    """Which system the evidence comes from: each live backend's name and URL, else the snapshot
    directory (the demo's when none is named)."""
    from evcli.backends.snapshot import demo_env_dir

    if spec.live:
        return tuple(sorted((name, backend.url) for name, backend in spec.backends.items()))
    return str((spec.env_dir or demo_env_dir()).resolve())


def _runbooks(spec: EnvironmentSpec) -> list[str]:
    return [str(directory.resolve()) for directory in spec.knowledge_dirs()]


def _described(spec: EnvironmentSpec) -> str:
    """`alertmanager http://…`, `the demo environment` or `the snapshot DIR`."""
    from evcli.backends.snapshot import demo_env_dir

    place = _evidence_place(spec)
    if isinstance(place, tuple):
        return ", ".join(f"{name} {url}" for name, url in place)
    return "the demo environment" if place == str(demo_env_dir().resolve()) else f"the snapshot {place}"
