"""The offline engine searches for what the question scope names (issue 10)."""

from dataclasses import replace

import pytest

from evcli.agents.offline.payload import intent_of
from evcli.agents.offline.queries import evidence_calls, follow_up_calls, narrow_calls, overview_gap_calls
from evcli.contracts import AskedRange, Query


def _ask(vocabulary=None, known=("nginx", "auth"), **scope):
    question = Query(**scope)
    payload = {
        "language": "en",
        "task_scope": question.task_scope,
        "intent": {"services": question.services, "alertnames": question.alertnames},
        "scope": question.model_dump(mode="json"),
        "environment": {"services": list(known), "vocabulary": vocabulary or {}},
    }
    return intent_of(payload)


def test_phrase_and_token_are_searched_together_verbatim_in_the_asked_range_without_a_level():
    asked = AskedRange(text="between 09:00 and 09:10", range="2026-03-18T09:00:00+01:00..2026-03-18T09:10:00+01:00")
    ask = _ask(task_scope="narrow", services=["nginx"], tokens=["10.20.30.40", "401"], range=asked)
    [call] = narrow_calls(ask, "how many 401s from 10.20.30.40 between 09:00 and 09:10?")
    assert call.name == "query_logs"
    assert call.arguments == {
        "service": "nginx",
        "query": "10.20.30.40 401",
        "since": "2026-03-18T09:00:00+01:00",
        "until": "2026-03-18T09:10:00+01:00",
    }


def test_quoted_phrase_without_a_service_searches_every_log_and_an_asked_level_filters():
    ask = _ask(task_scope="narrow", phrases=["Accepted publickey"])
    assert narrow_calls(ask, "did anyone log in? 'Accepted publickey'")[0].arguments == {
        "query": '"Accepted publickey"'
    }
    warned = _ask(task_scope="narrow", phrases=["Connection reset by peer"], levels=["WARN"])
    assert narrow_calls(warned, "warnings 'Connection reset by peer'")[0].arguments["level"] == "WARN"


def test_content_word_is_searched_only_where_the_logs_have_it():
    ask = _ask(task_scope="narrow", terms=["deadlock", "confirm"], vocabulary={"deadlock": {"shop-api": 3}})
    [call] = narrow_calls(ask, "Only confirm whether the API logged any deadlock.")
    assert call.arguments == {"service": "shop-api", "query": "deadlock"}


def test_unknown_service_gets_its_own_call_and_still_firing_asks_any_state():
    ask = _ask(task_scope="narrow", unknown_services=["payments-v3"], levels=["ERROR"])
    # the unknown service is asked what the question asks (its ERROR logs), and nothing else is searched instead
    assert [call.arguments for call in narrow_calls(ask, "Does payments-v3 have any ERROR logs?")] == [
        {"service": "payments-v3", "level": "ERROR"}
    ]
    token = _ask(task_scope="narrow", unknown_services=["shop-api-v2"], tokens=["502"])
    [call] = narrow_calls(token, "shop-api-v2 有没有 502？")
    assert call.name == "query_logs" and call.arguments == {"service": "shop-api-v2", "query": "502"}
    disk = _ask(task_scope="narrow", unknown_services=["web-02"])
    [call] = narrow_calls(disk, "is web-02 out of disk?")  # no log words: its alerts and series
    assert call.name == "query_metrics" and call.arguments == {"service": "web-02"}
    alert = _ask(task_scope="narrow", alertnames=["DiskAlmostFull"], alert_state="still_firing")
    [call] = narrow_calls(alert, "Is the DiskAlmostFull alert still firing?")
    assert call.arguments == {"alertname": "DiskAlmostFull", "state": "any"}


def test_broad_task_searches_the_asked_phrase_besides_the_warn_overview():
    ask = _ask(services=["nginx"], phrases=["upstream timed out"])
    calls = evidence_calls(ask, "why is nginx slow? 'upstream timed out'", ["nginx"], None)
    logs = [call.arguments for call in calls if call.name == "query_logs"]
    assert {"service": "nginx", "level": "WARN", "limit": 20} in logs
    assert {"service": "nginx", "query": '"upstream timed out"', "limit": 20} in logs


def test_tokens_of_a_question_naming_no_service_are_searched_where_the_logs_hold_them_all():
    vocabulary = {"401": {"nginx": 40, "auth": 2}, "10.20.30.40": {"nginx": 27}}
    ask = _ask(vocabulary, task_scope="narrow", tokens=["401", "10.20.30.40"], wants_count=True)
    [call] = narrow_calls(ask, "How many 401s came from 10.20.30.40?")
    assert call.arguments == {"service": "nginx", "query": "401 10.20.30.40"}
    nowhere = _ask({"401": {"nginx": 40}}, task_scope="narrow", tokens=["401", "10.9.9.9"])
    [call] = narrow_calls(nowhere, "any 401 from 10.9.9.9?")
    assert call.arguments == {"query": "401 10.9.9.9"}  # no service holds both: every log


def test_a_count_counts_every_word_asked_together_and_a_relative_range_is_its_window():
    asked = AskedRange(
        text="最近 20 分钟", range="2026-03-18T09:10:00+01:00..2026-03-18T09:30:00+01:00", relative="20m"
    )
    vocabulary = {"session": {"nginx": 50}, "expired": {"nginx": 14, "auth": 1}}
    ask = _ask(vocabulary, task_scope="narrow", services=["nginx"], terms=["session", "expired"], range=asked)
    assert [c.arguments for c in narrow_calls(ask, "nginx 最近 20 分钟 session expired?")] == [
        {"service": "nginx", "query": "session", "window": "20m"}
    ]
    count = _ask(vocabulary, task_scope="narrow", services=["nginx"], terms=["session", "expired"], wants_count=True)
    [call] = narrow_calls(count, "how many session expired in nginx?")
    assert call.arguments == {"service": "nginx", "query": "session expired"}


def test_words_asked_together_stay_together_across_a_word_no_log_holds():
    """ "failed password attempts for root": no log says "attempts", so it links "password" and "root" as
    "for" does; the count and the when-question search the three words together, not "root" alone."""
    vocabulary = {"failed": {"auth": 60}, "password": {"auth": 45}, "root": {"auth": 27}}
    terms = ["failed", "password", "attempts", "root"]
    count = _ask(vocabulary, services=["auth"], terms=terms, wants_count=True)
    queries = [
        c.arguments.get("query")
        for c in evidence_calls(count, "how many failed password attempts for root?", ["auth"], None)
    ]
    assert "root password failed" in queries and "root" not in queries
    when = _ask(vocabulary, services=["auth"], terms=terms, answer="onset", kinds=["onset"])
    queries = [
        c.arguments.get("query")
        for c in evidence_calls(when, "when did the failed password attempts for root start?", ["auth"], None)
    ]
    # the first line of what was asked: the words together, as a count has them (not the rarest word alone)
    assert "root password failed" in queries and "root" not in queries
    apart = _ask(vocabulary, services=["auth"], terms=["failed", "password", "root"], wants_count=True)
    queries = [
        c.arguments.get("query")
        for c in evidence_calls(apart, "how many failed logins, and any password for root?", ["auth"], None)
    ]
    assert "root password failed" not in queries  # "logins, and any" is not one asked thing


def test_a_retry_on_a_snapshot_of_logs_alone_reads_no_series():
    logs_only = replace(_ask(services=["auth"]), capabilities=("logs",))
    assert {call.name for call in follow_up_calls(logs_only, ["auth"])} == {"query_logs"}
    assert {call.name for call in follow_up_calls(_ask(services=["auth"]), ["auth"])} == {"query_logs", "query_metrics"}


def test_a_broad_task_searches_the_strongest_word_its_services_logs_contain():
    vocabulary = {"slow": {"user-service": 3}, "thread pool": {"payment-service": 9}}
    ask = _ask(
        vocabulary,
        known=("payment-service", "user-service"),
        services=["payment-service"],
        terms=["slow", "thread pool"],
    )
    logs = [
        c.arguments
        for c in evidence_calls(ask, "why is payment-service slow? thread pool full?", ["payment-service"], None)
    ]
    assert {"service": "payment-service", "query": '"thread pool"', "limit": 20} in logs
    assert not any(arguments.get("query") == "slow" for arguments in logs)


def test_a_status_class_is_searched_verbatim_and_at_the_level_its_statuses_imply():
    ask = _ask(services=["nginx"], tokens=["5xx"])
    logs = [call.arguments for call in evidence_calls(ask, "nginx 5xx?", ["nginx"], None) if call.name == "query_logs"]
    assert {"service": "nginx", "query": "5xx", "limit": 20} in logs
    assert {"service": "nginx", "level": "ERROR", "limit": 20} in logs


def test_a_status_class_holds_a_status_of_its_class_but_not_a_version():
    from evcli.agents.offline.claims import holds

    assert holds('"POST /api/orders HTTP/1.1" 502 157', "5xx")
    assert not holds('"GET / HTTP/1.1" 200 12 "Mozilla AppleWebKit/537.36"', "5xx")
    assert holds("Invalid user oracle from 1.2.3.4", "invalid USER oracle")


@pytest.mark.parametrize(
    "line",
    ["INFO order ORD-7 placed by OrderServiceImpl#548", "\tat com.example.shop.Foo.bar(Foo.java:503)",
     "INFO config read at Foo.java:500", "INFO unexpected token at line 502", "INFO listening on port 5003",
     "INFO user id=5001 logged in", "INFO processed batch of 500 records"],
)  # fmt: skip
def test_a_status_class_holds_no_number_that_is_not_written_as_a_status(line):
    from evcli.agents.offline.claims import holds

    assert not holds(line, "5xx")


def test_a_status_class_holds_a_status_of_its_class_written_with_its_context():
    from evcli.agents.offline.claims import holds

    assert holds("WARN checkout: shop-api returned 503", "5xx") and not holds("WARN shop-api returned 503", "4xx")
    assert holds("GET /cart status=404 took 3ms", "4xx") and not holds("GET /cart status=404 took 3ms", "5xx")


def test_an_alert_asked_firing_is_read_in_any_state_so_an_inhibited_one_answers():
    ask = _ask(task_scope="narrow", services=["nginx"], alertnames=["HighHTTP401Rate"], alert_state="firing")
    [call] = narrow_calls(ask, "is HighHTTP401Rate firing on nginx?")
    assert call.arguments == {"service": "nginx", "alertname": "HighHTTP401Rate", "state": "any"}


def test_a_narrow_metrics_check_in_an_asked_range_reads_alerts_in_any_state():
    morning = AskedRange(text="this morning", range="2026-03-18T06:00:00+01:00..2026-03-18T09:30:00+01:00")
    ask = _ask(task_scope="narrow", services=["nginx"], range=morning, answer="health", kinds=["health", "confirm"])
    call, errors = narrow_calls(ask, "was nginx down this morning?")
    assert call.name == "query_metrics"
    assert call.arguments["state"] == "any"
    # a service's state asked: its errors in the range say too
    assert (errors.name, errors.arguments["service"], errors.arguments["level"]) == ("query_logs", "nginx", "ERROR")
    health = {"answer": "health", "kinds": ["health", "confirm"]}
    unranged, _ = narrow_calls(_ask(task_scope="narrow", services=["nginx"], **health), "is nginx down?")
    assert "state" not in unranged.arguments


_ASKED = AskedRange(text="9点到9点半", range="2026-03-18T09:00:00+01:00..2026-03-18T09:30:00+01:00")
_RANGE = {"since": "2026-03-18T09:00:00+01:00", "until": "2026-03-18T09:30:00+01:00"}


def test_an_asked_level_not_among_the_returned_lines_is_searched_by_its_unseen_pattern():
    ask = _ask(task_scope="broad", services=["nginx"], levels=["WARN"], range=_ASKED)
    output = {
        "logs": [{"level": "ERROR", "message": "upstream failed: timeout 7"}],
        "stats": {"total": 23, "by_level": {"ERROR": 20, "WARN": 3}},
        "patterns": [
            {"template": "upstream failed: timeout <*>"},
            {"template": "connection state SUSPENDED, retrying <*>"},
        ],
    }
    [call] = overview_gap_calls(ask, "nginx", output)
    query = '"connection state SUSPENDED, retrying"'
    assert call.arguments == {"service": "nginx", "query": query, "level": "WARN"} | _RANGE  # in the asked range
    shown = output | {"logs": [*output["logs"], {"level": "WARN", "message": "x"}]}
    assert overview_gap_calls(ask, "nginx", shown) == []  # the asked level was returned: nothing left out


def test_an_asked_range_whose_warnings_are_none_is_read_at_every_level():
    ask = _ask(task_scope="broad", services=["nginx"], range=_ASKED)
    [call] = overview_gap_calls(ask, "nginx", {"logs": [], "stats": {"total": 0}})
    assert call.arguments == {"service": "nginx", "limit": 20} | _RANGE
    assert overview_gap_calls(ask, "nginx", {"logs": [], "stats": {"total": 4}}) == []
    assert overview_gap_calls(_ask(task_scope="broad", services=["nginx"]), "nginx", {"stats": {"total": 0}}) == []


def test_which_alerts_are_in_a_state_reads_every_state_and_lists_that_state_first():
    from evcli.agents.offline.queries import discovery_calls

    silenced = _ask(alert_state="silenced")
    assert [call.arguments for call in discovery_calls(silenced)] == [{"state": "any"}]
    assert [call.arguments for call in discovery_calls(_ask())] == [{}]  # no state asked: the active ones


def test_a_which_question_counts_its_words_together_with_the_host_across_cue_words():
    """ "which IP is ufw blocking most on app-02": ufw, block (searched by its stem, written "blocking") and
    the host are counted together, not every line of the host."""
    vocabulary = {"app-02": {"syslog": 1404}, "ufw": {"syslog": 120}, "block": {"syslog": 120}}
    ask = _ask(
        vocabulary,
        known=("syslog",),
        services=["syslog"],
        hosts=["app-02"],
        terms=["ufw", "block"],
        answer="breakdown",
        kinds=["breakdown"],
        by="address",
    )
    queries = [
        c.arguments.get("query")
        for c in evidence_calls(ask, "which IP is ufw blocking most on app-02", ["syslog"], None)
        if c.arguments.get("count_by") == "address"
    ]
    assert queries and all(set(query.split()) == {"app-02", "ufw", "block"} for query in queries), queries
