"""One engine call, timed, recorded as an agent_step, with its failure classified.

Invariant: every call is one agent_step whose status says how it ended
(completed, invalid_output, or the failure class) with the error in plain words
and, for a reply that could not be used, the raw reply (truncated; the pipeline
masks it before storing). A role's JSON document is read strictly
(`evcli.agents.jsonparse`) and checked against its contract; a reply that fails
either gets exactly one repair request, then the stage ends INVALID_OUTPUT.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evcli.agents.engine import Engine, EngineError, EngineReply, Repair, RoleRequest
from evcli.agents.jsonparse import InvalidOutput, parse_json_object
from evcli.contracts import AgentStep

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

COMPLETED = "COMPLETED"
RETRYABLE_FAILED = "RETRYABLE_FAILED"
INVALID_OUTPUT = "INVALID_OUTPUT"
NON_RETRYABLE_FAILED = "NON_RETRYABLE_FAILED"

StepRecorder = Callable[[AgentStep], None]
Reader = Callable[[EngineReply], dict[str, Any]]  # the role's document, or InvalidOutput saying what is wrong
RAW_REPLY_LIMIT = 2000  # characters of an unusable reply kept for `trace`


@dataclass
class StageResult:
    status: str
    output: dict[str, Any] | None = None
    raw_text: str | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)  # named findings about the run (e.g. no tool was called)

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


def call_engine(
    engine: Engine, request: RoleRequest, steps: StepCounter, read: Reader | None = None
) -> EngineReply | StageResult:
    """A reply with tool calls as it is; a text reply read by `read` into a COMPLETED or INVALID_OUTPUT
    StageResult (the bare reply without `read`); a failed StageResult otherwise. Unknown errors fail closed."""
    started = time.perf_counter()
    steps.index += 1
    step = functools.partial(
        AgentStep,
        agent=request.role,
        round=steps.round,
        step_index=steps.index,
        model=engine.name,
        model_input_summary=_summary(
            {"payload": request.payload, "tool_results": len(request.transcript), "repair": request.repair is not None}
        ),
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
    done = functools.partial(
        step,
        has_tool_call=bool(reply.tool_calls),
        duration_ms=_ms(started),
        prompt_tokens=reply.usage.prompt_tokens,
        completion_tokens=reply.usage.completion_tokens,
        cached_tokens=reply.usage.cached_tokens,
    )
    if reply.tool_calls or read is None:
        calls = [{"tool": c.name, "arguments": c.arguments} for c in reply.tool_calls]
        steps.record(done(model_output_summary=_summary(calls or reply.text), status="completed"))
        return reply
    try:
        document = read(reply)
    except InvalidOutput as exc:
        raw = _summary(reply.text, RAW_REPLY_LIMIT)
        steps.record(done(model_output_summary=raw, status=INVALID_OUTPUT, error=str(exc)))
        return StageResult(INVALID_OUTPUT, raw_text=reply.text, error=str(exc))
    steps.record(done(model_output_summary=_summary(reply.text), status="completed"))
    return StageResult(COMPLETED, output=document, raw_text=reply.text)


def with_repair(engine: Engine, request: RoleRequest, steps: StepCounter, read: Reader) -> EngineReply | StageResult:
    """`call_engine`; an invalid reply is sent back once with what was wrong, and the second answer stands."""
    result = call_engine(engine, request, steps, read)
    if isinstance(result, StageResult) and result.status == INVALID_OUTPUT and request.repair is None:
        repair = Repair(reply=result.raw_text or "", problem=result.error or "it could not be read")
        return call_engine(engine, replace(request, repair=repair), steps, read)
    return result


def document_reader(contract: type[BaseModel], check: Callable[[Any], list[str]] | None = None) -> Reader:
    """Reads a reply as one JSON document of `contract` (a pydantic model), then `check`'s problems, if any."""

    def read(reply: EngineReply) -> dict[str, Any]:
        from pydantic import ValidationError

        try:
            document = contract.model_validate(parse_json_object(reply.text))
        except ValidationError as exc:
            raise InvalidOutput(plain_errors(exc)) from None
        problems = check(document) if check else []
        if problems:
            raise InvalidOutput("; ".join(problems))
        return document.model_dump()

    return read


def run_json_stage(
    engine: Engine,
    request: RoleRequest,
    steps: StepCounter,
    contract: type[BaseModel],
    check: Callable[[Any], list[str]] | None = None,
) -> StageResult:
    """One call whose answer must be a JSON document of `contract`, with one repair request."""
    result = with_repair(engine, request, steps, document_reader(contract, check))
    if isinstance(result, StageResult):
        return result
    # a role offered no tools answered with tool calls only
    return StageResult(INVALID_OUTPUT, raw_text=result.text, error="the reply called a tool instead of answering")


def plain_errors(exc: ValidationError, limit: int = 3) -> str:
    """A pydantic error as plain words: which field, what was wrong, what was given."""
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(part) for part in error["loc"]) or "the document"
        if error["type"] == "missing":
            parts.append(f"field {where} is missing")
        else:
            given = _summary(error.get("input"), 60)
            parts.append(f"field {where}: {error['msg'][0].lower()}{error['msg'][1:]} (got {given})")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
