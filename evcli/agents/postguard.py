"""The Composer's post-guard: deterministic checks on the answer before anyone reads it.

The answer may not overstate (phrases from rules.toml), may not carry a number
or an identifier that the allowed material does not contain, and may cite only
the citation numbers it was given, and may name a destructive command (DROP
TABLE, rm -rf, …; evcli.agents.actions) only on a line flagged for human review.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from evcli.agents.actions import REVIEW_LABEL, unflagged
from evcli.gatekeeper.excerpt import normalize

# "[3]" is a citation; "kubelet[2201]" (a PID glued to a word) is quoted evidence text.
_CITATION = re.compile(r"(?<!\w)\[(\d+)\]")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*")
# identifiers: tokens with an inner - _ . : / between alphanumerics, or letters and digits mixed
_HYPHENATED_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)+")  # letters only: prose unless the session names it
_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[-_.:/][A-Za-z0-9]+)+|[A-Za-z]+\d[A-Za-z0-9]*")


def _answer_text(output: dict[str, Any]) -> str:
    parts = [str(output.get("answer_summary") or ""), str(output.get("user_facing_answer") or "")]
    for action in output.get("recommended_actions") or []:
        if isinstance(action, dict):
            parts += [str(action.get("action_text") or ""), str(action.get("reason") or "")]
    return "\n".join(parts)


QUOTE_MARGIN = 12  # characters of material beyond a phrase that make its occurrence a quotation


def stated(normalized_text: str, phrases: Iterable[str], corpus: str) -> list[str]:
    """The phrases the answer states in its own words (both normalized): an occurrence inside text
    quoted from the material (a cited log line "File does not exist: …", a runbook sentence) is the
    evidence's wording, not the answer's claim."""
    found = []
    for phrase in phrases:
        wanted = normalize(phrase)
        start = normalized_text.find(wanted)
        while start != -1 and _quoted(normalized_text, start, start + len(wanted), corpus):
            start = normalized_text.find(wanted, start + 1)
        if start != -1:
            found.append(phrase)
    return found


def _quoted(text: str, start: int, end: int, corpus: str) -> bool:
    """Whether the span, grown over the text around it that the material holds too, reaches past it."""
    if not corpus or text[start:end] not in corpus:
        return False
    left, right = start, end
    while left > 0 and text[left - 1 : right] in corpus:
        left -= 1
    while right < len(text) and text[left : right + 1] in corpus:
        right += 1
    return (right - left) - (end - start) >= QUOTE_MARGIN


def check_answer(
    output: dict[str, Any],
    *,
    material: Iterable[str],
    citations: set[int],
    phrases: Iterable[str],
    is_entity: Callable[[str], bool] = lambda _: True,
) -> list[str]:
    """Every violation, as a short reason; empty when the answer may be shown. `is_entity`: whether a
    hyphenated word (order-service, re-creating) names something of the session — a service, a word of
    its evidence; one that does not is prose ("re-creating the pod") and need not be in the material."""
    text = _answer_text(output)
    normalized_text = normalize(text)
    corpus = normalize("\n".join(material))
    violations = [f"overstatement: {phrase!r}" for phrase in stated(normalized_text, phrases, corpus)]

    cited = {int(number) for number in _CITATION.findall(text)}
    quoted = {number for number in cited if f"[{number}]" in corpus}  # the evidence itself holds "[n]"
    violations += [f"citation [{number}] is not an allowed claim" for number in sorted(cited - citations - quoted)]

    without_citations = _CITATION.sub(" ", text)
    for identifier in sorted(set(_IDENTIFIER.findall(without_citations))):
        name = normalize(identifier)
        if name in corpus or (_HYPHENATED_WORD.fullmatch(identifier) and not is_entity(name)):
            continue
        violations.append(f"entity {identifier!r} is not in the allowed material")
    for number in sorted(set(_NUMBER.findall(_IDENTIFIER.sub(" ", without_citations)))):
        if number not in corpus:
            violations.append(f"number {number} is not in the allowed material")
    violations += [
        f"destructive command ({name}) not flagged '{REVIEW_LABEL['en']}'" for name in sorted(set(unflagged(text)))
    ]
    return violations
