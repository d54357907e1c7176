"""Names beside a cue word (evcli/scope/beside.py): one reader, a row per cue group saying the side and shape."""

from __future__ import annotations

import pytest

from evcli.scope.beside import BESIDE, beside, names_beside
from evcli.scope.grammar import grammar
from evcli.scope.match import Spans
from evcli.scope.tokens import find_tokens


def test_every_row_is_a_cue_group_of_the_grammar() -> None:
    groups = {rule.group for rule in grammar().rules}
    assert set(BESIDE) <= groups


@pytest.mark.parametrize(
    ("question", "group", "name", "read"),
    [
        ("errors of service payments-v2 today", "entity.service_before", "payments-v2", "service payments-v2"),
        ("is the billing service down?", "entity.service_after", "billing", "billing service"),
        ("disk on host db-2.prod", "entity.host_before", "db-2.prod", "host db-2.prod"),
        ("how many requests got 304s", "token.status_cue", "304", "got 304s"),
        ("who logged in as 'deploy' at night", "token.user_cue", "deploy", "logged in as 'deploy"),
    ],
)
def test_the_name_beside_its_cue(question: str, group: str, name: str, read: str) -> None:
    [(span, named)] = list(names_beside(question, group))
    assert question[slice(*named)] == name
    assert question[slice(*span)] == read


@pytest.mark.parametrize(
    ("question", "group"),
    [
        ("which service? the logs say", "entity.service_before"),  # a question mark, not whitespace, after the cue
        ("got 3045 bytes", "token.status_cue"),  # four digits: no status code
        ("the node", "entity.host_before"),  # no name after it
    ],
)
def test_a_cue_without_a_name_of_its_shape(question: str, group: str) -> None:
    found = list(beside(question, group))
    assert found
    assert all(f.name is None and f.span == f.cue for f in found)
    assert not list(names_beside(question, group))


def test_every_hit_is_read_also_one_without_a_name() -> None:
    """Overlapping cues ("password for invalid user oracle") are all seen, longest first at one start, so the
    user reader can keep the longest: the user is oracle, not "invalid"."""
    question = "Failed password for invalid user oracle from 10.0.0.5"
    cues = [question[slice(*f.cue)] for f in beside(question, "token.user_cue")]
    assert cues[0] == "password for invalid user"
    assert "password for" in cues
    tokens = [token for _, token in find_tokens(question, Spans())]
    assert "oracle" in tokens
    assert "invalid" not in tokens
