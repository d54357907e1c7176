"""Composer: phrases the allowed material, adds nothing; its answer must pass the post-guard."""

from __future__ import annotations

from typing import Any

from evcli.agents.calls import StageResult, StepCounter, run_json_stage
from evcli.agents.engine import Engine, RoleRequest
from evcli.agents.prompts import load_prompt
from evcli.contracts import ComposerOutput


def run_composer(engine: Engine, payload: dict[str, Any], steps: StepCounter) -> StageResult:
    request = RoleRequest(
        role="composer", prompt=load_prompt("composer"), payload=payload, response_schema=ComposerOutput.model_json_schema()
    )
    return run_json_stage(engine, request, steps, ComposerOutput)
