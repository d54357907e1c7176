"""evcli.scope.terms.singular: a plural asked is looked up as the singular a log writes."""

from __future__ import annotations

import pytest

from evcli.scope.terms import singular


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
