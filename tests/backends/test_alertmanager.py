"""AlertmanagerBackend against a real Alertmanager fed by the test Prometheus and by posted alerts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evcli.backends.alertmanager import AlertmanagerBackend, normalise_alertmanager_alert
from evcli.backends.base import BackendError


def by_name(alerts: list[dict]) -> dict[str, dict]:
    return {alert["alertname"]: alert for alert in alerts}


def test_alert_from_prometheus_is_normalised(alertmanager_with_alerts):
    alert = by_name(AlertmanagerBackend(alertmanager_with_alerts.url).alerts())["HighCPUUsage"]

    assert alert["state"] == "firing"
    assert alert["service"] == "payment-service"
    assert alert["instance"] == "payment-7f9c:8080"
    assert alert["severity"] == "critical"
    assert alert["value"] == 92.0  # from the rule's `value` annotation
    assert alert["unit"] == "%"
    assert alert["summary"] == "CPU usage on payment-service is 92%"
    assert alert["active_at"].endswith("Z")


def test_posted_alert_reports_duration_and_current_value(alertmanager_with_alerts):
    alert = by_name(AlertmanagerBackend(alertmanager_with_alerts.url).alerts())["DiskWillFillIn4Hours"]

    assert alert["duration"] == "1h05m"
    assert alert["value"] == 87.5  # from the `current` annotation
    assert (alert["service"], alert["unit"], alert["state"]) == ("order-service", "%", "firing")


def test_silenced_alert_is_suppressed(alertmanager_with_alerts):
    alert = by_name(AlertmanagerBackend(alertmanager_with_alerts.url).alerts())["NoisyBatchJob"]

    assert alert["state"] == "suppressed"
    assert alert["service"] == "batch-runner"  # from `job`, as there is no `service` label
    assert alert["value"] is None


def test_filters_match_labels_exactly(alertmanager_with_alerts):
    backend = AlertmanagerBackend(alertmanager_with_alerts.url)

    assert [a["alertname"] for a in backend.alerts({"alertname": "HighCPUUsage"})] == ["HighCPUUsage"]
    assert [a["alertname"] for a in backend.alerts({"service": "order-service"})] == ["DiskWillFillIn4Hours"]
    assert backend.alerts({"service": "payment-service", "severity": "warning"}) == []


@pytest.mark.parametrize("service", ["no-such-service", 'quote"and\\backslash', "a,b}"])
def test_unknown_or_odd_service_gives_an_empty_list(alertmanager_with_alerts, service):
    assert AlertmanagerBackend(alertmanager_with_alerts.url).alerts({"service": service}) == []


@pytest.mark.parametrize(
    ("state", "shown"), [("active", "firing"), ("suppressed", "suppressed"), ("unprocessed", "pending")]
)
def test_states_are_named_as_prometheus_names_them(state, shown):
    raw = {"labels": {"alertname": "A"}, "annotations": {}, "status": {"state": state}, "startsAt": None}

    assert normalise_alertmanager_alert(raw, datetime.now(UTC))["state"] == shown


def test_closed_port_is_a_backend_error(closed_url):
    with pytest.raises(BackendError, match="connection refused"):
        AlertmanagerBackend(closed_url).alerts()


def test_a_url_that_is_not_alertmanager_is_a_backend_error(prometheus):
    with pytest.raises(BackendError, match="HTTP 404"):
        AlertmanagerBackend(prometheus.url).alerts()
