"""The answer-kind table (evcli/scope/answers.py): kinds named by cue groups, in table order, with the
words they came from; `unless` takes a question from a kind; every rule the table names exists."""

from __future__ import annotations

import re

import pytest

from evcli.gatekeeper.rules import KNOWN_RULES
from evcli.scope.answers import answer_of, read_answer, rows
from evcli.scope.grammar import Hit


def hits(question: str, *groups: tuple[str, str]) -> list[Hit]:
    """A hit per (group, words), placed where the words stand in the question."""
    found = []
    for group, words in groups:
        start = question.index(words)
        found.append(Hit(group, start, start + len(words), words))
    return found


def test_no_cue_is_a_lookup():
    answer = read_answer([])
    assert (answer.answer, answer.kinds, answer.by, answer.cues) == ("lookup", ("lookup",), None, ())


def test_kinds_come_in_table_order_with_the_words_they_came_from():
    question = "how many errors and why did checkout fail?"
    answer = read_answer(hits(question, ("count", "how many"), ("diagnose", "why")))
    assert answer.answer == "why"  # a cause is asked first; the count is answered too
    assert answer.kinds == ("why", "count")
    assert [(cue.reads, cue.words, question[cue.start : cue.end]) for cue in answer.cues] == [
        ("count", "how many", "how many"),
        ("why", "why", "why"),
    ]


def test_a_breakdown_needs_every_group_of_an_entry_and_names_its_field():
    question = "which IP sent the most failed logins?"
    assert read_answer(hits(question, ("noun.address", "IP"))).answer == "lookup"  # a noun alone asks nothing
    answer = read_answer(hits(question, ("which", "which"), ("noun.address", "IP")))
    assert (answer.answer, answer.by) == ("breakdown", "address")
    assert {cue.reads for cue in answer.cues} == {"breakdown:address"}


def test_unless_a_kind_named_before():
    """ "which endpoint had the most errors": counted per path, not the most common messages."""
    question = "which endpoint had the most common errors?"
    answer = read_answer(hits(question, ("which", "which"), ("noun.path", "endpoint"), ("common", "most common")))
    assert answer.kinds == ("breakdown",)


def test_unless_a_group_outside_the_kinds_own_words():
    """ "what about web-02?" only changes the question before; "and why?" asks one of its own."""
    elliptical = "what about web-02?"
    own = [("elliptical", "what about"), ("own_question", "what")]
    assert read_answer(hits(elliptical, *own)).answer == "follow_up"
    asking = "and why is web-02 slow?"
    answer = read_answer(hits(asking, ("elliptical", "and"), ("own_question", "why"), ("diagnose", "why")))
    assert "follow_up" not in answer.kinds and answer.answer == "why"


def test_a_kind_read_otherwise_is_named_without_words():
    """A narrow task confirming one alert's state ("is X still firing?") names no confirm cue."""
    answer = read_answer([], named=("confirm",))
    assert (answer.answer, answer.kinds, answer.cues) == ("confirm", ("confirm",), ())


def test_every_scope_rule_the_table_names_is_a_rule_the_gatekeeper_runs():
    named = {row.scope_rule for row in rows() if row.scope_rule}
    assert named and named <= set(KNOWN_RULES)


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("what changed since 09:00 and why?", ("changes", "why")),
        ("what  changed  at  13:48?", ("changes",)),  # any run of spaces between a phrase's words
        ("where does the time of checkout's requests go?", ("latency",)),
        ("和昨天相比有什么变化", ("changes",)),
        ("是哪个服务导致的延迟？", ("why", "latency")),
        ("who calls payments?", ("calls",)),
        ("how many errors did payment log?", ("count", "errors")),  # a count, of errors
        ("which IP sent the most failed logins?", ("breakdown", "errors")),
        ("what should I do about the disk alert?", ("next_step",)),
        ("is nginx up?", ("health", "confirm")),
        ("and since 09:15?", ("follow_up",)),
        ("show me checkout's logs", ("lookup",)),
    ],
)
def test_answer_of_a_question(question, kinds):
    """The grammar's cues read through the table: the kinds in priority order, the first the answer."""
    answer = answer_of(question, narrow=question.startswith("is "), wants_count="how many" in question)
    assert (answer.kinds, answer.answer) == (kinds, kinds[0])


def test_a_count_cue_other_extractors_read_asks_no_count():
    """ "how many" inside a quoted phrase is the phrase's: `wants_count` False keeps it out."""
    assert "count" not in answer_of('search "how many retries"', narrow=False, wants_count=False).kinds


def test_the_sources_a_question_names():
    answer = answer_of("any exceptions in billing's logs?", narrow=True, wants_count=False)
    assert answer.sources == ("logs",)
    assert {cue.reads for cue in answer.cues} >= {"source:logs", "confirm"}


def test_a_misspelt_table_fails_loudly(tmp_path, monkeypatch):
    """The table is checked both ways: an unknown key, a kind named twice or a group no grammar declares."""
    from evcli.scope import answers

    good = answers.TABLE.read_text(encoding="utf-8")
    for broken, message in (
        (good.replace('scope_rule = "scope.why_answered"', 'scope_rul = "scope.why_answered"'), "unknown keys"),
        (good.replace('name = "next_step"', 'name = "health"'), "a kind named twice"),
        (good.replace('cues = ["when"]', 'cues = ["whenn"]'), "no grammar file declares: ['whenn']"),
    ):
        table = tmp_path / "answers.toml"
        table.write_text(broken, encoding="utf-8")
        monkeypatch.setattr(answers, "TABLE", table)
        answers.rows.cache_clear()
        with pytest.raises(ValueError, match=re.escape(message)):
            answers.rows()
    answers.rows.cache_clear()


def test_a_kind_is_a_row_of_the_table_and_nothing_else(tmp_path, monkeypatch):
    """Adding a kind is adding a row: the Query accepts a kind the table names and refuses any other, with no
    list of kinds in code."""
    import evcli.contracts as contracts
    from evcli.contracts import Query

    assert contracts.answer_kinds() == tuple(row.name for row in rows())
    with pytest.raises(ValueError, match="unknown answer kind 'capacity': one of follow_up, changes"):
        Query(answer="capacity")
    table = tmp_path / "answers.toml"
    table.write_text(
        contracts.ANSWER_TABLE.read_text(encoding="utf-8") + '\n[[answers]]\nname = "capacity"\ncues = ["health"]\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(contracts, "ANSWER_TABLE", table)
    contracts.answer_kinds.cache_clear()
    try:
        assert Query(answer="capacity", kinds=["capacity", "why"]).kinds == ["capacity", "why"]
    finally:
        contracts.answer_kinds.cache_clear()
