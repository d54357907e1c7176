"""A follow-up inherits each group of scope fields only when it names none of that group."""

from __future__ import annotations

from evcli.contracts import AskedRange, QuestionScope
from evcli.scope.followup import follow_up

PREVIOUS = QuestionScope(
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
)


def test_a_question_naming_nothing_inherits_every_group_but_not_what_it_is():
    scope = follow_up(QuestionScope(language="zh", task_scope="broad"), PREVIOUS)
    assert scope.services == ["nginx"] and scope.hosts == ["web-01"]
    assert (scope.alertnames, scope.alert_state) == (["HighHTTP401Rate"], "still_firing")
    assert scope.range == PREVIOUS.range and scope.levels == ["WARN"]
    assert (scope.phrases, scope.tokens, scope.terms) == (["POST /api/login"], ["401"], ["login"])
    assert (scope.language, scope.task_scope, scope.wants_count) == ("zh", "broad", False)


def test_a_named_member_replaces_its_whole_group():
    scope = follow_up(QuestionScope(unknown_services=["payments-v3"], tokens=["502"]), PREVIOUS)
    assert (scope.services, scope.unknown_services, scope.hosts) == ([], ["payments-v3"], [])
    assert (scope.phrases, scope.tokens, scope.terms) == ([], ["502"], [])
    assert scope.range == PREVIOUS.range  # groups it did not name are still inherited


def test_no_previous_scope_changes_nothing():
    scope = QuestionScope(tokens=["502"])
    assert follow_up(scope, None) == scope


def test_a_follow_up_naming_only_words_keeps_the_phrases_and_tokens_it_refers_to():
    scope = follow_up(QuestionScope(terms=["Accepted"]), PREVIOUS)  # "did that IP ever get in?"
    assert (scope.phrases, scope.tokens, scope.terms) == (["POST /api/login"], ["401"], ["Accepted"])
