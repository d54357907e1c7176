"""Requests through the call graph as a tracer samples them: one trace per sampled request.

`trace_setup(world)` decides from the incident's own "traces" stream whether its snapshot has
traces at all (TRACE_SHARE of the incidents) and how they look (format, pod names, client spans,
volume); `requests(world, setup)` makes the calls, one `Hop` (the callee's server span) per call;
`span_facts` reads back from the hops what trace questions are scored against.

Invariants:
  - a trace starts at an entry (a user request) or a consumer (a message taken off its queue) and
    follows only the graph's caller → callee edges; an entry sends a request to one of its routes;
  - a caller's span contains its callees' spans in time (its calls are made one after the other
    inside it), so a slow callee makes every caller on the way up slower by at least its own extra
    time, and nothing else is slower;
  - the fault acts only on the faulty instances of the root, from the onset on, and only as
    ON_REQUEST_PATH says for its kind: its latency is added to the root's own time, its errors fail
    the root's own spans (a down instance answers at once with an error); a caller fails when a
    callee failed unless it absorbs the failure (a fallback), so errors travel up the graph;
  - requests arrive with the metrics' daily load (a consumer with its own) at one sampling rate for
    the whole window; the same seed gives the same hops in any process (no set is iterated).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from random import Random

from evcli.evals.incidents.faults import VISIBLE_LATENCY_MS
from evcli.evals.incidents.metrics import pod_names
from evcli.evals.incidents.signals import load, poisson
from evcli.evals.incidents.traces import camel
from evcli.evals.incidents.world import APP_ROLES, World, stream

TRACE_SHARE = 0.6  # of the incidents whose snapshot has traces/
SPAN_FORMATS = ("otlp", "jaeger", "zipkin", "csv")
SPAN_BUDGET = (3000, 6000)  # spans an incident's traces hold, about (client spans included)
POD_NAMED = 0.35  # share of the incidents whose spans name the pod (payment-7c9f6d8b5-x2k4q), as Kubernetes does
CLIENT_SPANS = 0.5  # share whose callers also record a client span of each call (OTel SDK instrumentation)
# What a fault kind does to requests: (its latency reaches the spans, its errors do). A full disk or
# wrong-but-successful responses do not show on the request path as the tracer records it.
ON_REQUEST_PATH: Mapping[str, tuple[bool, bool]] = {
    "cpu": (True, True),
    "memory": (True, True),
    "network": (True, True),
    "errors": (True, True),
    "responses": (False, False),
    "restarts": (True, True),
    "disk": (False, False),
}
TAIL_CHANCE = 0.015  # a span whose own time comes from the long tail (GC pause, lock, cold cache)
GAP_MS = (0.05, 0.6)  # network time between a call and the callee's span, each way
DOWN_MS = (0.3, 3.0)  # how long a call to a down instance takes to fail
NOISE_RATES = (0.0, 0.0, 0.0005, 0.001, 0.002, 0.005)  # a service's own unrelated failures, per span
STORM_RATE = (0.01, 0.04)  # the error-storm trap's service fails this share of its spans all the time
ABSORBED = (0.0, 0.3)  # share of failed calls a caller answers anyway (a cached or default value)
# Status a failed span records: failing on its own, down, timed out, or passing on a callee's failure.
STATUS = {"own": 500, "down": 503, "timeout": 504, "passed": 502}

# What a span is called, per role ({word}: the service's word, {Word}: camel-cased).
HTTP_ENDPOINTS = ("GET /api/{word}", "POST /api/{word}", "GET /api/v1/{word}/{{id}}", "PUT /{word}/{{id}}")
GRPC_ENDPOINTS = ("{Word}Service/Get{Word}", "{Word}Service/List{Word}s", "{Word}Service/Update{Word}")
DATABASE_OPERATIONS = ("SELECT {word}", "INSERT {word}", "UPDATE {word}")
CACHE_OPERATIONS = {"redis": ("GET", "SET", "MGET", "HGETALL"), "valkey": ("GET", "SET"), "memcached": ("get", "set")}
QUEUE_OPERATIONS = {"producer": "{topic} publish", "consumer": "{topic} receive"}
CONSUMER_OPERATION = "{topic} process"
TOPICS = ("orders", "events", "notifications", "payments", "audit-log")


@dataclass(frozen=True)
class TraceSetup:
    """How one incident's spans look and how many there are."""

    format: str  # one of SPAN_FORMATS
    pod_named: bool  # app services' spans name their pod
    client_spans: bool  # a caller records its own client span around each of its calls
    protocol: str  # how app services call each other: "http" or "grpc"
    traces: int  # sampled requests over the window, about
    jitter: Mapping[str, float]  # lognormal sigma of each service's own time
    noise: Mapping[str, float]  # share of a service's spans failing for reasons of their own
    absorbs: Mapping[str, float]  # share of a callee's failures a caller absorbs
    pods: Mapping[str, tuple[str, ...]]  # pod names of app services without pod files of their own
    endpoints: Mapping[str, tuple[str, ...]]  # span names per service (an entry's: one per route)
    topic: str  # the queue topic producers publish to and consumers read


@dataclass(frozen=True)
class Hop:
    """One call as the callee's server span records it."""

    trace: int  # index of its trace
    parent: int | None  # the caller's hop (an index into the hops), None at the trace's root
    service: str
    instance: str  # as the span names it: the service, or its pod
    operation: str
    start_ns: int
    duration_ns: int
    error: bool
    status: int  # HTTP-like: 200, or a STATUS value

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns


@dataclass(frozen=True)
class Traces:
    """An incident's spans: how they look, the calls, and what they show."""

    setup: TraceSetup
    hops: tuple[Hop, ...]
    facts: SpanFacts


def traces_of(world: World) -> Traces | None:
    """The incident's spans, None when its snapshot has no traces/."""
    setup = trace_setup(world)
    if setup is None:
        return None
    hops = tuple(requests(world, setup))
    return Traces(setup, hops, span_facts(world, hops))


def trace_setup(world: World) -> TraceSetup | None:
    """None for an incident without traces; the first draw decides, so the rest never changes that."""
    rng = stream(world, "traces")
    if rng.random() >= TRACE_SHARE:
        return None
    graph, storm = world.graph, world.traps.error_storm
    names = graph.names()
    protocol = rng.choice(("http", "grpc"))
    split = {instance.service for instance in world.instances if instance.file != instance.service}
    span_format, pod_named, client_spans = (
        rng.choice(SPAN_FORMATS),
        rng.random() < POD_NAMED,
        rng.random() < CLIENT_SPANS,
    )
    hops = _hops_per_request(world)
    return TraceSetup(
        format=span_format,
        pod_named=pod_named,
        client_spans=client_spans,
        protocol=protocol,
        traces=round(rng.randint(*SPAN_BUDGET) / (2 * hops - 1 if client_spans else hops)),
        jitter={name: rng.uniform(0.15, 0.6) for name in names},
        noise={name: rng.uniform(*STORM_RATE) if name == storm else rng.choice(NOISE_RATES) for name in names},
        absorbs={name: 0.0 if name in graph.entries else rng.uniform(*ABSORBED) for name in names},
        pods={
            name: tuple(pod_names(name, rng.randint(1, 3), rng))
            for name in names
            if graph.service(name).role in APP_ROLES and name not in split
        },
        endpoints={name: _endpoints(world, name, protocol, rng) for name in names},
        topic=rng.choice(TOPICS),
    )


def _endpoints(world: World, name: str, protocol: str, rng: Random) -> tuple[str, ...]:
    service = world.graph.service(name)
    if service.role == "entry":
        return tuple(
            rng.choice(HTTP_ENDPOINTS).format(word=world.graph.service(route).word)
            for route in world.graph.callees(name)
        )
    if service.role == "database":
        return tuple(operation.format(word=service.word) for operation in DATABASE_OPERATIONS)
    if service.role == "cache":
        return CACHE_OPERATIONS[name.split("-", 1)[0]]
    if service.role in ("queue", "consumer"):
        return ()  # named by the topic and the caller's side (see `_operation`)
    templates = HTTP_ENDPOINTS if protocol == "http" else GRPC_ENDPOINTS
    chosen = rng.sample(templates, rng.randint(1, 3))
    return tuple(template.format(word=service.word, Word=camel(service.word)) for template in chosen)


def _hops_per_request(world: World) -> float:
    """The mean hops of one sampled request, over the roots weighted by their traffic."""
    graph = world.graph
    hops: dict[str, float] = {}
    for name in reversed(graph.names()):
        calls = graph.calls.get(name, {})
        if graph.service(name).role == "entry":  # one route a request, by the routing shares
            hops[name] = 1 + sum(share * hops[route] for route, share in calls.items()) / max(sum(calls.values()), 1e-9)
        else:
            hops[name] = 1 + sum(count * hops[callee] for callee, count in calls.items())
    roots = _roots(world)
    rates = [world.profiles[root].rate for root in roots]
    return sum(rate * hops[root] for root, rate in zip(roots, rates, strict=True)) / sum(rates)


def _roots(world: World) -> list[str]:
    return world.graph.names("entry", "consumer")


def requests(world: World, setup: TraceSetup) -> list[Hop]:
    """Every sampled request's hops, trace by trace in arrival order (a caller's hop before its callees')."""
    return _Tracer(world, setup).run()


class _Tracer:
    """Draws the requests of one incident from its "spans" stream."""

    def __init__(self, world: World, setup: TraceSetup) -> None:
        self.world, self.setup = world, setup
        self.rng = stream(world, "spans")
        self.hops: dict[int, Hop] = {}
        self.count = 0
        self.onset_ns = _ns(world.onset.timestamp())
        self.latency_on_path, self.errors_on_path = ON_REQUEST_PATH[world.fault.kind]
        self.instances = {
            name: [i for i in world.instances if i.service == name and i.file != name] for name in world.graph.names()
        }
        self.shared_load = load(world.timeline, world.timezone, stream(world, "load"))

    def run(self) -> list[Hop]:
        world, timeline = self.world, self.world.timeline
        roots = _roots(world)
        loads = {root: self._load(root) for root in roots}
        weight = sum(world.profiles[root].rate * sum(loads[root]) for root in roots)
        arrivals: list[tuple[int, str]] = []
        for root in roots:
            per_tick = self.setup.traces * world.profiles[root].rate / weight
            for tick in range(1, timeline.ticks):  # tick t's sample covers the step before it
                for _ in range(poisson(self.rng, per_tick * loads[root][tick])):
                    moment = timeline.at(tick).timestamp() - self.rng.uniform(0, timeline.step)
                    arrivals.append((_ns(moment), root))
        for trace, (start, root) in enumerate(sorted(arrivals)):
            self._call(trace, None, root, start, None)
        return [self.hops[index] for index in range(self.count)]

    def _load(self, root: str) -> list[float]:
        """The metrics' load: the shared one of synchronous traffic, a consumer's own."""
        if self.world.graph.service(root).role != "consumer":
            return self.shared_load
        return load(self.world.timeline, self.world.timezone, stream(self.world, "load", root))

    def _call(self, trace: int, parent: int | None, service: str, start: int, caller: str | None) -> tuple[int, bool]:
        """Record the hop of one call starting at `start`, and its callees'; (its end, whether it failed)."""
        index, self.count = self.count, self.count + 1  # the caller's index comes before its callees'
        instance, faulty = self._instance(service)
        tick = self._tick(start)
        active = faulty and start >= self.onset_ns
        own = self.world.own
        callees = self._callees(service)
        operation = self._operation(service, caller, callees)
        if active and tick in own.down:  # nothing listens: the call fails at once
            duration = _ms(self.rng.uniform(*DOWN_MS))
            self.hops[index] = Hop(trace, parent, service, instance, operation, start, duration, True, STATUS["down"])
            return start + duration, True
        own_ms = self._own_ms(service, tick)
        before = own_ms * self.rng.uniform(0.1, 0.4)
        cursor, passed = start + _ms(before), False
        for callee in callees:
            end, failed = self._call(trace, index, callee, cursor + _ms(self.rng.uniform(*GAP_MS)), service)
            cursor, passed = end + _ms(self.rng.uniform(*GAP_MS)), passed or failed
        extra = own.effect.latency[tick] * self.rng.gammavariate(4, 0.25) if active and self.latency_on_path else 0.0
        end = cursor + _ms(own_ms - before + extra)
        status = self._status(service, active, tick, passed)
        self.hops[index] = Hop(trace, parent, service, instance, operation, start, end - start, status != 200, status)
        return end, status != 200

    def _tick(self, start: int) -> int:
        """The tick whose sample covers a moment (the first at or after it), as the fault's lists are indexed."""
        timeline = self.world.timeline
        offset = (start - _ns(timeline.start.timestamp())) / 1e9
        return min(timeline.ticks - 1, max(0, math.ceil(offset / timeline.step)))

    def _instance(self, service: str) -> tuple[str, bool]:
        """(the name the span gives, whether it runs on a faulty instance)."""
        split = self.instances[service]
        if split:
            chosen = self.rng.choices(split, [i.share for i in split])[0]
            return (chosen.file if self.setup.pod_named else service), chosen.faulty
        faulty = service == self.world.fault.root
        pods = self.setup.pods.get(service)
        return (self.rng.choice(pods) if self.setup.pod_named and pods else service), faulty

    def _own_ms(self, service: str, tick: int) -> float:
        """Its own work: the profile's time at the load of the moment, jittered, now and then from the long tail."""
        level = 1 + 0.3 * (self.shared_load[tick] - 1)
        own = self.world.profiles[service].own_latency * level * self.rng.lognormvariate(0, self.setup.jitter[service])
        if self.rng.random() < TAIL_CHANCE:
            own *= 1 + min(30.0, self.rng.paretovariate(1.3))
        return own

    def _callees(self, service: str) -> list[str]:
        calls = self.world.graph.calls.get(service, {})
        if not calls:
            return []
        if self.world.graph.service(service).role == "entry":
            routes = list(calls)
            return [self.rng.choices(routes, [calls[route] for route in routes])[0]]
        found = []
        for callee in self.world.graph.callees(service):
            count = calls[callee]
            found += [callee] * (int(count) + (self.rng.random() < count - int(count)))
        return found

    def _operation(self, service: str, caller: str | None, callees: Sequence[str]) -> str:
        role = self.world.graph.service(service).role
        if role == "entry":
            routes = self.world.graph.callees(service)
            return self.setup.endpoints[service][routes.index(callees[0])] if callees else "GET /"
        if role == "consumer":
            return CONSUMER_OPERATION.format(topic=self.setup.topic)
        if role == "queue":
            side = "consumer" if caller and self.world.graph.service(caller).role == "consumer" else "producer"
            return QUEUE_OPERATIONS[side].format(topic=self.setup.topic)
        return self.rng.choice(self.setup.endpoints[service])

    def _status(self, service: str, active: bool, tick: int, passed: bool) -> int:
        """200, or why the span failed: its fault, its own unrelated failure, or a callee's passed on."""
        effect = self.world.own.effect
        if active and self.errors_on_path and self.rng.random() < effect.errors[tick]:
            return STATUS["timeout"] if effect.mode == "timeout" else STATUS["own"]
        if self.rng.random() < self.setup.noise[service]:
            return STATUS["own"]
        if passed and self.rng.random() >= self.setup.absorbs[service]:
            return STATUS["passed"]
        return 200


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _ms(milliseconds: float) -> int:
    return max(1_000, round(milliseconds * 1e6))  # a span lasts at least a microsecond


# --- what the spans show ---------------------------------------------------------------------

NORMAL_MIN_SPANS = 20  # spans of a service before the onset, at least, for its normal own time to be known
SLOW_SHARE = 0.05  # a span is slow for its service above the normal own time's (1 - SLOW_SHARE) quantile
ORIGIN_CHANCE = 1e-5  # what the fault window shows of a service must be this unlikely by chance
ORIGIN_MARGIN = 3.0  # an origin's rise is at least this many times any other service's


@dataclass(frozen=True)
class SpanFacts:
    """What the written spans show, read from the hops alone (the truth of trace questions)."""

    slow_origin: str | None  # the service whose own time (its span less its callees' spans) rose clearly
    error_origin: str | None  # the service whose own failures (failed spans with no failed callee) rose clearly
    callers: Mapping[str, tuple[str, ...]]  # callee → the services its spans' parents belong to


@dataclass
class _Sides:
    """One service's spans before the onset and inside the fault window: own time, whole time, own failures."""

    own_ms: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))
    whole_ms: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))
    failed: tuple[list[bool], list[bool]] = field(default_factory=lambda: ([], []))


def span_facts(world: World, hops: Sequence[Hop]) -> SpanFacts:
    onset = _ns(world.onset.timestamp())
    stop = _ns(world.timeline.at(min(world.fault.stop, world.timeline.ticks - 1)).timestamp())
    children: dict[int, list[Hop]] = {}
    for hop in hops:
        if hop.parent is not None:
            children.setdefault(hop.parent, []).append(hop)
    sides: dict[str, _Sides] = {}
    callers: dict[str, list[str]] = {}
    for index, hop in enumerate(hops):
        if hop.parent is not None and hops[hop.parent].service not in callers.setdefault(hop.service, []):
            callers[hop.service].append(hops[hop.parent].service)
        side = 0 if hop.start_ns < onset else 1 if hop.start_ns < stop else None
        if side is None:
            continue
        called, found = children.get(index, []), sides.setdefault(hop.service, _Sides())
        found.own_ms[side].append((hop.duration_ns - sum(child.duration_ns for child in called)) / 1e6)
        found.whole_ms[side].append(hop.duration_ns / 1e6)
        found.failed[side].append(hop.error and not any(child.error for child in called))
    order = world.graph.order
    return SpanFacts(
        _slowest(sides),
        _failing({name: found.failed for name, found in sides.items()}),
        {name: tuple(sorted(found, key=order)) for name, found in callers.items()},
    )


def _slowest(sides: Mapping[str, _Sides]) -> str | None:
    """The service whose spans inside the fault window are slow for it (above its normal own time's
    1 - SLOW_SHARE quantile) so often that chance gives it less than ORIGIN_CHANCE, whose median own
    time rose by that quantile and by VISIBLE_LATENCY_MS or more, ORIGIN_MARGIN times any other such
    service's rise, and whose whole spans' p99 rose by VISIBLE_LATENCY_MS (the calls into it show it)."""
    rises = {}
    for name, found in sides.items():
        normal, inside = found.own_ms
        if len(normal) < NORMAL_MIN_SPANS or not inside:
            continue
        threshold = _quantile(normal, 1 - SLOW_SHARE)
        slow = sum(value > threshold for value in inside)
        rise = statistics.median(inside) - statistics.median(normal)
        shown = _quantile(found.whole_ms[1], 0.99) - _quantile(found.whole_ms[0], 0.99)
        if _binomial_tail(len(inside), slow, SLOW_SHARE) < ORIGIN_CHANCE and rise >= threshold:
            rises[name] = rise if shown >= VISIBLE_LATENCY_MS else 0.0
    return _clear_top(rises, VISIBLE_LATENCY_MS)


def _quantile(values: Sequence[float], share: float) -> float:
    """The nearest-rank quantile, as `evcli.backends.trace_graph` computes percentiles."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _failing(failures: Mapping[str, tuple[list[bool], list[bool]]]) -> str | None:
    """The service with the most own failures inside the fault window above what its normal rate gives
    (one failure more than seen, so a service never seen failing is not taken as never failing), where
    chance gives that many less than ORIGIN_CHANCE."""
    excess = {}
    for name, (normal, inside) in failures.items():
        if len(normal) < NORMAL_MIN_SPANS or not inside:
            continue
        rate = (sum(normal) + 1) / (len(normal) + 1)
        failed = sum(inside)
        if _binomial_tail(len(inside), failed, rate) < ORIGIN_CHANCE:
            excess[name] = failed - rate * len(inside)
    return _clear_top(excess, 1.0)


def _binomial_tail(trials: int, successes: int, chance: float) -> float:
    """P(at least `successes` of `trials`), each with `chance` (summed in logarithms: no float overflows)."""
    if successes <= 0 or chance >= 1:
        return 1.0
    log_chance, log_miss = math.log(chance), math.log1p(-chance)
    return sum(
        math.exp(
            math.lgamma(trials + 1)
            - math.lgamma(k + 1)
            - math.lgamma(trials - k + 1)
            + k * log_chance
            + (trials - k) * log_miss
        )
        for k in range(successes, trials + 1)
    )


def _clear_top(rises: Mapping[str, float], floor: float) -> str | None:
    ranked = sorted(rises, key=lambda name: -rises[name])
    if not ranked or rises[ranked[0]] < floor:
        return None
    second = max((rises[name] for name in ranked[1:]), default=0.0)
    return ranked[0] if rises[ranked[0]] > ORIGIN_MARGIN * max(0.0, second) else None
