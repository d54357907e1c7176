"""Session-file trust: mutations of the recorded invocations (hand-added, edited, duplicated, failed).

A session file can be edited by hand; these cases forge what the executor cited and
check that the gatekeeper notices from the document alone.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from evcli.contracts import NO_EVIDENCE_PATH, ToolInvocation
from evcli.evals.mutations.base import (
    NUMBER,
    Case,
    Output,
    bindings,
    cited_invocation,
    invocations_by_id,
    number_edits,
    require_details,
    where,
    with_binding,
)
from evcli.gatekeeper.checks import find_ref
from evcli.gatekeeper.provenance import derived_evidence


def _cited(document, output) -> Iterator[tuple[int, int, dict[str, Any], dict[str, Any], ToolInvocation, Any]]:
    """Bindings with the invocation and ref they cite (positive refs only: they carry a fact to forge)."""
    invocations = invocations_by_id(document)
    for ci, bi, claim, binding in bindings(output):
        invocation = cited_invocation(invocations, binding)
        ref = find_ref(invocation, binding.get("raw_path", "")) if invocation else None
        if invocation is not None and ref is not None and ref.raw_path != NO_EVIDENCE_PATH:
            yield ci, bi, claim, binding, invocation, ref


def _forged(invocation: ToolInvocation, raw_path: str, text: str, **changes: Any) -> ToolInvocation:
    """A copy of an invocation whose ref at raw_path says `text`; its recorded output is left alone."""
    details = require_details(invocation)
    refs = [
        ref.model_copy(update={"text": text}) if ref.raw_path == raw_path else ref
        for ref in details.evidence_refs or []
    ]
    return invocation.model_copy(
        update={"retrieval_details": details.model_copy(update={"evidence_refs": refs}), **changes}
    )


_TEXT_FIELDS = ("message", "summary", "text", "metric")


def _forgeable(invocation: ToolInvocation, raw_path: str) -> bool:
    """Whether the item at raw_path has a text field a forged fact can be written into."""
    if "[" not in raw_path:
        return False
    array, index = raw_path.removeprefix("$.").rstrip("]").split("[")
    items = invocation.output.get(array)
    item = items[int(index)] if isinstance(items, list) and int(index) < len(items) else None
    return isinstance(item, dict) and any(isinstance(item.get(k), str) for k in _TEXT_FIELDS)


def _consistent_forgery(invocation: ToolInvocation, raw_path: str, **changes: Any) -> ToolInvocation:
    """A copy whose recorded output item at raw_path states the forged fact, refs re-rendered to match."""
    array, index = raw_path.removeprefix("$.").rstrip("]").split("[")
    output = copy.deepcopy(invocation.output)
    item = output[array][int(index)]
    key = next(k for k in _TEXT_FIELDS if isinstance(item.get(k), str))
    item[key] = f"{item[key]}; {_FORGED_FACT}"
    forged = invocation.model_copy(update={"output": output, **changes})
    status, refs = derived_evidence(forged)
    details = require_details(invocation).model_copy(update={"evidence_status": status, "evidence_refs": refs})
    return forged.model_copy(update={"retrieval_details": details})


def _replaced(document, invocation: ToolInvocation) -> list[ToolInvocation]:
    return [invocation if i.invocation_id == invocation.invocation_id else i for i in document.invocations]


_FORGED_FACT = "database migration 42 failed on order-db"


def _citing_forged_fact(output: Output, ci: int, bi: int, **changes: Any) -> Output:
    """The claim now states the forged fact and its binding quotes it: coherent, apart from the forgery."""
    mutated = with_binding(output, ci, bi, evidence_excerpt=_FORGED_FACT, **changes)
    mutated["claims"][ci]["claim_text"] = f"The {_FORGED_FACT}."
    return mutated


def hand_added_invocation(document, output):
    """A copy of a cited invocation, its output and ref saying something else, added and cited.

    Only what the document can show is varied here (an id beyond 1..n, a time after the
    executor output, a round in which the executor called no tool); a copy consistent
    with all of that is caught by `gate --against DIR` only.
    """
    last = max((i.invocation_id for i in document.invocations), default=0)
    for ci, bi, claim, _binding, invocation, ref in _cited(document, output):
        if not _forgeable(invocation, ref.raw_path):
            continue
        variants = (
            ("with id beyond 1..n", {"invocation_id": last + 5}),
            (
                "recorded after the executor output",
                {"invocation_id": last + 1, "created_at": "2099-01-01T00:00:00.000000Z"},
            ),
            ("in a round without executor tool calls", {"invocation_id": last + 1, "round": 9}),
        )
        for label, changes in variants:
            added = _consistent_forgery(invocation, ref.raw_path, **changes)
            forged_ref = find_ref(added, ref.raw_path)
            if forged_ref is None or _FORGED_FACT not in forged_ref.text:
                break  # the item's ref shows only the start of its text: the forged fact cannot be cited
            yield Case(
                f"{where(claim, bi)} cites a hand-added invocation {label}",
                _citing_forged_fact(output, ci, bi, source_invocation_id=added.invocation_id),
                [*document.invocations, added],
            )
        return  # one binding is enough: the variants are about the invocation


def edited_ref_text(document, output):
    for ci, bi, claim, _binding, invocation, ref in _cited(document, output):
        number = NUMBER.search(ref.text)
        edits = [f"{ref.text}; {_FORGED_FACT}"]
        if number:
            edits.append(ref.text[: number.start()] + next(number_edits(number.group())) + ref.text[number.end() :])
        for text in edits:
            yield Case(
                f"{where(claim, bi)} cites {ref.raw_path} edited to {text[-40:]!r}",
                with_binding(output, ci, bi, evidence_excerpt=text),
                _replaced(document, _forged(invocation, ref.raw_path, text)),
            )


def duplicate_invocation_id(document, output):
    for ci, bi, claim, _binding, invocation, ref in _cited(document, output):
        twin = _forged(invocation, ref.raw_path, f"{ref.text}; {_FORGED_FACT}")
        yield Case(
            f"{where(claim, bi)} cites id {invocation.invocation_id}, recorded twice (the second one forged)",
            _citing_forged_fact(output, ci, bi),
            [*document.invocations, twin],
        )


def failed_invocation_cited(document, output):
    for _ci, bi, claim, _binding, invocation, _ref in _cited(document, output):
        details = require_details(invocation)
        failed: dict[str, dict[str, Any]] = {
            "success=false": {"success": False, "error_message": "timed out after 15s"},
            "evidence_status=failed": {"retrieval_details": details.model_copy(update={"evidence_status": "failed"})},
        }
        for label, changes in failed.items():
            yield Case(
                f"{where(claim, bi)} cites invocation {invocation.invocation_id} recorded with {label}",
                copy.deepcopy(output),
                _replaced(document, invocation.model_copy(update=changes)),
            )
