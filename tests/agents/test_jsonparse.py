from __future__ import annotations

import pytest

from evcli.agents.jsonparse import InvalidOutput, parse_json_object


@pytest.mark.parametrize(
    "text",
    [
        '{"verdict": "PASS"}',
        '  \n{"verdict": "PASS"}\n',
        '```json\n{"verdict": "PASS"}\n```',
        '```\n{"verdict": "PASS"}\n```',
        '```JSON\n{"verdict": "PASS"}```',
    ],
)
def test_one_document_bare_or_fenced_is_read(text):
    assert parse_json_object(text) == {"verdict": "PASS"}


def test_nested_objects_stay_whole():
    assert parse_json_object('{"a": {"b": [1, {"c": 2}]}}') == {"a": {"b": [1, {"c": 2}]}}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the reply is empty"),
        (None, "the reply is empty"),
        ("   ", "the reply is empty"),
        ("no json here", "the reply is prose, not one JSON document"),
        ('The answer is {"verdict": "PASS"} as requested.', "the reply is prose"),
        ('Sure! Here it is:\n```json\n{"verdict": "PASS"}\n```\nHope this helps.', "the reply is prose"),
        ('{"verdict": "PASS"} {"verdict": "REJECT"}', "the reply has text after the JSON document"),
        ('{"verdict": "PASS"}\nI hope this helps', "the reply has text after the JSON document"),
        ('{"unterminated": ', "the reply is broken JSON (Expecting value at line 1 column 17)"),
        ("[1, 2, 3]", "the reply is a JSON list, not an object"),
    ],
)
def test_anything_but_one_document_is_invalid_output_in_plain_words(text, problem):
    with pytest.raises(InvalidOutput) as caught:
        parse_json_object(text)
    assert str(caught.value).startswith(problem)
    assert "\n" not in str(caught.value)
