"""Planner: pick a diagnosis skill and write the steps. No scope contract, no facts."""

from __future__ import annotations

from typing import Any

from evcli.agents.calls import StageResult, StepCounter, run_json_stage
from evcli.agents.engine import Engine, RoleRequest
from evcli.agents.prompts import load_prompt
from evcli.contracts import PlannerPlan


def run_planner(engine: Engine, payload: dict[str, Any], steps: StepCounter) -> StageResult:
    request = RoleRequest(
        role="planner", prompt=load_prompt("planner"), payload=payload, response_schema=PlannerPlan.model_json_schema()
    )
    return run_json_stage(engine, request, steps, PlannerPlan)
