"""PrometheusBackend against a real Prometheus with backfilled history and a firing alert."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import pytest

from evcli.backends.alerts import format_duration, significant
from evcli.backends.base import parse_window
from evcli.backends.live import LiveBackend
from evcli.backends.prometheus import (
    PrometheusBackend,
    normalise_prometheus_alert,
    selector,
)
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange

ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
DURATION = re.compile(r"^(\d+h\d\dm|\d{1,2}m)$")


def window(label: str):
    return parse_window(label, datetime.now(UTC))


def by_name(alerts: list[dict]) -> dict[str, dict]:
    return {alert["alertname"]: alert for alert in alerts}


def test_firing_alert_is_normalised(prometheus):
    alert = by_name(PrometheusBackend(prometheus.url).alerts())["HighCPUUsage"]

    assert alert["service"] == "payment-service"
    assert alert["instance"] == "payment-7f9c:8080"
    assert alert["severity"] == "critical"
    assert alert["state"] == "firing"
    assert alert["value"] == 92.0
    assert alert["unit"] == "%"
    assert alert["summary"] == "CPU usage on payment-service is 92%"
    assert alert["labels"]["job"] == "payment"
    assert ISO_Z.match(alert["active_at"])
    started = datetime.strptime(alert["active_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert timedelta(0) <= datetime.now(UTC) - started < timedelta(minutes=5)
    assert DURATION.match(alert["duration"])


def test_pending_alert_keeps_its_state(prometheus):
    alert = by_name(PrometheusBackend(prometheus.url).alerts())["HeapAlmostFull"]

    assert alert["state"] == "pending"
    assert alert["value"] == 1_234_567_890.0  # the backfilled heap size, not rounded
    assert alert["service"] == "order-service"
    assert alert["unit"] == ""


def test_series_summarises_backfilled_and_scraped_samples(prometheus):
    searched = window("30m")
    (series,) = PrometheusBackend(prometheus.url).series("payment-service", "cpu_usage_percent", searched)

    summary = {key: series[key] for key in ("service", "metric", "window", "min", "max", "last", "unit")}
    assert summary == {
        "service": "payment-service",
        "metric": "cpu_usage_percent",
        "window": "30m",
        "min": 40.0,
        "max": 92.0,
        "last": 92.0,
        "unit": "%",
    }
    # issue 9: the range searched, the number of points and when min/max/last occurred (UTC, with zone)
    assert series["range"] == TimeRange(searched.start, searched.end).text(UTC)
    assert 250 <= series["points"] <= 301  # at most MAX_POINTS + 1 steps
    at = {key: datetime.fromisoformat(series[key]) for key in ("min_at", "max_at", "last_at")}
    assert all(moment.utcoffset() == timedelta(0) for moment in at.values())
    slack = timedelta(milliseconds=1)  # Prometheus is asked in milliseconds
    assert searched.start - slack <= at["min_at"] < at["max_at"] <= at["last_at"] <= searched.end + slack
    assert at["min_at"] < searched.end - timedelta(minutes=19)  # flat at 40 % until the ramp 20 minutes ago


def test_series_of_a_service_lists_its_metrics_skips_nan_and_rounds(prometheus):
    series = PrometheusBackend(prometheus.url).series("order-service", None, window("30m"))

    # ALERTS and ALERTS_FOR_STATE carry the service label too, but are alerts, not metrics.
    assert [(item["metric"], item["min"], item["max"], item["last"]) for item in series] == [
        ("jvm_heap_used_bytes", 1.235e9, 1.235e9, 1.235e9),
        ("queue_depth", 3.0, 17.0, 5.0),
    ]
    assert {item["unit"] for item in series} == {""}


def test_step_keeps_a_30_day_range_query_within_prometheus_limits(prometheus):
    # 30 days at a 1s step would be refused (over 11,000 points); the chosen step keeps it at ~300.
    series = PrometheusBackend(prometheus.url).series("payment-service", "cpu_usage_percent", window("30d"))

    assert [item["last"] for item in series] == [92.0]


def test_series_without_service_groups_by_service(prometheus):
    series = PrometheusBackend(prometheus.url).series(None, "cpu_usage_percent", window("30m"))

    assert [item["service"] for item in series] == ["payment-service"]


@pytest.mark.parametrize("service", ["no-such-service", 'quote"and\\backslash', "new\nline", "{}=~.*"])
def test_unknown_or_odd_service_gives_empty_lists(prometheus, service):
    backend = PrometheusBackend(prometheus.url)

    assert backend.series(service, "cpu_usage_percent", window("30m")) == []
    assert backend.series(service, None, window("30m")) == []


def test_label_values_lists_services(prometheus):
    assert PrometheusBackend(prometheus.url).label_values("service") == ["order-service", "payment-service"]


def test_selector_escapes_label_values_and_odd_metric_names():
    assert selector("cpu_usage_percent", "payment-service") == 'cpu_usage_percent{service="payment-service"}'
    assert selector("up", 'a"b\\c\nd') == 'up{service="a\\"b\\\\c\\nd"}'
    assert selector("not a name", None) == '{__name__="not a name"}'
    assert selector(None, "x") == '{service="x"}'


@pytest.mark.parametrize(
    ("elapsed", "shown"),
    [
        (timedelta(seconds=59), "0m"),
        (timedelta(minutes=25, seconds=30), "25m"),
        (timedelta(hours=1, minutes=5), "1h05m"),
        (timedelta(hours=26), "26h00m"),
        (timedelta(seconds=-5), "0m"),
    ],
)
def test_duration_format(elapsed, shown):
    assert format_duration(elapsed) == shown


def test_alert_fields_fall_back_and_odd_values_become_none():
    now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    raw = {
        "labels": {"alertname": "Down", "app": "cart"},
        "annotations": {"description": "cart is down"},
        "state": "firing",
        "activeAt": "2024-05-01T10:54:59.123456789Z",
        "value": "NaN",
    }

    alert = normalise_prometheus_alert(raw, now)

    assert (alert["service"], alert["instance"], alert["severity"]) == ("cart", "", "")
    assert alert["value"] is None
    assert alert["summary"] == "cart is down"
    assert (alert["active_at"], alert["duration"]) == ("2024-05-01T10:54:59Z", "1h05m")
    assert normalise_prometheus_alert({**raw, "labels": {"job": "api"}}, now)["service"] == "api"
    assert normalise_prometheus_alert({**raw, "value": "9.2e+01"}, now)["value"] == 92.0


def test_significant_keeps_four_digits():
    assert significant(1234567890.0) == 1.235e9
    assert significant(0.000123456) == 0.0001235
    assert significant(92.0) == 92.0


def test_closed_port_fails_fast_with_the_url(closed_url):
    started = time.monotonic()
    with pytest.raises(BackendError) as caught:
        PrometheusBackend(closed_url, timeout=5).alerts()

    assert time.monotonic() - started < 2
    message = str(caught.value)
    assert f"{closed_url}/api/v1/alerts" in message
    assert "connection refused" in message
    assert "\n" not in message


def test_credentials_in_the_url_never_reach_the_message(closed_url):
    with_credentials = closed_url.replace("http://", "http://admin:s3cret%21@")

    with pytest.raises(BackendError) as caught:
        PrometheusBackend(with_credentials).series("x", "up", window("5m"))

    message = str(caught.value)
    assert "s3cret" not in message and "admin" not in message
    assert closed_url in message


def test_a_url_that_is_not_prometheus_is_a_backend_error(alertmanager):
    with pytest.raises(BackendError) as caught:
        PrometheusBackend(alertmanager.url).alerts()

    assert alertmanager.url in str(caught.value)


def test_range_query_with_start_and_end_states_points_and_times(prometheus):
    # issue 9: an absolute range an hour back, where the backfilled CPU is flat at 40 %
    end = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=60)
    searched = TimeRange(end - timedelta(minutes=30), end)

    (series,) = PrometheusBackend(prometheus.url).series("payment-service", "cpu_usage_percent", searched)

    assert (series["min"], series["max"], series["last"]) == (40.0, 40.0, 40.0)
    assert series["range"] == searched.text(UTC) and "window" not in series
    assert 250 <= series["points"] <= 301
    assert datetime.fromisoformat(series["last_at"]) <= end
    assert datetime.fromisoformat(series["min_at"]) == datetime.fromisoformat(series["max_at"]) == searched.start


def test_live_backend_fills_an_open_range_end_with_its_clock(prometheus):
    live = LiveBackend({"prometheus": PrometheusBackend(prometheus.url)})
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)

    result = live.query_metrics(
        service="payment-service", alertname=None, metric="cpu_usage_percent", range=TimeRange(since, None)
    )

    (series,) = result.series
    assert series["last"] == 92.0 and series["range"].startswith(since.isoformat(timespec="seconds"))
    assert [a["alertname"] for a in result.alerts] == ["HighCPUUsage"]  # firing since the run started


def test_ask_with_prometheus_alone_answers_a_metrics_question_from_metrics(prometheus, evcli_home):
    """No log backend configured: "is X CPU high?" is asked of Prometheus, not of a log search that can only fail."""
    from evcli.store.db import TraceStore
    from tests.cli._util import evcli

    run = evcli("ask", "Is payment-service CPU high?", "--prometheus", prometheus.url, "--json")

    assert run.exit_code in (0, 3), run
    with TraceStore(evcli_home / "evcli.db") as store:
        document = store.load(run.json()["session_id"])
    assert document.run.config.environment.capabilities == ["alerts", "metrics"]
    calls = [(invocation.tool_name, invocation.input_params) for invocation in document.invocations]
    assert ("query_metrics", {"service": "payment-service"}) in [(name, params) for name, params in calls]
    assert not [name for name, _ in calls if name == "query_logs"], calls
    metrics = next(i for i in document.invocations if i.tool_name == "query_metrics")
    assert metrics.success
    assert "cpu_usage_percent" in [series["metric"] for series in metrics.output["series"]]
    assert "HighCPUUsage" in [alert["alertname"] for alert in metrics.output["alerts"]]
