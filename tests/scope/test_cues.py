"""evcli.scope.cues: question kinds read from the packaged grammar, on questions as users type them."""

from __future__ import annotations

import pytest

from evcli.scope.answers import answer_of
from evcli.scope.cues import is_broad, is_narrow


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("is checkout healthy?", True),
        ("is zk up right now?", True),
        ("支付服务正常吗？", True),
        ("update the checkout config", False),  # "up" inside a word
        ("any errors in billing?", False),
    ],
)
def test_asks_health(question, expected):
    assert ("health" in answer_of(question, narrow=False, wants_count=False).kinds) is expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("any exceptions in billing?", True),
        ("show me the nginx log", True),
        ("有没有报错", True),
        ("is the catalog service up?", False),  # "log" inside a word
        ("is checkout healthy?", False),
    ],
)
def test_asks_logs(question, expected):
    assert ("logs" in answer_of(question, narrow=False, wants_count=False).sources) is expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("why is nginx slow?", True),
        ("root-cause the 502s", True),
        ("nginx 为什么报错", True),
        ("rows of diagnosis_run since 09:00", False),  # a table's name asks nothing
        ("is nginx up?", False),
    ],
)
def test_is_broad(question, expected):
    assert is_broad(question) is expected


def test_a_broad_cue_wins_over_a_narrow_one():
    assert is_narrow("did nginx have any 502s?")
    assert not is_narrow("did nginx have 502s, and why?")
