"""evcli.scope.baselines: what a comparison question compares its window against (baselines.toml)."""

from datetime import datetime

import pytest

from evcli.core.time import zone_named
from evcli.scope.extract import extract_scope

CLOCK = datetime.fromisoformat("2026-10-01T14:27:30+00:00")


def scope(question: str):
    return extract_scope(question, services=["quote-api"], aliases={}, alertnames=[], clock=CLOCK, tz=zone_named("UTC"))


@pytest.mark.parametrize(
    ("question", "mode", "length", "window"),
    [
        ("compare 14:00-14:10 with the hour before", "before", "1h", "14:00-14:10"),
        ("what changed at 13:48 compared with the previous 30 minutes?", "before", "30m", "at 13:48"),
        ("What changed at 14:02 vs the 2 hours before", "before", "2h", "at 14:02"),
        ("what's different from yesterday?", "day", None, None),
        ("what changed since 14:00 compared with the day before?", "day", None, "since 14:00"),  # a day phrase
        ("what changed at 13:48 against the previous 30min?", "before", "30m", "at 13:48"),
        ("what changed since 14:00 compared to the same time yesterday", "day", None, "since 14:00"),
        ("与昨天相比有什么变化？", "day", None, None),
        ("和前一小时相比，14:00 之后有什么变化", "before", "1h", "14:00 之后"),
    ],
)
def test_the_stretch_compared_against_is_the_baseline_not_the_window(question, mode, length, window):
    found = scope(question)
    assert found.baseline is not None and (found.baseline.mode, found.baseline.length) == (mode, length)
    assert (found.range.text if found.range else None) == window  # "yesterday" here is no range asked


@pytest.mark.parametrize(
    "question",
    [
        "any trouble with yesterday's deploy?",  # no comparison asked: yesterday is the range
        "what changed compared with the 400 days before",  # no backend takes that length
        "why is quote-api slow since 14:00?",
    ],
)
def test_no_baseline_without_a_comparison_a_backend_can_make(question):
    assert scope(question).baseline is None
