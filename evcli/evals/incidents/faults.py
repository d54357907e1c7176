"""Fault kinds: what a fault does to its own service, and how that spreads to the callers.

A fault acts on the faulty instances of the root service from tick `start` to tick `stop`
(exclusive). What it does there is an `OwnFault`: an `Effect` (latency added to the responses,
share of failed responses, share of wrong-but-successful responses) plus a signature, the changes to
its own metrics (CPU to 80–100 %, memory climbing, disk filling, the restart counter …).

`spread` carries the root's effect up the call graph. A caller sees a callee's effect one to three
ticks later (its own requests are in flight; its exporter scrapes later), scaled by the share of its
requests that touch the callee, cut at the caller's timeout (a retried timeout costs another one),
reduced by its fallbacks.
Invariants: only the root and its ancestors get an effect; no caller's effect begins before the
effect of a callee it comes through.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from random import Random
from typing import Literal

from evcli.evals.incidents.graph import Graph, Role

FAULT_KINDS = ("cpu", "memory", "network", "errors", "responses", "restarts", "disk")

VARIANTS: Mapping[str, tuple[str, ...]] = {
    "cpu": ("saturated",),
    "memory": ("leak", "jump", "oom"),
    "network": ("latency", "loss"),
    "errors": ("exceptions",),
    "responses": ("shrink", "grow"),
    "restarts": ("crashloop",),
    "disk": ("full",),
}
# The metric each kind always changes on its own service (the root exposes it whatever its style).
SIGNATURE_METRIC: Mapping[str, str] = {
    "cpu": "cpu",
    "memory": "memory",
    "network": "net_rtt",
    "errors": "success",
    "responses": "response_bytes",
    "restarts": "restarts",
    "disk": "disk",
}
# What users notice at the entry: pages that are slow, or pages that fail.
SYMPTOM: Mapping[str, str] = {
    "cpu": "slow",
    "memory": "slow",
    "network": "slow",
    "errors": "errors",
    "responses": "errors",
    "restarts": "errors",
    "disk": "errors",
}
ELIGIBLE_ROLES: Mapping[str, tuple[Role, ...]] = {
    "cpu": ("business", "database", "cache", "queue", "entry"),
    "memory": ("business", "database", "cache", "queue", "entry"),
    "network": ("business", "database", "cache", "queue"),
    "errors": ("business", "database", "entry"),
    "responses": ("business",),
    "restarts": ("business", "database", "cache", "queue", "entry"),
    "disk": ("business", "database", "queue", "cache"),
}
VISIBLE_LATENCY_MS = 20.0  # below this added latency, or this share of errors, nobody notices
VISIBLE_ERRORS = 0.01

# How a caller experiences the failing callee, which decides what its error lines say.
Mode = Literal["timeout", "refused", "status", "parse", "slow"]


@dataclass(frozen=True)
class Fault:
    kind: str
    variant: str
    root: str
    start: int  # the first tick at or after the onset
    stop: int  # the first tick after the fault stopped (the number of ticks while still active)
    pod_share: float  # the share of the root's traffic its faulty instances serve


@dataclass
class Effect:
    """What a service's callers see of it, per tick."""

    latency: list[float]  # ms added to the mean response time
    errors: list[float]  # share of responses that fail
    wrong: list[float]  # share of responses that succeed but carry changed data
    blame: str | None = None  # the callee the effect came through (None at the root)
    mode: Mode = "status"

    def first(self) -> int | None:
        """The first tick at which the effect is noticeable."""
        for tick, (latency, errors, wrong) in enumerate(zip(self.latency, self.errors, self.wrong, strict=True)):
            if latency > VISIBLE_LATENCY_MS or errors + wrong > VISIBLE_ERRORS:
                return tick
        return None

    def scaled(self, share: float) -> Effect:
        return Effect(
            [v * share for v in self.latency],
            [v * share for v in self.errors],
            [v * share for v in self.wrong],
            self.blame,
            self.mode,
        )


@dataclass
class OwnFault:
    """The fault on its faulty instances: what callers see, and the changes to its own metrics.
    A signature operation is "add" (the values), "scale" (by the values), "max" (at least the values)
    or "toward" (moved toward the values by the intensity)."""

    effect: Effect
    intensity: list[float]  # 0 outside the fault, up to 1 at full strength
    signature: dict[str, tuple[str, list[float]]] = field(default_factory=dict)  # metric → (operation, values)
    down: frozenset[int] = frozenset()  # ticks with the instance not running: no samples, every call refused
    restarts: tuple[int, ...] = ()  # ticks at which the instance started again


def own_fault(fault: Fault, ticks: int, step: int, own_latency: float, rng: Random) -> OwnFault:
    return _KIND_BEHAVIOUR[fault.kind](fault, ticks, step, own_latency, rng)


def _ramp(fault: Fault, ticks: int, over: int) -> list[float]:
    """0 before the start and after the stop, rising linearly to 1 over `over` ticks."""
    return [
        min(1.0, (tick - fault.start + 1) / max(1, over)) if fault.start <= tick < fault.stop else 0.0
        for tick in range(ticks)
    ]


def _cpu(fault: Fault, ticks: int, step: int, own_latency: float, rng: Random) -> OwnFault:
    ramp = _ramp(fault, ticks, rng.randint(1, 3))
    # Near saturation requests queue for the CPU: latency grows by a multiple of the service's own work.
    target, slowdown = rng.uniform(80, 99.5), max(150.0, own_latency * rng.uniform(5, 20))
    effect = Effect([slowdown * r for r in ramp], [0.02 * r * r for r in ramp], [0.0] * ticks)
    busy = [min(100.0, target + rng.gauss(0, 1.5)) for _ in ramp]
    return OwnFault(effect, ramp, {"cpu": ("toward", busy)})


def _memory(fault: Fault, ticks: int, step: int, own_latency: float, rng: Random) -> OwnFault:
    grown = rng.uniform(0.6, 1.5)  # of the normal working set, by the end (or at the kill)
    if fault.variant == "jump":
        ramp = _ramp(fault, ticks, 1)
        effect = Effect([rng.uniform(10, 50) * r for r in ramp], [0.0] * ticks, [0.0] * ticks)
        return OwnFault(effect, ramp, {"memory": ("scale", [1 + grown * r for r in ramp])})
    end = min(fault.stop, ticks)
    span = max(2, end - fault.start)
    kill = fault.start + max(2, int(span * rng.uniform(0.6, 0.9))) if fault.variant == "oom" else None
    restart = kill + rng.choice((1, 1, 2)) if kill is not None else end
    down = frozenset(range(kill, restart)) if kill is not None else frozenset()
    climb = [0.0] * ticks
    for tick in range(fault.start, end):
        if kill is None or tick < kill:
            climb[tick] = (tick - fault.start + 1) / ((kill or end) - fault.start)
        elif tick >= restart:  # the leak starts over from a fresh heap
            climb[tick] = (tick - restart) / span
    pause = rng.uniform(60, 400)
    effect = Effect(
        [pause * c**3 for c in climb],
        [1.0 if tick in down else 0.0 for tick in range(ticks)],
        [0.0] * ticks,
        mode="refused" if kill is not None else "slow",
    )
    restarts = (restart,) if kill is not None and restart < end else ()
    return OwnFault(effect, climb, {"memory": ("scale", [1 + grown * c for c in climb])}, down, restarts)


def _network(fault: Fault, ticks: int, step: int, own_latency: float, rng: Random) -> OwnFault:
    ramp = _ramp(fault, ticks, 1)
    delay = rng.uniform(100, 1000) if fault.variant == "latency" else rng.uniform(200, 1200)
    loss = rng.uniform(0.05, 0.4) if fault.variant == "loss" else 0.0
    effect = Effect([delay * r for r in ramp], [loss * r for r in ramp], [0.0] * ticks, mode="timeout")
    rtt = delay * rng.uniform(0.5, 0.9)
    return OwnFault(effect, ramp, {"net_rtt": ("add", [rtt * r for r in ramp])})


def _errors(fault: Fault, ticks: int, step: int, own_latency: float, rng: Random) -> OwnFault:
    ramp = _ramp(fault, ticks, rng.randint(1, 2))
    share = rng.uniform(0.05, 0.6)
    effect = Effect([rng.uniform(5, 30) * r for r in ramp], [share * r for r in ramp], [0.0] * ticks)
    return OwnFault(effect, ramp)


def _responses(fault: Fault, ticks: int, step: int, own_latency: float, rng: Random) -> OwnFault:
    ramp = _ramp(fault, ticks, 1)
    factor = rng.uniform(0.2, 0.5) if fault.variant == "shrink" else rng.uniform(2.0, 4.0)
    effect = Effect([0.0] * ticks, [0.0] * ticks, [rng.uniform(0.2, 1.0) * r for r in ramp], mode="parse")
    return OwnFault(effect, ramp, {"response_bytes": ("scale", [1 + (factor - 1) * r for r in ramp])})


def _restarts(fault: Fault, ticks: int, step: int, own_latency: float, rng: Random) -> OwnFault:
    """CrashLoopBackOff: up for a while, killed, waiting 10 s, 20 s, 40 s … (at most 5 min) each time."""
    down: set[int] = set()
    restarts: list[int] = []
    tick, backoff = fault.start, 10
    while tick < min(fault.stop, ticks):
        waiting = max(1, math.ceil(backoff / step))
        down.update(range(tick, min(tick + waiting, fault.stop, ticks)))
        tick += waiting
        if tick < min(fault.stop, ticks):
            restarts.append(tick)
        tick += max(1, math.ceil(rng.uniform(15, 60) / step))  # the time it runs before crashing again
        backoff = min(300, backoff * 2)
    starting = set(restarts)
    ramp = _ramp(fault, ticks, 1)
    effect = Effect(
        [300.0 if tick in starting else 0.0 for tick in range(ticks)],
        [1.0 if tick in down else 0.5 if tick in starting else 0.05 * r for tick, r in enumerate(ramp)],
        [0.0] * ticks,
        mode="refused",
    )
    counter = [float(sum(1 for restart in restarts if restart <= tick)) for tick in range(ticks)]
    warmup = [rng.uniform(60, 95) if tick in starting else 0.0 for tick in range(ticks)]
    return OwnFault(
        effect, ramp, {"restarts": ("add", counter), "cpu": ("max", warmup)}, frozenset(down), tuple(restarts)
    )


def _disk(fault: Fault, ticks: int, step: int, own_latency: float, rng: Random) -> OwnFault:
    ramp = _ramp(fault, ticks, rng.randint(2, 10))
    target, failing, slow = rng.uniform(95, 100), rng.uniform(0.1, 0.5), rng.uniform(50, 500)
    full = [max(0.0, (r - 0.8) / 0.2) for r in ramp]  # writes fail once the disk is nearly full
    effect = Effect([slow * r for r in ramp], [failing * f for f in full], [0.0] * ticks)
    filled = [min(100.0, target + rng.gauss(0, 0.2)) for _ in ramp]
    return OwnFault(effect, ramp, {"disk": ("toward", filled)})


_KIND_BEHAVIOUR: Mapping[str, Callable[[Fault, int, int, float, Random], OwnFault]] = {
    "cpu": _cpu,
    "memory": _memory,
    "network": _network,
    "errors": _errors,
    "responses": _responses,
    "restarts": _restarts,
    "disk": _disk,
}


@dataclass(frozen=True)
class Resilience:
    """How a caller protects itself from a slow or failing callee."""

    timeout: float  # ms
    retries: (
        int  # a retried call that times out costs another timeout; failures are systematic, retrying does not fix them
    )
    fallback: float  # share of failed calls it answers anyway (a cached or default value)
    validates: float  # share of wrong responses its validation or parsing rejects


def resilience(rng: Random) -> Resilience:
    return Resilience(
        rng.choice((500.0, 1000.0, 2000.0, 3000.0, 5000.0)),
        rng.choice((0, 0, 1, 2)),
        rng.uniform(0, 0.3),
        rng.uniform(0.6, 1.0),
    )


def spread(
    graph: Graph, root: str, root_effect: Effect, rng: Random, base_latency: Mapping[str, float]
) -> dict[str, Effect]:
    """The effect on every affected service: the root's own (already scaled to its faulty share) and
    each ancestor's, callees before callers. Services missing from the result are unaffected."""
    ticks = len(root_effect.latency)
    effects = {root: root_effect}
    affected = graph.ancestors(root)
    for caller in reversed(graph.names()):
        if caller in affected:
            effects[caller] = _caller_effect(graph, caller, effects, resilience(rng), rng, base_latency, ticks)
    return effects


def _caller_effect(
    graph: Graph,
    caller: str,
    effects: Mapping[str, Effect],
    guard: Resilience,
    rng: Random,
    base_latency: Mapping[str, float],
    ticks: int,
) -> Effect:
    latency, surviving = [0.0] * ticks, [1.0] * ticks
    failures: dict[tuple[str, Mode], float] = {}
    slowdowns: dict[str, float] = {}
    for callee in graph.callees(caller):
        effect = effects.get(callee)
        if effect is None:
            continue
        delay, share = rng.randint(1, 3), graph.calls[caller][callee]
        # The root's own refusals and timeouts reach its direct callers as such; further up they are 5xx.
        error_mode: Mode = effect.mode if effect.blame is None and effect.mode in ("refused", "timeout") else "status"
        modes: tuple[Mode, Mode, Mode] = ("timeout", error_mode, "parse")
        for tick in range(delay, ticks):
            added, *failed = _through(guard, share, base_latency[callee], effect, tick - delay)
            latency[tick] += added
            surviving[tick] *= 1 - min(1.0, sum(failed))
            for mode, share_failed in zip(modes, failed, strict=True):
                failures[callee, mode] = failures.get((callee, mode), 0.0) + share_failed
            slowdowns[callee] = slowdowns.get(callee, 0.0) + added
    blame, mode = max(failures, key=lambda cause: failures[cause])
    if failures[blame, mode] < 0.5:  # hardly any failed request: the caller is only slower
        blame, mode = max(slowdowns, key=lambda callee: slowdowns[callee]), "slow"
    return Effect(latency, [1 - s for s in surviving], [0.0] * ticks, blame, mode)


def _through(
    caller: Resilience, share: float, callee_latency: float, effect: Effect, tick: int
) -> tuple[float, float, float, float]:
    """(added latency, failed share by timeouts, failed share by errors, failed share by wrong data)
    of a caller's requests at a tick, from one callee's effect at the tick the caller sees."""
    touch = min(1.0, share)
    latency, errors, wrong = effect.latency[tick], effect.errors[tick], effect.wrong[tick]
    timed = min(1.0, max(0.0, (callee_latency + latency - 0.7 * caller.timeout) / (0.6 * caller.timeout)))
    kept = touch * (1 - caller.fallback)
    by_timeout = kept * timed
    by_errors = kept * (1 - timed) * errors
    by_wrong = touch * wrong * caller.validates
    return share * min(latency, caller.timeout) * (1 + caller.retries * timed), by_timeout, by_errors, by_wrong
