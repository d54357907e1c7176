"""evcli.scope.terms: the content words left to search, and the singular a log writes of a plural asked."""

from __future__ import annotations

import pytest

from evcli.scope.match import Spans
from evcli.scope.terms import find_terms, singular
from tests.scope.test_glossary import GERMAN, read_with


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("passwords", "password"),
        ("errors", "error"),
        ("timeouts", "timeout"),
        ("queries", "query"),
        ("addresses", "address"),
        ("patches", "patch"),
        ("Exceptions", "Exception"),
        ("status", None),  # not a plural
        ("access", None),
        ("analysis", None),
        ("ssh", None),
        ("ms", None),
        ("ERR", None),
        ("attempts", None),  # a question counts in it: "failed password attempts" asks no "attempt"
        ("occurrences", None),
    ],
)
def test_singular(word, expected):
    assert singular(word) == expected


def test_a_language_files_stop_words_and_glossary_make_the_terms(tmp_path):
    """The words no term is and the glossary are data: a German file alone reads a German question."""
    question = "gibt es bitte Zeitüberschreitungen im checkout?"
    assert {"gibt", "es", "bitte", "im"} <= set(find_terms(question, Spans()))
    german = GERMAN + '\n[word.stop]\nphrases = ["gibt", "es", "bitte", "im"]\n'
    code = "import json; from evcli.scope.terms import find_terms; from evcli.scope.match import Spans\n"
    code += f"print(json.dumps(find_terms({question!r}, Spans())))"
    assert read_with(tmp_path, "de_words.toml", german, code) == ["timeout", "timed out", "checkout"]
