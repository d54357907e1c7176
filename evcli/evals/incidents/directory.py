"""Write a planned incident as a snapshot directory: env.toml, metrics/*.csv, logs/*, and traces/
when the incident has spans.

Each file draws its noise from its own random stream (named by seed and file), so files do not
depend on the order they are written in. Nothing of the truth (root cause, fault kind, onset) is
written here; `evcli.evals.incidents.write` keeps it in truth.json beside the incident directories.
"""

from __future__ import annotations

from pathlib import Path
from random import Random

from evcli.evals.incidents.access import access_events
from evcli.evals.incidents.chatter import habit_events, normal_events
from evcli.evals.incidents.envfile import env_toml
from evcli.evals.incidents.faults import Effect
from evcli.evals.incidents.logs import file_name, write_log
from evcli.evals.incidents.metrics import timestamps, write_csv
from evcli.evals.incidents.signals import Series, add_blips, instance_series, load, routine_restart, spike
from evcli.evals.incidents.spanfiles import write_traces
from evcli.evals.incidents.spans import Traces
from evcli.evals.incidents.symptoms import fault_events, quiet_ticks
from evcli.evals.incidents.voice import Voice
from evcli.evals.incidents.world import Instance, World, stream


def write_snapshot(world: World, directory: Path, traces: Traces | None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise FileExistsError(f"{directory} is not empty: an incident is written into a new directory")
    (directory / "env.toml").write_text(env_toml(world), encoding="utf-8")
    (directory / "metrics").mkdir()
    (directory / "logs").mkdir()
    shared_load = load(world.timeline, world.timezone, stream(world, "load"))
    stamps = timestamps(world.timeline, world.time_format, world.timezone)
    for instance in world.instances:
        rng = stream(world, "metrics", instance.file)
        consumer = world.graph.service(instance.service).role == "consumer"  # fed by a queue, not by users
        own_load = (
            load(world.timeline, world.timezone, stream(world, "load", instance.service)) if consumer else shared_load
        )
        series = instance_metrics(world, instance, own_load, rng)
        write_csv(directory / "metrics" / f"{instance.file}.csv", series, stamps, world.timeline.step, world.style, rng)
    for name in world.logs:
        _write_service_log(world, name, directory / "logs")
    if traces is not None:
        write_traces(world, traces.setup, traces.hops, directory)


def instance_metrics(world: World, instance: Instance, load: list[float], rng: Random) -> Series:
    root, service = world.fault.root, instance.service
    effect: Effect | None = None  # a healthy pod of the root serves normally
    if instance.faulty:
        effect = world.own.effect
    elif service != root:
        effect = world.effects.get(service)
    series = instance_series(
        world.profiles[service], instance.share, load, effect, world.own if instance.faulty else None, rng
    )
    if service != root:
        add_blips(series, rng, world.profiles[service].noise)
    trap = world.traps.spike
    if trap and trap.service == service:
        spike(series, trap.metric, trap.start, trap.length, trap.factor)
    restart = world.traps.routine_restart
    if restart and restart[0] == service:
        series = routine_restart(series, restart[1], restart[2])
    return series


def _write_service_log(world: World, name: str, logs: Path) -> None:
    rng = stream(world, "logs", name)
    if name == world.fault.root and world.traps.silent_root and rng.random() < 0.5:
        return  # the root cause writes no log file at all
    voice, quiet, setup = Voice.of(world, name), quiet_ticks(world, name), world.logs[name]
    if voice.family == "proxy":
        events = access_events(voice, world, rng, quiet)
    else:
        events = normal_events(voice, world, rng, quiet) + habit_events(voice, world, rng, quiet)
    events += fault_events(voice, world, rng, quiet)
    start, end = world.timeline.start, world.timeline.end
    inside = [event for event in events if start <= event.time <= end]
    write_log(logs / file_name(name, setup.format, setup.wrapped), inside, setup.format, world.timezone, setup.wrapped)
