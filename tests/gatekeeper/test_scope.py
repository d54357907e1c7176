"""The scope rules (evcli/gatekeeper/scope.py): each holds when the searches cover what was
asked and reports asked/searched when they do not; a session without a scope runs none."""

from __future__ import annotations

from evcli.contracts import AskedRange, Claim, EvidenceRef, Query, RetrievalDetails, ToolInvocation
from evcli.gatekeeper import scope as scope_rules
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.rules import load_rules

RANGE = "2026-03-18T09:00:00+01:00..2026-03-18T09:30:00+01:00"


def _negative_within_searched(scope, claims, invocations):
    """The rule as the gate runs it: with the widening words of the shipped rules.toml."""
    words = load_rules().param("scope.negative_within_searched", "widening_words")
    return scope_rules.negative_within_searched(scope, claims, invocations, words)


def logs(invocation_id=1, service="auth", query='"Accepted publickey"', range=RANGE, status="supported", **params):
    keywords = [word.strip('"') for word in ([query] if query.startswith('"') else query.split())]
    return ToolInvocation(
        invocation_id=invocation_id,
        tool_name="query_logs",
        input_params={"service": service, "query": query, **params},
        retrieval_details=RetrievalDetails(
            evidence_status=status, evidence_refs=[], service=service, keywords=keywords, range=range
        ),
        success=status != "failed",
    )


def alerts(invocation_id=2, alertname="ZooKeeperDown", state=None):
    params = {"alertname": alertname, **({"state": state} if state else {})}
    return ToolInvocation(
        invocation_id=invocation_id,
        tool_name="query_metrics",
        input_params=params,
        retrieval_details=RetrievalDetails(evidence_refs=[], keywords=[alertname], range=RANGE),
    )


def asked(**fields) -> Query:
    return Query(**fields)


def negative(text: str, invocation_id: int = 1) -> Claim:
    return Claim.model_validate(
        {
            "claim_id": "c1",
            "claim_type": "negative_observation",
            "claim_text": text,
            "evidence_bindings": [
                {
                    "tool_name": "query_logs",
                    "source_invocation_id": invocation_id,
                    "raw_path": "$.no_evidence",
                    "evidence_excerpt": "query_logs returned no evidence",
                }
            ],
        }
    )


def test_services_covered_holds_for_a_searched_service_and_names_a_missed_one():
    searched = scope_rules.searches([logs(service="auth")])
    assert scope_rules.services_covered(asked(services=["auth"]), searched) == []
    (miss,) = scope_rules.services_covered(asked(unknown_services=["payments-v3"]), searched)
    assert (miss.asked, miss.searched) == ("service payments-v3", "services auth")


def test_only_successful_evidence_searches_count():
    failed = scope_rules.searches([logs(status="failed")])
    assert failed == []
    assert scope_rules.services_covered(asked(services=["auth"]), failed)[0].searched == "nothing"


def test_terms_covered_phrase_kept_together_or_each_word_searched():
    scope = asked(services=["auth"], phrases=["Accepted publickey"])
    assert scope_rules.terms_covered(scope, scope_rules.searches([logs()])) == []
    assert scope_rules.terms_covered(scope, scope_rules.searches([logs(query="Accepted publickey")])) == []
    (miss,) = scope_rules.terms_covered(scope, scope_rules.searches([logs(query="publickey")]))
    assert miss.asked == 'phrase "Accepted publickey"' and miss.searched == 'keywords "publickey"'


def test_terms_covered_needs_the_asked_service_only_when_one_was_named():
    other = scope_rules.searches([logs(service="nginx")])
    assert scope_rules.terms_covered(asked(services=["auth"], phrases=["Accepted publickey"]), other)
    assert scope_rules.terms_covered(asked(services=["auth", "nginx"], phrases=["Accepted publickey"]), other) == []


def test_range_covered_contains_or_reports_both_ranges():
    inner = AskedRange(text="09:14-09:27", range="2026-03-18T09:14:00+01:00..2026-03-18T09:27:00+01:00")
    searched = scope_rules.searches([logs()])
    assert scope_rules.range_covered(asked(range=inner), searched) == []
    shifted = AskedRange(text="08:10-08:25", range="2026-03-18T08:10:00+01:00..2026-03-18T08:25:00+01:00")
    (miss,) = scope_rules.range_covered(asked(range=shifted), searched)
    assert (miss.asked, miss.searched) == (shifted.range, RANGE)
    since = AskedRange(text="since 09:10", range="2026-03-18T09:10:00+01:00..")
    assert scope_rules.range_covered(asked(range=since), searched) == []


def test_level_not_narrower():
    phrase = {"phrases": ["Accepted publickey"]}
    assert scope_rules.level_not_narrower(asked(**phrase), scope_rules.searches([logs()])) == []
    (miss,) = scope_rules.level_not_narrower(asked(**phrase), scope_rules.searches([logs(level="ERROR")]))
    assert (miss.asked, miss.searched) == ("level any", "level ERROR")
    assert scope_rules.level_not_narrower(asked(levels=["WARN"]), scope_rules.searches([logs(level="ERROR")]))
    assert scope_rules.level_not_narrower(asked(levels=["ERROR"]), scope_rules.searches([logs(level="WARN")])) == []
    # a broad question with nothing line-specific asked may search errors first
    assert scope_rules.level_not_narrower(asked(services=["auth"]), scope_rules.searches([logs(level="ERROR")])) == []


def _claim(raw_path: str) -> Claim:
    return Claim.model_validate(
        {
            "claim_id": "c1",
            "claim_type": "observation",
            "claim_text": "x",
            "evidence_bindings": [{"tool_name": "query_logs", "raw_path": raw_path, "evidence_excerpt": "x"}],
        }
    )


def test_count_claimed():
    assert scope_rules.count_claimed(asked(wants_count=True), [_claim("$.stats")]) == []
    assert scope_rules.count_claimed(asked(wants_count=True), [_claim("$.patterns[2]")]) == []
    assert scope_rules.count_claimed(asked(wants_count=True), [_claim("$.logs[0]")])[0].asked == "count"
    assert scope_rules.count_claimed(asked(), [_claim("$.logs[0]")]) == []
    # "how many errors did kafka log?" with no kafka here: the unknown-service negative answers the count
    unknown = _claim("$.no_evidence")
    unknown.evidence_bindings[0].evidence_excerpt = "message=unknown service 'kafka'"
    assert scope_rules.count_claimed(asked(wants_count=True, unknown_services=["kafka"]), [unknown]) == []
    assert scope_rules.count_claimed(asked(wants_count=True), [_claim("$.no_evidence")])[0].asked == "count"


def _bound(raw_path: str, invocation_id: int, claim_type: str = "observation") -> Claim:
    return Claim.model_validate(
        {
            "claim_id": "c1",
            "claim_type": claim_type,
            "claim_text": "x",
            "evidence_bindings": [
                {
                    "tool_name": "query_logs",
                    "source_invocation_id": invocation_id,
                    "raw_path": raw_path,
                    "evidence_excerpt": "x",
                }
            ],
        }
    )


def test_breakdown_claimed():
    """ "which IP …": the answer cites the stats of a search that counted by address, not any stats."""
    which_ip = asked(answer="breakdown", kinds=["breakdown"], by="address")
    by_address = logs(1, count_by="address")
    by_path = logs(2, count_by="path")
    assert scope_rules.breakdown_claimed(which_ip, [_bound("$.stats", 1)], [by_address, by_path]) == []
    assert scope_rules.breakdown_claimed(which_ip, [_bound("$.no_evidence", 1)], [by_address]) == []
    (miss,) = scope_rules.breakdown_claimed(which_ip, [_bound("$.stats", 2)], [by_address, by_path])
    assert (miss.asked, miss.searched) == ("by address", "no breakdown")
    assert scope_rules.breakdown_claimed(which_ip, [_bound("$.logs[0]", 1)], [by_address])
    assert scope_rules.breakdown_claimed(asked(), [_bound("$.logs[0]", 1)], [by_address]) == []


def test_why_answered():
    """A why-question's answer names a cause or says why it has none; another question needs neither."""
    why = asked(answer="why", kinds=["why"])
    observed = [_bound("$.logs[0]", 1)]
    (miss,) = scope_rules.why_answered(why, observed, {"hypotheses": [], "missing_info": []})
    assert miss.asked == "why"
    assert scope_rules.why_answered(why, observed, {"hypotheses": ["pool exhausted"]}) == []
    assert scope_rules.why_answered(why, observed, {"missing_info": ["no runbook matched"]}) == []
    assert scope_rules.why_answered(why, [_bound("$.logs[0]", 1, "root_cause")], {}) == []
    assert scope_rules.why_answered(asked(answer="count", kinds=["count"]), observed, {}) == []


def test_gate_checks_the_answer_shape_the_question_asks(rules):
    """The shape rules run inside the gate and cap the verdict (low_confid), naming what was asked."""
    output = {"answer_version": "executor_evidence_v2", "claims": [], "hypotheses": [], "missing_info": []}
    scope = asked(answer="why", kinds=["why", "breakdown"], by="path")
    result = gate(output, [logs(level="ERROR")], rules, scope=scope)
    assert {"scope.why_answered", "scope.breakdown_claimed"} <= set(result.failed_rules)
    assert result.severity == "low_confid"


def test_a_name_that_is_no_service_is_covered_by_a_search_of_it_as_a_keyword():
    """ "how many 500s did nova-api return?" where the logs of service nova name nova-api in each line."""
    scope = asked(unknown_services=["nova-api"], tokens=["500"], wants_count=True)
    found = scope_rules.searches([logs(service="nova", query="500 nova-api")])
    assert scope_rules.services_covered(scope, found) == []
    assert scope_rules.terms_covered(scope, found) == []
    elsewhere = scope_rules.searches([logs(service="nova", query="500")])
    assert scope_rules.services_covered(scope, elsewhere)[0].asked == "service nova-api"
    known = asked(services=["auth"], tokens=["500"])  # a known service is still searched as a service
    assert scope_rules.services_covered(known, scope_rules.searches([logs(service="nova", query="500 auth")]))


def test_alert_state_covered():
    still = asked(alertnames=["ZooKeeperDown"], alert_state="still_firing")
    assert scope_rules.alert_state_covered(still, scope_rules.searches([alerts(state="any")])) == []
    assert scope_rules.alert_state_covered(still, scope_rules.searches([alerts(), alerts(3, state="resolved")])) == []
    (miss,) = scope_rules.alert_state_covered(still, scope_rules.searches([alerts()]))
    assert miss.searched == "alert states firing, pending"
    silenced = asked(alertnames=["DiskSpaceLow"], alert_state="silenced")
    assert scope_rules.alert_state_covered(silenced, scope_rules.searches([alerts(alertname="DiskSpaceLow")]))
    assert (
        scope_rules.alert_state_covered(
            silenced, scope_rules.searches([alerts(alertname="DiskSpaceLow", state="suppressed")])
        )
        == []
    )


def test_negative_within_searched():
    searched = [logs(query="payments-v3", status="no_evidence"), logs(2, service="nginx")]
    scope = asked(services=["auth"])
    ok = negative("This query of auth for payments-v3 between 09:00 and 09:30 found no matching evidence.")
    assert _negative_within_searched(scope, [ok], searched) == []
    for text in (
        "payments-v3 was never logged.",
        "No payments-v3 anywhere.",
        "auth and nginx found no payments-v3.",
        "No payments-v3 in the last 24 hours.",
        "No payments-v3 today.",
        "No payments-v3 between 07:00 and 08:00.",
        "从未出现 payments-v3。",
        "没有任何 payments-v3。",
    ):
        assert _negative_within_searched(scope, [negative(text)], searched), text


def test_gate_without_scope_runs_no_scope_rule(rules):
    output = {"answer_version": "executor_evidence_v2", "claims": []}
    invocations = [logs(level="ERROR")]
    old = gate(output, invocations, rules)
    assert old.severity == "none" and not any(r.startswith("scope.") for r in old.failed_rules)
    scoped = gate(output, invocations, rules, scope=asked(services=["nginx"], wants_count=True))
    assert scoped.severity == "low_confid"
    assert scoped.failed_rules == ["scope.count_claimed", "scope.level_not_narrower", "scope.services_covered"]
    finding = next(f for f in scoped.errors if f.rule == "scope.services_covered")
    assert (finding.asked, finding.searched) == ("service nginx", "services auth")


def test_negative_stating_its_own_absolute_range_is_not_widened():
    text = "This query found no matching evidence (range=2026-03-18T08:00:00+00:00..2026-03-18T08:30:00+00:00)."
    assert _negative_within_searched(asked(), [negative(text)], [logs(status="no_evidence")]) == []
    widened = "No matching evidence between 09:14-10:40."
    assert _negative_within_searched(asked(), [negative(widened)], [logs(status="no_evidence")])


def test_negative_about_a_host_holds_when_its_search_held_the_host_as_a_keyword():
    """'any "No space left on device" on dn-07?': the host is searched as a word the lines must hold."""
    scope = asked(hosts=["dn-07"], phrases=["No space left on device"])
    text = "This query found no matching evidence (query_logs, query=No space left on device dn-07)."
    with_host = [logs(service="", query='"No space left on device" dn-07', status="no_evidence")]
    with_host[0].retrieval_details.keywords = ["No space left on device", "dn-07"]
    assert _negative_within_searched(scope, [negative(text)], with_host) == []
    without = [logs(service="", query='"No space left on device"', status="no_evidence")]
    assert _negative_within_searched(scope, [negative(text)], without)
    other_host = [logs(service="", query='"No space left on device" dn-03', status="no_evidence")]
    other_host[0].retrieval_details.keywords = ["No space left on device", "dn-03"]
    assert _negative_within_searched(scope, [negative(text)], other_host)


def test_a_negative_without_id_is_read_against_the_search_its_excerpt_names():
    # two log searches found nothing: the binding without an id is back-filled from the one whose
    # $.no_evidence text holds its excerpt, and its claim is judged against that search's scope
    def empty(invocation_id, service):
        invocation = logs(invocation_id, service=service, query="", status="no_evidence")
        text = f"query_logs returned no evidence; query={service}; level>=WARN; total=0"
        invocation.retrieval_details.evidence_refs = [EvidenceRef(raw_path="$.no_evidence", text=text)]
        return invocation

    searched = [empty(1, "auth"), empty(2, "nginx")]
    claim = negative("This query found no matching evidence: query_logs for nginx returned total=0.")
    claim.evidence_bindings[0].source_invocation_id = None
    claim.evidence_bindings[0].evidence_excerpt = "query_logs returned no evidence; query=nginx; level>=WARN"
    assert _negative_within_searched(asked(), [claim], searched) == []
    claim.evidence_bindings[0].evidence_excerpt = "query_logs returned no evidence; query=auth; level>=WARN"
    assert _negative_within_searched(asked(), [claim], searched)  # the auth search did not search nginx
