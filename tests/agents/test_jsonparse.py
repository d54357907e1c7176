from __future__ import annotations

import pytest

from evcli.agents.jsonparse import InvalidOutput, parse_json_object


@pytest.mark.parametrize(
    "text",
    [
        '{"verdict": "PASS"}',
        'Sure! Here is the result:\n```json\n{"verdict": "PASS"}\n```\nHope this helps.',
        '```\n{"verdict": "PASS"}\n```',
        'The answer is {"verdict": "PASS"} as requested.',
        'Thinking {not json} ... final: {"verdict": "PASS"}',
    ],
)
def test_json_object_is_found_in_fenced_or_chatty_answers(text):
    assert parse_json_object(text) == {"verdict": "PASS"}


def test_first_object_wins_and_nested_objects_stay_whole():
    assert parse_json_object('{"a": {"b": [1, {"c": 2}]}} {"d": 3}') == {"a": {"b": [1, {"c": 2}]}}


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2, 3]", '{"unterminated": ', None])
def test_answers_without_an_object_are_invalid_output(text):
    with pytest.raises(InvalidOutput, match="no JSON object"):
        parse_json_object(text)
