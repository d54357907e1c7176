"""LokiBackend against a scripted Loki on 127.0.0.1 that records the LogQL it is sent."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evcli.backends.base import LogQuery, TimeWindow
from evcli.backends.http import HttpAuth, quote_string
from evcli.backends.loki import LokiBackend, level_in_line, regex_literal
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange

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


def test_a_number_keyword_is_a_whole_number_filter(loki):
    LokiBackend(loki.url).query_logs(query(keywords=["500", "nova-api"]))

    assert loki.last_params["query"] == r'{service="checkout"} |~ "(^|[^0-9.])500([^0-9]|$)" |~ "(?i)nova-api"'
    pattern = re.compile(r"(^|[^0-9.])500([^0-9]|$)")  # RE2 and Python agree on this subset
    assert [bool(pattern.search(line)) for line in ("status: 500 len", "len: 1500", "time: 0.500", "500")] == [
        True, False, False, True
    ]  # fmt: skip


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

    # issue 9: timestamps carry their zone; each item keeps its line and its provenance (stream labels, ns)
    assert [(r["timestamp"], r["level"], r["instance"]) for r in result.logs] == [
        ("2024-05-01T10:00:01.000+00:00", None, "10.0.0.7:8080"),
        ("2024-05-01T10:00:03.000+00:00", "INFO", "10.0.0.7:8080"),
        ("2024-05-01T10:00:05.000+00:00", "ERROR", "checkout-7d9f"),
        ("2024-05-01T10:00:12.500+00:00", "WARN", "10.0.0.7:8080"),
        ("2024-05-01T10:00:20.000+00:00", "ERROR", "checkout-7d9f"),
    ]
    assert result.logs[-1] == {
        "timestamp": "2024-05-01T10:00:20.000+00:00",
        "level": "ERROR",
        "level_derived": False,
        "service": "checkout",
        "instance": "checkout-7d9f",
        "message": "payment gateway timeout after 30s",
        "line": "payment gateway timeout after 30s",
        "source": {"stream": {"service": "checkout", "pod": "checkout-7d9f", "level": "error"}, "ts_ns": ns(20)},
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


# --- issue 9: ranges, stats, patterns, provenance, digests ------------------------------------


def test_a_named_range_is_the_requests_start_and_end_and_is_stated(loki):
    named = TimeRange(datetime(2024, 5, 1, 10, 3, tzinfo=UTC), datetime(2024, 5, 1, 10, 5, tzinfo=UTC))
    result = LokiBackend(loki.url).query_logs(LogQuery(service="checkout", keywords=(), level=None, range=named))

    assert (loki.last_params["start"], loki.last_params["end"]) == (ns(180), ns(300))
    assert result.searched_range == "2024-05-01T10:03:00+00:00..2024-05-01T10:05:00+00:00"
    assert (result.stats["range"], result.stats["range_origin"]) == (result.searched_range, "question/call")


def test_no_range_is_the_last_hour_ending_now_stated_as_the_live_default(loki):
    before = datetime.now(UTC).replace(microsecond=0)
    result = LokiBackend(loki.url).query_logs(LogQuery(service="checkout", keywords=(), level=None))
    after = datetime.now(UTC)

    start, end = int(loki.last_params["start"]), int(loki.last_params["end"])
    assert end - start == 3600 * 10**9
    assert before.timestamp() <= end / 10**9 <= after.timestamp()
    assert result.stats["range_origin"] == "live default 1h"
    assert result.searched_range == result.stats["range"]
    assert result.searched_range.endswith("+00:00") and ".." in result.searched_range


def test_only_since_ends_now_and_only_until_starts_an_hour_before(loki):
    since = LogQuery(service="checkout", keywords=(), level=None, range=TimeRange(START, None))
    LokiBackend(loki.url).query_logs(since)
    assert loki.last_params["start"] == str(START_NS)
    assert int(loki.last_params["end"]) / 10**9 == pytest.approx(time.time(), abs=5)

    until = LogQuery(service="checkout", keywords=(), level=None, range=TimeRange(None, END))
    LokiBackend(loki.url).query_logs(until)
    assert (loki.last_params["start"], loki.last_params["end"]) == (ns(1800 - 3600), ns(1800))


def auth_failures(count: int, *, user_every: int = 1) -> list[list[str]]:
    """sshd-like lines, newest first as Loki sends them."""
    return [
        [
            ns(count - i),
            f"Failed password for user{(count - i) % 3} from 10.0.0.{(count - i) % 7} port {40000 + i} ssh2",
        ]
        for i in range(count)
    ]


def test_stats_and_patterns_are_computed_from_the_returned_lines(loki):
    loki.answer_streams(
        [
            {"stream": {"service": "sshd", "host": "bastion"}, "values": auth_failures(5)},
            {
                "stream": {"service": "sshd", "host": "web-1", "level": "info"},
                "values": [[ns(2.5), "Accepted publickey for deploy"]],
            },
        ]
    )

    result = LokiBackend(loki.url).query_logs(query(service="sshd", limit=10))

    assert result.stats["total"] == result.total == 6
    assert (result.stats["first"], result.stats["last"]) == (
        "2024-05-01T10:00:01.000+00:00",
        "2024-05-01T10:00:05.000+00:00",
    )
    assert result.stats["by_level"] == {"INFO": 1, "none": 5}
    assert result.stats["by_source"] == {
        '{host="bastion",service="sshd"}': 5,
        '{host="web-1",level="info",service="sshd"}': 1,
    }
    assert "lower_bound" not in result.stats
    assert result.stats["filters"] == {"service": "sshd", "keywords": [], "level": None}
    assert result.patterns[0] == {
        "template": "Failed password for <*> from <*> port <*> <*>",  # the shared masking: any token with a digit
        "count": 5,
        "first": "2024-05-01T10:00:01.000+00:00",
        "last": "2024-05-01T10:00:05.000+00:00",
        "example": "Failed password for user2 from 10.0.0.5 port 40000 ssh2",
        "level": None,
        "starts_record": True,
    }
    assert [pattern["count"] for pattern in result.patterns] == [5, 1]


def test_lines_are_counted_per_address_when_the_query_asks(loki):
    loki.answer_streams([{"stream": {"service": "sshd", "host": "bastion"}, "values": auth_failures(14)}])
    asked = LogQuery(service="sshd", keywords=(), level=None, window=WINDOW, limit=50, count_by="address")

    result = LokiBackend(loki.url).query_logs(asked)

    expected: dict[str, int] = {}
    for _, line in auth_failures(14):
        address = line.split(" from ")[1].split(" ")[0]
        expected[address] = expected.get(address, 0) + 1
    assert result.stats["by_address"] == dict(sorted(expected.items(), key=lambda item: (-item[1], item[0])))
    assert "by_address" not in LokiBackend(loki.url).query_logs(query(service="sshd")).stats


def test_lines_are_counted_per_instance_when_the_query_asks(loki):
    loki.answer_streams(
        [
            {"stream": {"service": "sshd", "instance": "bastion"}, "values": auth_failures(5)},
            {"stream": {"service": "sshd", "pod": "web-1"}, "values": [[ns(2.5), "Accepted publickey for deploy"]]},
            {"stream": {"service": "sshd"}, "values": [[ns(3.5), "no instance label"]]},
        ]
    )
    asked = LogQuery(service="sshd", keywords=(), level=None, window=WINDOW, limit=50, count_by="instance")
    assert LokiBackend(loki.url).query_logs(asked).stats["by_instance"] == {"bastion": 5, "web-1": 1}


def test_a_result_capped_by_lokis_limit_states_its_count_as_a_lower_bound(loki):
    loki.answer_streams([{"stream": {"service": "sshd"}, "values": auth_failures(4)}])

    result = LokiBackend(loki.url).query_logs(query(service="sshd", limit=3))

    assert loki.last_params["limit"] == "4"
    assert result.truncated and result.stats["lower_bound"] is True
    assert result.stats["total"] == 4


def test_the_level_filter_keeps_unleveled_lines_unless_strict(loki):
    loki.answer_streams(
        [
            {
                "stream": {"service": "api"},
                "values": [[ns(3), "level=error db down"], [ns(2), "plain line"], [ns(1), "INFO ok"]],
            }
        ]
    )
    backend = LokiBackend(loki.url)

    kept = backend.query_logs(query(service="api", level="WARN"))
    strict = backend.query_logs(LogQuery(service="api", keywords=(), level="WARN", window=WINDOW, level_strict=True))

    assert [r["message"] for r in kept.logs] == ["plain line", "level=error db down"]
    assert kept.stats["by_level"] == {"ERROR": 1, "none": 1}
    assert [r["message"] for r in strict.logs] == ["level=error db down"]
    assert strict.stats["filters"]["level_strict"] is True


def test_the_digest_is_the_sha256_of_the_response_body(loki):
    loki.body = b'{"status":"success","data":{"resultType":"streams","result":[]}}'

    result = LokiBackend(loki.url).query_logs(query())

    assert result.digests == {f"{loki.url}/loki/api/v1/query_range": "sha256:" + hashlib.sha256(loki.body).hexdigest()}
