from __future__ import annotations

import json

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


# --- the offline Verifier on a container runtime's line, which holds its program's line JSON-escaped ---

_CONTAINER_LINE = (
    r'{"log":"2026-07-08 22:41:55.210 ERROR 1 --- [nio-8080-exec-3] c.e.shop.CartController : checkout failed for '
    r'\"order\" ORD-7 by user=zo\u00eb caf\u00e9=open userId=42\n","stream":"stdout","time":"2026-07-08T22:41:55.210Z"}'
)
_EXCERPT = f"logs/cart.log:2 2026-07-08T22:41:55.210+00:00 ERROR {_CONTAINER_LINE}"
_SAID = "cart logged ERROR at 2026-07-08T22:41:55.210+00:00: "
_DECODED = 'checkout failed for "order" ORD-7 by user=zoë café=open userId=42'


def _offline_check(text: str, excerpt: str = _EXCERPT) -> dict:
    from evcli.agents.engine import RoleRequest
    from evcli.agents.offline import OfflineEngine

    evidence = {"source_invocation_id": 1, "tool_name": "query_logs", "raw_path": "$.logs[0]", "matched_text": excerpt}
    claim = {"claim_id": "claim-1", "claim_type": "symptom", "claim_text": text, "support_level": "direct",
             "verified_evidence": [evidence | {"evidence_excerpt": excerpt}]}  # fmt: skip
    payload = {"verified_claims": [claim], "gatekeeper": {"severity": "none"}}
    reply = OfflineEngine().complete(RoleRequest(role="verifier", prompt=None, payload=payload))  # type: ignore[arg-type]
    [check] = json.loads(reply.text)["claim_checks"]
    return check


@pytest.mark.parametrize(
    "text",
    [_SAID + _CONTAINER_LINE, _EXCERPT, _SAID + _DECODED, _SAID + _DECODED + "\n", _SAID + "userId=42 checkout failed"],
    ids=["the line escaped", "the excerpt", "the line decoded", "decoded with its newline", "a part of it"],
)
def test_a_quote_of_an_escaped_line_as_written_or_decoded_is_supported(text):
    check = _offline_check(text)
    assert check["verification"] == "direct_support", check


@pytest.mark.parametrize(
    ("text", "verdicts"),
    [(_SAID + _DECODED.replace("userId=42", "userId=43"), ("contradicted",)),
     (_SAID + _CONTAINER_LINE.replace("userId=42", "userId=43"), ("contradicted",)),
     (_SAID + _DECODED.replace("ORD-7", "ORD-8"), ("indirect_support",)),  # an identifier not in it: never direct
     (_SAID + _DECODED.replace("user=zoë", "user=zoe"), ("contradicted",)),
     (_SAID + _DECODED.replace("café=open", "café=shut"), ("indirect_support",))],
    ids=["a number decoded", "a number escaped", "an identifier", "a decoded character", "a value"],
)  # fmt: skip
def test_a_changed_number_or_identifier_of_an_escaped_line_is_not_supported(text, verdicts):
    check = _offline_check(text)
    assert check["verification"] in verdicts, check
