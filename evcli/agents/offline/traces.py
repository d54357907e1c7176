"""What the traces answer: the call graph asked about, where time goes, where errors come from.

The search is one `query_traces` call over the asked range with no service filter, so its
`$.edges[i]` are the whole call graph of the range (a service filter keeps only its own edges,
one hop), and one call per service asked (ASKED_CAP), whose `$.stats` are that service's own spans.
The claims read that graph:
  - calls: the edges into and out of each service asked (callers first), or the busiest edges;
  - latency / errors: a chain that starts at the service asked (its slowest / most failing call),
    else at the slowest / most failing call of the graph, and follows the callee's own calls down
    while the callee's worst call carries at least FOLLOWED_SHARE of what its caller saw (a caller
    waits for its callee, and a callee's error fails its caller: the numbers of a caller include its
    callee's). The chain ends at the service whose own calls do not account for it: that service is
    stated as a hypothesis (root_cause, indirect), bound to the call into it and to its own worst
    call, never as an established cause.
Every claim quotes its edge's ref text whole, so the gate compares each number with its own field.
A why that names neither symptom reads both chains; a question of none of these kinds makes no trace call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evcli.agents.offline.claims import Claim, Ref, binding_of
from evcli.agents.offline.payload import Ask, Call
from evcli.messages import Catalogue
from evcli.scope.kinds import answer_kinds

TRACE_KINDS = frozenset({"calls", "latency", "errors", "diagnose"})
FOLLOWED_SHARE = 0.5  # a callee's call explains its caller when it carries at least this share of it
CHAIN_CAP = 6  # edges stated along one chain
LISTED_EDGES = 6  # edges stated for a calls question
ASKED_CAP = 2  # services asked whose own spans are searched


def trace_calls(intent: Ask, question: str) -> list[Call]:
    """The call graph of the asked range, when the environment has traces and the question asks what they show."""
    if intent.capabilities is None or "traces" not in intent.capabilities:
        return []  # unknown (a session stored before capabilities) or none: never a failing call
    if not set(answer_kinds(question)) & TRACE_KINDS:
        return []
    window = {"window": intent.window} if intent.window else {}
    window |= {key: value for key, value in (("since", intent.since), ("until", intent.until)) if value}
    asked = [Call("query_traces", {"service": service} | window) for service in intent.services[:ASKED_CAP]]
    return [Call("query_traces", window), *asked]


def trace_claims(intent: Ask, refs: list[Ref], words: Catalogue, question: str) -> list[Claim]:
    """The claims of the latest query_traces call's edges for what the question asks."""
    edges = _latest_edges(refs)
    if not edges:
        return []
    kinds = set(answer_kinds(question))
    start = next((service for service in intent.services if _touches(edges, service)), None)
    claims: list[Claim] = []
    both = "diagnose" in kinds and not kinds & {"latency", "errors"}  # a why that names no symptom: both chains
    if "latency" in kinds or both:
        claims += _chain_claims(edges, start, _p99, "traces.slow_origin", words)
    if "errors" in kinds or both:
        claims += _chain_claims(edges, start, _errors, "traces.error_origin", words)
    if not claims and "calls" in kinds:
        claims = _listed(edges, intent.services)
    claims += [_observed(ref) for ref in _asked_stats(refs, intent.services)]
    stated: set[str] = set()
    unique = []
    for claim in claims:  # one edge is stated once, the first time it is needed
        if claim["claim_text"] not in stated:
            stated.add(claim["claim_text"])
            unique.append(claim)
    return unique


def _asked_stats(refs: list[Ref], services: tuple[str, ...]) -> list[Ref]:
    """The `$.stats` of each asked service's own spans (its call's latest result)."""
    latest: dict[str, Ref] = {}
    for ref in refs:
        service = (ref.invocation.input_params or {}).get("service")
        if ref.invocation.tool_name == "query_traces" and ref.array == "stats" and service in services:
            if service not in latest or ref.invocation.invocation_id > latest[service].invocation.invocation_id:
                latest[service] = ref
    return [latest[service] for service in services if service in latest]


def _latest_edges(refs: list[Ref]) -> list[Ref]:
    """The edges of the latest call over the whole graph (no service filter)."""
    found = [
        ref
        for ref in refs
        if ref.invocation.tool_name == "query_traces"
        and ref.array == "edges"
        and not (ref.invocation.input_params or {}).get("service")
    ]
    if not found:
        return []
    latest = max(ref.invocation.invocation_id for ref in found)
    return sorted((ref for ref in found if ref.invocation.invocation_id == latest), key=lambda ref: ref.index)


def _touches(edges: list[Ref], service: str) -> bool:
    return any(service in (edge.item.get("caller"), edge.item.get("callee")) for edge in edges)


def _p99(edge: Ref) -> float:
    return float(edge.item.get("p99_ms") or 0)


def _errors(edge: Ref) -> float:
    return float(edge.item.get("errors") or 0)


def _observed(edge: Ref) -> Claim:
    return {
        "claim_id": "",
        "claim_type": "observation",
        "claim_text": f"{edge.ref.text}.",
        "support_level": "direct",
        "evidence_bindings": [binding_of(edge)],
    }


def _listed(edges: list[Ref], services: tuple[str, ...]) -> list[Claim]:
    """The edges into each service asked (its callers), then out of it; with none asked, the busiest edges."""
    if not services:
        busiest = sorted(edges, key=lambda edge: (-int(edge.item.get("calls") or 0), edge.index))
        return [_observed(edge) for edge in busiest[:LISTED_EDGES]]
    into = [edge for edge in edges if edge.item.get("callee") in services]
    out = [edge for edge in edges if edge.item.get("caller") in services and edge not in into]
    return [_observed(edge) for edge in (into + out)[:LISTED_EDGES]]


def _chain(edges: list[Ref], start: str | None, measure: Callable[[Ref], float]) -> list[Ref]:
    """The worst call from `start` (or the graph's worst call), then each callee's worst own call while it
    carries at least FOLLOWED_SHARE of the call before it; [] when no call shows any of the measure."""
    outgoing: dict[str, list[Ref]] = {}
    for edge in edges:
        outgoing.setdefault(str(edge.item.get("caller")), []).append(edge)
    first_from = outgoing.get(start, []) if start else edges
    if start and not first_from:  # the service asked calls nothing traced: the worst call into it
        first_from = [edge for edge in edges if edge.item.get("callee") == start]
    if not first_from or measure(_worst(first_from, measure)) <= 0:
        return []
    chain = [_worst(first_from, measure)]
    visited = {str(chain[0].item.get("caller"))}
    while len(chain) < CHAIN_CAP:
        callee = str(chain[-1].item.get("callee"))
        visited.add(callee)
        own = [edge for edge in outgoing.get(callee, []) if str(edge.item.get("callee")) not in visited]
        if not own:
            break
        worst = _worst(own, measure)
        if measure(worst) < FOLLOWED_SHARE * measure(chain[-1]):
            break
        chain.append(worst)
    return chain


def _worst(edges: list[Ref], measure: Callable[[Ref], float]) -> Ref:
    return max(edges, key=lambda edge: (measure(edge), -edge.index))


def _chain_claims(
    edges: list[Ref], start: str | None, measure: Callable[[Ref], float], origin_id: str, words: Catalogue
) -> list[Claim]:
    chain = _chain(edges, start, measure)
    if not chain:
        return []
    last = chain[-1]
    origin = str(last.item.get("callee"))
    own = [edge for edge in edges if edge.item.get("caller") == origin]
    bindings: list[dict[str, Any]] = [binding_of(last)]
    if own:
        worst_own = _worst(own, measure)
        bindings.append(binding_of(worst_own))
        text = words(f"{origin_id}.calls", service=origin, into=last.ref.text, own=worst_own.ref.text)
    else:
        text = words(f"{origin_id}.leaf", service=origin, into=last.ref.text)
    hypothesis: Claim = {
        "claim_id": "",
        "claim_type": "root_cause",
        "claim_text": text,
        "support_level": "indirect",
        "evidence_bindings": bindings,
    }
    return [hypothesis, *(_observed(edge) for edge in chain[:-1])]  # the last call is the hypothesis' own
