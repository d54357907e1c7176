"""How one service writes its log lines (runtime, loggers, threads, how it spells a callee's
address) and when: the moments of a Poisson process whose rate follows the load or the fault."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from random import Random

from evcli.evals.incidents.graph import Graph
from evcli.evals.incidents.logs import FAMILY, Event, Value
from evcli.evals.incidents.signals import poisson
from evcli.evals.incidents.traces import abbreviate, camel
from evcli.evals.incidents.world import LogSetup, World

PORTS = {
    "postgres": 5432,
    "mysql": 3306,
    "redis": 6379,
    "valkey": 6379,
    "memcached": 11211,
    "kafka": 9092,
    "rabbitmq": 5672,
}


@dataclass(frozen=True)
class Voice:
    """How one service writes its log lines: its runtime, its loggers, how it names its callees."""

    name: str
    word: str
    role: str
    family: str  # java, go, python, proxy, or the datastore's own
    package: str
    callees: tuple[str, ...]
    setup: LogSetup
    graph: Graph

    @classmethod
    def of(cls, world: World, name: str) -> Voice:
        service, setup = world.graph.service(name), world.logs[name]
        return cls(
            name,
            service.word,
            service.role,
            FAMILY[setup.format],
            world.package,
            tuple(world.graph.callees(name)),
            setup,
            world.graph,
        )

    def logger(self, part: str) -> str:
        """A stable logger name for a part of the code: a class, a module, or file:line; a dotted
        part is a library's own logger and kept."""
        if "." in part:
            return part
        if self.family == "java":
            return abbreviate(f"{self.package}.{self.word.replace('-', '')}.{camel(self.word)}{camel(part)}")
        if self.family == "python":
            return f"{self.word.replace('-', '_')}.{part}"
        line = 20 + sum(ord(c) * 7 for c in self.name + part) % 400  # the same call site every time
        return f"{part}/{part}.go:{line}"

    def thread(self, rng: Random) -> str:
        if self.family != "java":
            return str(rng.randint(100, 999))
        return (
            "org.springframework.kafka.KafkaListenerEndpointContainer#0-0-C-1"
            if self.role == "consumer"
            else f"http-nio-8080-exec-{rng.randint(1, 200)}"
        )

    def event(
        self,
        time: datetime,
        level: str,
        message: str,
        part: str,
        rng: Random,
        fields: tuple[tuple[str, Value], ...] = (),
        trace: tuple[str, ...] = (),
        thread: str | None = None,
    ) -> Event:
        """An event in this service's voice; `fields` go inline for Java and Python, structured for Go."""
        return Event(time, level, message, self.logger(part), thread or self.thread(rng), fields, trace)


def port_of(graph: Graph, name: str) -> int:
    return PORTS.get(name.split("-", 1)[0], 8080) if graph.service(name).role != "business" else 8080


def url_of(graph: Graph, callee: str, rng: Random) -> str:
    """How a client library spells the address of a callee."""
    service = graph.service(callee)
    engine = callee.split("-", 1)[0]
    if service.role == "database":
        return f"jdbc:{'postgresql' if engine == 'postgres' else engine}://{callee}:{port_of(graph, callee)}/{service.word}"
    if service.role in ("cache", "queue"):
        return f"{callee}:{port_of(graph, callee)}"
    return f"http://{callee}:8080/api/{service.word}/{rng.randint(1000, 99999)}"


def moments(
    world: World, rng: Random, per_second: float | Sequence[float], quiet: frozenset[int]
) -> Iterator[tuple[int, datetime]]:
    """(tick, moment) of a Poisson process with this rate (per second, one for all ticks or one per
    tick), skipping ticks at which the service is not running."""
    timeline = world.timeline
    rates = [per_second] * timeline.ticks if isinstance(per_second, float | int) else per_second
    for tick, rate in enumerate(rates):
        if rate <= 0 or tick in quiet:
            continue
        for _ in range(poisson(rng, rate * timeline.step)):
            yield tick, timeline.at(tick) + timedelta(seconds=rng.uniform(0, timeline.step))
