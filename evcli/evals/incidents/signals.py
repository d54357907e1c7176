"""Metric series in canonical units, one value per tick, before any exporter names or formats them.

Canonical metrics and units: cpu (%), memory (MiB), p50/p90/p99 (ms), requests (req/s), success (%),
restarts (count), net_rtt (ms), disk (%), response_bytes (B).

Normal behaviour: traffic follows a 24 h sinusoid shared by the synchronous services (consumers have
their own), every instance drifts slowly, CPU and latency follow the load, Gaussian noise whose size
differs per service (some are nearly constant, some very noisy), and heavy-tailed blips of one to
three samples. A service's latency is its own work plus that of its callees, weighted by calls per
request, so an entry's latency is the sum of what it routes to. The fault's effect and signature are
laid over the faulty instance by `instance_series`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from random import Random
from zoneinfo import ZoneInfo

from evcli.evals.incidents.clock import Timeline
from evcli.evals.incidents.faults import Effect, OwnFault
from evcli.evals.incidents.graph import Graph, Role

METRICS = ("cpu", "memory", "p50", "p90", "p99", "requests", "success", "restarts", "net_rtt", "disk", "response_bytes")
LATENCY_METRICS = ("p50", "p90", "p99")
_ALWAYS: Mapping[Role, tuple[str, ...]] = {
    "entry": ("cpu", "memory", *LATENCY_METRICS, "requests", "success", "restarts"),
    "business": ("cpu", "memory", *LATENCY_METRICS, "requests", "success", "restarts"),
    "consumer": ("cpu", "memory", "requests", "success", "restarts"),
    "queue": ("cpu", "memory", "requests", "restarts", "disk"),
    "cache": ("cpu", "memory", "requests", "restarts"),
    "database": ("cpu", "memory", "requests", "restarts"),
}
# Metrics some services of a role expose and others not: the chance that one does.
_SOMETIMES: Mapping[Role, Mapping[str, float]] = {
    "entry": {"response_bytes": 0.6, "net_rtt": 0.4},
    "business": {"response_bytes": 0.6, "net_rtt": 0.5, "disk": 0.4},
    "consumer": {"disk": 0.3},
    "queue": {"net_rtt": 0.6},
    "cache": {"net_rtt": 0.7, "p99": 0.3},
    "database": {"disk": 0.9, "net_rtt": 0.5, "p99": 0.4, "success": 0.3},
}
_OWN_LATENCY_MS: Mapping[Role, tuple[float, float]] = {
    "entry": (1, 5),
    "business": (2, 60),
    "consumer": (5, 100),
    "queue": (1, 5),
    "cache": (0.2, 2),
    "database": (0.5, 15),
}
_BLIP_METRICS = ("cpu", "p50", "p90", "p99", "requests", "net_rtt")


@dataclass(frozen=True)
class Profile:
    rate: float  # requests (or messages) per second at normal load
    cpu_idle: float
    cpu_busy: float  # % of CPU the normal load costs
    memory: float
    own_latency: float
    latency: float  # mean ms including the callees'
    success: float
    restarts: int  # restarts before the snapshot began
    net_rtt: float
    disk: float
    disk_growth: float  # % per tick
    response_bytes: float
    noise: float  # 0.15 nearly constant, 1 normal, 3 noisy
    metrics: tuple[str, ...]


@dataclass
class Series:
    values: dict[str, list[float]]
    down: frozenset[int] = frozenset()  # ticks without a sample
    restarts: tuple[int, ...] = ()  # ticks at which the process started again (counters reset)


def profiles(graph: Graph, rng: Random, forced: Mapping[str, str]) -> dict[str, Profile]:
    """One profile per service; `forced` names a metric a service must expose (the root's signature)."""
    rates = _rates(graph, rng)
    own = {s.name: rng.uniform(*_OWN_LATENCY_MS[s.role]) for s in graph.services}
    latency: dict[str, float] = {}
    for name in reversed(graph.names()):
        latency[name] = own[name] + sum(calls * latency[callee] for callee, calls in graph.calls.get(name, {}).items())
    result = {}
    for service in graph.services:
        metrics = set(_ALWAYS[service.role]) | {
            m for m, chance in _SOMETIMES[service.role].items() if rng.random() < chance
        }
        metrics |= {forced[service.name]} if service.name in forced else set()
        result[service.name] = Profile(
            rate=rates[service.name],
            cpu_idle=rng.uniform(1, 8),
            cpu_busy=rng.uniform(3, 40),
            memory=rng.choice((128, 256, 512, 1024, 2048, 4096)) * rng.uniform(0.3, 0.8),
            own_latency=own[service.name],
            latency=latency[service.name],
            success=100 - rng.choice((0.0, 0.01, 0.05, 0.1, 0.3, 1.0)),
            restarts=rng.choice((0, 0, 0, 1, 2, 5)),
            net_rtt=rng.uniform(0.2, 5),
            disk=rng.uniform(15, 80),
            disk_growth=rng.uniform(0, 0.002),
            response_bytes=rng.uniform(200, 20000),
            noise=rng.choices((0.15, 1.0, 3.0), (0.15, 0.75, 0.1))[0],
            metrics=tuple(m for m in METRICS if m in metrics),
        )
    return result


def _rates(graph: Graph, rng: Random) -> dict[str, float]:
    rates = dict.fromkeys(graph.names(), 0.0)
    entries = graph.entries
    for entry, weight in zip(entries, _weights(rng, len(entries)), strict=True):
        rates[entry] = rng.uniform(30, 1500) * weight
    for consumer in graph.names("consumer"):
        rates[consumer] = rng.uniform(2, 200)
    for caller in graph.names():  # topological: a caller's rate is final before its callees get it
        for callee, calls in graph.calls.get(caller, {}).items():
            rates[callee] += rates[caller] * calls
    return rates


def _weights(rng: Random, count: int) -> list[float]:
    raw = [rng.uniform(0.3, 1.0) for _ in range(count)]
    return [value / sum(raw) for value in raw]


def load(timeline: Timeline, timezone: str, rng: Random) -> list[float]:
    """The load factor per tick: a daily sinusoid with its peak in the local afternoon or evening,
    times a slow mean-reverting drift."""
    zone, amplitude, peak = ZoneInfo(timezone), rng.uniform(0.15, 0.5), rng.uniform(12, 21)
    drift, values = 0.0, []
    for tick in range(timeline.ticks):
        local = timeline.at(tick).astimezone(zone)
        hour = local.hour + local.minute / 60 + local.second / 3600
        drift = 0.998 * drift + rng.gauss(0, 0.002)
        values.append((1 + amplitude * math.cos(2 * math.pi * (hour - peak) / 24)) * (1 + drift))
    return values


def instance_series(
    profile: Profile,
    share: float,
    load: Sequence[float],
    effect: Effect | None,
    own: OwnFault | None,
    rng: Random,
) -> Series:
    """The metrics of one instance serving `share` of its service's traffic: the effect is what its
    callees do to it (or its own fault's effect), `own` the fault's signature when it is faulty."""
    noise, ticks = profile.noise, len(load)
    drift, values = 0.0, {metric: [0.0] * ticks for metric in profile.metrics}
    for tick in range(ticks):
        drift = 0.995 * drift + rng.gauss(0, 0.003)
        level = load[tick] * (1 + drift)
        added = effect.latency[tick] if effect else 0.0
        failed = effect.errors[tick] if effect else 0.0
        sample = {
            "cpu": _clip(profile.cpu_idle + profile.cpu_busy * level + rng.gauss(0, 1.2 * noise), 0.3, 100),
            "memory": profile.memory * (1 + 0.3 * drift + rng.gauss(0, 0.004 * noise)),
            "requests": max(0.0, profile.rate * share * level * (1 + rng.gauss(0, 0.03 * noise))),
            "success": _clip(100 - (100 - profile.success) * abs(1 + rng.gauss(0, 0.6 * noise)) - 100 * failed, 0, 100),
            "restarts": float(profile.restarts),
            "net_rtt": profile.net_rtt * abs(1 + rng.gauss(0, 0.1 * noise)),
            "disk": _clip(profile.disk + profile.disk_growth * tick + rng.gauss(0, 0.01 * noise), 0, 100),
            "response_bytes": profile.response_bytes * abs(1 + rng.gauss(0, 0.04 * noise)),
        }
        mean = profile.latency * (1 + 0.3 * (level - 1))
        percentiles = sorted(
            abs(base * mean + slope * added) * abs(1 + rng.gauss(0, spread * noise))
            for base, slope, spread in ((0.75, 0.8, 0.04), (1.7, 1.4, 0.07), (3.0, 2.0, 0.12))
        )
        sample.update(zip(LATENCY_METRICS, percentiles, strict=True))
        for metric in profile.metrics:
            values[metric][tick] = sample[metric]
    series = Series(values)
    return _with_fault(series, own) if own else series


def _clip(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def _with_fault(series: Series, own: OwnFault) -> Series:
    for metric, (operation, changes) in own.signature.items():
        column = series.values.get(metric)
        if column is None:
            continue
        for tick, change in enumerate(changes):
            if operation == "add":
                column[tick] += change
            elif operation == "scale":
                column[tick] *= change
            elif operation == "max":
                column[tick] = min(100.0, max(column[tick], change))
            else:  # "toward"
                column[tick] += (change - column[tick]) * own.intensity[tick]
    return replace(series, down=series.down | own.down, restarts=(*series.restarts, *own.restarts))


def add_blips(series: Series, rng: Random, noise: float) -> None:
    """Heavy-tailed, unrelated blips: 1–3 samples of one metric far above normal."""
    candidates = [metric for metric in _BLIP_METRICS if metric in series.values]
    ticks = len(next(iter(series.values.values())))
    for _ in range(poisson(rng, noise * ticks / 400) if candidates else 0):
        metric = rng.choice(candidates)
        spike(series, metric, rng.randrange(ticks), rng.randint(1, 3), 1 + min(15.0, rng.paretovariate(1.5)) * 0.5)


def spike(series: Series, metric: str, start: int, length: int, factor: float) -> None:
    """An unrelated metric jumping during the incident (a batch job, a backup, a cron burst)."""
    column = series.values[metric]
    for tick in range(start, min(len(column), start + length)):
        column[tick] = (
            min(100.0, column[tick] * factor) if metric in ("cpu", "disk", "success") else column[tick] * factor
        )


def routine_restart(series: Series, tick: int, outage: int) -> Series:
    """A restart unrelated to the fault (a deploy, a node drain): a gap, a fresh heap, one more restart."""
    for metric, column in series.values.items():
        for later in range(tick, len(column)):
            if metric == "restarts":
                column[later] += 1
            elif metric == "memory":
                column[later] *= 1 - 0.3 * math.exp(-(later - tick) / 40)
    return replace(series, down=series.down | frozenset(range(tick - outage, tick)), restarts=(*series.restarts, tick))


def poisson(rng: Random, mean: float) -> int:
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count
