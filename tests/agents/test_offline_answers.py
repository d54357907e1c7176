"""The offline engine's part of the answer table (evcli/agents/offline/answers.py): every step and builder the
table names exists, steps run in their phase in table order, builders in table order."""

from __future__ import annotations

from evcli.agents.offline.answers import CLAIMS, FOLLOWING, LEAD, PLANS, Searched, answer_claims, planned
from evcli.agents.offline.payload import intent_of
from evcli.contracts import Query
from evcli.messages import catalogue
from evcli.scope.answers import rows


def _ask(**scope):
    reading = Query(**scope)
    payload = {
        "language": "en",
        "task_scope": reading.task_scope,
        "scope": reading.model_dump(mode="json"),
        "environment": {
            "services": ["auth"],
            "vocabulary": {},
            "capabilities": ["logs", "alerts", "metrics", "changes"],
        },
    }
    return intent_of(payload)


def test_every_step_and_builder_the_table_names_exists():
    assert {name for row in rows() for name in row.plan} <= set(PLANS)
    assert {name for row in rows() for name in row.claims} <= set(CLAIMS)


def test_a_count_searches_the_asked_level_after_the_general_search():
    count = _ask(services=["auth"], levels=["ERROR"], wants_count=True, answer="count", kinds=["count"])
    calls = planned(FOLLOWING, Searched(count, ["auth"], [], {}))
    assert [call.arguments for call in calls] == [{"service": "auth", "level": "ERROR", "limit": 20}]
    assert planned(LEAD, Searched(count, ["auth"], [], {})) == []  # no step of a count decides what is searched
    lookup = _ask(services=["auth"], levels=["ERROR"], answer="lookup", kinds=["lookup"])
    assert planned(FOLLOWING, Searched(lookup, ["auth"], [], {})) == []


def test_a_why_question_asks_what_changed_first():
    why = _ask(answer="why", kinds=["why"])
    [call] = planned(LEAD, Searched(why, [], [], {}))
    assert call.name == "find_changes"
    narrow = _ask(task_scope="narrow", answer="why", kinds=["why", "confirm"])
    assert planned(LEAD, Searched(narrow, [], [], {})) == []  # a narrow task never widens to what changed


def test_no_kind_with_a_builder_states_nothing_from_no_refs():
    ask = _ask(answer="count", kinds=["count", "onset"], wants_count=True)
    assert answer_claims(ask, [], catalogue("en")) == []
