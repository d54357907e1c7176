"""Parameter validation of the evidence tools (evcli.tools.params and each tool's model): what is accepted, how it is
normalised, and the one-line BadInput naming tool and parameter for everything else."""

from __future__ import annotations

import pytest

from evcli.core.errors import EXIT_USAGE, BadInput
from evcli.tools.lookup_knowledge import LookupKnowledgeParams
from evcli.tools.params import MAX_KEYWORDS, keywords
from evcli.tools.query_logs import QueryLogsParams
from evcli.tools.query_metrics import QueryMetricsParams
from evcli.tools.registry import validate_params


def bad(tool: str, params: dict) -> str:
    with pytest.raises(BadInput) as caught:
        validate_params(tool, params)
    assert caught.value.exit_code == EXIT_USAGE
    return caught.value.message


# --- defaults and normalisation ------------------------------------------------------------


def test_each_tool_has_its_model_and_defaults():
    logs = validate_params("query_logs", {"service": "order-service"})
    assert isinstance(logs, QueryLogsParams)
    # issue 9: no window by default (the backend's default range: a whole snapshot, a live last hour)
    assert logs.model_dump() == {
        "service": "order-service",
        "query": "",
        "level": None,
        "level_strict": None,
        "since": None,
        "until": None,
        "window": None,
        "limit": 50,
        "count_by": None,  # recorded only when asked (None is left out of a call's parameters)
    }
    metrics = validate_params("query_metrics", {})
    assert isinstance(metrics, QueryMetricsParams)
    assert metrics.model_dump() == {
        "service": None,
        "alertname": None,
        "metric": None,
        "since": None,
        "until": None,
        "window": None,
        "state": None,  # issue 9: alerts in this state; None = active (firing or pending)
        "labels": None,  # issue 26: label matchers, a quantile, a PromQL expression, an instant (live Prometheus)
        "quantile": None,
        "promql": None,
        "at": None,
    }
    knowledge = validate_params("lookup_knowledge", {"query": "heap dump"})
    assert isinstance(knowledge, LookupKnowledgeParams)
    assert knowledge.model_dump() == {"query": "heap dump", "alertname": None, "service": None, "limit": 5}


def test_strings_are_stripped_and_levels_normalised():
    params = validate_params(
        "query_logs", {"service": "  order-service ", "query": " HikariPool ", "level": " warning ", "window": " 2h "}
    )
    assert params.service == "order-service"
    assert params.query == "HikariPool"
    assert params.level == "WARN"
    assert params.window == "2h"
    assert validate_params("query_logs", {"service": "a", "level": "critical"}).level == "FATAL"
    assert validate_params("query_logs", {"service": "a", "level": "error"}).level == "ERROR"
    assert validate_params("query_logs", {"service": "a", "level": ""}).level is None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ()),
        ("HikariPool timeout", ("HikariPool", "timeout")),
        ('"connection is not available" HikariPool', ("connection is not available", "HikariPool")),
        ("  spaced   out  ", ("spaced", "out")),
    ],
)
def test_keywords_split_on_whitespace_and_keep_quoted_phrases(query, expected):
    assert keywords(query) == expected
    assert validate_params("query_logs", {"service": "s", "query": query}).keywords == expected


def test_at_most_eight_keywords():
    eight = " ".join(f"k{i}" for i in range(MAX_KEYWORDS))
    assert len(validate_params("query_logs", {"service": "s", "query": eight}).keywords) == MAX_KEYWORDS
    message = bad("query_logs", {"service": "s", "query": eight + " k9"})
    assert message.startswith("query_logs: query: ")
    assert f"at most {MAX_KEYWORDS} keywords, got {MAX_KEYWORDS + 1}" in message


@pytest.mark.parametrize("service", ["order-service", "node-worker-01:9100", "ns/app", "svc_1.v2", "A"])
def test_service_names_that_are_accepted(service):
    assert validate_params("query_logs", {"service": service}).service == service
    assert validate_params("query_metrics", {"service": service}).service == service


@pytest.mark.parametrize("window", ["90s", "30m", "2h", "1d", "30d"])
def test_windows_that_are_accepted(window):
    assert validate_params("query_metrics", {"window": window}).window == window


@pytest.mark.parametrize(("limit", "ok"), [(1, True), (500, True), (0, False), (501, False), (-3, False)])
def test_query_logs_limit_bounds(limit, ok):
    if ok:
        assert validate_params("query_logs", {"service": "s", "limit": limit}).limit == limit
    else:
        assert bad("query_logs", {"service": "s", "limit": limit}).startswith("query_logs: limit: ")


@pytest.mark.parametrize(("limit", "ok"), [(1, True), (20, True), (0, False), (21, False)])
def test_lookup_knowledge_limit_bounds(limit, ok):
    if ok:
        assert validate_params("lookup_knowledge", {"query": "q", "limit": limit}).limit == limit
    else:
        assert bad("lookup_knowledge", {"query": "q", "limit": limit}).startswith("lookup_knowledge: limit: ")


# --- rejections: one line naming the tool and the parameter -----------------------------------


@pytest.mark.parametrize(
    ("tool", "params", "prefix", "reason"),
    [
        ("query_logs", {"service": "pay ment"}, "query_logs: service: ", "pattern"),
        ("query_logs", {"service": "pay;rm -rf /"}, "query_logs: service: ", "pattern"),
        ("query_logs", {"service": "-leading-dash"}, "query_logs: service: ", "pattern"),
        ("query_logs", {"service": "x" * 101}, "query_logs: service: ", "pattern"),
        ("query_logs", {"service": ""}, "query_logs: service: ", "pattern"),  # service is optional: all logs
        ("query_metrics", {"service": "a b"}, "query_metrics: service: ", "pattern"),
        ("query_metrics", {"alertname": "High CPU"}, "query_metrics: alertname: ", "pattern"),
        # issue 9: a CSV header with its unit (`CpuUsageRate(%)`) is a metric name; quotes and braces are not
        ("query_metrics", {"metric": 'cpu"} or vector(1)'}, "query_metrics: metric: ", "pattern"),
        (
            "query_logs",
            {"service": "s", "window": "bad"},
            "query_logs: window: ",
            "window must look like 30m, 2h or 1d",
        ),
        ("query_logs", {"service": "s", "window": "30 minutes"}, "query_logs: window: ", "window must look like"),
        ("query_metrics", {"window": "0m"}, "query_metrics: window: ", "between 1s and 30d"),
        ("query_metrics", {"window": "31d"}, "query_metrics: window: ", "between 1s and 30d"),
        ("query_logs", {"service": "s", "query": '"unclosed phrase'}, "query_logs: query: ", "unbalanced quotes"),
        ("query_logs", {"service": "s", "query": "x" * 201}, "query_logs: query: ", "at most 200 characters"),
        ("query_logs", {"service": "s", "level": "LOUD"}, "query_logs: level: ", "TRACE"),
        ("query_logs", {"service": "s", "limit": "many"}, "query_logs: limit: ", "integer"),
        ("query_logs", {"service": "s", "keywords": ["x"]}, "query_logs: keywords: ", "Extra inputs are not permitted"),
        ("query_metrics", {"service": "s", "limit": 5}, "query_metrics: limit: ", "Extra inputs are not permitted"),
        ("lookup_knowledge", {"query": ""}, "lookup_knowledge: query: ", "at least 1 character"),
        ("lookup_knowledge", {}, "lookup_knowledge: query: ", "required"),
        (
            "lookup_knowledge",
            {"query": "q", "window": "1h"},
            "lookup_knowledge: window: ",
            "Extra inputs are not permitted",
        ),
    ],
)
def test_bad_parameters_name_tool_and_parameter(tool, params, prefix, reason):
    message = bad(tool, params)
    assert message.startswith(prefix), message
    assert reason in message, message
    assert "\n" not in message


def test_unknown_tool_is_named_with_the_tools_there_are():
    message = bad("query_profiles", {"service": "s"})
    assert (
        message == "unknown tool 'query_profiles'; tools: query_metrics, query_logs, lookup_knowledge, find_changes, "
        "query_kubernetes, query_traces"
    )


# --- issue 9: since/until ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "moment",
    [
        "2023-01-29T10:03:00+08:00",
        "2023-01-29T02:03Z",
        "2023-01-29T10:03:00",
        "2023-01-29 10:03",
        "10:03",
        "-2h",
        "now",
    ],
)
@pytest.mark.parametrize("tool", ["query_logs", "query_metrics"])
def test_since_and_until_accept_every_time_form(tool, moment):
    params = validate_params(tool, {"service": "s", "since": moment, "until": moment})
    assert (params.since, params.until, params.window) == (moment, moment, None)


@pytest.mark.parametrize("moment", ["yesterday", "2023-13-01 10:00", "25:00", "ten past ten", "10:03 PM"])
def test_an_unreadable_time_is_one_line_naming_the_accepted_forms(moment):
    message = bad("query_logs", {"service": "s", "since": moment})
    assert message.startswith(f"query_logs: since: cannot read time {moment!r}: use ISO 8601 (")
    assert "a time of day (10:03) or a relative time (-2h" in message
    assert "\n" not in message


@pytest.mark.parametrize("times", [{"since": "-2h"}, {"until": "10:05"}, {"since": "10:03", "until": "10:05"}])
@pytest.mark.parametrize("tool", ["query_logs", "query_metrics"])
def test_a_window_with_since_or_until_is_refused(tool, times):
    assert bad(tool, {"service": "s", "window": "1h", **times}) == (
        f"{tool}: parameters: give either window or since/until, not both"
    )


def test_level_strict_false_is_the_default_spelt_out():
    assert validate_params("query_logs", {"service": "s", "level_strict": False}).model_dump(exclude_none=True) == (
        validate_params("query_logs", {"service": "s"}).model_dump(exclude_none=True)
    )
    assert validate_params("query_logs", {"service": "s", "level": "WARN", "level_strict": True}).level_strict is True
