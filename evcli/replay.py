"""A replay's first document: a new session seeded with another session's outputs upstream of the stage
it replays from (DESIGN §7). Which stages those are, and what each writes, is `evcli.stages.STAGES`;
the roles that run again take the replaying run's models, the others keep the source's.
"""

from __future__ import annotations

from typing import Any

from evcli.agents.roles import Models
from evcli.contracts import ROLES, ReplayOf, SessionDocument, StageOutput, StoredGateResult
from evcli.core.errors import BadInput
from evcli.core.time import now_iso
from evcli.stages import REPLAYABLE, Stage, stages_from, upstream
from evcli.store.db import new_session_id


def seeded(
    source: SessionDocument, from_stage: str, models: Models, prompt_audit: dict[str, Any]
) -> tuple[SessionDocument, frozenset[str]]:
    """(the new session's document, the names of the stages it reuses); `source` is never changed."""
    if from_stage not in REPLAYABLE:
        raise BadInput(f"--from must be one of {', '.join(REPLAYABLE)}, not {from_stage!r}")
    session_id = source.run.session_id
    kept = upstream(from_stage)
    for stage in kept:
        if not _stored(source, stage):
            raise BadInput(
                f"session {session_id} has no {stage.name} output to replay from", hint="replay from an earlier stage"
            )
    reruns = {step.role for step in stages_from(from_stage)}
    original = Models.from_config(source.run.config)
    chosen: dict[str, Any] = {role: (models if role in reruns else original).for_role(role) for role in ROLES}
    if models.api_base:
        chosen["api_base"] = models.api_base
    config = source.run.config.model_copy(
        update={"models": chosen, "replay_of": ReplayOf.model_validate({"session_id": session_id, "from": from_stage})}
    )
    stamp = now_iso()
    kept_fields = {field for stage in kept for field in stage.writes}
    reused = frozenset(stage.name for stage in kept)
    document = SessionDocument(
        run=source.run.model_copy(
            update={
                "session_id": new_session_id(),
                "status": "running",
                "verdict": None,
                "config": config,
                "self_evaluation": {},
                "annotations": {},
                "created_at": stamp,
                "updated_at": stamp,
                "prompt_audit": prompt_audit,
            }
        ),
        invocations=source.invocations if "invocations" in kept_fields else [],
        stage_outputs=_reused_outputs(source, reused),
        gate_results=_reused_gate(source) if "gate_results" in kept_fields else [],
    )
    return document, reused


def _reused_outputs(source: SessionDocument, stages: frozenset[str]) -> list[StageOutput]:
    """The output of each reused stage that its next stage reads (the latest), not the source's history."""
    latest = (source.latest_stage(name) for name in stages)
    return sorted((output for output in latest if output is not None), key=source.stage_outputs.index)


def _reused_gate(source: SessionDocument) -> list[StoredGateResult]:
    """The gate result the reused executor output was last checked with, as the first of the replay's own
    history (the source's earlier rounds and re-gates stay the source's)."""
    execute = source.latest_stage("execute")
    rounds = [g for g in source.gate_results if execute is None or g.round == execute.round]
    return [rounds[-1].model_copy(update={"seq": 1})] if rounds else []


def _stored(document: SessionDocument, stage: Stage) -> bool:
    """Whether `document` holds what `stage` writes."""
    if "stage_outputs" not in stage.writes:
        return all(getattr(document, field) for field in stage.writes)
    output = document.latest_stage(stage.name)
    return output is not None and output.output is not None
