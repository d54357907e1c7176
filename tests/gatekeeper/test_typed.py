"""evcli/gatekeeper/typed.py: a claim's stated facts against its cited item's typed fields.

Items are shaped as the tools record them (query_metrics alerts and series, query_logs lines,
stats and patterns, find_changes changes); each false claim names the field it disagrees with,
each honest paraphrase from issue 22 passes."""

from __future__ import annotations

import pytest

from evcli.gatekeeper import typed, typed_model

ALERT = {
    "alertname": "HighMemoryUsage",
    "service": "order-service",
    "state": "firing",
    "value": 91.0,
    "unit": "%",
    "duration": "17m",
    "active_at": "2026-07-08T22:53:00Z",
    "summary": "Memory usage of order-service is 91% (heap 3.8GB/4GB), threshold 85%",
}
PENDING = dict(ALERT, state="pending")
RESOLVED = dict(ALERT, state="resolved")
SERIES = {
    "metric": "p99_latency",
    "service": "checkout",
    "unit": "s",
    "min": 0.052,
    "max": 0.739,
    "last": 0.061,
    "max_at": "2026-03-18T09:11:23.231+01:00",
    "samples": [[1, 0.739], [2, 0.5], [3, 0.2], [4, 0.061], [5, 0.052]],
}
LOG = {
    "service": "order-service",
    "timestamp": "2026-07-08T23:05:28.114+00:00",
    "level": "ERROR",
    "message": "call to payment-service timed out after 30000ms; pod exited with exit code 137, restartCount=5",
}
STATS = {
    "total": 184000,
    "records": 61,
    "by_level": {"ERROR": 1200, "WARN": 350},
    "first": "2026-07-08T22:38:11.402+00:00",
    "filters": {"service": "order-service"},
}
PATTERNS = [{"count": 40, "template": "GC <*>"}, {"count": 12, "template": "timeout <*>"}]
SERVICES = ("order-service", "payment-service", "checkout")


def check(text: str, item: dict, raw_path: str = "$.alerts[0]", siblings: list | None = None) -> typed_model.ClaimCheck:
    cited = typed_model.Cited(0, raw_path, typed.item_values(item, raw_path), siblings or [])
    return typed.check_claim(text, [cited], SERVICES)


@pytest.mark.parametrize(
    ("text", "item", "raw_path"),
    [
        ("checkout p99 latency peaked at 739 ms", SERIES, "$.series[0]"),
        ("checkout p99 peaked at 0.74 s at 09:11:23", SERIES, "$.series[0]"),
        ("checkout latency fell to about 0.05 s", SERIES, "$.series[0]"),
        ("order-service logged 184,000 lines, 1,200 of them ERROR", STATS, "$.stats"),
        ("order-service logged ~184k lines in 61 records", STATS, "$.stats"),
        ("HighMemoryUsage on order-service is firing at about 90% for 17 minutes", ALERT, "$.alerts[0]"),
        ("HighMemoryUsage on order-service is not yet firing", PENDING, "$.alerts[0]"),
        ("order-service heap 3.8GB of 4GB, threshold 85%", ALERT, "$.alerts[0]"),
        ("order-service logged a call to payment-service timing out after 30 s", LOG, "$.logs[0]"),
        ("order-service exited with exit code 137 after 5 restarts", LOG, "$.logs[0]"),
        ("HighMemoryUsage has been firing since 2026-07-08 22:53", ALERT, "$.alerts[0]"),
        # facts.toml rows from the env-base benign classes (benign_state_worded, benign_approximate_worded)
        ("HighMemoryUsage on order-service has stopped firing", RESOLVED, "$.alerts[0]"),
        ("HighMemoryUsage on order-service is not firing yet", PENDING, "$.alerts[0]"),
        ("order-service 的 HighMemoryUsage 告警还未触发", PENDING, "$.alerts[0]"),
        ("order-service logged approx. 180,000 lines", STATS, "$.stats"),
        ("order-service logged close to 180,000 lines", STATS, "$.stats"),
        ("order-service 记录了差不多 180000 条日志", STATS, "$.stats"),
        ("checkout p99 peaked at approx. 0.74 s", SERIES, "$.series[0]"),
        ("checkout p99 峰值差不多 0.74 秒", SERIES, "$.series[0]"),
        ("order-service heap 3,800 megabytes of 4 gigabytes", ALERT, "$.alerts[0]"),
    ],
)
def test_an_honest_paraphrase_agrees_with_its_fields(text, item, raw_path):
    checked = check(text, item, raw_path)
    assert checked.problems == [], checked.facts
    assert checked.facts and all(fact.ok and fact.field for fact in checked.facts)


@pytest.mark.parametrize(
    ("text", "item", "raw_path", "named"),
    [
        ("checkout p99 latency peaked at 0.739 ms", SERIES, "$.series[0]", "$.series[0]"),
        ("checkout p99 latency rose to 0.739 s", SERIES, "$.series[0]", "$.series[0].samples"),
        ("checkout p99 peaked at 0.052 s", SERIES, "$.series[0]", "$.series[0].max"),
        ("order-service heap at 3.8MB", ALERT, "$.alerts[0]", "$.alerts[0].summary"),
        ("HighMemoryUsage on order-service has fired for 17 hours", ALERT, "$.alerts[0]", "$.alerts[0].duration"),
        ("HighMemoryUsage's current value is 85%", ALERT, "$.alerts[0]", "$.alerts[0].value"),
        ("HighMemoryUsage on order-service is resolved", ALERT, "$.alerts[0]", "$.alerts[0].state"),
        ("HighMemoryUsage on order-service is firing", PENDING, "$.alerts[0]", "$.alerts[0].state"),
        ("order-service logged 350 ERROR lines", STATS, "$.stats", "$.stats.by_level.ERROR"),
        ("order-service logged 61 ERROR lines", STATS, "$.stats", "$.stats.by_level.ERROR"),
        ("order-service exited with exit code 5 after 137 restarts", LOG, "$.logs[0]", "$.logs[0].message"),
        ("payment-service timed out after 30000ms", LOG, "$.logs[0]", "$.logs[0].service"),
        ("order-service logged its first line at 22:39", STATS, "$.stats", "no time of $.stats"),
        ("order-service matching lines were first seen at 22:39", STATS, "$.stats", "$.stats.first"),
        ("HighMemoryUsage on order-service has stopped firing", ALERT, "$.alerts[0]", "$.alerts[0].state"),
        ("HighMemoryUsage on order-service is not firing yet", ALERT, "$.alerts[0]", "$.alerts[0].state"),
        ("order-service 的 HighMemoryUsage 告警还未触发", ALERT, "$.alerts[0]", "$.alerts[0].state"),
        ("order-service logged approx. 150,000 lines", STATS, "$.stats", "no field of $.stats"),
        ("order-service logged close to 150,000 lines", STATS, "$.stats", "no field of $.stats"),
        ("order-service 记录了差不多 150000 条日志", STATS, "$.stats", "no field of $.stats"),
        # an approximate word between a role word and its value keeps the role ("peak" is the max, not the min)
        ("checkout p99 peaked at approx. 0.05 s", SERIES, "$.series[0]", "$.series[0].max"),
        ("checkout p99 peaked at close to 0.05 s", SERIES, "$.series[0]", "$.series[0].max"),
        ("checkout p99 峰值差不多 0.05 s", SERIES, "$.series[0]", "$.series[0].max"),
        ("order-service heap at 3.8 megabytes", ALERT, "$.alerts[0]", "$.alerts[0].summary"),
    ],
)
def test_a_false_fact_fails_naming_the_field(text, item, raw_path, named):
    checked = check(text, item, raw_path)
    assert checked.problems, checked.facts
    assert any(named in problem for problem in checked.problems), checked.problems


def test_most_frequent_must_be_the_top_item_of_its_array():
    top = check("the most frequent pattern has 40 lines", PATTERNS[0], "$.patterns[0]", PATTERNS)
    second = check("the most frequent pattern has 12 lines", PATTERNS[1], "$.patterns[1]", PATTERNS)
    assert top.problems == []
    assert second.problems and "$.patterns[1].count is 12" in second.problems[0]


def test_a_sign_is_dropped_only_with_a_past_word():
    expiry = {"service": "edge", "value": -1200.0, "unit": "s"}
    assert check("the certificate expired 1200s ago", expiry).problems == []
    assert check("the certificate expires in 1200s", expiry).problems


def test_from_to_must_go_the_way_the_data_went():
    assert check("checkout p99 went from 0.739 s to 0.061 s", SERIES, "$.series[0]").problems == []
    assert check("checkout p99 went from 0.061 s to 0.739 s", SERIES, "$.series[0]").problems


def test_what_was_compared_is_consumed_for_the_excerpt_check():
    text = "checkout p99 peaked at 739 ms"
    checked = check(text, SERIES, "$.series[0]")
    assert "739" not in typed.without(text, checked.consumed)


def test_a_number_inside_a_path_stays_with_its_path_for_the_excerpt_check():
    """The typed check compares 94954 with the log line's request path, but the path is an identifier of its
    own: blanking only the number would leave "api/profile/", a token no excerpt holds (an honest quote
    rejected), and would let a forged "/api/admin/94954" pass with the right number."""
    from evcli.gatekeeper.facts import missing_facts

    line = '2025-10-05T06:18:36.000-04:00 ERROR "GET /api/profile/94954 HTTP/1.1" 500 339'
    item = {"timestamp": "2025-10-05T06:18:36.000-04:00", "level": "ERROR", "service": "api-gateway", "message": line}
    for text, missing in (
        ('api-gateway logged ERROR: "GET /api/profile/94954 HTTP/1.1" 500', []),
        ('api-gateway logged ERROR: "GET /api/admin/94954 HTTP/1.1" 500', ["identifier api/admin/94954"]),
    ):
        checked = check(text, item, "$.logs[0]")
        assert missing_facts(typed.without(text, checked.consumed), [f"logs/api-gateway.log:404 {line}"]) == missing
    # a rate's unit after the number is no path: the number compared is blanked, "/s" stays a unit
    assert typed.without("last=50.0/s", [(5, 9)]) == "last=    /s"


def test_a_port_inside_a_url_stays_part_of_the_url():
    """An honest quote of a line naming http://refund:8080/api/refund/52301: the port the typed check compared is
    part of the URL, which the excerpt check then finds whole (blanked, "api/refund/52301" was a token no excerpt
    holds: the claim was rejected)."""
    from evcli.gatekeeper.facts import missing_facts

    line = "2026-04-18T23:39:49.072-04:00 ERROR Invalid response from http://refund:8080/api/refund/52301: bad float"
    item = {"timestamp": "2026-04-18T23:39:49.072-04:00", "level": "ERROR", "service": "delivery", "message": line}
    excerpt = f"logs/delivery.log:996 {line}"
    for text, missing in (
        ("delivery logged ERROR: Invalid response from http://refund:8080/api/refund/52301", []),
        (
            "delivery logged ERROR: Invalid response from http://refund:8080/api/admin/52301",
            ["identifier 8080/api/admin/52301"],
        ),
    ):
        checked = check(text, item, "$.logs[0]")
        assert missing_facts(typed.without(text, checked.consumed), [excerpt]) == missing


@pytest.mark.parametrize(
    ("text", "negation"),
    [("HighMemoryUsage on order-service is not firing yet", "not"), ("HighMemoryUsage 告警还未触发", "未")],
)
def test_a_state_phrase_with_a_negation_is_consumed_whole(text, negation):
    # its "not" / 未 is the state's word, not a negation the excerpts must carry
    checked = check(text, PENDING)
    assert checked.problems == []
    assert negation not in typed.without(text, checked.consumed)


def test_a_date_inside_a_path_is_part_of_the_name_not_a_stated_time():
    disk = {"service": "node-worker-01", "message": "largest writers: /data/tmp/export-2026-07-08 (21G)"}
    text = "node-worker-01 logged /data/tmp/export-2026-07-08 (21G)"
    checked = check(text, disk, "$.logs[0]")
    assert checked.problems == []
    assert "/data/tmp/export-2026-07-08" in typed.without(text, checked.consumed)
    assert [fact.kind for fact in typed.stated_facts(text)] == ["number"]  # 21G, no time


def field_check(text: str, item: dict, field: str, raw_path: str = "$.changes[0]") -> typed_model.ClaimCheck:
    """A claim whose one binding names `field` of its item."""
    cited = typed_model.Cited(0, raw_path, typed.item_values(item, raw_path), [], raw_path + field)
    return typed.check_claim(text, [cited], SERVICES)


CHANGE = {"service": "orders-consumer", "kind": "alert", "value": 184000.0, "peak": 184000.0, "score": 3.0}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("orders-consumer's lag peaked at 184,000 messages", ".value"),  # the peak holds it too: still stated
        ("orders-consumer's lag peaked at 184,000 messages", ".peak"),
        ("orders-consumer scored 3.0", ".score"),
    ],
)
def test_a_binding_naming_a_field_passes_when_the_claim_states_its_value(text, field):
    checked = field_check(text, CHANGE, field)
    assert checked.problems == []
    assert any(f.ok and f.field == "$.changes[0]" + field for f in checked.facts)


def test_a_binding_naming_a_field_its_claim_does_not_state_fails_naming_it():
    checked = field_check("orders-consumer scored 3.0", CHANGE, ".peak")
    assert checked.problems == ["claim cites $.changes[0].peak but does not state it (184000.0)"]


def test_the_field_a_binding_names_is_matched_before_any_other():
    # 3.0 is both this item's score and another cited item's value: the named field takes it
    other = typed_model.Cited(0, "$.suspects[0]", typed.item_values({"score": 3.0}, "$.suspects[0]"))
    named = typed_model.Cited(1, "$.changes[0]", typed.item_values(CHANGE, "$.changes[0]"), [], "$.changes[0].score")
    checked = typed.check_claim("orders-consumer, score=3.0", [other, named], SERVICES)
    assert checked.problems == [] and [(f.field, f.binding_index) for f in checked.facts if f.claim == "3.0"] == [
        ("$.changes[0].score", 1)
    ]


def test_digits_of_a_name_spelled_with_spaces_are_no_quantity():
    rate = {"metric": "http_401_per_s", "service": "checkout", "min": 0.45, "max": 0.5}
    assert check("checkout http 401 per s peaked at 0.5", rate, "$.series[0]").problems == []
    assert check("checkout http 401 per s peaked at 401", rate, "$.series[0]").problems  # a quantity still is one


def test_an_iso_time_is_a_time_not_a_name():
    pattern = {"count": 1, "first": "2026-06-04T14:40:05.000-04:00", "template": "ERROR <*>"}
    values = typed.item_values(pattern, "$.patterns[0]")
    assert [(v.path, v.kind, v.roles) for v in values if v.path.endswith(".first")] == [
        ("$.patterns[0].first", "time", frozenset({"first"}))
    ]


@pytest.mark.parametrize(
    "text",
    [
        "errors from 2026-03-18T08:05:00Z to 2026-03-18T08:12:00Z",  # the same instants in UTC
        "errors on Mar 18 between 09:05 and 09:12",
        "errors on 2026年3月18日 09:05 至 09:12",
        "errors from 2026-03-18 09:05:00 (UTC+1) to 09:12",
    ],
)
def test_a_range_of_times_honestly_rewritten_passes(text):
    stats = {"range": "2026-03-18T09:05:00+01:00..2026-03-18T09:12:00+01:00", "total": 14}
    assert check(text, stats, "$.stats").problems == []


@pytest.mark.parametrize(
    "text",
    [
        "errors from 2026-03-18T09:12:00+01:00 to 2026-03-18T09:12:00+01:00",  # the start moved to the end
        "errors from 2026-03-18T09:05:00Z to 2026-03-18T09:12:00Z",  # the wall clock in another zone
    ],
)
def test_a_range_of_times_falsely_rewritten_fails(text):
    stats = {"range": "2026-03-18T09:05:00+01:00..2026-03-18T09:12:00+01:00", "total": 14}
    assert check(text, stats, "$.stats").problems


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("HighMemoryUsage on order-service: current=0.91", True),  # a fraction for a percentage
        ("HighMemoryUsage on order-service: current=0.85", False),
        ("HighMemoryUsage on order-service is over 90%", True),
        ("HighMemoryUsage on order-service is over 95%", False),
        ("HighMemoryUsage on order-service 当前超过 90%", True),
        ("HighMemoryUsage on order-service 当前不到 95%", True),  # 不到's 不 negates nothing
        ("HighMemoryUsage on order-service 当前不到 90%", False),
        ("HighMemoryUsage on order-service 当前为91%", True),  # a number right after CJK is read
        ("HighMemoryUsage on order-service 当前为93%", False),
        ("HighMemoryUsage on order-service: current 90%以上", True),
        ("HighMemoryUsage on order-service 当前差不多 90%", True),
    ],
)
def test_fractions_bounds_and_cjk_neighbours(text, ok):
    assert (check(text, ALERT).problems == []) is ok


def test_rounding_does_not_give_a_role_the_exact_value_of_another():
    rate = {"metric": "http_401_per_s", "service": "checkout", "min": 0.45, "max": 0.5}
    assert check("checkout min=0.45, max=0.5", rate, "$.series[0]").problems == []
    assert check("checkout min=0.5, max=0.5", rate, "$.series[0]").problems  # the max's value as the min
    assert check("checkout min=0.5", {"min": 0.45, "max": 0.9}, "$.series[0]").problems == []  # rounded


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("checkout p99 latency ranging from 0.052 s to 0.739 s", True),  # a spread, not a change
        ("checkout p99 latency between 52 ms and 739 ms", True),
        ("checkout p99 latency ranging from 0.739 s to 0.052 s", False),  # min and max swapped
        ("checkout p99 latency went from 0.739 s to 0.061 s", True),  # a change: the way the data went
    ],
)
def test_a_spread_of_values_is_min_and_max(text, ok):
    assert (check(text, SERIES, "$.series[0]").problems == []) is ok


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("the certificate expires in 168 hours 20 minutes", True),
        ("the certificate expires in 10100 minutes", True),
        ("the certificate expires in 168小时20分钟", True),
        ("the certificate expires in 168 hours 30 minutes", False),
        ("the certificate expires in 168 hours", True),  # at the precision written
    ],
)
def test_a_duration_in_several_units_is_one_duration(text, ok):
    certificate = {"service": "edge", "expires_in": "168h20m"}
    assert (check(text, certificate).problems == []) is ok


def test_the_service_before_an_attribution_word_is_the_subject_not_one_its_line_names():
    line = {"service": "order-service", "level": "WARN", "message": "call to payment-service timed out after 30000ms"}
    quoted = "call to payment-service timed out after 30000ms (order-service logged WARN)"
    assert check(quoted, line, "$.logs[0]").problems == []
    assert check("payment-service timed out after 30000ms", line, "$.logs[0]").problems  # the upstream as subject
    assert check("payment-service logged: call to payment-service timed out", line, "$.logs[0]").problems


def test_a_change_keeps_its_baseline_and_spread_apart_from_its_value():
    change = {"service": "checkout", "baseline": 0.48, "spread": 0.02965, "value": 3.4, "peak": 3.4, "unit": "s"}
    honest = "checkout p99 at 3.4s against a baseline median of 0.48s (spread 0.02965s)"
    assert check(honest, change, "$.changes[0]").problems == []
    assert check(honest.replace("median of 0.48s", "median of 3.4s"), change, "$.changes[0]").problems
    assert check(honest.replace("spread 0.02965s", "spread 0.48s"), change, "$.changes[0]").problems


def test_a_service_inside_an_image_or_a_path_is_not_the_subject():
    """ "shop/checkout:1.4.2" and "logs/checkout.log" name no service the claim speaks of."""
    item = dict(LOG, service="checkout-service", message="pulled image shop/checkout:1.4.2")
    cited = typed_model.Cited(0, "$.logs[0]", typed.item_values(item, "$.logs[0]"))
    result = typed.check_claim(
        "image shop/checkout:1.4.2 was pulled by checkout-service", [cited], ("checkout", "checkout-service")
    )
    assert not any("speaks of" in problem for problem in result.problems), result.problems
    moved = typed.check_claim("checkout pulled image shop/checkout:1.4.2", [cited], ("checkout", "checkout-service"))
    assert any("claim speaks of checkout" in problem for problem in moved.problems), moved.problems
