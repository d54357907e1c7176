"""What the traces answer: the call graph asked about, where time goes, where errors come from.

The search: for a latency, errors or why question where the environment can compare (find_changes
serves it), `find_changes` first — its
window is the incident (the asked range, else where the series change together) and its baseline
the stretch before — then one `query_traces` call over each, with no service filter, so their
`$.edges[i]` are the whole call graph of each (a service filter keeps only its own edges, one hop);
elsewhere one call over the asked range. One more call per service asked (ASKED_CAP), over the
window, gives `$.stats` of that service's own spans. The claims read the graph:
  - calls: the edges into and out of each service asked (callers first), or the busiest edges;
  - latency / errors: a chain that starts at the service asked (its worst call), else at the worst
    call of the graph, and follows the callee's own worst call down while it carries at least
    FOLLOWED_SHARE of the call before it (a caller waits for its callee, and a callee's error fails
    its caller: a caller's numbers include its callee's). "Worst" is the rise against the baseline
    when there is one (latency at the highest percentile both stretches' calls support — p99 from
    100 calls, p90 from 10, else p50, since below that a percentile is one outlier; errors beyond the
    share that failed before), so a service that is always slow is no finding; without a baseline it
    is the p99 or error count itself. The chain ends at the service whose own calls do not account for it: that service is
    stated as a hypothesis (root_cause, indirect), bound to the call into it (and that call before,
    and its own worst call), never as an established cause.
Every claim quotes its edge's ref text whole, so the gate compares each number with its own field.
A why that names neither symptom reads both chains; a question of none of these kinds makes no trace call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evcli.agents.offline.claims import Claim, Ref, binding_of
from evcli.agents.offline.payload import Ask, Call
from evcli.agents.offline.queries import asked_window, changes_call
from evcli.contracts import ToolInvocation
from evcli.messages import Catalogue

TRACE_KINDS = frozenset({"calls", "latency", "errors", "why"})
COMPARED_KINDS = frozenset({"latency", "errors", "why"})  # judged against the baseline where there is one
FOLLOWED_SHARE = 0.5  # a callee's call explains its caller when it carries at least this share of it
CHAIN_CAP = 6  # edges stated along one chain
LISTED_EDGES = 6  # edges stated for a calls question (its callers may be more, up to CALLERS_CAP)
CALLERS_CAP = 20
SUPPORTED_PERCENTILES = ((100, "p99_ms"), (10, "p90_ms"), (0, "p50_ms"))  # (calls at least, percentile)
ASKED_CAP = 2  # services asked whose own spans are searched


def trace_calls(intent: Ask, results: dict[str, ToolInvocation] | None = None) -> list[Call]:
    """The call graph of the incident and of its baseline (or of the asked range), and each asked service's
    spans, when the environment has traces and the question asks what they show; `results` are the calls
    made so far by key (find_changes' window first: until it is made, only it is asked for)."""
    if intent.capabilities is None or "traces" not in intent.capabilities:
        return []  # unknown (a session stored before capabilities) or none: never a failing call
    kinds = set(intent.kinds)
    if not kinds & TRACE_KINDS:
        return []
    ranges = [asked_window(intent)]
    first: list[Call] = []
    compared = bool(kinds & COMPARED_KINDS)  # who calls whom is the graph of the asked range as it is
    if compared and "changes" in intent.capabilities and not intent.narrow:
        change = changes_call(intent)
        found = (results or {}).get(change.key)
        if found is None or not found.success:
            return [change] if found is None else []  # a failed comparison is stated by its own call
        window, baseline = found.output.get("searched_range"), found.output.get("baseline_range")
        if isinstance(window, str) and isinstance(baseline, str) and ".." in window and ".." in baseline:
            ranges = [_range(window), _range(baseline)]
        first = [change]
    whole = [Call("query_traces", dict(bounds)) for bounds in ranges]
    asked = [Call("query_traces", {"service": s} | ranges[0]) for s in intent.services[:ASKED_CAP]]
    return [*first, *whole, *asked]


def _range(text: str) -> dict[str, str]:
    start, end = text.split("..", 1)
    return {"since": start, "until": end}


def trace_claims(intent: Ask, refs: list[Ref], words: Catalogue) -> list[Claim]:
    """The claims of the call graph for what the question asks (see the module docstring)."""
    graphs = _graphs(refs)
    if not graphs:
        return []
    edges, before = graphs[-1], (_by_pair(graphs[0]) if len(graphs) > 1 else None)
    kinds = set(intent.kinds)
    start = next((service for service in intent.services if _touches(edges, service)), None)
    claims: list[Claim] = []
    both = "why" in kinds and not kinds & {"latency", "errors"}  # a why that names no symptom: both chains
    if "latency" in kinds or both:
        claims += _chain_claims(edges, before, start, _P99, "traces.slow_origin", words)
    if "errors" in kinds or both:
        claims += _chain_claims(edges, before, start, _ERRORS, "traces.error_origin", words)
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


def _graphs(refs: list[Ref]) -> list[list[Ref]]:
    """The edges of each whole-graph call (no service filter) of the latest range pair, the baseline first:
    calls ordered by the start of their range (a call over the asked range, or none, alone)."""
    calls: dict[int, list[Ref]] = {}
    for ref in refs:
        params = ref.invocation.input_params or {}
        if ref.invocation.tool_name == "query_traces" and ref.array == "edges" and not params.get("service"):
            calls.setdefault(ref.invocation.invocation_id, []).append(ref)
    if not calls:
        return []
    latest = sorted(calls, key=lambda number: str(calls[number][0].invocation.input_params.get("since") or ""))
    return [sorted(calls[number], key=lambda ref: ref.index) for number in latest[-2:]]


def _by_pair(edges: list[Ref]) -> dict[tuple[str, str], Ref]:
    return {(str(edge.item.get("caller")), str(edge.item.get("callee"))): edge for edge in edges}


def _touches(edges: list[Ref], service: str) -> bool:
    return any(service in (edge.item.get("caller"), edge.item.get("callee")) for edge in edges)


class _Measure:
    """How bad a call is: its own figure, or its rise against the same call in the baseline."""

    def __init__(self, figure: Callable[[Ref], float], rise: Callable[[Ref, Ref | None], float]) -> None:
        self.figure, self.rise = figure, rise

    def of(self, edge: Ref, before: dict[tuple[str, str], Ref] | None) -> float:
        if before is None:
            return self.figure(edge)
        return self.rise(edge, before.get((str(edge.item.get("caller")), str(edge.item.get("callee")))))


def _p99(edge: Ref) -> float:
    return float(edge.item.get("p99_ms") or 0)


def _percentile_key(calls: float) -> str:
    """The highest percentile the calls support: p99 is only its slowest call below 100 calls, p90 below 10."""
    return next(key for floor, key in SUPPORTED_PERCENTILES if calls >= floor)


def _errors(edge: Ref) -> float:
    return float(edge.item.get("errors") or 0)


def _latency_rise(edge: Ref, before: Ref | None) -> float:
    """The rise of the call's latency at the highest percentile both stretches' calls support."""
    if before is None:
        return 0.0  # a call new in the window: no rise known
    key = _percentile_key(min(float(edge.item.get("calls") or 0), float(before.item.get("calls") or 0)))
    return float(edge.item.get(key) or 0) - float(before.item.get(key) or 0)


def _errors_beyond(edge: Ref, before: Ref | None) -> float:
    """The errors of the call beyond the share of its calls that failed in the baseline."""
    share = _errors(before) / float(before.item.get("calls") or 1) if before is not None else 0.0
    return _errors(edge) - share * float(edge.item.get("calls") or 0)


_P99 = _Measure(_p99, _latency_rise)
_ERRORS = _Measure(_errors, _errors_beyond)


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
    into = [edge for edge in edges if edge.item.get("callee") in services][:CALLERS_CAP]  # the answer: every caller
    out = [edge for edge in edges if edge.item.get("caller") in services and edge not in into]
    return [_observed(edge) for edge in into + out[: max(0, LISTED_EDGES - len(into))]]


def _chain(
    edges: list[Ref], before: dict[tuple[str, str], Ref] | None, start: str | None, measure: _Measure
) -> list[Ref]:
    """The worst call from `start` (or the graph's worst call), then each callee's worst own call while it
    carries at least FOLLOWED_SHARE of the call before it; [] when no call shows any of the measure."""

    def bad(edge: Ref) -> float:
        return measure.of(edge, before)

    outgoing: dict[str, list[Ref]] = {}
    for edge in edges:
        outgoing.setdefault(str(edge.item.get("caller")), []).append(edge)
    first_from = outgoing.get(start, []) if start else edges
    if start and not first_from:  # the service asked calls nothing traced: the worst call into it
        first_from = [edge for edge in edges if edge.item.get("callee") == start]
    if not first_from or bad(_worst(first_from, bad)) <= 0:
        return []
    chain = [_worst(first_from, bad)]
    visited = {str(chain[0].item.get("caller"))}
    while len(chain) < CHAIN_CAP:
        callee = str(chain[-1].item.get("callee"))
        visited.add(callee)
        own = [edge for edge in outgoing.get(callee, []) if str(edge.item.get("callee")) not in visited]
        if not own:
            break
        worst = _worst(own, bad)
        if bad(worst) < FOLLOWED_SHARE * bad(chain[-1]):
            break
        chain.append(worst)
    return chain


def _worst(edges: list[Ref], bad: Callable[[Ref], float]) -> Ref:
    return max(edges, key=lambda edge: (bad(edge), -edge.index))


def _chain_claims(
    edges: list[Ref],
    before: dict[tuple[str, str], Ref] | None,
    start: str | None,
    measure: _Measure,
    origin_id: str,
    words: Catalogue,
) -> list[Claim]:
    chain = _chain(edges, before, start, measure) or (_chain(edges, before, None, measure) if start else [])
    if not chain:  # nothing rose from the service asked: where it rose in the whole graph, else nowhere
        return []
    last = chain[-1]
    origin = str(last.item.get("callee"))
    into_before = (before or {}).get((str(last.item.get("caller")), origin))
    own = [edge for edge in edges if edge.item.get("caller") == origin]
    bindings: list[dict[str, Any]] = [binding_of(last)]
    into = last.ref.text
    if into_before is not None:
        bindings.append(binding_of(into_before))
        into = words("traces.against_before", now=last.ref.text, before=into_before.ref.text)
    if own:
        worst_own = _worst(own, lambda edge: measure.of(edge, before))
        bindings.append(binding_of(worst_own))
        text = words(f"{origin_id}.calls", service=origin, into=into, own=worst_own.ref.text)
    else:
        text = words(f"{origin_id}.leaf", service=origin, into=into)
    hypothesis: Claim = {
        "claim_id": "",
        "claim_type": "root_cause",
        "claim_text": text,
        "support_level": "indirect",
        "evidence_bindings": bindings,
    }
    return [hypothesis, *(_observed(edge) for edge in chain[:-1])]  # the last call is the hypothesis' own
