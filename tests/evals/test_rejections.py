"""Which claims the gate rejected, and which of them were honest (evcli/evals/rejections.py).

The claims cite a real session of the demo environment (the offline chain's invocations): an honest
claim states what its cited log line says but chose a poor excerpt; a dishonest one states another
number, cites a ref or invocation that does not exist, or binds a negative to evidence.
"""

from __future__ import annotations

from typing import Any

import pytest

from evcli.contracts import ANSWER_VERSION, SessionDocument, StageOutput, StoredGateResult
from evcli.evals.rejections import is_honest, rejected_claims, with_whole_refs
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.service import session_services
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore

LINE = "Redis command GET timed out after 2000ms on redis-cluster-01:6379"
TRUE_CLAIM = f"payment-service logged {LINE}."


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> tuple[SessionDocument, int, str]:
    """An offline session that searched payment-service's Redis timeouts, the invocation and ref holding LINE."""
    from evcli.gatekeeper.rules import load_rules

    with TraceStore(tmp_path_factory.mktemp("store") / "evcli.db") as store:
        result = Pipeline(store=store, rules=load_rules()).ask("Does payment-service log Redis timeouts?")
        document = store.load(result.session_id)
    invocation_id, raw_path = next(
        (invocation.invocation_id, ref.raw_path)
        for invocation in document.invocations
        for ref in (invocation.retrieval_details.evidence_refs if invocation.retrieval_details else None) or []
        if ref.raw_path.startswith("$.logs[") and LINE in ref.text
    )
    return document, invocation_id, raw_path


def _claim(
    session: tuple[SessionDocument, int, str],
    text: str,
    excerpt: str,
    *,
    claim_id: str = "claim-1",
    claim_type: str = "observation",
    invocation_id: int | None = None,
    raw_path: str | None = None,
) -> dict[str, Any]:
    _, found_id, found_path = session
    binding = {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": "query_logs",
        "source_invocation_id": invocation_id or found_id,
        "raw_path": raw_path or found_path,
        "evidence_excerpt": excerpt,
    }
    return {
        "claim_id": claim_id,
        "claim_type": claim_type,
        "claim_text": text,
        "support_level": "direct",
        "evidence_bindings": [binding],
    }


def _rejected_rules(document: SessionDocument, rules, claim: dict[str, Any]) -> list[str]:
    draft = {"answer_version": ANSWER_VERSION, "claims": [claim]}
    result = gate(draft, document.invocations, rules, services=session_services(document))
    return [f.rule for f in result.errors if f.severity == "reject" and f.claim_id == claim["claim_id"]]


CASES: dict[str, tuple[str, str, dict[str, Any], bool]] = {
    # the excerpt does not carry the claim's numbers and endpoint; the cited line does
    "excerpt too short": (TRUE_CLAIM, "Redis command GET timed out", {}, True),
    # a paraphrased excerpt: not verbatim, but the cited line states what the claim says
    "excerpt not verbatim": (TRUE_CLAIM, "Redis GET timed out after 2000ms on redis-cluster-01:6379", {}, True),
    "another number": (
        f"payment-service logged {LINE.replace('2000ms', '3000ms')}.",
        "Redis command GET timed out",
        {},
        False,
    ),
    "a ref that does not exist": (TRUE_CLAIM, LINE, {"raw_path": "$.logs[999]"}, False),
    "an invocation that does not exist": (TRUE_CLAIM, LINE, {"invocation_id": 99}, False),
    "a negative bound to evidence": (
        "This query found no matching evidence of Redis timeouts.",
        LINE,
        {"claim_type": "negative_observation"},
        False,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_rejected_claim_is_honest_only_when_its_whole_cited_ref_carries_it(session, rules, name):
    text, excerpt, extra, honest = CASES[name]
    claim = _claim(session, text, excerpt, **extra)
    document = session[0]

    assert _rejected_rules(document, rules, claim), "the gate rejects it as written"
    assert is_honest(claim, document, rules) is honest


def test_a_claim_the_gate_passes_is_honest_and_whole_refs_leave_unknown_refs_alone(session, rules):
    claim = _claim(session, TRUE_CLAIM, LINE)
    document = session[0]
    assert _rejected_rules(document, rules, claim) == [] and is_honest(claim, document, rules)

    unknown = _claim(session, TRUE_CLAIM, "x", raw_path="$.logs[999]")
    assert with_whole_refs(unknown, document.invocations) == unknown
    whole = with_whole_refs(_claim(session, TRUE_CLAIM, "x"), document.invocations)
    assert LINE in whole["evidence_bindings"][0]["evidence_excerpt"] != "x"


def test_rejected_claims_reads_every_gated_draft_in_its_round(session, rules):
    """Round 1: one honest and one dishonest claim rejected; round 2 (a repair) passes: both are counted."""
    document = session[0]
    first = [
        _claim(session, TRUE_CLAIM, "Redis command GET timed out", claim_id="claim-1"),
        _claim(session, TRUE_CLAIM.replace("2000ms", "3000ms"), "Redis command GET timed out", claim_id="claim-2"),
    ]
    second = [_claim(session, TRUE_CLAIM, LINE, claim_id="claim-1")]
    stage_outputs, gate_results = [], []
    for round, claims in ((1, first), (2, second)):
        draft = {
            "answer_version": ANSWER_VERSION,
            "claims": claims,
            "hypotheses": [],
            "recommended_actions": [],
            "missing_info": [],
        }
        stamp = f"2026-01-01T00:00:0{round}.000000Z"
        stage_outputs.append(StageOutput(stage="execute", round=round, output=draft, created_at=stamp))
        result = gate(draft, document.invocations, rules, services=session_services(document))
        gate_results.append(StoredGateResult(seq=round, round=round, created_at=stamp, result=result))
    drafted = document.model_copy(update={"stage_outputs": stage_outputs, "gate_results": gate_results})

    rejected = rejected_claims(drafted, rules)

    assert [(c.round, c.claim_id, c.honest) for c in rejected] == [(1, "claim-1", True), (1, "claim-2", False)]
    assert rejected[0].claim_text == TRUE_CLAIM and "claim.facts_in_excerpts" in rejected[0].rules
    assert rejected[0].as_json()["rules"] == list(rejected[0].rules)
