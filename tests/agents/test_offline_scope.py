"""The offline engine searches for what the question scope names (issue 10)."""

from evcli.agents.offline.payload import intent_of
from evcli.agents.offline.queries import evidence_calls, narrow_calls
from evcli.contracts import AskedRange, QuestionScope


def _ask(vocabulary=None, known=("nginx", "auth"), **scope):
    question = QuestionScope(**scope)
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
    calls = narrow_calls(ask, "Does payments-v3 have any ERROR logs?")
    assert calls[0].arguments == {"service": "payments-v3"}
    alert = _ask(task_scope="narrow", alertnames=["DiskAlmostFull"], alert_state="still_firing")
    [call] = narrow_calls(alert, "Is the DiskAlmostFull alert still firing?")
    assert call.arguments == {"alertname": "DiskAlmostFull", "state": "any"}


def test_broad_task_searches_the_asked_phrase_besides_the_warn_overview():
    ask = _ask(services=["nginx"], phrases=["upstream timed out"])
    calls = evidence_calls(ask, "why is nginx slow? 'upstream timed out'", ["nginx"], None)
    logs = [call.arguments for call in calls if call.name == "query_logs"]
    assert {"service": "nginx", "level": "WARN", "limit": 20} in logs
    assert {"service": "nginx", "query": '"upstream timed out"', "limit": 20} in logs
