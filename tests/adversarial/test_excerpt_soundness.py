"""Hostile citations against the Gatekeeper's excerpt rules and the offline Verifier (issue 11)."""

from __future__ import annotations

import json
import time

import pytest

from evcli.agents.engine import RoleRequest
from evcli.agents.offline import OfflineEngine
from evcli.gatekeeper.excerpt import informative_problem, match_excerpt
from evcli.gatekeeper.facts import missing_facts

LOG = (
    "2026-07-08 23:05:28 ERROR order-service HikariPool-1 - Connection is not available, "
    "request timed out after 30000ms (total=50, active=50, idle=0, waiting=23)"
)
ALERT = "HighCPUUsage, service=payment-service, state=firing, current=92%, duration=25m"


@pytest.mark.parametrize("excerpt", ["a", "e", "(", ",", "-", "0", "5", "is", "out", "... a ...", "Connection ... a"])
def test_trivial_excerpt_carries_no_fact(excerpt):
    assert informative_problem(excerpt, min_chars=4)


@pytest.mark.parametrize(
    ("excerpt", "ref"),
    [
        ("state=fixing", ALERT),
        ("level=worn disk almost full", "level=warn disk almost full"),
        ("inventory-service is ... available", "inventory-service is unavailable"),
    ],
)
def test_changed_word_is_rejected(excerpt, ref):
    assert not match_excerpt(excerpt, ref).supported


@pytest.mark.parametrize(
    ("claim", "excerpt"),
    [
        ("The root cause is database migration 42", "Connection is not available"),
        ("payment-service is down", "HikariPool-1 - Connection is not available"),
        ("order-service CPU usage is 92%", "request timed out after 30000ms"),
    ],
)
def test_claim_facts_must_be_in_its_excerpts(claim, excerpt):
    assert missing_facts(claim, [excerpt], is_session_entity=lambda _: True)


def _verify(claim_type, text, excerpt, ref=LOG, raw_path="$.logs[0]"):
    claim = {
        "claim_id": "claim-1",
        "claim_type": claim_type,
        "claim_text": text,
        "support_level": "direct",
        "verified_evidence": [
            {
                "source_invocation_id": 1,
                "tool_name": "query_logs",
                "raw_path": raw_path,
                "matched_text": ref,
                "evidence_excerpt": excerpt,
            }
        ],
    }
    payload = {"verified_claims": [claim], "gatekeeper": {"severity": "none"}}
    reply = OfflineEngine().complete(RoleRequest(role="verifier", prompt=None, payload=payload))
    return json.loads(reply.text)


OMISSIONS = [
    ("observation", "The order-service database is not the problem", "not available"),
    (
        "observation",
        "order-service database is not the problem",
        "order-service HikariPool-1 - Connection is not available",
    ),
    (
        "observation",
        "order-service HikariPool-1 connection is available",
        "order-service HikariPool-1 - Connection is not available",
    ),
    (
        "observation",
        "order-service HikariPool-1 is not exhausted",
        "order-service HikariPool-1 - Connection is not available",
    ),
    ("observation", "payment-service CPU usage is normal", ALERT),
    (
        "symptom",
        "order-service requests are not timing out",
        "order-service HikariPool-1 - Connection is not available, request timed out",
    ),
    ("observation", "23 services are down", "waiting=23"),
]


@pytest.mark.parametrize(("claim_type", "text", "excerpt"), OMISSIONS)
def test_verifier_does_not_pass_a_claim_its_excerpt_does_not_carry(claim_type, text, excerpt):
    document = _verify(claim_type, text, excerpt, ref=ALERT if excerpt == ALERT else LOG)
    assert document["verdict"] != "PASS", document
    assert document["claim_checks"][0]["verification"] != "direct_support"


def test_gate_time_is_bounded_for_hundred_thousand_character_excerpts():
    ref = " ".join(f"w{n % 977}x{n % 13}" for n in range(12_000))[:100_000]
    started = time.perf_counter()
    assert match_excerpt(ref, ref).supported
    assert not match_excerpt(ref.replace("w5x5", "w5x6", 1), ref).supported
    assert time.perf_counter() - started < 2.0
