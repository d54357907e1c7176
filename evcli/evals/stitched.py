"""Many stored sessions stitched into one large session, for measuring and testing the Gatekeeper at scale.

Invariants: the documents' executor claims and invocations repeat, in document order, until at least
`min_bindings` bindings are stitched; each copy's invocation ids are renumbered past the copies before it
(its bindings follow), and each copy's invocations and claims are distinct objects, so nothing read for one
copy is reused for another; a document without an executor output adds nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from evcli.contracts import SessionDocument, ToolInvocation


def stitched_session(
    documents: Sequence[SessionDocument], min_bindings: int
) -> tuple[dict[str, Any], list[ToolInvocation], int]:
    """(executor output, invocations, bindings) of the documents repeated into one session."""
    claims: list[dict[str, Any]] = []
    invocations: list[ToolInvocation] = []
    offset = bindings = 0
    if not any(_claims(document) for document in documents):
        raise ValueError("no document holds executor claims to stitch")
    while bindings < min_bindings:
        for document in documents:
            if not _claims(document):
                continue
            invocations += [
                invocation.model_copy(update={"invocation_id": invocation.invocation_id + offset}, deep=True)
                for invocation in document.invocations
            ]
            for claim in copy.deepcopy(_claims(document)):
                claim["claim_id"] = f"claim-{len(claims) + 1}"
                for binding in claim.get("evidence_bindings") or []:
                    if isinstance(binding.get("source_invocation_id"), int):
                        binding["source_invocation_id"] += offset
                    bindings += 1
                claims.append(claim)
            offset += max((invocation.invocation_id for invocation in document.invocations), default=0)
    output = {
        "answer_version": "executor_evidence_v2",
        "claims": claims,
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
    }
    return output, invocations, bindings


def _claims(document: SessionDocument) -> list[dict[str, Any]]:
    execute = document.latest_stage("execute")
    return list((execute.output or {}).get("claims") or []) if execute is not None else []
