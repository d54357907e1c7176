"""What every mutation class shares: the case it yields and how it walks and edits bindings.

A mutation never edits its input: `with_binding` deep-copies the executor output,
and invocation edits are pydantic `model_copy`s.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from evcli.contracts import Query, RetrievalDetails, SessionDocument, ToolInvocation
from evcli.gatekeeper.checks import find_ref
from evcli.gatekeeper.excerpt import normalize

Output = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One mutated executor output and where in it the mutation was made.

    `invocations` replaces the session's invocations when the mutation edits them too, and
    `scope` the session's question scope (a scope mutation: what was asked, not what was searched).
    """

    description: str
    output: Output
    invocations: list[ToolInvocation] | None = None
    scope: Query | None = None


Mutate = Callable[[SessionDocument, Output], Iterator[Case]]


@dataclass(frozen=True)
class MutationClass:
    name: str
    expected_severity: str  # "none" for benign variants
    expected_rule: str | None
    mutate: Mutate
    benign: bool = False
    scope: bool = False  # a scope class: the only kind run on a `scope_base` session


# --- helpers -------------------------------------------------------------------

DELETE = object()  # marks a binding field the mutation removes


def bindings(output: Output) -> Iterator[tuple[int, int, dict[str, Any], dict[str, Any]]]:
    for claim_index, claim in enumerate(output.get("claims") or []):
        for binding_index, binding in enumerate(claim.get("evidence_bindings") or []):
            yield claim_index, binding_index, claim, binding


def with_binding(output: Output, claim_index: int, binding_index: int, **changes: Any) -> Output:
    mutated = copy.deepcopy(output)
    binding = mutated["claims"][claim_index]["evidence_bindings"][binding_index]
    for key, value in changes.items():
        if value is DELETE:
            binding.pop(key, None)
        else:
            binding[key] = value
    return mutated


def where(claim: dict[str, Any], binding_index: int) -> str:
    return f"{claim.get('claim_id')}#{binding_index}"


def invocations_by_id(document: SessionDocument) -> dict[int, ToolInvocation]:
    return {invocation.invocation_id: invocation for invocation in document.invocations}


def cited_invocation(invocations: dict[int, ToolInvocation], binding: dict[str, Any]) -> ToolInvocation | None:
    """The invocation a binding names, if its id is an int that is recorded (mutations delete or garble it)."""
    invocation_id = binding.get("source_invocation_id")
    return invocations.get(invocation_id) if isinstance(invocation_id, int) else None


def require_details(invocation: ToolInvocation) -> RetrievalDetails:
    """The retrieval details of an invocation that has a cited ref (refs live in them)."""
    if invocation.retrieval_details is None:
        raise ValueError(f"invocation {invocation.invocation_id} has a cited ref but no retrieval details")
    return invocation.retrieval_details


def ref_text(document: SessionDocument, binding: dict[str, Any]) -> str:
    invocation = cited_invocation(invocations_by_id(document), binding)
    ref = find_ref(invocation, binding.get("raw_path", "")) if invocation else None
    return ref.text if ref else ""


def is_new_text(document: SessionDocument, binding: dict[str, Any], excerpt: str) -> bool:
    """A mutated excerpt only counts if it does not literally occur in the ref."""
    return normalize(excerpt) not in normalize(ref_text(document, binding))


NUMBER = re.compile(r"\d+(?:\.\d+)?")


def number_edits(number: str) -> Iterator[str]:
    reversed_digits = number[::-1]
    if reversed_digits != number and not reversed_digits.startswith("0"):
        yield reversed_digits  # 92 -> 29
    yield number + "0"  # 50 -> 500
