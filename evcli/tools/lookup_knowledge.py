"""`lookup_knowledge`: runbook blocks ranked for a query (relevance PRECISE / HIGHLY_RELEVANT / REFERENCE),
searched in the backend serving the knowledge capability (evcli/backends/registry.py; by default the
`runbooks` directory backend).

Refs: `$.evidence_blocks[i]`, one block as `doc › heading: text`. A block an
earlier call of the session already returned is left out and named in the
invocation's `dedup_reason`; it is never served as new evidence twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from evcli.contracts import ToolInvocation
from evcli.tools import registry
from evcli.tools.fetch import Outcome, cap_text
from evcli.tools.params import ALERTNAME, NAME, ToolParams

if TYPE_CHECKING:
    from evcli.tools.runner import SessionView, ToolEnvironment

ARRAY = "evidence_blocks"
_RELEVANCE_ORDER = ("PRECISE", "HIGHLY_RELEVANT", "REFERENCE")


class LookupKnowledgeParams(ToolParams):
    query: str = Field(min_length=1, max_length=300)
    alertname: str | None = Field(None, pattern=ALERTNAME)
    service: str | None = Field(None, pattern=NAME)
    limit: int = Field(5, ge=1, le=20)


def block_text(block: dict[str, Any]) -> str:
    return f"{block.get('doc')} › {block.get('heading')}: {block.get('text')}"


def scope(params: LookupKnowledgeParams) -> dict[str, Any]:
    found: dict[str, Any] = {"service": params.service, "limit": params.limit}
    found = {key: value for key, value in found.items() if value is not None}
    found["keywords"] = params.query.split()
    return found


def best_relevance(output: dict[str, Any]) -> str | None:
    levels = [block.get("relevance_level") for block in output.get(ARRAY) or []]
    ranked = [level for level in levels if level in _RELEVANCE_ORDER]
    return min(ranked, key=_RELEVANCE_ORDER.index) if ranked else None


def fetch(params: LookupKnowledgeParams, env: ToolEnvironment, session: SessionView) -> Outcome:
    found = env.knowledge().search(params.query, limit=params.limit, alertname=params.alertname, service=params.service)
    # Compare blocks as they were stored (masked, capped) so a repeat is recognised.
    prepared = env.redactor.mask({ARRAY: list(found)})
    cap_text(prepared, (ARRAY,), env.settings.max_text_chars)
    blocks = prepared[ARRAY]
    already = _returned_blocks(session.invocations)
    fresh: list[tuple[dict[str, Any], int | None]] = []
    repeated: list[tuple[dict[str, Any], int | None]] = []
    for block in blocks:
        key = (block.get("doc"), block.get("heading"), block.get("text"))
        (repeated if key in already else fresh).append((block, already.get(key)))
    output = {
        ARRAY: [block for block, _ in fresh],
        "total": len(blocks),
        "truncated": False,
        "message": f"{len(fresh)} blocks" + (f", {len(repeated)} already returned in this session" if repeated else ""),
        "layers": {
            "L0": sum(b.get("layer") == "L0" for b in blocks),
            "L1": sum(b.get("layer") == "L1" for b in blocks),
        },
    }
    outcome = Outcome(output, scope(params))
    if repeated:
        outcome.dedup_reason = "; ".join(
            f"{block.get('doc')} › {block.get('heading')} already returned by invocation #{invocation_id}"
            for block, invocation_id in repeated
        )
    return outcome


def _returned_blocks(invocations: list[ToolInvocation]) -> dict[tuple[Any, ...], int]:
    returned: dict[tuple[Any, ...], int] = {}
    for invocation in invocations:
        if invocation.tool_name == SPEC.name:
            for block in invocation.output.get(ARRAY) or []:
                returned.setdefault(
                    (block.get("doc"), block.get("heading"), block.get("text")), invocation.invocation_id
                )
    return returned


SPEC = registry.register(
    registry.ToolSpec(
        name="lookup_knowledge",
        description="Runbook blocks ranked for a query (relevance PRECISE / HIGHLY_RELEVANT / REFERENCE).",
        summary="Runbook blocks ranked for a query, with relevance level and layer.",
        params=LookupKnowledgeParams,
        arrays=(registry.EvidenceArray(ARRAY, block_text),),
        fetch=fetch,
        scope=scope,
        relevance=best_relevance,
        source="runbooks",
        option_help={
            "query": 'What to look up in the runbooks, in words ("redis timeout", "disk full datanode", "证书过期").',
            "alertname": "Alert name hint (exact L0 match).",
            "service": "Service hint (exact L0 match).",
            "limit": "At most N blocks (1-20).",
        },
    )
)
