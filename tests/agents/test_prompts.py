"""Prompt files with their placeholders filled: the answer kinds come from the answer table and the rules
that check them from rules.toml, so the prompts cannot drift from either."""

from __future__ import annotations

import pytest

from evcli.agents.prompts import load_prompt
from evcli.agents.reading import READING_FIELDS
from evcli.gatekeeper.rules import load_rules
from evcli.scope.answers import rows


@pytest.mark.parametrize("role", ["planner", "executor"])
def test_the_planner_and_executor_prompts_list_every_answer_kind_with_the_rule_that_checks_it(role):
    text = load_prompt(role).text
    rules = load_rules().rules

    assert "{{" not in text
    listed = [line for line in text.splitlines() if line.startswith("- ") and line[2:].split(" ")[0] in _kinds()]
    assert [line[2:].split(" ")[0] for line in listed] == list(_kinds())  # every row, in table order
    for row, line in zip(rows(), listed, strict=True):
        rule = rules.get(row.scope_rule) if row.scope_rule else None
        if rule is not None and rule.enabled:
            assert line.endswith(f" — checked by {rule.id}: {rule.description}"), line
        else:
            assert "checked by" not in line, line
        assert all(field in line for field in row.by)


def test_the_planner_prompt_names_the_fields_a_reading_may_hold():
    assert f"({', '.join(READING_FIELDS)})" in load_prompt("planner").text


def _kinds() -> tuple[str, ...]:
    return tuple(row.name for row in rows())
