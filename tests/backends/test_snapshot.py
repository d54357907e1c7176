"""SnapshotBackend over small snapshot directories built per test, and over the packaged demo."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evcli.backends.base import LogQuery, parse_window
from evcli.backends.snapshot import SnapshotBackend, demo_env_dir
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange

NOW = "2026-07-08T23:10:00Z"
ENV = f'name = "test"\nnow = "{NOW}"\n'


def make_snapshot(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def backend(tmp_path: Path, files: dict[str, str | bytes]) -> SnapshotBackend:
    return SnapshotBackend(make_snapshot(tmp_path / "env", files))


def logs(snap: SnapshotBackend, service: str | None, *keywords: str, level=None, window="1h", limit=50):
    return snap.query_logs(LogQuery(service, keywords, level, parse_window(window, snap.now()), limit))


def metrics(snap: SnapshotBackend, service=None, alertname=None, metric=None, window="1h", state="active"):
    return snap.query_metrics(
        service=service, alertname=alertname, metric=metric, window=parse_window(window, snap.now()), state=state
    )


# --- alerts ------------------------------------------------------------------------------------

PROMETHEUS_ALERTS = {
    "status": "success",
    "data": {
        "alerts": [
            {
                "labels": {
                    "alertname": "HighCPUUsage",
                    "service": "pay",
                    "instance": "pay-1",
                    "severity": "warning",
                },
                "annotations": {"summary": "CPU is 92%", "unit": "%"},
                "state": "firing",
                "activeAt": "2026-07-08T22:45:00.123456789Z",
                "value": "9.2e+01",
            },
            {
                "labels": {"alertname": "QueueBacklog", "job": "worker"},
                "annotations": {"description": "queue is long"},
                "state": "pending",
                "activeAt": "2026-07-08T23:05:00Z",
                "value": "120",
            },
            {
                "labels": {"alertname": "Future", "service": "pay"},
                "annotations": {},
                "state": "firing",
                "activeAt": "2026-07-08T23:20:00Z",
                "value": "1",
            },
            {
                "labels": {"alertname": "Old", "service": "pay"},
                "annotations": {},
                "state": "firing",
                "activeAt": "2026-07-08T22:05:00Z",
                "value": "1",
            },
        ]
    },
}


def test_prometheus_alerts_are_normalised(tmp_path):
    snap = backend(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(PROMETHEUS_ALERTS)})
    result = metrics(snap, service="pay", alertname="highcpuusage")
    assert result.alerts == [
        {
            "alertname": "HighCPUUsage",
            "service": "pay",
            "instance": "pay-1",
            "severity": "warning",
            "state": "firing",
            "value": 92.0,
            "unit": "%",
            "active_at": "2026-07-08T22:45:00Z",
            "duration": "25m",
            "summary": "CPU is 92%",
            "labels": {
                "alertname": "HighCPUUsage",
                "instance": "pay-1",
                "service": "pay",
                "severity": "warning",
            },
        }
    ]
    assert result.series == []


def test_firing_alert_is_kept_outside_the_window_pending_only_inside(tmp_path):
    snap = backend(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(PROMETHEUS_ALERTS)})
    old = metrics(snap, alertname="Old", window="5m").alerts
    assert [alert["duration"] for alert in old] == ["1h05m"]
    pending = metrics(snap, alertname="QueueBacklog", window="5m").alerts
    assert [(alert["state"], alert["service"], alert["summary"]) for alert in pending] == [
        ("pending", "worker", "queue is long")
    ]
    assert metrics(snap, alertname="NoSuchAlert").alerts == []
    assert metrics(snap, alertname="Future").alerts == []  # raised after the snapshot's now


def test_alertmanager_v2_list_takes_value_and_unit_from_annotations(tmp_path):
    alerts = [
        {
            "labels": {"alertname": "HighMemoryUsage", "service": "orders", "severity": "critical"},
            "annotations": {"summary": "memory", "value": "91%"},
            "startsAt": "2026-07-08T22:53:00Z",
            "endsAt": "2026-07-08T23:20:00Z",
            "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
        },
        {
            "labels": {"alertname": "SlowResponse", "service": "users"},
            "annotations": {"current": "4.2s"},
            "startsAt": "2026-07-08T22:55:00Z",
            "endsAt": "2026-07-08T23:20:00Z",
            "status": {"state": "suppressed"},
        },
        {
            "labels": {"alertname": "Gone", "service": "users", "unit": "ms"},
            "annotations": {"value": "12"},
            "startsAt": "2026-07-08T22:30:00Z",
            "endsAt": "2026-07-08T22:50:00Z",
            "status": {"state": "active"},
        },
    ]
    snap = backend(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(alerts)})
    found = {alert["alertname"]: alert for alert in metrics(snap, state="any").alerts}
    assert (found["HighMemoryUsage"]["value"], found["HighMemoryUsage"]["unit"]) == (91.0, "%")
    assert found["HighMemoryUsage"]["state"] == "firing"
    # issue 9: a suppressed alert keeps its state (it was shown as firing before)
    assert (
        found["SlowResponse"]["value"],
        found["SlowResponse"]["unit"],
        found["SlowResponse"]["state"],
    ) == (4.2, "s", "suppressed")
    # endsAt before the snapshot's now: resolved, and its duration is how long it was active
    assert (found["Gone"]["state"], found["Gone"]["duration"], found["Gone"]["unit"]) == (
        "resolved",
        "20m",
        "ms",
    )
    assert "Gone" not in {alert["alertname"] for alert in metrics(snap, window="10m", state="any").alerts}
    assert [alert["alertname"] for alert in metrics(snap).alerts] == ["HighMemoryUsage"]  # active only


def test_alertmanager_webhook_payload(tmp_path):
    payload = {
        "version": "4",
        "status": "firing",
        "receiver": "team",
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "DiskSpaceLow", "service": "node-1", "instance": "node-1:9100"},
                "annotations": {"summary": "disk", "value": "94 %"},
                "startsAt": "2026-07-08T22:40:00Z",
                "endsAt": "0001-01-01T00:00:00Z",
            },
            {
                "status": "resolved",
                "labels": {"alertname": "DiskSpaceLow", "service": "node-2"},
                "annotations": {},
                "startsAt": "2026-07-08T21:00:00Z",
                "endsAt": "2026-07-08T21:30:00Z",
            },
        ],
    }
    snap = backend(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(payload)})
    firing = metrics(snap, service="node-1").alerts
    assert [(a["state"], a["value"], a["unit"], a["duration"], a["instance"]) for a in firing] == [
        ("firing", 94.0, "%", "30m", "node-1:9100")
    ]
    assert metrics(snap, service="node-2").alerts == []  # resolved before the window
    assert metrics(snap, service="node-2", window="3h").alerts == []  # issue 9: resolved only when asked
    assert [a["state"] for a in metrics(snap, service="node-2", window="3h", state="resolved").alerts] == ["resolved"]


def test_unknown_alerts_shape_and_invalid_json_raise_naming_the_file(tmp_path):
    snap = backend(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps({"items": []})})
    with pytest.raises(BackendError, match=r"alerts\.json: unknown alerts shape.*Prometheus.*Alertmanager.*webhook"):
        metrics(snap)
    broken = SnapshotBackend(make_snapshot(tmp_path / "broken", {"env.toml": ENV, "alerts.json": "{not json"}))
    with pytest.raises(BackendError, match=r"alerts\.json: invalid JSON"):
        metrics(broken)
    undecodable = SnapshotBackend(make_snapshot(tmp_path / "bytes", {"env.toml": ENV, "alerts.json": b"\xff\xfe[]"}))
    with pytest.raises(BackendError, match=r"alerts\.json"):
        metrics(undecodable)


def test_alert_labels_name_services_with_job_and_app_as_fallback(tmp_path):
    alerts = [
        {
            "labels": {"alertname": "A", "app": "billing"},
            "annotations": {},
            "startsAt": "2026-07-08T23:00:00Z",
        },
        {"labels": {"alertname": "B", "job": "api"}, "annotations": {}, "startsAt": "2026-07-08T23:00:00Z"},
    ]
    snap = backend(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(alerts), "logs/web.log": ""})
    assert snap.known_services() == ["api", "billing", "web"]


# --- log formats -------------------------------------------------------------------------------

RAW_LOG = """\
2026-07-08T22:50:00Z INFO [app-1] started
2026-07-08T22:51:00.250+02:00 WARN [app-1] offset time
2026-07-08 22:52:00,125 ERROR [app-2] comma fraction
2026/07/08 22:53:00 [error] 42#0: slash format
[2026-07-08 22:54:00] level=warn bracketed msg instance=app-3
Jul 08 22:55:00 host-1 kernel: CRITICAL syslog line
2026-07-08 22:56:00 ERROR [app-1] request failed: java.lang.IllegalStateException
java.lang.IllegalStateException: pool closed
\tat com.example.error.Handler.handle(Handler.java:12)
2026-07-08 22:57:00 info lower case level word
2026-07-08 22:58:00 [main] c.e.error.Handler - no level here
"""


def records(result):
    return [(entry["timestamp"], entry["level"], entry["instance"], entry["message"]) for entry in result.logs]


def test_log_formats_timestamps_levels_and_instances(tmp_path):
    snap = backend(tmp_path, {"env.toml": ENV, "logs/app.log": RAW_LOG})
    result = logs(snap, "app", window="3h")  # the +02:00 line is 20:51 UTC
    # read by the log format registry (issue 9): nginx's pid#tid is a field, a `level=` key is
    # reported but kept in the text, a syslog message level is one of its words, a `[thread]`
    # before the logger is the instance; lines without a level have level None
    assert records(result) == [
        ("2026-07-08T20:51:00.250+00:00", "WARN", "app-1", "offset time"),
        ("2026-07-08T22:50:00.000+00:00", "INFO", "app-1", "started"),
        ("2026-07-08T22:52:00.125+00:00", "ERROR", "app-2", "comma fraction"),
        ("2026-07-08T22:53:00.000+00:00", "ERROR", "", "slash format"),
        ("2026-07-08T22:54:00.000+00:00", "WARN", "app-3", "level=warn bracketed msg instance=app-3"),
        ("2026-07-08T22:55:00.000+00:00", "FATAL", "host-1", "CRITICAL syslog line"),  # its own level, first
        ("2026-07-08T22:56:00.000+00:00", "ERROR", "app-1", "request failed: java.lang.IllegalStateException"),
        ("2026-07-08T22:56:00.000+00:00", "ERROR", "app-1", "java.lang.IllegalStateException: pool closed"),
        (
            "2026-07-08T22:56:00.000+00:00",
            "ERROR",
            "app-1",
            "at com.example.error.Handler.handle(Handler.java:12)",
        ),
        ("2026-07-08T22:57:00.000+00:00", None, "", "info lower case level word"),
        ("2026-07-08T22:58:00.000+00:00", None, "main", "c.e.error.Handler - no level here"),
    ]
    assert [entry["source"] for entry in result.logs][:2] == [
        {"path": "logs/app.log", "line": 2},
        {"path": "logs/app.log", "line": 1},
    ]
    assert result.total == 11 and not result.truncated


def test_stack_trace_line_inherits_timestamp_and_level_of_its_event(tmp_path):
    snap = backend(tmp_path, {"env.toml": ENV, "logs/app.log": RAW_LOG})
    result = logs(snap, "app", "pool closed", level="ERROR")
    assert records(result) == [
        ("2026-07-08T22:56:00.000+00:00", "ERROR", "app-1", "java.lang.IllegalStateException: pool closed")
    ]
    # the event is 14 minutes old: a 10-minute window leaves its continuation lines out too
    assert logs(snap, "app", "pool closed", window="10m").total == 0


def test_timezone_applies_to_naive_timestamps_and_syslog_uses_the_snapshot_year(tmp_path):
    env = 'now = "2025-03-01T12:00:00Z"\ntimezone = "Asia/Shanghai"\n'
    lines = "2025-03-01 19:30:00 INFO naive local\n2025-03-01T11:45:00Z INFO explicit utc\nMar 01 19:50:00 h x: INFO syslog local\n"
    snap = backend(tmp_path, {"env.toml": env, "logs/app.log": lines})
    assert [entry["timestamp"] for entry in logs(snap, "app").logs] == [  # in the environment's zone
        "2025-03-01T19:30:00.000+08:00",
        "2025-03-01T19:45:00.000+08:00",
        "2025-03-01T19:50:00.000+08:00",
    ]


def test_jsonl_lines_with_alternative_keys(tmp_path):
    lines = [
        {
            "ts": "2026-07-08T23:00:00Z",
            "lvl": "warning",
            "msg": "disk slow",
            "pod": "p-1",
            "logger": "HikariPool",
        },
        {
            "@timestamp": "2026-07-08T23:01:00.5Z",
            "severity": "error",
            "message": "write failed",
            "host": "h-1",
        },
        {"time": 1783551720000, "level": 50, "msg": "epoch and pino level", "instance": "i-1"},
        {"timestamp": "2026-07-08T23:03:00Z", "level": "info", "message": "连接池耗尽 on db-1"},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + "\n2026-07-08T23:04:00Z ERROR not json at all\n"
    snap = backend(tmp_path, {"env.toml": ENV, "logs/db.jsonl": text})
    assert records(logs(snap, "db")) == [
        ("2026-07-08T23:00:00.000+00:00", "WARN", "p-1", "disk slow"),
        ("2026-07-08T23:01:00.500+00:00", "ERROR", "h-1", "write failed"),
        ("2026-07-08T23:02:00.000+00:00", "ERROR", "i-1", "epoch and pino level"),
        ("2026-07-08T23:03:00.000+00:00", "INFO", "", "连接池耗尽 on db-1"),
        ("2026-07-08T23:04:00.000+00:00", "ERROR", "", "not json at all"),
    ]
    # issue 9: a keyword matches the original line (the ref text), fields and key names included
    assert [entry["line"] for entry in logs(snap, "db", "hikaripool").logs] == [json.dumps(lines[0])]
    assert logs(snap, "db", "message").total == 2
    # json.dumps escapes Chinese as \\uXXXX: the keyword still matches the decoded text
    assert [entry["message"] for entry in logs(snap, "db", "连接池").logs] == ["连接池耗尽 on db-1"]


# --- querying logs -----------------------------------------------------------------------------


def numbered_log(count: int, start_minute: int = 0) -> str:
    return "".join(
        f"2026-07-08 22:{start_minute + index:02d}:00 {'ERROR' if index % 2 else 'INFO'} [a-1] Order ORD-{index} Payment timeout\n"
        for index in range(count)
    )


def test_keywords_all_must_occur_case_insensitively(tmp_path):
    text = (
        "2026-07-08 23:00:00 ERROR [a-1] Redis TIMEOUT on redis-01\n"
        "2026-07-08 23:01:00 ERROR [a-1] redis ok\n"
        "2026-07-08 23:02:00 WARN [a-1] 连接池耗尽 timeout\n"
    )
    snap = backend(tmp_path, {"env.toml": ENV, "logs/a.log": text})
    assert [entry["message"] for entry in logs(snap, "a", "redis", "Timeout").logs] == ["Redis TIMEOUT on redis-01"]
    assert [entry["message"] for entry in logs(snap, "a", "连接池耗尽").logs] == ["连接池耗尽 timeout"]
    assert logs(snap, "a", "redis", "missing").message == "no matching log lines"


def test_level_filter_is_a_minimum(tmp_path):
    text = "2026-07-08 23:00:00 DEBUG d\n2026-07-08 23:01:00 WARN w\n2026-07-08 23:02:00 FATAL f\n2026-07-08 23:03:00 none\n"
    snap = backend(tmp_path, {"env.toml": ENV, "logs/a.log": text})
    # issue 9: a level filter keeps lines without a level unless it is strict
    assert [entry["level"] for entry in logs(snap, "a", level="WARNING").logs] == ["WARN", "FATAL", None]
    assert [entry["level"] for entry in logs(snap, "a", level="ERROR").logs] == ["FATAL", None]
    strict = snap.query_logs(LogQuery("a", (), "ERROR", parse_window("1h", snap.now()), 50, level_strict=True))
    assert [entry["level"] for entry in strict.logs] == ["FATAL"]
    assert logs(snap, "a").total == 4


def test_window_is_measured_from_the_snapshot_clock(tmp_path):
    snap = backend(tmp_path, {"env.toml": ENV, "logs/a.log": numbered_log(40, start_minute=10)})
    # lines at 22:10 .. 22:49; now is 23:10
    assert logs(snap, "a", window="30m").total == 10
    assert logs(snap, "a", window="20m").total == 0
    assert logs(snap, "a", window="1h").total == 40


def test_limit_keeps_the_newest_matches_oldest_first(tmp_path):
    snap = backend(tmp_path, {"env.toml": ENV, "logs/a.log": numbered_log(40, start_minute=10)})
    result = logs(snap, "a", "payment", limit=3)
    assert (result.total, result.truncated) == (40, True)
    assert [entry["message"] for entry in result.logs] == [
        "Order ORD-37 Payment timeout",
        "Order ORD-38 Payment timeout",
        "Order ORD-39 Payment timeout",
    ]
    assert result.message == "40 matching lines (newest 3 returned)"
    exact = logs(snap, "a", "ORD-39", limit=1)
    assert (exact.total, exact.truncated, exact.message) == (1, False, "1 matching line")


def test_all_services_are_merged_by_time(tmp_path):
    files = {
        "env.toml": ENV,
        "logs/a.log": "2026-07-08 23:00:00 ERROR a0 timeout\n2026-07-08 23:02:00 ERROR a2 timeout\n",
        "logs/b.jsonl": '{"timestamp": "2026-07-08T23:01:00Z", "level": "error", "msg": "b1 timeout"}\n',
    }
    snap = backend(tmp_path, files)
    result = logs(snap, None, "timeout", limit=2)
    assert [(entry["service"], entry["message"]) for entry in result.logs] == [
        ("b", "b1 timeout"),
        ("a", "a2 timeout"),
    ]
    assert (result.total, result.truncated) == (3, True)


# --- metrics -----------------------------------------------------------------------------------

CSV = """\
time,cpu_usage[%],heap_used[GB],p99_latency [s],requests
2026-07-08T22:00:00Z,10,1.0,0.1,5
2026-07-08T22:50:00Z,45.55555,3.123456,,7
2026-07-08T23:00:00Z,92,3.8,4.2,
2026-07-08T23:10:00Z,88,3.7,0.123456,9
"""


def test_series_summarise_rows_inside_the_window(tmp_path):
    snap = backend(tmp_path, {"env.toml": ENV, "metrics/pay.csv": CSV})
    series = {item["metric"]: item for item in metrics(snap, service="pay", window="30m").series}
    assert series["cpu_usage"] == {  # issue 9: the range, points and when min/max/last occurred
        "service": "pay",
        "metric": "cpu_usage",
        "window": "30m",
        "range": "2026-07-08T22:40:00+00:00..2026-07-08T23:10:00+00:00",
        "points": 3,
        "min": 45.56,
        "min_at": "2026-07-08T22:50:00+00:00",
        "max": 92.0,
        "max_at": "2026-07-08T23:00:00+00:00",
        "last": 88.0,
        "last_at": "2026-07-08T23:10:00+00:00",
        "unit": "%",
        # issue 13: every point as [unix seconds, value], sorted by time, for the report's chart
        "samples": [
            [1783551000, 45.56],
            [1783551600, 92.0],
            [1783552200, 88.0],
        ],
    }
    assert (series["heap_used"]["min"], series["heap_used"]["max"], series["heap_used"]["unit"]) == (
        3.123,
        3.8,
        "GB",
    )
    assert (series["p99_latency"]["min"], series["p99_latency"]["last"], series["p99_latency"]["unit"]) == (
        0.1235,
        0.1235,
        "s",
    )
    assert (series["requests"]["min"], series["requests"]["max"], series["requests"]["unit"]) == (
        7.0,
        9.0,
        "",
    )


def test_metric_selection_and_services(tmp_path):
    files = {
        "env.toml": ENV,
        "metrics/pay.csv": CSV,
        "metrics/db.csv": "ts,cpu_usage[%]\n2026-07-08T23:05:00Z,33\n",
    }
    snap = backend(tmp_path, files)
    only = metrics(snap, service="pay", metric="CPU_USAGE").series
    assert [(item["service"], item["metric"]) for item in only] == [("pay", "cpu_usage")]
    everywhere = metrics(snap, metric="cpu_usage").series
    assert sorted((item["service"], item["max"]) for item in everywhere) == [("db", 33.0), ("pay", 92.0)]
    # no service, alert or metric named: every series of the range, those that moved most (relative to their size) first
    every = metrics(snap).series
    assert len(every) == len(metrics(snap, service="pay").series) + 1
    moved = [(float(i["max"]) - float(i["min"])) / max(abs(float(i["max"])), abs(float(i["min"]))) for i in every]
    assert moved == sorted(moved, reverse=True) and moved[-1] == 0.0  # db's one point moved least
    unknown = metrics(snap, service="pay", metric="disk_used")
    assert unknown.series == [] and "no metric 'disk_used' in metrics/pay.csv" in unknown.message


def test_non_numeric_metric_value_raises_with_file_and_line(tmp_path):
    snap = backend(tmp_path, {"env.toml": ENV, "metrics/pay.csv": "ts,cpu[%]\n2026-07-08T23:00:00Z,high\n"})
    with pytest.raises(BackendError, match=r"metrics/pay\.csv line 2: cpu\[%\] value 'high' is not a number"):
        metrics(snap, service="pay")


# --- clock, services, errors -------------------------------------------------------------------


def test_clock_is_env_now_else_the_newest_timestamp(tmp_path):
    files = {
        "logs/a.log": numbered_log(3, start_minute=40) + "\tat trailing.stack(Trace.java:1)\n",
        "metrics/a.csv": "ts,x\n2026-07-08T22:41:30Z,1\n",
        "alerts.json": json.dumps([{"labels": {"alertname": "A"}, "startsAt": "2026-07-08T22:00:00Z"}]),
    }
    snap = backend(tmp_path, files)
    assert snap.now() == datetime(2026, 7, 8, 22, 42, tzinfo=UTC)
    assert snap.clock[1] == "newest timestamp (logs/a.log)"
    pinned = SnapshotBackend(make_snapshot(tmp_path / "pinned", {**files, "env.toml": 'now = "2026-07-08T22:41:00Z"'}))
    assert pinned.now() == datetime(2026, 7, 8, 22, 41, tzinfo=UTC)
    assert pinned.clock[1] == "env.toml now"
    # a line after the pinned clock is in the snapshot's future: no window includes it
    assert logs(pinned, "a", "ORD-2").total == 0


def whole(snap: SnapshotBackend, service: str) -> str:
    """The range a query naming no time states (issue 9: the whole snapshot)."""
    result = snap.query_logs(LogQuery(service, (), None, None, 5))
    assert result.stats is not None and result.stats["range_origin"] == "whole snapshot"
    assert result.stats["range"] == result.searched_range
    return result.searched_range


def test_whole_snapshot_is_one_span_over_every_file_the_same_for_every_service(tmp_path):
    """First timestamp over all logs, metrics and alerts .. the clock; not the queried service's files."""
    files = {
        "env.toml": 'now = "2026-07-08T23:10:00Z"\ntimezone = "Europe/Berlin"\n',
        "logs/a.log": "2026-07-09 00:40:00 INFO a starts\n2026-07-09 00:45:00 ERROR a fails\n",  # +02:00
        "logs/b.log": "Jul  9 00:55:01 web-01 b[12]: b answers\n",  # syslog, no level
        "metrics/c.csv": "ts,x\n2026-07-08T22:20:00Z,1\n2026-07-08T22:30:00Z,2\n",
        "alerts.json": json.dumps([{"labels": {"alertname": "A", "service": "d"}, "startsAt": "2026-07-08T22:10:00Z"}]),
    }
    snap = backend(tmp_path, files)
    span = "2026-07-09T00:10:00+02:00..2026-07-09T01:10:00+02:00"  # the alert start .. env.toml now

    assert whole(snap, "a") == whole(snap, "b") == span
    assert snap.query_metrics(service="c", alertname=None, metric=None).searched_range == span
    assert snap.query_metrics(service=None, alertname="NoSuchAlert", metric=None).searched_range == span
    # an open end is the whole snapshot's end too, for logs and metrics alike
    since = TimeRange(datetime(2026, 7, 8, 22, 44, tzinfo=UTC), None)
    assert snap.query_logs(LogQuery("a", (), None, None, 5, range=since)).searched_range == (
        "2026-07-09T00:44:00+02:00..2026-07-09T01:10:00+02:00"
    )
    assert snap.query_metrics(service="c", alertname=None, metric=None, range=since).searched_range == (
        "2026-07-09T00:44:00+02:00..2026-07-09T01:10:00+02:00"
    )
    # without env.toml now the clock is the newest timestamp; a line after a pinned clock widens the span
    unpinned = SnapshotBackend(
        make_snapshot(tmp_path / "unpinned", {**files, "env.toml": 'timezone = "Europe/Berlin"'})
    )
    assert whole(unpinned, "a") == whole(unpinned, "b") == "2026-07-09T00:10:00+02:00..2026-07-09T00:55:01+02:00"
    later = {**files, "logs/e.log": "2026-07-09 01:20:00 WARN e after the clock\n"}
    widened = SnapshotBackend(make_snapshot(tmp_path / "widened", later))
    assert whole(widened, "a") == whole(widened, "e") == "2026-07-09T00:10:00+02:00..2026-07-09T01:20:00+02:00"


def test_clock_reads_the_whole_log_when_its_tail_has_no_timestamp(tmp_path):
    trace = "".join(f"\tat com.example.Frame{index}.call(Frame.java:{index})\n" for index in range(3000))
    snap = backend(tmp_path, {"logs/a.log": numbered_log(5) + trace})
    assert len(trace) > 64 * 1024
    assert snap.now() == datetime(2026, 7, 8, 22, 4, tzinfo=UTC)
    assert logs(snap, "a", "Frame2999").logs[0]["timestamp"] == "2026-07-08T22:04:00.000+00:00"


def test_aliases_resolve_and_file_stems_fold_into_their_service(tmp_path):
    env = ENV + '[services.payment-service]\naliases = ["payment", "支付服务"]\n'
    files = {"env.toml": env, "logs/payment.log": "2026-07-08 23:00:00 ERROR [p-1] Redis timeout\n"}
    snap = backend(tmp_path, files)
    assert snap.known_services() == ["payment-service"]
    assert snap.resolve_service("支付服务") == "payment-service"
    assert snap.resolve_service("PAYMENT-SERVICE") == "payment-service"
    result = logs(snap, "支付服务", "redis")
    assert [(entry["service"], entry["message"]) for entry in result.logs] == [("payment-service", "Redis timeout")]
    assert snap.service_aliases() == {"payment-service": ["payment", "支付服务"]}


def test_unknown_service_answers_with_similar_names(tmp_path):
    files = {
        "env.toml": ENV,
        "logs/order-service.log": "",
        "logs/user-service.log": "",
        "metrics/gateway.csv": "ts,x\n",
    }
    snap = backend(tmp_path, files)
    assert snap.resolve_service("ordr-service") is None
    assert snap.close_matches("ordr-service") == ["order-service"]
    result = logs(snap, "ordr-service", "timeout")
    assert (result.logs, result.total, result.truncated) == ([], 0, False)
    assert result.message == "unknown service 'ordr-service'; known services with similar names: order-service"
    nothing_close = logs(snap, "redis")
    assert nothing_close.message == "unknown service 'redis'; known services: gateway, order-service, user-service"
    unknown_metrics = metrics(snap, service="ordr-service")
    assert (unknown_metrics.alerts, unknown_metrics.series) == ([], [])
    assert unknown_metrics.message.startswith("unknown service 'ordr-service'")


def test_unreadable_files_raise_backend_error_with_the_file_name(tmp_path):
    with pytest.raises(BackendError, match="does not exist"):
        SnapshotBackend(tmp_path / "missing")
    snap = backend(tmp_path, {"env.toml": ENV, "logs/app.jsonl": ""})
    (snap.directory / "logs" / "app.log").mkdir()  # a directory where a log file should be
    with pytest.raises(BackendError, match=r"logs/app\.log"):
        logs(snap, "app")
    bad_env = SnapshotBackend(make_snapshot(tmp_path / "bad-env", {"env.toml": "now = [", "logs/a.log": ""}))
    with pytest.raises(BackendError, match=r"env\.toml: invalid TOML"):
        bad_env.now()
    bad_zone = SnapshotBackend(make_snapshot(tmp_path / "bad-zone", {"env.toml": 'timezone = "Mars/Olympus"'}))
    with pytest.raises(BackendError, match="unknown timezone 'Mars/Olympus'"):
        bad_zone.now()


def test_odd_bytes_are_replaced_not_fatal(tmp_path):
    snap = backend(tmp_path, {"env.toml": ENV, "logs/a.log": b"2026-07-08 23:00:00 ERROR bad \xff byte timeout\n"})
    assert [entry["message"] for entry in logs(snap, "a", "timeout").logs] == ["bad \ufffd byte timeout"]


# --- a large file ------------------------------------------------------------------------------

BIG_LINES = 200_000


def write_big_log(root: Path, lines: int) -> SnapshotBackend:
    (root / "logs").mkdir(parents=True)
    (root / "env.toml").write_text('now = "2026-07-09T00:00:00Z"\n')
    with (root / "logs" / "big.log").open("w") as handle:
        for index in range(lines):
            second = index * 86400 // lines
            stamp = f"2026-07-08 {second // 3600:02d}:{second % 3600 // 60:02d}:{second % 60:02d}.{index % 1000:03d}"
            if index % 1000 == 0:
                handle.write(
                    f"{stamp} ERROR [big-7f9c-x2k9p] c.e.Pool - HikariPool-1 - Connection is not available, "
                    f"request timed out after 30000ms (waiting={index // 1000})\n"
                )
            else:
                handle.write(
                    f"{stamp} INFO  [big-7f9c-x2k9p] c.e.api.Controller - GET /api/v1/items/{index} status=200 "
                    f"took {index % 97}ms trace={index:016x}\n"
                )
    return SnapshotBackend(root)


@pytest.fixture(scope="module")
def big_snapshot(tmp_path_factory) -> SnapshotBackend:
    return write_big_log(tmp_path_factory.mktemp("big"), BIG_LINES)


def big_query(snap: SnapshotBackend, limit: int = 50):
    return snap.query_logs(LogQuery("big", ("hikaripool", "WAITING"), None, parse_window("1d", snap.now()), limit))


def test_large_file_is_streamed_in_bounded_memory(tmp_path):
    """The first query of a file (its index built, then queried) allocates about as much Python memory
    (tracemalloc: bytes read, numpy arrays, Python objects; not polars' or Arrow's own buffers) for
    400,000 lines as for 200,000: the build reads and stores a window of lines at a time
    (logcolumns.WINDOW_BYTES, two windows in flight), so its peak is bounded by a window's, not the
    file's, size; the query reads the store a block of rows at a time. Measured: 23-24 MB for both (the
    whole-file build: 55 MB for 200,000 lines, twice that for 400,000)."""
    big_query(write_big_log(tmp_path / "warm", 2000))  # modules imported and caches filled: not measured
    peaks, results = [], []
    for lines in (BIG_LINES, 2 * BIG_LINES):
        snap = write_big_log(tmp_path / str(lines), lines)
        tracemalloc.start()
        try:
            results.append(big_query(snap))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    size = (tmp_path / str(BIG_LINES) / "logs" / "big.log").stat().st_size
    assert size > 25_000_000
    small, large = results
    assert (small.total, small.truncated, len(small.logs)) == (200, True, 50)
    assert small.logs[-1]["message"].endswith("(waiting=199)")
    assert (large.total, large.truncated, len(large.logs)) == (400, True, 50)
    assert peaks[1] <= 1.2 * peaks[0], f"peaks {peaks} bytes for {BIG_LINES} and {2 * BIG_LINES} lines"
    assert peaks[1] < 40_000_000, f"peak {peaks[1]} bytes for a {2 * size}-byte file"


# --- the packaged demo -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo() -> SnapshotBackend:
    return SnapshotBackend(demo_env_dir())


def test_demo_clock_and_services(demo):
    assert demo.name == "demo"
    assert demo.now() == datetime(2026, 7, 8, 23, 10, tzinfo=UTC)
    assert demo.known_services() == [
        "inventory-service",
        "node-worker-01",
        "order-service",
        "payment-service",
        "user-service",
    ]
    assert demo.resolve_service("订单服务") == "order-service"


def test_demo_payment_service_cpu(demo):
    result = metrics(demo, service="payment-service", alertname="HighCPUUsage")
    [alert] = result.alerts
    assert (alert["value"], alert["unit"], alert["state"], alert["duration"]) == (92.0, "%", "firing", "25m")
    assert alert["active_at"] == "2026-07-08T22:45:00Z"
    cpu = metrics(demo, service="payment-service", metric="cpu_usage").series
    assert [(item["max"], item["last"], item["unit"]) for item in cpu] == [(92.0, 92.0, "%")]
    redis = logs(demo, "payment-service", "redis-cluster-01:6379", level="ERROR")
    assert redis.total >= 3
    assert all("timed out" in entry["message"] for entry in redis.logs)
    gc = logs(demo, "payment-service", "GC is not the cause")
    assert gc.total >= 1
    assert logs(demo, "payment-service", "thread pool", "saturated").total >= 2


def test_demo_order_service_memory_and_pool(demo):
    [alert] = metrics(demo, service="order-service", alertname="HighMemoryUsage").alerts
    assert (alert["value"], alert["unit"], alert["severity"]) == (91.0, "%", "critical")
    series = {item["metric"]: item for item in metrics(demo, service="order-service").series}
    assert (series["heap_used"]["max"], series["heap_max"]["max"], series["heap_used"]["unit"]) == (
        3.8,
        4.0,
        "GB",
    )
    full_gc = logs(demo, "order-service", "Full GC (Allocation Failure)", level="WARN")
    assert full_gc.total >= 5 and {entry["level"] for entry in full_gc.logs} == {"WARN"}
    oom = logs(demo, "order-service", "OOMKilled", "137", level="ERROR")
    assert oom.total == 1
    pool = logs(demo, "order-service", "HikariPool", "waiting")
    waiting = [entry for entry in pool.logs if entry["level"] == "ERROR"]
    assert "(total=50, active=50, idle=0, waiting=23)" in waiting[0]["message"]
    assert waiting[0]["timestamp"] == "2026-07-08T23:05:28.114+00:00"
    assert {int(entry["message"].rsplit("waiting=", 1)[1].rstrip(")")) for entry in waiting} == {23, 24, 25}


def test_demo_inventory_service_has_no_pool_errors(demo):
    assert logs(demo, "inventory-service").total > 50
    for keyword in ("HikariCP", "Hikari", "connection pool"):
        result = logs(demo, "inventory-service", keyword)
        assert (result.total, result.truncated, result.message) == (0, False, "no matching log lines")
    assert metrics(demo, service="inventory-service").alerts == []
    assert metrics(demo, service="inventory-service").series  # present, just quiet


def test_demo_user_service_slow_sql_and_node_disk(demo):
    [slow] = metrics(demo, service="user-service", alertname="SlowResponse").alerts
    assert (slow["value"], slow["unit"]) == (4.2, "s")
    [p99] = metrics(demo, service="user-service", metric="p99_latency").series
    assert p99["max"] == 4.2
    queries = logs(demo, "user-service", "slow query", "mysql-primary-01", level="WARN")
    assert queries.total >= 5
    assert any("took 3812ms" in entry["message"] for entry in queries.logs)
    [disk] = metrics(demo, service="node-worker-01", alertname="DiskSpaceLow").alerts
    assert (disk["value"], disk["labels"]["mountpoint"]) == (94.0, "/data")
    [used] = metrics(demo, service="node-worker-01", metric="disk_used").series
    assert (used["min"], used["max"]) == (86.0, 94.0)
    assert logs(demo, "node-worker-01", "/data", level="WARN").total >= 3


def test_demo_has_a_pending_alert_and_secrets_for_the_masking_layer(demo):
    states = {alert["alertname"]: alert["state"] for alert in metrics(demo).alerts}
    assert states["HighErrorRate"] == "pending"
    # the log index holds lines masked (issue 9: nothing unmasked is stored), so the planted
    # secrets are found by their masked text only
    planted = "".join(path.read_text() for path in (demo.directory / "logs").iterdir())
    assert all(secret in planted for secret in ("password=hunter2", "app:s3cr3t@mysql", "Bearer eyJ"))
    assert logs(demo, None, "password=hunter2").total == 0
    assert logs(demo, None, "password=***").total == 1
    assert logs(demo, None, "app:***@mysql-primary-01").total == 1
    assert logs(demo, None, "Authorization: Bearer ***").total == 1


def test_capabilities_are_what_the_directory_holds(tmp_path):
    logs_only = tmp_path / "logs-only"
    (logs_only / "logs").mkdir(parents=True)
    (logs_only / "logs" / "app.log").write_text("2026-03-18 09:00:00 ERROR boom\n")
    # changes (find_changes): series or logs to compare with a baseline
    assert SnapshotBackend(logs_only).capabilities() == ["logs", "knowledge", "changes"]
    assert SnapshotBackend(demo_env_dir()).capabilities() == ["alerts", "metrics", "logs", "knowledge", "changes"]
    alerts_only = tmp_path / "alerts-only"
    alerts_only.mkdir()
    (alerts_only / "alerts.json").write_text('{"firing": []}')
    assert SnapshotBackend(alerts_only).capabilities() == ["alerts", "knowledge"]
