"""What the fault makes services log: the root's own lines (see `ownlogs`, unless the incident keeps
the root silent), and its callers' failures.

A caller logs per tick in proportion to its failed requests (so a busy caller is louder than the
root), or warns about slow calls when it only got slower, in the form its runtime and client
library use (`phrases`); a share of its lines names the callee (URL, `upstream=`, host), the rest
does not. A Java caller's circuit breaker opens once half its calls fail.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from random import Random

from evcli.evals.incidents.faults import Mode
from evcli.evals.incidents.logs import Event, Value
from evcli.evals.incidents.ownlogs import root_events, startup
from evcli.evals.incidents.phrases import DETAILS, ENGINE_TARGETS, FAILURES, JAVA_EXCEPTIONS
from evcli.evals.incidents.traces import (
    HTTP_CLIENT_FRAMES,
    JDBC_FRAMES,
    java_frames,
    java_trace,
)
from evcli.evals.incidents.voice import Voice, moments, port_of, url_of
from evcli.evals.incidents.world import World


def quiet_ticks(world: World, name: str) -> frozenset[int]:
    """Ticks at which nothing of the service runs: it writes neither lines nor samples."""
    quiet: set[int] = set()
    if name == world.fault.root and all(i.faulty for i in world.instances if i.service == name):
        quiet |= world.own.down
    if world.traps.routine_restart and world.traps.routine_restart[0] == name:
        _, tick, outage = world.traps.routine_restart
        quiet |= set(range(tick - outage, tick))
    return frozenset(quiet)


def fault_events(voice: Voice, world: World, rng: Random, quiet: frozenset[int]) -> list[Event]:
    events: list[Event] = []
    root = world.fault.root
    if voice.name == root and not world.traps.silent_root:
        events += root_events(voice, world, rng, quiet)
        events += [event for tick in world.own.restarts for event in startup(voice, world.timeline.at(tick), rng)]
    elif voice.name in world.effects and voice.name != root and voice.family != "proxy":
        events += _caller_events(voice, world, rng, quiet)
    if world.traps.routine_restart and world.traps.routine_restart[0] == voice.name:
        events += startup(voice, world.timeline.at(world.traps.routine_restart[1]), rng)
    return events


def _caller_events(voice: Voice, world: World, rng: Random, quiet: frozenset[int]) -> list[Event]:
    effect = world.effects[voice.name]
    blame, mode = effect.blame, effect.mode
    assert blame is not None  # only the root has none
    rate, loud = world.profiles[voice.name].rate, voice.setup.loudness
    if mode == "slow":
        rates = [loud * 0.03 * min(1.0, latency / 500) if latency > 50 else 0.0 for latency in effect.latency]
    else:
        rates = [loud * min(0.3, 0.02 + errors * rate * 0.01) if errors > 0.005 else 0.0 for errors in effect.errors]
    events = [
        _failure(voice, world, blame, mode, tick, moment, rng) for tick, moment in moments(world, rng, rates, quiet)
    ]
    if voice.family == "java" and mode != "slow":
        events += _breaker(voice, world, blame, rng)
    return events


def _target(world: World, callee: str) -> str:
    service = world.graph.service(callee)
    return "http" if service.role in ("entry", "business", "consumer") else ENGINE_TARGETS[callee.split("-", 1)[0]]


def _failure(voice: Voice, world: World, callee: str, mode: Mode, tick: int, moment: datetime, rng: Random) -> Event:
    named = rng.random() < voice.setup.naming
    if mode == "slow":
        took = (world.profiles[voice.name].latency + world.effects[voice.name].latency[tick]) * rng.lognormvariate(
            0, 0.3
        )
        return _slow(voice, world, callee, moment, rng, named, round(took))
    target = _target(world, callee)
    phrases = FAILURES.get((mode, target)) or FAILURES["status", target]
    first, second = phrases[voice.family]
    details = DETAILS.get(target, {})
    values = {
        "callee": callee,
        "url": url_of(world.graph, callee, rng),
        "method": rng.choice(("GET", "POST")),
        "port": port_of(world.graph, callee),
        "ip": f"10.0.{rng.randint(1, 9)}.{rng.randint(2, 250)}",
        "detail": details.get(world.fault.kind if callee == world.fault.root else "", details.get("", "")),
    }
    if voice.family == "go":
        fields: tuple[tuple[str, Value], ...] = (("upstream", callee),) if named else ()
        return voice.event(moment, "ERROR", first, "client", rng, fields=(*fields, ("error", second.format(**values))))
    message = (first if named else second).format(**values)
    trace: tuple[str, ...] = ()
    if voice.family == "java" and rng.random() < 0.15 and mode in JAVA_EXCEPTIONS:
        frames = list(JDBC_FRAMES if target in ("postgres", "mysql") else HTTP_CLIENT_FRAMES) + java_frames(
            voice.package, voice.word, rng
        )
        trace = java_trace(JAVA_EXCEPTIONS[mode], frames)
    return voice.event(moment, "ERROR", message, "client", rng, trace=trace)


def _slow(voice: Voice, world: World, callee: str, moment: datetime, rng: Random, named: bool, ms: int) -> Event:
    if voice.family == "go":
        fields: tuple[tuple[str, Value], ...] = ((("upstream", callee),) if named else ()) + (("duration", f"{ms}ms"),)
        return voice.event(
            moment, "WARN", "slow upstream call" if named else "slow request", "client", rng, fields=fields
        )
    text = f"Slow call to {url_of(world.graph, callee, rng)}: {ms} ms" if named else f"Slow request: {ms} ms"
    return voice.event(moment, "WARN", text, "client", rng)


def _breaker(voice: Voice, world: World, callee: str, rng: Random) -> list[Event]:
    """resilience4j: the breaker opens when half the calls fail, lets a few calls through a minute
    later (half-open), and closes again once they succeed."""
    effect, timeline = world.effects[voice.name], world.timeline
    events, state, tick = [], "CLOSED", 0
    while tick < timeline.ticks:
        failing = effect.errors[tick] > 0.5
        following = {
            "CLOSED": "OPEN" if failing else "",
            "OPEN": "HALF_OPEN",
            "HALF_OPEN": "OPEN" if failing else "CLOSED",
        }[state]
        if following:
            moment = timeline.at(tick) + timedelta(seconds=rng.uniform(0, timeline.step))
            text = f"CircuitBreaker '{callee}' changed state from {state} to {following}"
            events.append(voice.event(moment, "WARN", text, "breaker", rng))
            state = following
        tick += max(1, 60 // timeline.step) if state == "OPEN" else 1
    return events
