"""A seeded generator of realistic microservice incidents with known root causes.

`generate(seed, directory)` writes one snapshot directory in the format evcli reads (env.toml,
metrics/*.csv, logs/*, and traces/ for about 60% of the incidents; no alerts, no runbooks) and
returns its `Incident`: the truth, which is never written inside the directory, with its questions
(and, with traces, its trace questions and their expected answers). The same seed gives
byte-identical files in any process. `split_of` assigns each seed to "tune" or "holdout" (about a quarter) by a hash, so a suite keeps
its split however it grows; `write` generates a suite beside its truth.json.

Modules: `graph` (the call graph), `faults` (kinds and how effects spread), `signals` (metric
series), `metrics` (exporter styles, CSV), `logs` (formats), `chatter`, `symptoms` and `access`
(what services log), `spans` (sampled requests and what they show), `spanfiles` (trace formats),
`questions`, `world` (every random choice), `directory` (writing).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evcli.evals.incidents.directory import write_snapshot
from evcli.evals.incidents.faults import FAULT_KINDS, SYMPTOM
from evcli.evals.incidents.questions import Question, TraceQuestion, ask, ask_traces
from evcli.evals.incidents.spans import Traces, traces_of
from evcli.evals.incidents.world import World, plan, stream

__all__ = [
    "FAULT_KINDS",
    "Incident",
    "Question",
    "TraceQuestion",
    "generate",
    "incident",
    "split_of",
    "suite",
    "to_json",
    "write",
]

HOLDOUT_PERCENT = 25
TRUTH_FILE = "truth.json"


@dataclass(frozen=True)
class Incident:
    id: str  # f"inc-{seed:04d}"
    seed: int
    root_cause: str  # the faulty service's name (as it appears in file names / env.toml)
    fault_kind: str  # one of FAULT_KINDS
    onset: datetime  # aware, UTC: when the fault began
    timezone: str  # IANA name written to env.toml
    services: tuple[str, ...]
    entry: str  # the user-facing service (gateway/frontend)
    topology_declared: bool  # whether env.toml carries [topology]
    aliases: dict[str, tuple[str, ...]]  # service → the other names env.toml gives it
    questions: tuple[Question, ...]
    traces: str | None  # the format of traces/ (otlp, jaeger, zipkin, csv); None: the snapshot has none
    trace_questions: tuple[TraceQuestion, ...]  # asked only of an incident with traces


def incident(seed: int) -> Incident:
    """The truth of an incident, without writing it."""
    world = plan(seed)
    return _incident(world, traces_of(world))


def _incident(world: World, traces: Traces | None) -> Incident:
    return Incident(
        id=f"inc-{world.seed:04d}",
        seed=world.seed,
        root_cause=world.fault.root,
        fault_kind=world.fault.kind,
        onset=world.onset,
        timezone=world.timezone,
        services=tuple(sorted(world.graph.names())),
        entry=world.entry,
        topology_declared=world.topology_declared,
        aliases=world.aliases,
        questions=ask(stream(world, "questions"), world.entry, world.onset, world.timezone, SYMPTOM[world.fault.kind]),
        traces=traces.setup.format if traces else None,
        trace_questions=_trace_questions(world, traces) if traces else (),
    )


def _trace_questions(world: World, traces: Traces) -> tuple[TraceQuestion, ...]:
    facts = traces.facts
    origins = {"slow_origin": facts.slow_origin, "error_origin": facts.error_origin}
    agreed = {  # who calls a service is asked where the spans show every caller the graph has
        name: found
        for name, found in facts.callers.items()
        if world.graph.callers(name) and set(found) == set(world.graph.callers(name))
    }
    return ask_traces(stream(world, "trace-questions"), world.entry, origins, agreed)


def generate(seed: int, directory: Path) -> Incident:
    """Write the snapshot of incident `seed` into `directory` (created; it must not hold files)."""
    world = plan(seed)
    traces = traces_of(world)
    write_snapshot(world, Path(directory), traces)
    return _incident(world, traces)


def split_of(seed: int) -> str:
    digest = hashlib.sha256(f"evcli-incidents-split:{seed}".encode()).digest()
    return "holdout" if int.from_bytes(digest[:8], "big") % 100 < HOLDOUT_PERCENT else "tune"


def suite(count: int, first_seed: int = 1, split: str | None = None) -> list[int]:
    return [seed for seed in range(first_seed, first_seed + count) if split is None or split_of(seed) == split]


def to_json(incident: Incident) -> dict[str, Any]:
    record = asdict(incident)
    record["onset"] = incident.onset.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return record


def write(out: Path, seeds: Iterable[int]) -> list[Incident]:
    """out/inc-XXXX/ per seed, and out/truth.json (the list of incidents) beside them."""
    out = Path(out)
    incidents = [generate(seed, out / f"inc-{seed:04d}") for seed in seeds]
    truth = json.dumps([to_json(item) for item in incidents], ensure_ascii=False, indent=2, sort_keys=True)
    (out / TRUTH_FILE).write_text(truth + "\n", encoding="utf-8")
    return incidents
