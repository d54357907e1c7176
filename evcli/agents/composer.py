"""Composer: phrases the allowed material, adds nothing; its answer must pass the post-guard.

The Composer is asked at most twice, with identical input. An answer the
post-guard refuses counts as invalid output; a non-retryable failure is not
retried. Every attempt is handed to `record` (the pipeline stores it).

An answer opens with a short diagnosis (`diagnosis_section`: what is wrong, the likely
cause as a hypothesis, the chain from it to the symptoms), then the findings, then the
next steps. The offline Composer and the composer fallback write it from the allowed claims
alone, each fact with its citation marker; the model Composer's prompt asks for the same.

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
from evcli.agents.projection import AllowedClaim, ChainStep, diagnosis_outline
from evcli.agents.prompts import load_prompt
from evcli.contracts import ComposerOutput, GateResult
from evcli.messages import Catalogue, catalogue, catalogues

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
    if gate_result is None:
        return []
    words = catalogue(language)
    return [
        words("scope.asked_searched", asked=_readable(finding.asked), searched=_readable(finding.searched or ""))
        for finding in [*gate_result.errors, *gate_result.warnings]
        if finding.rule.startswith("scope.") and finding.asked
    ]


def diagnosis_section(language: str, claims: list[AllowedClaim]) -> list[str]:
    """The lines an answer opens with, a heading and its items, in the question's language: what is
    wrong, the likely cause stated as a hypothesis, the chain from it to the symptoms, the other
    hypotheses; every fact with its citation marker (evcli.agents.projection.diagnosis_outline chooses
    the claims). [] when the claims hold nothing to diagnose."""
    outline = diagnosis_outline(claims)
    if outline is None:
        return []
    words = catalogue(language)
    items = []
    if outline.wrong:
        symptoms = [f"{_sentence(claim.claim_text)} {_markers([claim.citation])}" for claim in outline.wrong]
        items.append(words("compose.diagnosis.wrong", items=words("compose.diagnosis.separator").join(symptoms)))
    if outline.cause is None:
        items.append(words("compose.diagnosis.no_cause"))
    else:
        cause = outline.cause
        items.append(
            words("compose.diagnosis.cause", text=_hypothesis(cause.claim_text), marker=_markers([cause.citation]))
        )
        steps = _chain_steps(outline.chain, words)
        if len(steps) > 1:  # one service and nothing seen on it is no chain
            items.append(words("compose.diagnosis.chain", steps=words("compose.diagnosis.arrow").join(steps)))
    if outline.others:
        others = [
            f"{claim.services[0] if claim.services else _hypothesis(claim.claim_text)} {_markers([claim.citation])}"
            for claim in outline.others
        ]
        items.append(words("compose.diagnosis.others", items=words.join(others)))
    return [words("compose.diagnosis"), *(f"- {item}" for item in items)]


_HYPOTHESIS_LEAD_IN = re.compile(r"^\s*(?:possible cause|可能原因)\s*", re.IGNORECASE)


def item_text(item: Any, *keys: str) -> str:
    """An item of the allowed material as text: a string, or the first of `keys` an object holds."""
    if isinstance(item, dict):
        return str(next((item[key] for key in keys if item.get(key)), "") or "")
    return str(item or "")


def possible_causes(hypotheses: Iterable[Any]) -> list[str]:
    """The allowed hypotheses as items under a heading that already says "possible causes (unconfirmed)":
    each one's own "Possible cause" lead-in is not repeated, only its source."""
    texts = (item_text(hypothesis, "hypothesis", "text", "statement") for hypothesis in hypotheses)
    return [_HYPOTHESIS_LEAD_IN.sub("", text, count=1).strip() for text in texts if text.strip()]


def _chain_steps(chain: list[ChainStep], words: Catalogue) -> list[str]:
    """Each service of the chain with its markers; what is wrong on the last one ends the chain, what is
    wrong on an earlier one is said beside it (it is not downstream of the services after it)."""
    steps = []
    for position, step in enumerate(chain, start=1):
        shown = f"{step.service} {_markers(step.citations)}"
        if step.symptoms and position < len(chain):
            shown = words("compose.diagnosis.step_seen", step=shown, markers=_markers(step.symptoms))
        steps.append(shown)
    if chain and chain[-1].symptoms:
        steps.append(words("compose.diagnosis.symptoms", markers=_markers(chain[-1].symptoms)))
    return steps


def _markers(citations: list[int]) -> str:
    return " ".join(f"[{citation}]" for citation in citations)


def _sentence(text: Any) -> str:
    """A claim's text without its full stop (in any catalogue's script), to be cited inside a sentence."""
    return str(text or "").strip().rstrip("".join(words("sentence_end") for words in catalogues()))


def _hypothesis(text: Any) -> str:
    """A root_cause claim's text without the lead-in that already calls it a likely root cause (any
    catalogue's `diagnosis.suspect`): the cause line says so itself."""
    stated = str(text or "").strip()
    for words in catalogues():
        lead_in = words.messages["diagnosis.suspect"].partition("{excerpt}")[0]
        if lead_in and stated.startswith(lead_in):
            stated = stated[len(lead_in) :]
            break
    return _sentence(stated)


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
