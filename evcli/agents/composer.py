"""Composer: phrases the allowed material, adds nothing; its answer must pass the post-guard."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from evcli.agents.calls import COMPLETED, INVALID_OUTPUT, StageResult, StepCounter, call_engine
from evcli.agents.engine import Engine, RoleRequest
from evcli.agents.jsonparse import InvalidOutput, parse_json_object
from evcli.agents.prompts import load_prompt
from evcli.contracts import ComposerOutput


def run_composer(engine: Engine, payload: dict[str, Any], steps: StepCounter) -> StageResult:
    request = RoleRequest(
        role="composer", prompt=load_prompt("composer"), payload=payload, response_schema=ComposerOutput.model_json_schema()
    )
    reply, failure = call_engine(engine, request, steps)
    if failure:
        return failure
    try:
        output = ComposerOutput.model_validate(parse_json_object(reply.text))
    except (InvalidOutput, ValidationError) as exc:
        return StageResult(INVALID_OUTPUT, raw_text=reply.text, error=str(exc).splitlines()[0])
    return StageResult(COMPLETED, output=output.model_dump(), raw_text=reply.text)
