"""The stage graph (DESIGN §7), as one table: order, model role, what each stage reads and writes.

Everything that needs the order reads it from here: the pipeline's run loop,
replay (which stages must be stored, which roles run again, what is copied,
which stages run once because their chain run would re-run a reused stage),
and the CLI's `replay --from` choices. This module imports nothing, so the CLI
can read it at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    name: str  # also the Pipeline method that runs it once (`evcli verify`)
    role: str | None  # the model role it runs; None for the Gatekeeper (code only)
    reads: tuple[str, ...]  # the stages whose stored outputs it needs
    writes: tuple[str, ...]  # the session document fields it adds to
    run: str  # the Pipeline method that runs it in a whole chain
    reruns: tuple[str, ...] = ()  # earlier stages `run` may run again; a replay that reuses them runs `name`


STAGES: tuple[Stage, ...] = (
    Stage("plan", "planner", (), ("stage_outputs",), "plan"),
    Stage("execute", "executor", ("plan",), ("stage_outputs", "invocations"), "execute"),
    # in a chain, a model Executor's draft the gate REJECTs gets one repair round (execute and gate again)
    Stage("gate", None, ("execute",), ("gate_results",), "gate_with_repair", reruns=("execute",)),
    # in a chain, a LOW_CONFID verdict with critical gaps gets one evidence retry (execute, gate, verify again)
    Stage(
        "verify",
        "verifier",
        ("execute", "gate"),
        ("stage_outputs",),
        "verify_with_evidence_retry",
        reruns=("execute", "gate"),
    ),
    Stage("compose", "composer", ("execute", "gate", "verify"), ("stage_outputs",), "compose"),
)
STAGE_NAMES = tuple(stage.name for stage in STAGES)
# A replay starts at any stage that has inputs; starting at the first stage is a new question.
REPLAYABLE = tuple(stage.name for stage in STAGES if stage.reads)


def stage(name: str) -> Stage:
    return STAGES[STAGE_NAMES.index(name)]


def stages_from(name: str) -> tuple[Stage, ...]:
    return STAGES[STAGE_NAMES.index(name) :]


def upstream(name: str) -> tuple[Stage, ...]:
    """Every stage `name` depends on, directly or not, in table order."""
    needed: set[str] = set()
    pending = list(stage(name).reads)
    while pending:
        current = pending.pop()
        if current not in needed:
            needed.add(current)
            pending += stage(current).reads
    return tuple(s for s in STAGES if s.name in needed)
