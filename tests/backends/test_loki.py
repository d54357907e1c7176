"""LokiBackend against a scripted Loki on 127.0.0.1 that records the LogQL it is sent."""

from __future__ import annotations

import base64
import json
import re
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evcli.backends.base import BackendError, LogQuery, TimeWindow
from evcli.backends.http import HttpAuth, quote_string
from evcli.backends.loki import LokiBackend, level_in_line, regex_literal

START = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
END = datetime(2024, 5, 1, 10, 30, tzinfo=UTC)
WINDOW = TimeWindow("30m", START, END)
START_NS = 1714557600 * 10**9


def query(service="checkout", keywords=(), level=None, limit=50) -> LogQuery:
    return LogQuery(service=service, keywords=tuple(keywords), level=level, window=WINDOW, limit=limit)


def ns(seconds_after_start: float) -> str:
    return str(START_NS + int(seconds_after_start * 10**9))


def test_request_carries_selector_window_limit_and_direction(loki):
    LokiBackend(loki.url).query_logs(query(limit=50))

    sent = loki.requests[-1]
    assert sent["path"] == "/loki/api/v1/query_range"
    assert sent["params"] == {
        "query": '{service="checkout"}',
        "start": str(START_NS),
        "end": str(START_NS + 1800 * 10**9),
        "limit": "51",
        "direction": "backward",
    }


def test_keywords_become_escaped_case_insensitive_filters(loki):
    LokiBackend(loki.url).query_logs(query(keywords=['say "hi"', "C:\\temp", "a.b*(c)", ""]))

    assert loki.last_params["query"] == (
        r'{service="checkout"} |~ "(?i)say \"hi\"" |~ "(?i)C:\\\\temp" |~ "(?i)a\\.b\\*\\(c\\)"'
    )


def test_service_quotes_are_escaped_and_no_service_matches_all(loki):
    backend = LokiBackend(loki.url)

    backend.query_logs(query(service='pay"ment\\'))
    assert loki.last_params["query"] == r'{service="pay\"ment\\"}'
    backend.query_logs(query(service=None))
    assert loki.last_params["query"] == '{service=~".+"}'


def test_service_label_is_configurable(loki):
    LokiBackend(loki.url, service_label="app").query_logs(query())

    assert loki.last_params["query"] == '{app="checkout"}'
    with pytest.raises(ValueError, match="label name"):
        LokiBackend(loki.url, service_label='app"}')


@given(st.text(min_size=1, max_size=40))
def test_keyword_filter_is_a_string_literal_whose_regex_matches_the_keyword_literally(keyword):
    # LogQL strings use Go's escapes, which JSON reads alike; Python's re reads RE2's escapes alike.
    pattern = json.loads(quote_string("(?i)" + regex_literal(keyword)), strict=False)

    assert pattern == "(?i)" + regex_literal(keyword)
    assert re.fullmatch(pattern, keyword)


def test_keyword_regex_ignores_case_and_treats_metacharacters_literally():
    pattern = "(?i)" + regex_literal("Timeout (30s)? [db].*")

    assert re.search(pattern, "ERROR TIMEOUT (30S)? [DB].* on write")
    assert not re.search(pattern, "Timeout 30s db-anything")


def test_streams_become_records_sorted_oldest_first(loki):
    loki.answer_streams(
        [
            {
                "stream": {"service": "checkout", "pod": "checkout-7d9f", "level": "error"},
                "values": [[ns(20), "payment gateway timeout after 30s"], [ns(5), "retrying charge"]],
            },
            {
                "stream": {"service": "checkout", "instance": "10.0.0.7:8080"},
                "values": [
                    [ns(12.5), '{"level":"warn","msg":"slow response"}'],
                    [ns(3), "2024-05-01 10:00:03 INFO started"],
                    [ns(1), "plain line"],
                ],
            },
        ]
    )

    result = LokiBackend(loki.url).query_logs(query())

    assert [(r["timestamp"], r["level"], r["instance"]) for r in result.logs] == [
        ("2024-05-01T10:00:01.000Z", None, "10.0.0.7:8080"),
        ("2024-05-01T10:00:03.000Z", "INFO", "10.0.0.7:8080"),
        ("2024-05-01T10:00:05.000Z", "ERROR", "checkout-7d9f"),
        ("2024-05-01T10:00:12.500Z", "WARN", "10.0.0.7:8080"),
        ("2024-05-01T10:00:20.000Z", "ERROR", "checkout-7d9f"),
    ]
    assert result.logs[-1] == {
        "timestamp": "2024-05-01T10:00:20.000Z",
        "level": "ERROR",
        "service": "checkout",
        "instance": "checkout-7d9f",
        "message": "payment gateway timeout after 30s",
    }
    assert (result.total, result.truncated, result.message) == (5, False, "")


def test_level_is_filtered_here_after_fetching_more_lines(loki):
    loki.answer_streams(
        [
            {
                "stream": {"service": "checkout"},
                "values": [
                    [ns(3), "level=error db down"],
                    [ns(2), "FATAL out of memory"],
                    [ns(1), "INFO ok"],
                ],
            }
        ]
    )

    result = LokiBackend(loki.url).query_logs(query(level="ERROR", limit=10))

    assert [r["message"] for r in result.logs] == ["FATAL out of memory", "level=error db down"]
    assert loki.last_params["limit"] == "1000"
    assert not result.truncated


def test_reaching_the_limit_sets_truncated_and_keeps_the_newest(loki):
    lines = [[ns(60 - second), f"line {60 - second}"] for second in range(4)]  # newest first, as Loki sends
    loki.answer_streams([{"stream": {"service": "checkout"}, "values": lines}])

    result = LokiBackend(loki.url).query_logs(query(limit=3))

    assert loki.last_params["limit"] == "4"
    assert [r["message"] for r in result.logs] == ["line 58", "line 59", "line 60"]
    assert result.truncated
    assert result.total == 4
    assert "limit of 4" in result.message


def test_exactly_the_limit_is_not_truncated(loki):
    lines = [[ns(second), f"line {second}"] for second in range(3)]
    loki.answer_streams([{"stream": {"service": "checkout"}, "values": lines}])

    result = LokiBackend(loki.url).query_logs(query(limit=3))

    assert (len(result.logs), result.total, result.truncated) == (3, 3, False)


@pytest.mark.parametrize(
    ("line", "level"),
    [
        ('{"ts":"…","level":"WARNING","msg":"x"}', "WARN"),
        ("ts=1 lvl=err msg=x", "ERROR"),
        ("2024-05-01 10:00:00 CRITICAL disk", "FATAL"),
        ("no errors found, info only", None),
    ],
)
def test_level_in_line(line, level):
    assert level_in_line(line) == level


def test_http_500_names_status_url_and_body(loki):
    loki.status = 500

    with pytest.raises(BackendError) as caught:
        LokiBackend(loki.url).query_logs(query())

    assert str(caught.value) == (
        f"GET {loki.url}/loki/api/v1/query_range answered HTTP 500: internal error: querier unavailable"
    )


def test_hanging_loki_times_out_within_about_the_timeout(loki):
    loki.hang = True
    started = time.monotonic()

    with pytest.raises(BackendError, match=r"no answer within 1s \(timeout\)"):
        LokiBackend(loki.url, timeout=1).query_logs(query())

    assert 0.9 < time.monotonic() - started < 3


def test_invalid_json_and_wrong_result_type_are_errors(loki):
    loki.body = b"<html>proxy error</html>"
    with pytest.raises(BackendError, match="invalid JSON"):
        LokiBackend(loki.url).query_logs(query())

    loki.body = {"status": "success", "data": {"resultType": "matrix", "result": []}}
    with pytest.raises(BackendError, match="expected streams"):
        LokiBackend(loki.url).query_logs(query())


def test_url_credentials_become_basic_auth_and_stay_out_of_errors(loki):
    with_credentials = loki.url.replace("http://", "http://admin:s3cret@")
    LokiBackend(with_credentials).query_logs(query())
    assert loki.requests[-1]["authorization"] == "Basic " + base64.b64encode(b"admin:s3cret").decode()

    loki.status = 500
    with pytest.raises(BackendError) as caught:
        LokiBackend(with_credentials).query_logs(query())
    assert "s3cret" not in str(caught.value) and "admin" not in str(caught.value)


def test_bearer_token_is_sent_but_never_shown(loki):
    auth = HttpAuth(token="tok-9f8e7d")
    LokiBackend(loki.url, auth=auth).query_logs(query())
    assert loki.requests[-1]["authorization"] == "Bearer tok-9f8e7d"
    assert "tok-9f8e7d" not in repr(auth)

    loki.status = 500
    with pytest.raises(BackendError) as caught:
        LokiBackend(loki.url, auth=auth).query_logs(query())
    assert "tok-9f8e7d" not in str(caught.value)


def test_closed_port_and_bad_scheme_are_backend_errors(closed_url):
    with pytest.raises(BackendError, match="connection refused"):
        LokiBackend(closed_url).query_logs(query())
    with pytest.raises(BackendError, match="invalid URL"):
        LokiBackend("file:///etc/passwd").query_logs(query())
