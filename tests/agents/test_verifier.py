from __future__ import annotations

import pytest

from evcli.agents.verifier import critical_gaps, effective_verdict


@pytest.mark.parametrize(
    ("model", "severity", "expected"),
    [
        ("PASS", "none", "PASS"),
        ("PASS", "low_confid", "LOW_CONFID"),
        ("PASS", "reject", "REJECT"),
        ("LOW_CONFID", "none", "LOW_CONFID"),
        ("LOW_CONFID", "reject", "REJECT"),
        ("REJECT", "none", "REJECT"),
        ("REJECT", "low_confid", "REJECT"),
    ],
)
def test_the_gate_caps_the_verdict(model, severity, expected):
    assert effective_verdict(model, severity) == expected


def test_critical_gaps_are_critical_claims_without_direct_support():
    output = {
        "claim_checks": [
            {"claim_id": "c1", "verification": "direct_support", "is_critical": True},
            {"claim_id": "c2", "verification": "no_evidence", "is_critical": True},
            {"claim_id": "c3", "verification": "indirect_support", "is_critical": True, "note": "inferred"},
            {"claim_id": "c4", "verification": "indirect_support", "is_critical": False},
            "garbage",
        ]
    }
    assert critical_gaps(output) == [
        {"claim_id": "c2", "reason": "no_evidence", "note": ""},
        {"claim_id": "c3", "reason": "indirect_support", "note": "inferred"},
    ]
