"""Composer: phrases the allowed material, adds nothing; its answer must pass the post-guard.

The Composer is asked at most twice, with identical input. An answer the
post-guard refuses counts as invalid output; a non-retryable failure is not
retried. Every attempt is handed to `record` (the pipeline stores it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from evcli.agents.calls import (
    INVALID_OUTPUT,
    NON_RETRYABLE_FAILED,
    StageResult,
    StepCounter,
    run_json_stage,
)
from evcli.agents.engine import Engine, RoleRequest
from evcli.agents.postguard import check_answer
from evcli.agents.projection import AllowedClaim
from evcli.agents.prompts import load_prompt
from evcli.contracts import ComposerOutput

ATTEMPTS = 2
Record = Callable[[StageResult, list[str]], None]


def run_composer(engine: Engine, payload: dict[str, Any], steps: StepCounter) -> StageResult:
    request = RoleRequest(
        role="composer",
        prompt=load_prompt("composer"),
        payload=payload,
        response_schema=ComposerOutput.model_json_schema(),
    )
    return run_json_stage(engine, request, steps, ComposerOutput)


def answer_material(question: str, claims: list[AllowedClaim], *other: Iterable[Any]) -> list[str]:
    """Everything the answer may take a number or a name from."""
    material = [question, *(str(item) for items in other for item in items)]
    for claim in claims:
        material.append(claim.claim_text)
        material += [e.text or "" for e in claim.evidence]
    return material


def compose_guarded(
    engine: Engine,
    payload: dict[str, Any],
    steps: StepCounter,
    *,
    claims: list[AllowedClaim],
    material: list[str],
    phrases: Iterable[str],
    record: Record,
    progress: Callable[[str], None],
) -> dict[str, Any] | None:
    """The first answer the post-guard lets through, or None (the caller falls back)."""
    citations = {claim.citation for claim in claims}
    for attempt in range(1, ATTEMPTS + 1):
        progress("composer …" if attempt == 1 else "composer retry …")
        result = run_composer(engine, payload, steps)
        violations: list[str] = []
        if result.ok and result.output is not None:
            violations = check_answer(result.output, material=material, citations=citations, phrases=phrases)
            if not violations:
                record(result, [])
                return result.output
            result = StageResult(
                INVALID_OUTPUT,
                output=result.output,
                raw_text=result.raw_text,
                error="post-guard: " + "; ".join(violations),
            )
        record(result, violations)
        if result.status == NON_RETRYABLE_FAILED:
            break
    return None
