"""Composer: phrases the allowed material, adds nothing; its answer must pass the post-guard.

The Composer is asked at most twice, with identical input. An answer the
post-guard refuses counts as invalid output; a non-retryable failure is not
retried. Every attempt is handed to `record` (the pipeline stores it).

Whatever writes the answer (a model, the offline engine, a fallback), it ends with one
"asked …; searched …" line per scope finding of the gate, in the question's language
(`scope_statement`), appended after the post-guard so no guard can strip it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
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
from evcli.contracts import ComposerOutput, GateResult

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


_RANGE = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?([+-]\d{2}:\d{2}|Z)$")


def _readable(text: str) -> str:
    """A TimeRange text `2026-03-18T09:14:00+01:00..2026-03-18T09:27:00+01:00` as
    `2026-03-18 09:14–09:27 (+01:00)`; every other text (and every range part) unchanged."""
    parts = []
    for part in text.split("; "):
        start, separator, end = part.partition("..")
        first, last = _RANGE.match(start), _RANGE.match(end)
        if not separator or first is None or last is None:
            parts.append(part)
        elif first.group(1) == last.group(1) and first.group(3) == last.group(3):
            parts.append(f"{first.group(1)} {first.group(2)}–{last.group(2)} ({first.group(3)})")
        else:
            parts.append(
                f"{first.group(1)} {first.group(2)} ({first.group(3)})–{last.group(1)} {last.group(2)} ({last.group(3)})"
            )
    return "; ".join(parts)


def scope_statement(language: str, gate_result: GateResult | None) -> list[str]:
    """One line per scope finding (errors and warnings with `asked`/`searched`), in the
    question's language: what the question asked, and what the session searched."""
    from evcli.messages import catalogue

    if gate_result is None:
        return []
    words = catalogue(language)
    return [
        words("scope.asked_searched", asked=_readable(finding.asked), searched=_readable(finding.searched or ""))
        for finding in [*gate_result.errors, *gate_result.warnings]
        if finding.rule.startswith("scope.") and finding.asked
    ]


def with_statement(answer: dict[str, Any], statement: Sequence[str]) -> dict[str, Any]:
    """The answer with the scope lines appended to its user-facing text (a copy; unchanged without lines)."""
    if not statement:
        return answer
    text = str(answer.get("user_facing_answer") or "").rstrip()
    return {**answer, "user_facing_answer": "\n\n".join(part for part in (text, "\n".join(statement)) if part)}


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
    statement: Sequence[str] = (),
    is_entity: Callable[[str], bool] = lambda _: True,
) -> dict[str, Any] | None:
    """The first answer the post-guard lets through, with `statement` (the scope lines)
    appended after the guard, or None (the caller falls back)."""
    citations = {claim.citation for claim in claims}
    violations: list[str] = []
    for attempt in range(1, ATTEMPTS + 1):
        progress("composer …" if attempt == 1 else "composer retry …")
        # a retry says why the last answer was refused, so the model can write one the guard lets through
        asked = {**payload, "retry_reason": violations} if violations else payload
        result = run_composer(engine, asked, steps)
        violations = []
        if result.ok and result.output is not None:
            violations = check_answer(
                result.output, material=material, citations=citations, phrases=phrases, is_entity=is_entity
            )
            if not violations:
                answer = with_statement(result.output, statement)
                record(replace(result, output=answer) if statement else result, [])
                return answer
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
