"""One engine call, timed, recorded as an agent_step, with its failure classified."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from evcli.agents.engine import Engine, EngineError, EngineReply, RoleRequest
from evcli.contracts import AgentStep

COMPLETED = "COMPLETED"
RETRYABLE_FAILED = "RETRYABLE_FAILED"
INVALID_OUTPUT = "INVALID_OUTPUT"
NON_RETRYABLE_FAILED = "NON_RETRYABLE_FAILED"

StepRecorder = Callable[[AgentStep], None]


@dataclass
class StageResult:
    status: str
    output: dict[str, Any] | None = None
    raw_text: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == COMPLETED


class StepCounter:
    """Numbers the agent steps of one session round by round."""

    def __init__(self, record: StepRecorder, round: int = 1) -> None:
        self.record = record
        self.round = round
        self.index = 0


def _summary(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def call_engine(engine: Engine, request: RoleRequest, steps: StepCounter) -> EngineReply | StageResult:
    """The reply on success; a failed StageResult otherwise. Unknown errors fail closed."""
    started = time.perf_counter()
    steps.index += 1
    step = functools.partial(
        AgentStep,
        agent=request.role,
        round=steps.round,
        step_index=steps.index,
        model=engine.name,
        model_input_summary=_summary({"payload": request.payload, "tool_results": len(request.transcript)}),
        created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    )
    try:
        reply = engine.complete(request)
    except EngineError as exc:
        status = RETRYABLE_FAILED if exc.retryable else NON_RETRYABLE_FAILED
        steps.record(step(status=status, error=exc.message, duration_ms=_ms(started)))
        return StageResult(status, error=exc.message)
    except Exception as exc:  # noqa: BLE001 - an engine bug must not crash the run: fail closed
        message = f"{type(exc).__name__}: {exc}"
        steps.record(step(status=NON_RETRYABLE_FAILED, error=message, duration_ms=_ms(started)))
        return StageResult(NON_RETRYABLE_FAILED, error=message)
    steps.record(
        step(
            model_output_summary=_summary(
                reply.text
                if not reply.tool_calls
                else [{"tool": c.name, "arguments": c.arguments} for c in reply.tool_calls]
            ),
            has_tool_call=bool(reply.tool_calls),
            duration_ms=_ms(started),
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
            status="completed",
        )
    )
    return reply


def run_json_stage(engine: Engine, request: RoleRequest, steps: StepCounter, contract) -> StageResult:
    """One call whose answer must be a JSON document of `contract` (a pydantic model)."""
    from pydantic import ValidationError

    from evcli.agents.jsonparse import InvalidOutput, parse_json_object

    reply = call_engine(engine, request, steps)
    if isinstance(reply, StageResult):
        return reply
    try:
        document = contract.model_validate(parse_json_object(reply.text))
    except (InvalidOutput, ValidationError) as exc:
        return StageResult(INVALID_OUTPUT, raw_text=reply.text, error=str(exc).splitlines()[0])
    return StageResult(COMPLETED, output=document.model_dump(), raw_text=reply.text)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
