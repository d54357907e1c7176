"""evcli.scope.levels: levels asked explicitly, never an error kind."""

from __future__ import annotations

import pytest

from evcli.scope.entities import find_services
from evcli.scope.levels import find_levels
from evcli.scope.match import Spans


def levels(question: str) -> list[str]:
    spans = Spans()
    find_services(question, ["billing", "nginx"], {}, spans)
    return find_levels(question, spans)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("any warnings?", ["WARN"]),
        ("WARN lines in nginx", ["WARN"]),
        ("warn and error logs", ["WARN", "ERROR"]),
        ("show ERROR", ["ERROR"]),
        ("errors in nginx since 9", ["ERROR"]),
        ("billing errors after 08:45", ["ERROR"]),
        ("any fatal or critical?", ["FATAL"]),
        ("crit messages", ["FATAL"]),
        ("show fatal errors in nginx", ["FATAL"]),
        (
            "which host logged the most errors?",
            ["ERROR"],
        ),  # "the most errors": the ERROR level, counted  # "fatal errors" are the fatal ones, not every error
        ("critical exceptions?", ["FATAL"]),
        ("有没有致命错误", ["FATAL"]),
        ("debug logs please", ["DEBUG"]),
        ("502 errors", []),
        ("5xx errors", []),
        ("connection errors on billing", []),
        ('a "MISCONF" error', []),
        ("error rate of nginx", []),
        ("the error budget", []),
        ("有没有警告", ["WARN"]),
        ("告警日志", ["WARN"]),
        ("磁盘告警还在吗", []),  # 告警 alone is an alert
        ("有没有报错", ["ERROR"]),
        ("错误日志和错误码", ["ERROR"]),
    ],
)
def test_levels(question, expected):
    assert levels(question) == expected
