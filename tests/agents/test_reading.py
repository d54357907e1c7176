"""A model's proposed reading of the question: checked by code, and used only to widen the code's reading."""

from __future__ import annotations

from evcli.agents.reading import ReadingReview, described, review_reading, widened
from evcli.contracts import EnvironmentOverview, Query

QUESTION = "How many “Connection refused” errors did payments log after the deploy?"
ENVIRONMENT = EnvironmentOverview(
    services=["payment-service", "order-service"],
    aliases={"payment-service": ["payments"], "order-service": ["orders"]},
    alerts=[{"alertname": "HighCPUUsage", "service": "payment-service", "state": "firing"}],
)
CODE = Query(services=["payment-service"], terms=["deploy"], answer="count", kinds=["count"], wants_count=True)


def review(proposal, scope: Query = CODE, question: str = QUESTION) -> ReadingReview:
    return review_reading(proposal, scope, question, ENVIRONMENT)


# --- what is kept, what is dropped ------------------------------------------------------------------------


def test_phrases_tokens_and_terms_are_kept_only_when_the_question_holds_them():
    checked = review(
        {
            "phrases": ["connection refused", "connection reset"],  # case differs; the second is not asked
            "tokens": ["ECONNREFUSED"],
            "terms": ["errors", ""],
        }
    )

    assert checked.accepted.phrases == ["connection refused"]
    assert checked.accepted.tokens == [] and checked.accepted.terms == ["errors"]
    assert checked.dropped == [
        "phrase 'connection reset': not in the question",
        "token 'ECONNREFUSED': not in the question",
        "term '': not in the question",
    ]


def test_the_question_is_compared_after_nfkc():
    checked = review(
        {"tokens": ["502"], "phrases": ["“bad gateway”"]}, question="ＨＴＴＰ ５０２ “Bad Gateway” on orders?"
    )

    assert checked.accepted.tokens == ["502"]
    assert checked.accepted.phrases == ["“bad gateway”"]
    assert checked.dropped == []


def test_services_must_be_the_environments_and_aliases_become_their_service():
    checked = review({"services": ["orders", "Payment_Service", "ghost-service"]})

    assert checked.accepted.services == ["order-service", "payment-service"]
    assert checked.dropped == ["service 'ghost-service': no service or alias of this environment"]


def test_alert_names_must_be_the_environments_as_it_spells_them():
    checked = review({"alertnames": ["highcpuusage", "DiskAlmostFull"]})

    assert checked.accepted.alertnames == ["HighCPUUsage"]
    assert checked.dropped == ["alertname 'DiskAlmostFull': no alert of this environment"]


def test_hosts_are_checked_against_the_question_as_the_overview_lists_none():
    checked = review({"hosts": ["web-01"]}, question="errors on web-01 since noon?")
    assert checked.accepted.hosts == ["web-01"] and checked.dropped == []

    assert review({"hosts": ["web-02"]}, question="errors on web-01 since noon?").dropped == [
        "host 'web-02': not in the question"
    ]


def test_a_level_is_added_only_to_levels_the_code_read():
    with_levels = CODE.model_copy(update={"levels": ["ERROR"]})
    checked = review({"levels": ["warn", "LOUD"]}, scope=with_levels)
    assert checked.accepted.levels == ["WARN"]
    assert checked.dropped == ["level 'LOUD': not a level (DEBUG, INFO, WARN, ERROR, FATAL)"]

    narrowing = review({"levels": ["ERROR"]})  # the code read no level: every level is searched
    assert narrowing.accepted.levels == []
    assert narrowing.dropped == ["level 'ERROR': the question asks for no level; a level filter would narrow it"]


def test_kinds_answer_and_by_must_be_the_tables():
    checked = review({"answer": "root_cause", "kinds": ["onset", "timeline"], "by": "address"})

    assert checked.accepted.answer is None and checked.accepted.kinds == ["onset"]
    assert checked.accepted.by is None
    assert checked.dropped[0].startswith("answer 'root_cause': not an answer kind (follow_up, changes, why,")
    assert checked.dropped[1].startswith("kind 'timeline': not an answer kind (")
    assert checked.dropped[2] == "by 'address': the reading names no breakdown"

    assert review({"kinds": ["breakdown"], "by": "subnet"}).dropped == [
        "by 'subnet': not a breakdown field (address, instance, path)"
    ]
    by_path = CODE.model_copy(update={"kinds": ["breakdown"], "answer": "breakdown", "by": "path"})
    assert review({"by": "address"}, scope=by_path).dropped == ["by 'address': the question's breakdown counts by path"]
    assert review({"answer": "breakdown", "by": "address"}).accepted.by == "address"


def test_a_malformed_reading_is_dropped_field_by_field():
    checked = review({"services": "orders", "phrases": [7, "connection refused"], "terms": {"a": 1}, "why": "x"})

    assert checked.accepted.services == ["order-service"]  # one string is a list of one
    assert checked.accepted.phrases == ["connection refused"]
    assert checked.dropped == [
        "why: not a field of a reading",
        "phrases: 7 is not a string",
        "terms: not a list (got dict)",
    ]
    assert review(["payment-service"]).dropped == ["reading: not an object (got list)"]
    assert review({}) == ReadingReview()


# --- widening --------------------------------------------------------------------------------------------


def test_the_widened_scope_adds_and_never_removes():
    accepted = review(
        {
            "services": ["order-service"],  # the code read payment-service only; the model leaves it out
            "phrases": ["Connection refused"],
            "terms": ["DEPLOY", "errors"],  # "deploy" is the code's already
            "kinds": ["onset"],
        }
    ).accepted

    wider = widened(CODE, accepted)

    assert wider.services == ["payment-service", "order-service"]
    assert wider.phrases == ["Connection refused"]
    assert wider.terms == ["deploy", "errors"]
    assert (wider.answer, wider.kinds, wider.wants_count) == ("count", ["count", "onset"], True)
    assert CODE.services == ["payment-service"] and CODE.kinds == ["count"]  # the code's reading is not changed


def test_a_kind_the_code_missed_takes_the_answer_by_table_order_and_replaces_the_fallback():
    looked_up = Query(answer="lookup", kinds=["lookup"])

    wider = widened(looked_up, review({"answer": "breakdown", "kinds": ["count"], "by": "address"}).accepted)

    assert (wider.answer, wider.kinds, wider.by, wider.wants_count) == (
        "count",
        ["count", "breakdown"],
        "address",
        True,
    )
    assert widened(looked_up, review({"kinds": ["lookup"]}).accepted) == looked_up


def test_nothing_accepted_leaves_the_scope_as_the_code_read_it():
    assert widened(CODE, review({"services": ["ghost"], "levels": ["ERROR"]}).accepted) == CODE


def test_the_trace_line_names_what_was_accepted_and_what_was_dropped():
    checked = review({"services": ["orders", "ghost"], "phrases": ["connection refused"], "kinds": ["onset"]})

    assert described(checked) == (
        'accepted services order-service, phrases "connection refused", kinds onset; '
        "dropped service 'ghost': no service or alias of this environment"
    )
    assert described(review({"tokens": ["x-1"]})) == "accepted nothing; dropped token 'x-1': not in the question"
    assert ReadingReview.model_validate(checked.record()) == checked  # stored and read back by trace
