"""The compiled search plan: the tool calls a question's reading asks for, worked out in one place and run by
both the offline Planner (which states it) and the offline Executor (which makes the calls).

The reading is the stored Query as the engine sees it (`Ask`); its answer kinds add their steps from the
answer table (answers.py). A plan runs in phases, each waiting for the results of the one before: what
changed and the call graph (lead steps), then which services alert (when none is named), then those
services' alerts and series, then the runbooks and logs, the searches that found nothing searched again with
fewer words, and what the asked kinds add last. The Executor compiles the plan again after every round of
calls with what it knows (`Known.made`); the Planner compiles it before any call (`Known.foreseen`): the
environment's alerts stand in for the alert search's results and every phase is laid out as if the one
before it were done, so the plan it states is the one the Executor runs as far as it can be known in advance.

Invariants: a call is wanted once (calls compare by their validated parameters); a narrow task makes only its
precise searches (and the lead steps) and never widens them, not even on an evidence retry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evcli.agents.offline.answers import DISCOVERED, FOLLOWING, LEAD, Searched, planned
from evcli.agents.offline.payload import Ask, Call
from evcli.agents.offline.queries import (
    DISCOVERED_SERVICE_CAP,
    backoff_calls,
    changes_call,
    diagnoses,
    discovery_calls,
    evidence_calls,
    firing_services,
    first_firing_alert,
    follow_up_calls,
    narrow_calls,
    overview_call,
    overview_gap_calls,
    searched_services,
    service_calls,
)
from evcli.contracts import ToolInvocation

SUSPECTS_SEARCHED = 2  # the first suspects' own alerts, series and logs are searched when no service is named


@dataclass(frozen=True)
class Known:
    """What the plan is compiled with: successful results by call key, the keys of the calls done (made,
    refused or failed: the same call would only be refused again), an evidence retry's context, and for a
    plan laid out in advance the environment's alerts (`alerts`), read as every alert search's result."""

    results: dict[str, ToolInvocation] = field(default_factory=dict)
    done: frozenset[str] = frozenset()
    retry: dict[str, Any] | None = None
    alerts: list[dict[str, Any]] | None = None

    @classmethod
    def made(cls, results: dict[str, ToolInvocation], done: set[str], retry: dict[str, Any] | None) -> Known:
        return cls(results=results, done=frozenset(done), retry=retry)

    @classmethod
    def foreseen(cls, alerts: list[dict[str, Any]]) -> Known:
        return cls(alerts=list(alerts))

    @property
    def in_advance(self) -> bool:
        return self.alerts is not None

    def ran(self, calls: list[Call]) -> bool:
        """Whether every call is done (laid out in advance: as if it were)."""
        return self.in_advance or all(call.key in self.done for call in calls)

    def output(self, call: Call) -> dict[str, Any] | None:
        found = self.results.get(call.key)
        return found.output if found is not None else None

    def alerts_of(self, calls: list[Call]) -> list[dict[str, Any]]:
        """The alerts the alert searches among `calls` returned; in advance, the environment's alerts they
        ask for (of the named alert or service, when the search names one)."""
        searches = [call for call in calls if call.name == "query_metrics"]
        if self.alerts is not None:
            return [alert for alert in self.alerts if any(_asks_for(call, alert) for call in searches)]
        return [alert for call in searches for alert in (self.output(call) or {}).get("alerts") or []]


def _asks_for(call: Call, alert: dict[str, Any]) -> bool:
    return all(call.arguments.get(key) in (None, alert.get(key)) for key in ("alertname", "service"))


@dataclass(frozen=True)
class Plan:
    """The calls wanted so far, in order; `then_suspects`: the services searched next are the ones what
    changed ranks first (laid out in advance: not known before its result)."""

    calls: list[Call]
    then_suspects: bool = False


def compile_plan(intent: Ask, question: str, known: Known) -> Plan:
    """Every call the question's reading wants given what is known; a phase waits for the results of the
    one before (laid out in advance, it follows at once unless it needs what changed)."""
    traced = planned(LEAD, Searched(intent, [], [], known.results))  # what changed, the call graph
    if intent.narrow or intent.names_only_unknown:
        return Plan(traced + narrow_calls(intent, question))
    calls: list[Call] = list(traced)
    suspects: list[str] = []
    if diagnoses(intent):
        # what changed comes first (a lead step): the suspects it ranks are the services searched when none
        # is named; a named service is searched alongside
        change_call = changes_call(intent)
        if not intent.services and (known.in_advance or change_call.key not in known.done):
            return Plan(calls, then_suspects=True)
        found = known.output(change_call) or {}
        suspects = [str(item.get("service")) for item in found.get("suspects") or []]
    services = searched_services(intent, [])
    if not intent.services:
        discovery = discovery_calls(intent)
        calls += discovery
        if not known.ran(discovery):
            return Plan(calls)
        firing = firing_services(known.alerts_of(discovery), DISCOVERED_SERVICE_CAP)
        # what changed first, then what fires; an alert the question names says itself what is asked about
        if suspects and not intent.alertnames:
            services = list(dict.fromkeys([*suspects[:SUSPECTS_SEARCHED], *firing]))[:DISCOVERED_SERVICE_CAP]
        else:
            services = searched_services(intent, firing)
        if not services:
            services = _retried_services(known.retry)
    calls += planned(DISCOVERED, Searched(intent, services, calls, known.results))  # "which host …?"
    per_service = service_calls(intent, services)
    calls += per_service
    if not known.ran(per_service):
        return Plan(calls)
    alertname = (intent.alertnames or (None,))[0] or first_firing_alert(
        known.alerts_of(per_service), services[0] if services else None
    )
    calls += evidence_calls(intent, question, services, alertname)
    calls += _backoffs(intent, calls, known)
    for service in services:
        overview = known.output(overview_call(intent, service))
        calls += overview_gap_calls(intent, service, overview) if overview is not None else []
    # what the asked kinds add: a count at the asked level (not the overview's), the most common messages, the
    # first line of a when-question
    calls += planned(FOLLOWING, Searched(intent, services, calls, known.results))
    if known.retry:
        calls += follow_up_calls(intent, services)
    return Plan(list({call.key: call for call in calls}.values()))  # a call wanted twice is made once


def _retried_services(retry: dict[str, Any] | None) -> list[str]:
    """An evidence retry's services when no alert names one: those whose series the first round read."""
    return [
        query["input_params"]["service"]
        for query in (retry or {}).get("completed_queries") or []
        if query.get("tool_name") == "query_metrics" and (query.get("input_params") or {}).get("service")
    ][:DISCOVERED_SERVICE_CAP]


def _backoffs(intent: Ask, calls: list[Call], known: Known) -> list[Call]:
    """The back-off searches of the searches that found nothing, and theirs, as far as results are known."""
    added: list[Call] = []
    searched = [call for call in calls if call.key in known.results]
    while searched:
        wanted = {call.key for call in [*calls, *added]}
        outputs = [(call, known.results[call.key].output) for call in searched]
        more = [call for call in backoff_calls(intent, outputs) if call.key not in wanted]
        added += more
        searched = [call for call in more if call.key in known.results]
    return added
