"""Executor: a tool-calling loop that ends in an executor_evidence_v2 document.

Tool results reach the model only as the invocation id plus its evidence refs
(`evcli.tools.view.model_view`). The Executor is never technically retried: a
failure is returned as such, an unparseable final document gets the one repair
request every role gets, and the run goes on as low confidence. A model that
answers without ever calling a tool gathered no evidence: the stage result notes
`NO_TOOL_CALL` and the document's missing_info says so. The calls of one reply
run side by side (`evcli.tools.batch`) and go back, in the order asked, as one
assistant message with the reply's text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from evcli.agents.calls import COMPLETED, INVALID_OUTPUT, StageResult, StepCounter, with_repair
from evcli.agents.engine import CHECK_CLAIMS, Engine, EngineReply, RoleRequest, ToolCall, Turn
from evcli.agents.jsonparse import parse_json_object
from evcli.agents.prompts import load_prompt
from evcli.contracts import ExecutorEvidenceV2

if TYPE_CHECKING:
    from evcli.tools.registry import ToolSpec

NO_TOOL_CALL = "no_tool_call"


# The Gatekeeper offered as a tool: draft claims in, its findings per claim out; no evidence, no side effect.
CHECK_CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": CHECK_CLAIMS,
        "description": (
            "Check draft claims with the Gatekeeper before answering: for each claim, whether its bindings and "
            "facts pass and, if not, the rule and why. Changes nothing and is not evidence."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "claims": {
                    "type": "array",
                    "items": {"type": "object"},
                    "description": "Draft claims as in the answer: claim_id, claim_type, claim_text, evidence_bindings.",
                }
            },
            "required": ["claims"],
            "additionalProperties": False,
        },
    },
}


def tool_schemas() -> tuple[dict[str, Any], ...]:
    """The function-calling schema of every registered tool (name, description, parameters), in registry order,
    then check_claims."""
    from evcli.tools import registry

    return (*(_schema(spec) for spec in registry.specs()), CHECK_CLAIMS_SCHEMA)


@lru_cache(maxsize=32)
def _schema(spec: ToolSpec) -> dict[str, Any]:
    parameters = spec.params.model_json_schema()
    parameters.pop("title", None)
    for name, schema in parameters.get("properties", {}).items():
        schema.pop("title", None)  # the name says as much; the description says what it takes
        described = spec.parameter_help(name)
        if described:
            schema["description"] = described
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": parameters},
    }


def run_executor(
    engine: Engine,
    payload: dict[str, Any],
    steps: StepCounter,
    run_calls: Callable[[list[ToolCall]], list[Turn]],
    *,
    max_steps: int,
) -> StageResult:
    """`run_calls` runs the tool calls of one reply (side by side, `evcli.tools.batch`) and returns one turn
    per call, in the order asked; they go back to the model as one assistant message with the reply's text."""
    prompt = load_prompt("executor")
    transcript: list[Turn] = []
    for step in range(1, max_steps + 1):
        last = step == max_steps
        request = RoleRequest(
            role="executor",
            prompt=prompt,
            # On the last step no tool may be called: the model must answer with its document.
            payload=payload,
            tools=list(tool_schemas()),
            last_step=last,
            transcript=list(transcript),
            response_schema=ExecutorEvidenceV2.model_json_schema(),
        )
        reply = with_repair(engine, request, steps, _read_document)
        if isinstance(reply, StageResult):
            # an evidence retry round may rightly call nothing: round 1's evidence stands
            answered = reply.status in (COMPLETED, INVALID_OUTPUT) and not payload.get("retry_context")
            return _no_tool_call(reply, payload) if answered and not transcript else reply
        if reply.tool_calls:
            if last:
                return StageResult(
                    INVALID_OUTPUT, raw_text=reply.text, error=f"still calling tools after {max_steps} steps"
                )
            transcript.extend(
                replace(turn, reply=step, text=reply.text if index == 0 else "")
                for index, turn in enumerate(run_calls(reply.tool_calls))
            )
    raise AssertionError("unreachable: the last step always returns")


def _read_document(reply: EngineReply) -> dict[str, Any]:
    return parse_json_object(reply.text)


def _no_tool_call(result: StageResult, payload: dict[str, Any]) -> StageResult:
    """The result of a model that answered without calling any tool: noted, and said in missing_info."""
    from evcli.messages import catalogue

    if result.output is not None:
        missing = list(result.output.get("missing_info") or [])
        note = catalogue(str(payload.get("language") or "en"))("executor.no_tool_call")
        result = replace(result, output={**result.output, "missing_info": [*missing, note]})
    return replace(result, notes=[*result.notes, NO_TOOL_CALL])
