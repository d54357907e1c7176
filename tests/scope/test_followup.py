"""A follow-up inherits each group of scope fields only when it names none of that group."""

from __future__ import annotations

import pytest

from evcli.contracts import AskedRange, Query
from evcli.scope.answers import answer_of
from evcli.scope.followup import follow_up


def asked(question: str, **fields) -> Query:
    """The scope of a question naming nothing but `fields`, with the answer its words ask for."""
    answer = answer_of(question, narrow=False, wants_count=False)
    return Query(**fields, answer=answer.answer, kinds=list(answer.kinds), by=answer.by)


PREVIOUS = Query(
    services=["nginx"],
    hosts=["web-01"],
    alertnames=["HighHTTP401Rate"],
    alert_state="still_firing",
    range=AskedRange(text="between 09:05 and 09:12", range="2026-03-18T09:05:00+01:00..2026-03-18T09:12:00+01:00"),
    levels=["WARN"],
    phrases=["POST /api/login"],
    tokens=["401"],
    terms=["login"],
    wants_count=True,
    task_scope="narrow",
    language="en",
    answer="count",
    kinds=["count"],
)


def test_a_question_naming_nothing_inherits_every_group_but_not_what_it_is():
    scope = follow_up(Query(language="zh", task_scope="broad"), PREVIOUS)
    assert scope.services == ["nginx"] and scope.hosts == ["web-01"]
    assert (scope.alertnames, scope.alert_state) == (["HighHTTP401Rate"], "still_firing")
    assert scope.range == PREVIOUS.range and scope.levels == ["WARN"]
    assert (scope.phrases, scope.tokens, scope.terms) == (["POST /api/login"], ["401"], ["login"])
    assert (scope.language, scope.task_scope, scope.wants_count) == ("zh", "broad", False)


def test_a_named_member_replaces_its_whole_group():
    scope = follow_up(Query(unknown_services=["payments-v3"], tokens=["502"]), PREVIOUS)
    assert (scope.services, scope.unknown_services, scope.hosts) == ([], ["payments-v3"], [])
    assert (scope.phrases, scope.tokens, scope.terms) == ([], ["502"], [])
    assert scope.range == PREVIOUS.range  # groups it did not name are still inherited


def test_no_previous_scope_changes_nothing():
    scope = Query(tokens=["502"])
    assert follow_up(scope, None) == scope


def test_a_follow_up_naming_only_words_keeps_the_phrases_and_tokens_it_refers_to():
    scope = follow_up(Query(terms=["Accepted"]), PREVIOUS)  # "did that IP ever get in?"
    assert (scope.phrases, scope.tokens, scope.terms) == (["POST /api/login"], ["401"], ["Accepted"])


def test_an_elliptical_follow_up_asks_the_question_before_again_count_included():
    scope = follow_up(asked("and since 09:15?", language="en", task_scope="broad"), PREVIOUS)
    assert (scope.wants_count, scope.task_scope) == (True, "narrow")
    assert (scope.answer, scope.kinds) == ("count", ["follow_up", "count"])  # the count asked again
    zh = follow_up(asked("那 web-02 呢？", language="zh", task_scope="broad", hosts=["web-02"]), PREVIOUS)
    assert (zh.wants_count, zh.task_scope, zh.hosts, zh.language) == (True, "narrow", ["web-02"], "zh")


@pytest.mark.parametrize(
    "question",
    ["what should I check next?", "and why?", "and what caused it?", "why did it start?", "下一步应该查什么？"],
)
def test_a_follow_up_with_a_question_of_its_own_does_not_inherit_the_count(question: str):
    scope = follow_up(asked(question, language="en", task_scope="broad"), PREVIOUS)
    assert (scope.wants_count, scope.task_scope) == (False, "broad")
    assert "count" not in scope.kinds


@pytest.mark.parametrize(
    ("question", "elliptical"),
    [
        ("and since 09:15?", True),
        ("What about web-02?", True),
        ("how about yesterday", True),
        ("same for payment-service", True),
        ("那 web-02 呢？", True),
        ("那么昨天呢", True),
        ("and why?", False),
        ("and what about the root cause, why did it fail?", False),
        ("how many 401s since 09:15?", False),
        ("anderson logged in?", False),
    ],
)
def test_an_elliptical_question_is_read_as_a_follow_up(question: str, elliptical: bool):
    assert ("follow_up" in answer_of(question, narrow=False, wants_count=False).kinds) is elliptical
