"""Every random choice of one incident, made from its seed before anything is written.

`plan(seed)` is pure: the same seed gives the same `World` in any process (string seeds of
`random.Random` are hashed with SHA-512, not with Python's randomised `hash`, and no set is iterated
where order matters). Writing the snapshot (`directory.py`) draws its noise from streams of its own,
one per file, so a change to one file's generator leaves the others as they were.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from random import Random

from evcli.evals.incidents.clock import Timeline
from evcli.evals.incidents.faults import (
    ELIGIBLE_ROLES,
    FAULT_KINDS,
    SIGNATURE_METRIC,
    VARIANTS,
    Effect,
    Fault,
    OwnFault,
    own_fault,
    spread,
)
from evcli.evals.incidents.graph import DATASTORE_ROLES, Graph, build
from evcli.evals.incidents.metrics import STYLES, TIME_FORMATS, pod_names
from evcli.evals.incidents.signals import Profile, profiles

TIMEZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Shanghai")
STEPS = (15, 30, 60)
ENTRY_ROOT_CHANCE = 0.04
APP_ROLES = ("entry", "business", "consumer")
_HOUSE_FAMILIES = {  # the languages a company's services are written in: weights of java, go, python
    "java": (0.75, 0.15, 0.10),
    "go": (0.15, 0.75, 0.10),
    "python": (0.15, 0.15, 0.70),
    "mixed": (0.4, 0.35, 0.25),
}
_DATASTORE_FORMATS = {"postgres": "postgres", "mysql": "mysql", "kafka": "kafka", "rabbitmq": "rabbitmq"}
HABITS = ("deprecated", "flaky_health", "slow_query", "retries")


@dataclass(frozen=True)
class Instance:
    """One metrics file: a whole service, or one pod of its Deployment."""

    file: str
    service: str
    share: float  # of the service's traffic
    faulty: bool


@dataclass(frozen=True)
class LogSetup:
    format: str
    wrapped: bool  # written as Docker json-file lines
    naming: float  # share of its failure lines that name the callee
    loudness: float  # lines per failed request, relative
    chatter: float  # normal lines per second
    habits: tuple[str, ...]  # misleading warnings it writes all the time


@dataclass(frozen=True)
class Spike:
    service: str
    metric: str
    start: int
    length: int
    factor: float


@dataclass(frozen=True)
class Traps:
    """What makes an incident hard."""

    silent_root: bool  # the root cause logs nothing about its fault
    loud_caller: str | None  # a caller that logs far more than the root
    error_storm: str | None  # an unrelated service logging ERROR all the time
    spike: Spike | None  # an unrelated metric jumping during the incident
    routine_restart: tuple[str, int, int] | None  # an unrelated restart before the fault: (service, tick, ticks down)


@dataclass(frozen=True)
class World:
    seed: int
    name: str
    graph: Graph
    timeline: Timeline
    timezone: str
    onset: datetime
    fault: Fault
    own: OwnFault  # on the faulty instances
    effects: dict[str, Effect]  # per affected service, the root's scaled to its faulty share
    profiles: dict[str, Profile]
    instances: tuple[Instance, ...]
    style: str
    time_format: str
    logs: dict[str, LogSetup]
    traps: Traps
    topology_declared: bool
    aliases: dict[str, tuple[str, ...]]
    package: str  # the Java package prefix of the company's code

    @property
    def entry(self) -> str:
        """The user-facing service whose requests reach the root cause."""
        return next(entry for entry in self.graph.entries if self.fault.root in self.graph.reachable([entry]))


def stream(world: World, *names: str) -> Random:
    """A random stream of its own for one part of what is written (a file, the questions, the spans)."""
    return Random(":".join(("evcli-incidents", str(world.seed), *names)))


def plan(seed: int) -> World:
    rng = Random(f"evcli-incidents:{seed}")
    graph = build(rng)
    timezone, timeline, onset, stop = _clock(rng)
    kind = FAULT_KINDS[rng.randrange(len(FAULT_KINDS))]
    root = _root(rng, graph, kind)
    service_profiles = profiles(graph, rng, {root: SIGNATURE_METRIC[kind]})
    instances = _instances(rng, graph, root)
    faulty = [instance for instance in instances if instance.service == root]
    pod_share = sum(instance.share for instance in faulty if instance.faulty)
    fault = Fault(kind, rng.choice(VARIANTS[kind]), root, timeline.tick_of(onset), stop, pod_share)
    own = own_fault(fault, timeline.ticks, timeline.step, service_profiles[root].own_latency, rng)
    effects = spread(
        graph, root, own.effect.scaled(pod_share), rng, {name: p.latency for name, p in service_profiles.items()}
    )
    traps = _traps(rng, graph, fault, timeline, service_profiles)
    return World(
        seed=seed,
        name=f"{rng.choice(('shop', 'boutique', 'travel', 'bank', 'media', 'food'))}-{rng.choice(('prod', 'production', 'live', 'prod-eu'))}",
        graph=graph,
        timeline=timeline,
        timezone=timezone,
        onset=onset,
        fault=fault,
        own=own,
        effects=effects,
        profiles=service_profiles,
        instances=instances,
        style=rng.choice(sorted(STYLES)),
        time_format=rng.choice(TIME_FORMATS),
        logs=_log_setups(rng, graph, traps),
        traps=traps,
        topology_declared=rng.random() < 0.5,
        aliases=_aliases(rng, graph),
        package=rng.choice(("com.example.shop", "com.acme.store", "io.shopfront.platform", "com.example")),
    )


def _clock(rng: Random) -> tuple[str, Timeline, datetime, int]:
    """(timezone, timeline, onset, stop tick): 1–3 h of normal data, 8–30 min of fault, and in a fifth
    of the incidents a few minutes after the fault stopped."""
    step = rng.choice(STEPS)
    day = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(days=rng.randrange(730))
    onset = day + timedelta(seconds=rng.randrange(86400), milliseconds=rng.randrange(1000))
    start = onset - timedelta(minutes=rng.randint(60, 180))
    start = datetime.fromtimestamp(int(start.timestamp()) // step * step, UTC)
    active = timedelta(minutes=rng.randint(8, 30))
    after = timedelta(minutes=rng.randint(2, 6)) if rng.random() < 0.2 else timedelta(0)
    timeline = Timeline(start, step, int((onset + active + after - start).total_seconds()) // step + 1)
    stop = timeline.tick_of(onset + active) if after else timeline.ticks
    return rng.choice(TIMEZONES), timeline, onset, stop


def _root(rng: Random, graph: Graph, kind: str) -> str:
    eligible = ELIGIBLE_ROLES[kind]
    if "entry" in eligible and rng.random() < ENTRY_ROOT_CHANCE:
        return rng.choice(graph.entries)
    reachable = graph.reachable(graph.entries)
    return rng.choice(
        [s.name for s in graph.services if s.role != "entry" and s.role in eligible and s.name in reachable]
    )


def _instances(rng: Random, graph: Graph, root: str) -> tuple[Instance, ...]:
    """In a fifth of the incidents some services export one file per pod (1–3 pods); the fault hits
    one pod of a split root, or all of them."""
    split = rng.random() < 0.2
    instances: list[Instance] = []
    for service in graph.services:
        pods = rng.randint(1, 3) if split and service.role in APP_ROLES and rng.random() < 0.6 else 0
        if not pods:
            instances.append(Instance(service.name, service.name, 1.0, service.name == root))
            continue
        hit = rng.randrange(pods) if rng.random() < 0.7 else None
        for index, pod in enumerate(pod_names(service.name, pods, rng)):
            faulty = service.name == root and (hit is None or hit == index)
            instances.append(Instance(pod, service.name, 1 / pods, faulty))
    return tuple(instances)


def _bystanders(graph: Graph, fault: Fault) -> list[str]:
    """App services neither the root nor depending on it: where unrelated trouble can happen."""
    involved = graph.ancestors(fault.root) | {fault.root}
    return [s.name for s in graph.services if s.name not in involved]


def _traps(rng: Random, graph: Graph, fault: Fault, timeline: Timeline, service_profiles: dict[str, Profile]) -> Traps:
    bystanders = _bystanders(graph, fault)
    chatty = [name for name in bystanders if graph.service(name).role in ("business", "consumer")]
    callers = sorted(graph.ancestors(fault.root), key=graph.order)
    spike = None
    if bystanders and rng.random() < 0.4:
        service = rng.choice(bystanders)
        metrics = [m for m in ("cpu", "p99", "requests", "net_rtt") if m in service_profiles[service].metrics]
        start = rng.randrange(fault.start, max(fault.start + 1, timeline.ticks - 3))
        spike = Spike(service, rng.choice(metrics), start, rng.randint(3, 8), rng.uniform(2.5, 6))
    restart = None
    if bystanders and rng.random() < 0.25:
        restart = (rng.choice(bystanders), rng.randrange(5, max(6, int(fault.start * 0.8))), rng.randint(1, 2))
    return Traps(
        silent_root=rng.random() < 0.2,
        loud_caller=rng.choice(callers) if callers and rng.random() < 0.3 else None,
        error_storm=rng.choice(chatty) if chatty and rng.random() < 0.35 else None,
        spike=spike,
        routine_restart=restart,
    )


def _log_setups(rng: Random, graph: Graph, traps: Traps) -> dict[str, LogSetup]:
    weights = _HOUSE_FAMILIES[rng.choice(sorted(_HOUSE_FAMILIES))]
    go_format = rng.choice(("logfmt", "zap"))
    docker = rng.random() < 0.35
    setups = {}
    for service in graph.services:
        log_format = _log_format(rng, service.role, service.name, weights, go_format)
        if log_format is None or (
            service.role == "business" and service.name != traps.error_storm and rng.random() < 0.08
        ):
            continue
        habits = tuple(habit for habit in HABITS if rng.random() < 0.2 and _fits(habit, graph, service.name))
        is_store = service.role in DATASTORE_ROLES
        setups[service.name] = LogSetup(
            format=log_format,
            wrapped=docker and rng.random() < 0.7,
            naming=rng.uniform(0.3, 0.9),
            loudness=rng.uniform(0.5, 2.0) * (4 if service.name == traps.loud_caller else 1),
            chatter=rng.uniform(0.003, 0.015)
            if is_store
            else rng.uniform(0.05, 0.25)
            if service.role == "entry"
            else rng.uniform(0.005, 0.06),
            habits=habits + (("error_storm",) if service.name == traps.error_storm else ()),
        )
    return setups


def _log_format(rng: Random, role: str, name: str, weights: tuple[float, ...], go_format: str) -> str | None:
    if role == "entry":
        return rng.choices(("nginx", "envoy", go_format), (0.6, 0.25, 0.15))[0]
    if role in DATASTORE_ROLES:
        engine = name.split("-", 1)[0]
        return _DATASTORE_FORMATS[engine] if engine in _DATASTORE_FORMATS and rng.random() < 0.7 else None
    family = rng.choices(("java", "go", "python"), weights)[0]
    return {"java": "spring", "go": go_format, "python": "python"}[family]


def _fits(habit: str, graph: Graph, name: str) -> bool:
    if habit == "slow_query":
        return any(graph.service(callee).role == "database" for callee in graph.callees(name))
    return habit == "deprecated" or bool(graph.callees(name))


_CHINESE = {
    "payment": "支付服务",
    "cart": "购物车服务",
    "order": "订单服务",
    "user": "用户服务",
    "inventory": "库存服务",
    "checkout": "结算服务",
    "catalog": "商品目录服务",
    "shipping": "物流服务",
    "search": "搜索服务",
    "recommendation": "推荐服务",
    "auth": "认证服务",
    "notification": "通知服务",
    "email": "邮件服务",
    "pricing": "定价服务",
}


def _aliases(rng: Random, graph: Graph) -> dict[str, tuple[str, ...]]:
    """The bare word ("payment" for payment-svc) and a Chinese name, for some services; never a
    word two services share (email and email-worker) or another service's name."""
    if rng.random() < 0.5:
        return {}
    words = [service.word for service in graph.services]
    taken = set(graph.names())
    found = {}
    for service in graph.services:
        if service.role not in APP_ROLES or rng.random() < 0.5 or words.count(service.word) > 1:
            continue
        names = tuple(alias for alias in (service.word, _CHINESE.get(service.word)) if alias and alias not in taken)
        if names:
            found[service.name] = names
            taken.update(names)
    return found
