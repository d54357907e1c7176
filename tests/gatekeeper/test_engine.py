"""One test (or more) per Gatekeeper rule, through `gate()` itself."""

from __future__ import annotations

import copy
import dataclasses
import gc

import pytest

from evcli.contracts import RetrievalDetails, ToolInvocation
from evcli.gatekeeper.engine import gate
from evcli.tools.refs import evidence

ALERT = "HighCPUUsage, service=payment-service, state=firing, current=92%, duration=25m"
POOL = (
    "2026-07-08 23:05:28 ERROR order-service HikariPool-1 - Connection is not available, "
    "request timed out after 30000ms (total=50, active=50, idle=0, waiting=23)"
)
REDIS = "2026-07-08 23:04:10 ERROR payment-service Redis timeout on redis-cluster-01:6379 after 2000ms"
NONE_INVENTORY = (
    "query_logs returned no evidence; evidence_status=no_evidence; query=inventory-service HikariCP; total=0"
)
NONE_USER = "query_logs returned no evidence; evidence_status=no_evidence; query=user-service HikariCP; total=0"


def _invocation(invocation_id, tool, output, scope=None, *, details=True, success=True):
    """A recorded call whose refs are rendered from its output, as the runner records them."""
    status, refs = evidence(tool, output, scope or {}, dedup_reason=None) if success else ("failed", [])
    return ToolInvocation(
        invocation_id=invocation_id,
        tool_name=tool,
        output=output,
        success=success,
        retrieval_details=RetrievalDetails(evidence_status=status, evidence_refs=refs, **(scope or {}))
        if details
        else None,
    )


def _log(timestamp, level, service, message):
    return {"timestamp": timestamp, "level": level, "service": service, "message": message}


INVOCATIONS = [
    _invocation(
        1,
        "query_metrics",
        {
            "alerts": [
                {
                    "alertname": "HighCPUUsage",
                    "service": "payment-service",
                    "state": "firing",
                    "value": 92,
                    "unit": "%",
                    "duration": "25m",
                }
            ]
        },
    ),
    _invocation(
        2,
        "query_logs",
        {
            "logs": [
                _log("2026-07-08T23:05:28Z", "ERROR", "order-service", POOL.split("order-service ", 1)[1]),
                _log("2026-07-08T23:04:10Z", "ERROR", "payment-service", REDIS.split("payment-service ", 1)[1]),
            ]
        },
    ),
    _invocation(3, "query_logs", {"logs": [], "total": 0}, {"service": "inventory-service", "keywords": ["HikariCP"]}),
    _invocation(4, "query_logs", {"logs": [], "total": 0}, {"service": "user-service", "keywords": ["HikariCP"]}),
    _invocation(5, "lookup_knowledge", {}, details=False),  # recorded before evidence refs existed
    _invocation(6, "query_logs", {"error": "timed out after 15s"}, success=False),
]
assert [r.text for r in INVOCATIONS[0].retrieval_details.evidence_refs] == [ALERT]
assert [r.text for r in INVOCATIONS[1].retrieval_details.evidence_refs] == [POOL, REDIS]
assert [r.text for r in INVOCATIONS[2].retrieval_details.evidence_refs] == [NONE_INVENTORY]


def _binding(tool, invocation_id, raw_path, excerpt):
    return {"tool_name": tool, "source_invocation_id": invocation_id, "raw_path": raw_path, "evidence_excerpt": excerpt}


def _output(*claims):
    return {
        "answer_version": "executor_evidence_v2",
        "claims": list(claims),
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
    }


def _claim(*bindings, claim_type="observation", claim_id="claim-1"):
    return {
        "claim_id": claim_id,
        "claim_type": claim_type,
        "claim_text": "text",
        "support_level": "direct",
        "evidence_bindings": list(bindings),
    }


VALID = _output(
    _claim(_binding("query_metrics", 1, "$.alerts[0]", "state=firing, current=92%, duration=25m")),
    _claim(
        _binding(
            "query_logs", 2, "$.logs[0]", "Connection is not available ... (total=50, active=50, idle=0, waiting=23)"
        ),
        claim_id="claim-2",
    ),
    _claim(
        _binding("query_logs", 3, "$.no_evidence", "query=inventory-service HikariCP; total=0"),
        claim_type="negative_observation",
        claim_id="claim-3",
    ),
)


def _gate(output, rules, invocations=INVOCATIONS):
    return gate(output, invocations, rules)


def _mutated(path_changes: dict, output=VALID):
    mutated = copy.deepcopy(output)
    binding = mutated["claims"][0]["evidence_bindings"][0]
    binding.update(path_changes)
    return mutated


def _with_rule(rules, rule_id, **changes):
    updated = dict(rules.rules)
    updated[rule_id] = dataclasses.replace(rules.rules[rule_id], **changes)
    return dataclasses.replace(rules, rules=updated)


def _assert_fails(result, rule_id, severity):
    assert result.status == "fail"
    assert result.severity == severity
    assert result.failed_rules == [rule_id]
    assert [e.rule for e in result.errors] == [rule_id]


def test_valid_output_passes_with_every_binding_matched(rules):
    result = _gate(VALID, rules)
    assert (result.status, result.severity, result.failed_rules, result.errors) == ("pass", "none", [], [])
    assert [b.status for b in result.checked_bindings] == ["pass"] * 3
    assert [b.matched_text for b in result.checked_bindings] == [ALERT, POOL, NONE_INVENTORY]
    assert result.rule_set_version == rules.version and result.rules_hash == rules.file_hash
    assert {r.id for r in result.rules} == set(rules.rules)


def test_answer_version_other_than_v2_is_low_confid(rules):
    output = dict(VALID, answer_version="executor_evidence_v1")
    _assert_fails(_gate(output, rules), "contract.answer_version", "low_confid")


def test_unparseable_document_is_low_confid_and_good_claims_are_still_checked(rules):
    output = copy.deepcopy(VALID)
    output["claims"].append({"claim_id": "broken"})  # lacks claim_type and claim_text
    result = _gate(output, rules)
    _assert_fails(result, "contract.answer_version", "low_confid")
    assert "claims.3.claim_type" in result.errors[0].message
    assert len(result.checked_bindings) == 3


@pytest.mark.parametrize("not_a_document", [None, "plain text answer", ["a", "list"]])
def test_non_object_output_is_low_confid(rules, not_a_document):
    result = _gate(not_a_document, rules)
    assert result.severity == "low_confid" and result.failed_rules == ["contract.answer_version"]


@pytest.mark.parametrize("field", ["diagnosis_summary", "user_facing_answer", "source_invocation_ids"])
def test_forbidden_fields_are_rejected(rules, field):
    output = dict(VALID, **{field: "x"})
    _assert_fails(_gate(output, rules), "contract.forbidden_fields", "reject")


def test_claim_without_bindings_is_low_confid(rules):
    output = copy.deepcopy(VALID)
    output["claims"][0]["evidence_bindings"] = []
    _assert_fails(_gate(output, rules), "claim.bindings_present", "low_confid")


@pytest.mark.parametrize("field", ["tool_name", "raw_path", "evidence_excerpt"])
def test_missing_binding_field_is_low_confid(rules, field):
    result = _gate(_mutated({field: ""}), rules)
    _assert_fails(result, "binding.fields_present", "low_confid")
    assert result.checked_bindings[0].status == "fail"


def test_fabricated_invocation_id_is_rejected(rules):
    result = _gate(_mutated({"source_invocation_id": 517}), rules)
    _assert_fails(result, "binding.invocation_exists", "reject")
    assert result.checked_bindings[0].matched_text is None


def test_tool_name_of_another_invocation_is_rejected(rules):
    _assert_fails(_gate(_mutated({"tool_name": "query_logs"}), rules), "binding.tool_name_match", "reject")


@pytest.mark.parametrize(
    "raw_path",
    ["$.alerts", "$.alerts[-1]", "$.logs[0]", "alerts[0]", "$.alerts[01]", "$.alerts[*]", "$..state", "$.alerts[0].*"],
)
def test_raw_path_must_name_one_item_of_the_tools_arrays(rules, raw_path):
    _assert_fails(_gate(_mutated({"raw_path": raw_path}), rules), "binding.raw_path_format", "reject")


def test_raw_path_absent_from_refs_is_rejected(rules):
    _assert_fails(_gate(_mutated({"raw_path": "$.alerts[3]"}), rules), "binding.raw_path_exists", "reject")


def test_no_evidence_cited_on_an_invocation_with_hits_is_rejected(rules):
    result = _gate(_mutated({"raw_path": "$.no_evidence", "evidence_excerpt": "total=0"}), rules)
    _assert_fails(result, "binding.raw_path_exists", "reject")


def test_citing_a_failed_invocation_is_rejected(rules):
    result = _gate(
        _mutated(
            {
                "tool_name": "query_logs",
                "source_invocation_id": 6,
                "raw_path": "$.no_evidence",
                "evidence_excerpt": "total=0",
            }
        ),
        rules,
    )
    _assert_fails(result, "binding.invocation_succeeded", "reject")


def test_invocation_without_evidence_refs_is_low_confid(rules):
    result = _gate(
        _mutated(
            {
                "tool_name": "lookup_knowledge",
                "source_invocation_id": 5,
                "raw_path": "$.evidence_blocks[0]",
                "evidence_excerpt": "capture a heap dump",
            }
        ),
        rules,
    )
    _assert_fails(result, "binding.invocation_has_refs", "low_confid")


@pytest.mark.parametrize(
    "excerpt",
    [
        "current=29%",  # digits swapped
        "state=firing, current=92%, duration=250m",  # 25 -> 250
        "state=not firing, current=92%",  # inserted negation
        "HighCPUUsage, service=order-service, state=firing",  # other service
        "CPU is throttled by the kernel",  # invented
    ],
)
def test_unsupported_excerpt_is_rejected(rules, excerpt):
    result = _gate(_mutated({"evidence_excerpt": excerpt}), rules)
    _assert_fails(result, "binding.excerpt_supported", "reject")
    assert result.checked_bindings[0].matched_text == ALERT


@pytest.mark.parametrize(
    "excerpt",
    [
        "STATE=FIRING, CURRENT=92%",
        "state=firing,\n   current=92 %",
        "HighCPUUsage ... current=92% … duration=25m",
    ],
)
def test_cosmetic_excerpt_edits_pass(rules, excerpt):
    result = _gate(_mutated({"evidence_excerpt": excerpt}), rules)
    assert result.severity == "none", result.errors
    assert result.checked_bindings[0].match == "exact"


def test_near_match_threshold_comes_from_the_rules(rules):
    # A dropped comma: a near match, similarity just under 1 (a changed word never is one).
    excerpt = "Connection is not available request timed out after 30000ms"
    output = _mutated(
        {"tool_name": "query_logs", "source_invocation_id": 2, "raw_path": "$.logs[0]", "evidence_excerpt": excerpt}
    )
    result = _gate(output, rules)
    assert result.severity == "none" and result.checked_bindings[0].match == "near"
    strict = _with_rule(rules, "binding.excerpt_supported", params={"min_similarity": 1.0})
    _assert_fails(_gate(output, strict), "binding.excerpt_supported", "reject")


def test_negative_observation_bound_to_a_positive_item_is_rejected(rules):
    output = copy.deepcopy(VALID)
    output["claims"][2]["evidence_bindings"] = [
        _binding("query_logs", 2, "$.logs[1]", "Redis timeout on redis-cluster-01:6379")
    ]
    _assert_fails(_gate(output, rules), "claim.negative_requires_no_evidence", "reject")


def test_same_item_bound_twice_in_one_claim_is_low_confid(rules):
    output = copy.deepcopy(VALID)
    binding = output["claims"][0]["evidence_bindings"][0]
    output["claims"][0]["evidence_bindings"].append(dict(binding, evidence_excerpt="duration=25m"))
    result = _gate(output, rules)
    _assert_fails(result, "binding.unique_item", "low_confid")
    assert [b.status for b in result.checked_bindings[:2]] == ["pass", "fail"]


def test_same_item_in_two_claims_is_fine(rules):
    output = copy.deepcopy(VALID)
    output["claims"][1]["evidence_bindings"].append(_binding("query_metrics", 1, "$.alerts[0]", "current=92%"))
    assert _gate(output, rules).severity == "none"


def test_missing_id_is_back_filled_when_exactly_one_invocation_fits(rules):
    output = _mutated({"source_invocation_id": None})
    result = _gate(output, rules)
    assert result.severity == "none"
    checked = result.checked_bindings[0]
    assert (checked.source_invocation_id, checked.backfilled, checked.status) == (1, True, "pass")
    assert [w.rule for w in result.warnings] == ["binding.invocation_backfill"]
    assert "back-filled as 1" in result.warnings[0].message


def test_missing_id_is_not_back_filled_when_two_invocations_fit(rules):
    output = copy.deepcopy(VALID)
    output["claims"][2]["evidence_bindings"][0].update(
        source_invocation_id=None, evidence_excerpt="evidence_status=no_evidence"
    )
    result = _gate(output, rules)
    _assert_fails(result, "binding.invocation_backfill", "low_confid")
    assert "2 invocations match (3, 4)" in result.errors[0].message
    assert result.checked_bindings[2].status == "fail"


def test_missing_id_with_no_fitting_invocation_is_low_confid(rules):
    result = _gate(_mutated({"source_invocation_id": None, "evidence_excerpt": "current=29%"}), rules)
    _assert_fails(result, "binding.invocation_backfill", "low_confid")


def test_overall_severity_is_the_worst_failed_rule(rules):
    output = copy.deepcopy(VALID)
    output["answer_version"] = "v1"  # low_confid
    output["claims"][1]["evidence_bindings"][0]["source_invocation_id"] = 99  # reject
    result = _gate(output, rules)
    assert result.severity == "reject"
    assert result.failed_rules == ["binding.invocation_exists", "contract.answer_version"]


def test_disabled_rule_does_not_fail_the_gate(rules):
    output = _mutated({"evidence_excerpt": "current=29%"})
    relaxed = _with_rule(rules, "binding.excerpt_supported", enabled=False)
    result = _gate(output, relaxed)
    assert result.severity == "none"
    assert [r.enabled for r in result.rules if r.id == "binding.excerpt_supported"] == [False]


def test_a_binding_that_resolves_to_nothing_never_passes_even_with_its_rule_disabled(rules):
    relaxed = _with_rule(rules, "binding.invocation_exists", enabled=False)
    result = _gate(_mutated({"source_invocation_id": 517}), relaxed)
    assert result.severity == "none"
    assert result.checked_bindings[0].status == "fail"


def test_warning_severity_reports_without_failing(rules):
    output = copy.deepcopy(VALID)
    output["claims"][0]["evidence_bindings"].append(copy.deepcopy(output["claims"][0]["evidence_bindings"][0]))
    lenient = _with_rule(rules, "binding.unique_item", default_severity="warning")
    result = _gate(output, lenient)
    assert (result.status, result.severity) == ("pass", "none")
    assert [w.rule for w in result.warnings] == ["binding.unique_item"]


def test_gate_is_deterministic(rules):
    assert _gate(VALID, rules) == _gate(copy.deepcopy(VALID), rules)


# --- issue 9: counts cite $.stats or $.patterns[i] ---------------------------------------------

AUTH_LINE = "Jan 29 10:03:11 bastion sshd[812]: Failed password for root from 10.20.30.40 port 52144 ssh2"
SSH_SCOPE = {"service": "sshd", "keywords": ["Failed password"], "range": "", "range_origin": "whole snapshot"}
SSH_OUTPUT = {
    "logs": [
        {
            "timestamp": "2023-01-29T10:03:11.000+08:00",
            "level": None,
            "service": "sshd",
            "message": "Failed password for root from 10.20.30.40 port 52144 ssh2",
            "line": AUTH_LINE,
            "source": {"path": "logs/auth.log", "line": 1234},
        }
    ],
    "stats": {
        "total": 37,
        "first": "2023-01-29T10:03:11.000+08:00",
        "last": "2023-01-29T10:58:40.000+08:00",
        "by_level": {"none": 37},
        "by_source": {"logs/auth.log": 37},
        "range": "2023-01-29T10:03:00+08:00..2023-01-29T11:00:00+08:00",
        "range_origin": "whole snapshot",
        "filters": {"service": "sshd", "keywords": ["Failed password"], "level": None},
    },
    "patterns": [
        {
            "template": "Failed password for <*> from <*> port <*> <*>",
            "count": 14,
            "first": "2023-01-29T10:03:11.000+08:00",
            "last": "2023-01-29T10:40:02.000+08:00",
            "example": AUTH_LINE,
        }
    ],
    "total": 37,
    "truncated": True,
}
SSH = [_invocation(1, "query_logs", SSH_OUTPUT, SSH_SCOPE)]


def _count_claim(text, raw_path, excerpt):
    claim = _claim(_binding("query_logs", 1, raw_path, excerpt))
    claim["claim_text"] = text
    return _output(claim)


def test_the_stats_and_pattern_refs_render_from_the_output():
    refs = {ref.raw_path: ref.text for ref in SSH[0].retrieval_details.evidence_refs}
    assert list(refs) == ["$.logs[0]", "$.stats", "$.patterns[0]"]
    assert refs["$.logs[0]"] == f"logs/auth.log:1234 2023-01-29T10:03:11.000+08:00 {AUTH_LINE}"
    assert refs["$.stats"] == (
        "stats: 37 matching lines in 2023-01-29T10:03:00+08:00..2023-01-29T11:00:00+08:00 (whole snapshot); "
        "first 2023-01-29T10:03:11.000+08:00, last 2023-01-29T10:58:40.000+08:00; by level: none 37; "
        'by source: logs/auth.log 37; filters: service=sshd keywords="Failed password"'
    )
    assert refs["$.patterns[0]"] == (
        "pattern (count 14, first 2023-01-29T10:03:11.000+08:00, last 2023-01-29T10:40:02.000+08:00): "
        f"Failed password for <*> from <*> port <*> <*> — example: {AUTH_LINE}"
    )


@pytest.mark.parametrize(
    ("claim", "raw_path", "excerpt"),
    [
        ("37 failed SSH logins", "$.stats", "37 matching lines"),
        ("14 failed logins share one pattern", "$.patterns[0]", "pattern (count 14"),
    ],
)
def test_a_count_bound_to_stats_or_a_pattern_with_its_number_passes(rules, claim, raw_path, excerpt):
    result = _gate(_count_claim(claim, raw_path, excerpt), rules, SSH)
    assert result.status == "pass", result.failed_rules


def test_a_count_whose_excerpt_has_another_number_is_rejected(rules):
    result = _gate(_count_claim("38 failed SSH logins", "$.stats", "38 matching lines"), rules, SSH)
    _assert_fails(result, "binding.excerpt_supported", "reject")


def test_a_count_its_item_does_not_hold_is_rejected_naming_the_field(rules):
    result = _gate(_count_claim("38 failed SSH logins", "$.stats", "37 matching lines"), rules, SSH)
    _assert_fails(result, "claim.facts_match", "reject")
    assert "claim says 38; no field of $.stats is 38" in result.errors[0].message


@pytest.mark.parametrize("raw_path", ["$.patterns", "$.stat", "$.stats[x]", "$.stats..total", "$.patterns[0:1]"])
def test_stats_is_one_ref_and_patterns_an_array(rules, raw_path):
    result = _gate(_count_claim("37 failed SSH logins", raw_path, "37 matching lines"), rules, SSH)
    _assert_fails(result, "binding.raw_path_format", "reject")


# --- a raw_path naming one field of an item ---------------------------------------------------------


@pytest.mark.parametrize(
    "raw_path", ["$.stats.total", "$.stats.by_level.none", "$.stats.by_source['logs/auth.log']", "$.stats['total']"]
)
def test_a_binding_may_name_the_field_its_claim_states(rules, raw_path):
    result = _gate(_count_claim("37 failed SSH logins", raw_path, "37 matching lines"), rules, SSH)
    assert result.status == "pass", [e.message for e in result.errors]
    (checked,) = result.checked_bindings
    assert checked.matched_text.startswith("stats: 37 matching lines")  # the excerpt is matched in the item's ref
    assert [(f.claim, f.ok) for f in checked.facts if f.field.startswith(raw_path.split("[")[0].split(".by_")[0])] == [
        ("37", True)
    ]


def test_a_field_of_a_pattern_is_its_own_value(rules):
    result = _gate(
        _count_claim("14 failed logins share one pattern", "$.patterns[0].count", "pattern (count 14"), rules, SSH
    )
    assert result.status == "pass", [e.message for e in result.errors]
    assert [(f.claim, f.field) for f in result.checked_bindings[0].facts] == [("14", "$.patterns[0].count")]


def test_a_claim_that_does_not_state_the_field_it_cites_is_rejected(rules):
    result = _gate(_count_claim("37 failed SSH logins", "$.stats.first", "37 matching lines"), rules, SSH)
    _assert_fails(result, "claim.facts_match", "reject")
    assert "claim cites $.stats.first but does not state it (2023-01-29T10:03:11.000+08:00)" in result.errors[0].message


def test_a_field_value_another_field_holds_is_still_the_claims_fact(rules):
    # 37 is the total and the per-source count: citing the source's count states the same 37
    result = _gate(_count_claim("14 failed SSH logins", "$.stats.total", "37 matching lines"), rules, SSH)
    _assert_fails(result, "claim.facts_match", "reject")


@pytest.mark.parametrize(
    ("raw_path", "missing"),
    [("$.stats.totals", "totals"), ("$.stats.by_level.ERROR", "by_level.ERROR"), ("$.stats.total[0]", "total[0]")],
)
def test_a_field_the_item_does_not_hold_is_rejected_naming_it(rules, raw_path, missing):
    result = _gate(_count_claim("37 failed SSH logins", raw_path, "37 matching lines"), rules, SSH)
    _assert_fails(result, "binding.raw_path_exists", "reject")
    assert f"invocation 1's $.stats has no field {missing}" in result.errors[0].message


def test_an_excerpt_copied_from_what_the_model_is_shown_passes(rules):
    # the model view writes < and > as ‹ and › (so log text cannot close its block): a pattern's <*>
    # copied verbatim from it is the ref's text
    from evcli.tools.view import model_view

    shown = next(line for line in model_view(SSH[0]).splitlines() if line.startswith("$.patterns[0]: "))
    excerpt = shown.removeprefix("$.patterns[0]: ").split(" — ")[0]
    assert "‹*›" in excerpt
    result = _gate(_count_claim("14 failed logins share one pattern", "$.patterns[0]", excerpt), rules, SSH)
    assert result.status == "pass", [e.message for e in result.errors]


def test_a_small_sessions_result_is_left_to_the_young_collection(rules):
    """Only a large session's result skips the young generation (tests/gatekeeper/test_parallel.py)."""
    gc.collect()
    result = _gate(VALID, rules)
    assert id(result) not in {id(tracked) for tracked in gc.get_objects(generation=2)}
