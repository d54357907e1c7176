"""A hostile claim that passes the gate must not reach a PASS answer through the rest of the chain (issue 11).

An attacker edits a real session: one claim whose every number, identifier and negation occurs in a genuine
excerpt, but whose meaning the excerpt does not carry ("not available" → "the database is not the problem").
The Gatekeeper accepts the citation (the excerpt is real); the offline Verifier must not call it supported,
and whatever the chain answers afterwards must not contain the sentence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli._util import evcli

QUESTION = "Why is order-service failing? It keeps restarting and checkout requests time out."

HOSTILE = [
    ("The order-service database is not the problem", "Connection is not available"),
    ("order-service requests are not timing out", "Connection is not available, request timed out"),
]
# the excerpt's words with its negation taken out: the gate itself sees that one
NEGATION_DROPPED = ("order-service HikariPool-1 connection is available", "HikariPool-1 - Connection is not available")


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("home")
    db = home / "evcli.db"
    run = evcli("ask", QUESTION, "--db", db, "--json")
    assert run.exit_code == 0, run
    target = home / "session.json"
    assert evcli("export", run.json()["session_id"], "--db", db, "-o", target).exit_code == 0
    return json.loads(target.read_text(encoding="utf-8"))


def _hostile_document(document: dict[str, Any], claim_text: str, excerpt: str) -> dict[str, Any]:
    """The session with its executor claims replaced by one hostile claim citing a genuine log ref."""
    hostile = json.loads(json.dumps(document))
    cited = next(
        (invocation, ref)
        for invocation in hostile["invocations"]
        for ref in invocation["retrieval_details"]["evidence_refs"]
        if ref["raw_path"].startswith("$.logs[") and excerpt in ref["text"]
    )
    invocation, ref = cited
    execute = next(s for s in hostile["stage_outputs"] if s["stage"] == "execute")
    binding = {
        "source_type": "tool",
        "source_id": invocation["tool_name"],
        "tool_name": invocation["tool_name"],
        "source_invocation_id": invocation["invocation_id"],
        "raw_path": ref["raw_path"],
        "evidence_excerpt": excerpt,
    }
    claim = {
        "claim_id": "claim-1",
        "claim_type": "observation",
        "claim_text": claim_text,
        "support_level": "direct",
        "evidence_bindings": [binding],
    }
    execute["output"]["claims"] = [claim]
    execute["raw_text"] = json.dumps(execute["output"])
    hostile["run"]["session_id"] = "hostile-" + hostile["run"]["session_id"]
    return hostile


def test_a_claim_quoting_its_excerpt_without_the_negation_is_rejected_by_the_gate(tmp_path: Path, exported):
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(_hostile_document(exported, *NEGATION_DROPPED)), encoding="utf-8")

    gated = evcli("gate", path, "--db", tmp_path / "evcli.db", "--json")

    assert gated.exit_code == 4, gated
    assert gated.json()["result"]["failed_rules"] == ["claim.facts_in_excerpts"]
    assert "negation before 'available'" in gated.stdout


@pytest.mark.parametrize(("claim_text", "excerpt"), HOSTILE)
def test_a_gate_passing_hostile_claim_never_reaches_the_answer(tmp_path: Path, exported, claim_text, excerpt):
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(_hostile_document(exported, claim_text, excerpt)), encoding="utf-8")
    db = tmp_path / "evcli.db"

    gated = evcli("gate", path, "--db", db, "--json")
    assert gated.exit_code == 0, gated  # the citation itself is genuine: the gate cannot see the meaning

    replayed = evcli("replay", path, "--from", "gate", "--db", db, "--json")
    assert replayed.exit_code in (0, 3), replayed
    result = replayed.json()
    assert claim_text.lower() not in result["answer"]["user_facing_answer"].lower(), result
    assert all(claim["claim_text"] != claim_text for claim in result["claims"]), result

    target = tmp_path / "replayed.json"
    assert evcli("export", result["session_id"], "--db", db, "-o", target).exit_code == 0
    first_verify = next(
        s for s in json.loads(target.read_text(encoding="utf-8"))["stage_outputs"] if s["stage"] == "verify"
    )
    checks = {check["claim_id"]: check for check in first_verify["output"]["claim_checks"]}
    assert checks["claim-1"]["verification"] != "direct_support", first_verify
    assert first_verify["output"]["verdict"] != "PASS", first_verify
