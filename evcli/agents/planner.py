"""Planner: pick a diagnosis skill and write the steps. No scope contract, no facts."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from evcli.agents.calls import COMPLETED, INVALID_OUTPUT, StageResult, StepCounter, call_engine
from evcli.agents.engine import Engine, RoleRequest
from evcli.agents.jsonparse import InvalidOutput, parse_json_object
from evcli.agents.prompts import load_prompt
from evcli.contracts import PlannerPlan


def run_planner(engine: Engine, payload: dict[str, Any], steps: StepCounter) -> StageResult:
    request = RoleRequest(
        role="planner", prompt=load_prompt("planner"), payload=payload, response_schema=PlannerPlan.model_json_schema()
    )
    reply, failure = call_engine(engine, request, steps)
    if failure:
        return failure
    try:
        plan = PlannerPlan.model_validate(parse_json_object(reply.text))
    except (InvalidOutput, ValidationError) as exc:
        return StageResult(INVALID_OUTPUT, raw_text=reply.text, error=str(exc).splitlines()[0])
    return StageResult(COMPLETED, output=plan.model_dump(), raw_text=reply.text)
