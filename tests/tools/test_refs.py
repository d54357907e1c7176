from __future__ import annotations

import pytest

from evcli.tools.lookup_knowledge import block_text
from evcli.tools.query_logs import log_text, stats_text
from evcli.tools.query_metrics import alert_text, series_text
from evcli.tools.refs import evidence, no_evidence_ref, number, positive_refs
from evcli.tools.registry import UnknownTool


def test_alert_ref_merges_fields_in_a_fixed_order():
    alert = {
        "alertname": "HighCPUUsage",
        "service": "payment-service",
        "instance": "",
        "severity": "warning",
        "state": "firing",
        "value": 92.0,
        "unit": "%",
        "duration": "25m",
        "active_at": None,
        "summary": "CPU high",
    }
    assert alert_text(alert) == (
        "HighCPUUsage, service=payment-service, severity=warning, state=firing, current=92%, duration=25m, summary=CPU high"
    )


def test_series_log_and_block_refs():
    assert series_text(
        {
            "service": "order-service",
            "metric": "heap_used",
            "window": "30m",
            "min": 2.9,
            "max": 3.8,
            "last": 3.8,
            "unit": "GB",
        }
    ) == ("order-service heap_used window=30m min=2.9GB max=3.8GB last=3.8GB")
    assert log_text(
        {
            "timestamp": "2026-07-08T23:05:28Z",
            "level": "ERROR",
            "service": "order-service",
            "instance": None,
            "message": "HikariPool-1 - Connection is not available",
        }
    ) == ("2026-07-08 23:05:28 ERROR order-service HikariPool-1 - Connection is not available")
    assert block_text(
        {"doc": "runbooks/high-memory.md", "heading": "Immediate steps", "text": "Capture a heap dump."}
    ) == ("runbooks/high-memory.md › Immediate steps: Capture a heap dump.")


def test_numbers_never_hide_digits_in_an_exponent():
    assert [number(92.0), number(0.91234), number(4.2), number(3.8e9), number(184321.0), number("n/a")] == [
        "92",
        "0.91234",
        "4.2",
        "3800000000",
        "184321",
        "n/a",
    ]


def test_word_units_are_spaced_symbol_units_are_not():
    from evcli.tools.refs import with_unit

    assert [
        with_unit(92, "%"),
        with_unit(4.2, "s"),
        with_unit(3.8, "GB"),
        with_unit(184000, "messages"),
        with_unit(9, ""),
    ] == ["92%", "4.2s", "3.8GB", "184000 messages", "9"]


def test_one_positive_ref_per_item_of_the_tools_own_arrays_in_order():
    output = {
        "alerts": [{"alertname": "A"}],
        "series": [{"service": "s", "metric": "m", "window": "5m"}],
        "logs": [{"message": "one"}, {"message": "two"}],
    }
    assert [ref.raw_path for ref in positive_refs("query_metrics", output)] == ["$.alerts[0]", "$.series[0]"]
    assert [ref.raw_path for ref in positive_refs("query_logs", output)] == ["$.logs[0]", "$.logs[1]"]
    assert positive_refs("lookup_knowledge", output) == []


def test_refs_of_an_unknown_tool_are_an_error_not_another_tools_refs():
    with pytest.raises(
        UnknownTool, match="unknown tool 'query_events'; tools: query_metrics, query_logs, lookup_knowledge"
    ):
        evidence("query_events", {"logs": [{"message": "one"}]}, {}, dedup_reason=None)


def test_no_evidence_ref_names_tool_query_scope_and_total():
    ref = no_evidence_ref(
        "query_logs",
        {"service": "inventory-service", "keywords": ["HikariCP"], "window": "1h"},
        "no matching log lines",
    )
    assert ref.raw_path == "$.no_evidence"
    assert ref.text == (
        "query_logs returned no evidence; evidence_status=no_evidence; query=inventory-service HikariCP; "
        "window=1h; total=0; message=no matching log lines"
    )


def test_no_evidence_ref_names_the_level_filter_when_there_is_one():
    ref = no_evidence_ref(
        "query_logs", {"service": "inventory-service", "keywords": [], "level": "ERROR", "window": "1h"}, ""
    )
    assert ref.text == (
        "query_logs returned no evidence; evidence_status=no_evidence; query=inventory-service; "
        "level>=ERROR; window=1h; total=0"
    )


# --- issue 9: provenance, stats, patterns, absolute ranges ------------------------------------


def test_a_log_ref_is_provenance_time_with_zone_and_the_original_line():
    line = '10.20.30.40 - - [29/Jan/2023:10:03:11 +0800] "GET /login HTTP/1.1" 401 512'
    access = {
        "timestamp": "2023-01-29T10:03:11.000+08:00",
        "level": "WARN",
        "level_derived": True,
        "message": line,
        "line": line,
        "source": {"path": "logs/nginx-access.log", "line": 7},
    }
    assert log_text(access) == (
        f"logs/nginx-access.log:7 2023-01-29T10:03:11.000+08:00 WARN {line} (level derived from the status code)"
    )
    loki = {
        "timestamp": "2024-05-01T10:00:20.000+00:00",
        "line": "payment gateway timeout",
        "source": {"stream": {"service": "checkout", "pod": "c-1"}, "ts_ns": "1714557620000000000"},
    }
    assert log_text(loki) == (
        'loki{pod="c-1",service="checkout"}@1714557620000000000 2024-05-01T10:00:20.000+00:00 payment gateway timeout'
    )


def test_stats_say_when_the_count_is_a_lower_bound_and_how_the_level_filter_treated_unleveled_lines():
    stats = {
        "total": 5000,
        "by_level": {"ERROR": 4000, "none": 1000},
        "by_source": {'{service="checkout"}': 5000},
        "range": "2024-05-01T09:30:00+00:00..2024-05-01T10:30:00+00:00",
        "range_origin": "live default 1h",
        "filters": {"service": "checkout", "keywords": ["timeout", "db pool"], "level": "ERROR"},
        "lower_bound": True,
    }
    assert stats_text(stats) == (
        "stats: at least 5000 matching lines in 2024-05-01T09:30:00+00:00..2024-05-01T10:30:00+00:00 "
        "(live default 1h) (a lower bound: the backend's line limit was reached); by level: ERROR 4000, none 1000; "
        'by source: {service="checkout"} 5000; filters: service=checkout keywords="timeout" "db pool" '
        "level>=ERROR (lines without a level kept)"
    )


def test_no_evidence_states_the_absolute_range_and_the_level_treatment():
    scope = {
        "service": "sshd",
        "keywords": ["Failed password"],
        "level": "WARN",
        "level_strict": True,
        "range": "2023-01-29T10:03:00+08:00..2023-01-29T10:05:00+08:00",
        "range_origin": "whole snapshot",
    }
    assert no_evidence_ref("query_logs", scope, "no matching log lines").text == (
        "query_logs returned no evidence; evidence_status=no_evidence; query=sshd Failed password; "
        "level>=WARN (lines without a level dropped); "
        "range=2023-01-29T10:03:00+08:00..2023-01-29T10:05:00+08:00 (whole snapshot); total=0; "
        "message=no matching log lines"
    )


def test_stats_are_a_ref_only_beside_lines_so_zero_hits_stay_no_evidence():
    stats = {"total": 0, "by_level": {"none": 0}, "range": "", "range_origin": "whole snapshot", "filters": {}}
    status, refs = evidence(
        "query_logs", {"logs": [], "stats": stats, "patterns": [], "total": 0}, {}, dedup_reason=None
    )
    assert status == "no_evidence" and [ref.raw_path for ref in refs] == ["$.no_evidence"]
    assert positive_refs("query_logs", {"logs": [{"message": "x"}], "stats": stats, "patterns": [{"count": 1}]}) and [
        ref.raw_path for ref in positive_refs("query_logs", {"logs": [{"message": "x"}], "stats": stats})
    ] == ["$.logs[0]", "$.stats"]


def test_a_series_states_its_range_points_and_when_each_value_occurred():
    series = {
        "service": "order-service",
        "metric": "heap_used",
        "range": "2023-01-29T10:00:00+08:00..2023-01-29T11:00:00+08:00",
        "points": 12,
        "min": 2.9,
        "min_at": "2023-01-29T10:00:00+08:00",
        "max": 3.8,
        "max_at": "2023-01-29T10:55:00+08:00",
        "last": 3.8,
        "last_at": "2023-01-29T11:00:00+08:00",
        "unit": "GB",
    }
    assert series_text(series) == (
        "order-service heap_used range=2023-01-29T10:00:00+08:00..2023-01-29T11:00:00+08:00 points=12 "
        "min=2.9GB at 2023-01-29T10:00:00+08:00 max=3.8GB at 2023-01-29T10:55:00+08:00 "
        "last=3.8GB at 2023-01-29T11:00:00+08:00"
    )
