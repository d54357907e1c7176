"""LiveBackend routes alerts, series and logs to the configured parts (found by capability in the
backend registry) and never hides their errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evcli.backends.base import LogQuery, parse_window
from evcli.backends.live import LiveBackend
from evcli.contracts import BackendSpec
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange


def live(timeout: float = 10, **urls: str) -> LiveBackend:
    return LiveBackend.from_specs({name: BackendSpec(url=url, timeout=timeout) for name, url in urls.items()})


def metrics(backend: LiveBackend, service=None, alertname=None, metric=None, state="active"):
    return backend.query_metrics(
        service=service, alertname=alertname, metric=metric, window=parse_window("30m", backend.now()), state=state
    )


def names(result) -> list[str]:
    return sorted(alert["alertname"] for alert in result.alerts)


def test_name_and_wall_clock():
    backend = LiveBackend()

    assert backend.name == "live"
    assert abs(backend.now() - datetime.now(UTC)) < timedelta(seconds=5)


def test_without_backends_each_query_says_what_to_pass():
    backend = LiveBackend()

    with pytest.raises(BackendError, match=r"^no metrics backend configured: pass --prometheus or --alertmanager$"):
        metrics(backend, service="payment-service")
    with pytest.raises(BackendError, match=r"^no log backend configured: pass --loki$"):
        backend.query_logs(LogQuery("x", (), None, parse_window("5m", backend.now()), 10))


def test_alerts_come_from_alertmanager_and_series_from_prometheus(prometheus, alertmanager_with_alerts):
    backend = live(prometheus=prometheus.url, alertmanager=alertmanager_with_alerts.url)

    result = metrics(backend, service="order-service")

    # DiskWillFillIn4Hours lives only in Alertmanager; the pending HeapAlmostFull only in Prometheus.
    assert names(result) == ["DiskWillFillIn4Hours"]
    assert [item["metric"] for item in result.series] == ["jvm_heap_used_bytes", "queue_depth"]


def test_prometheus_alone_gives_its_alerts_filtered(prometheus):
    backend = live(prometheus=prometheus.url)

    assert names(metrics(backend, service="order-service")) == ["HeapAlmostFull"]
    assert names(metrics(backend, alertname="HighCPUUsage")) == ["HighCPUUsage"]
    result = metrics(backend, service="payment-service", metric="cpu_usage_percent")
    assert [(item["min"], item["max"], item["last"]) for item in result.series] == [(40.0, 92.0, 92.0)]


def test_alertmanager_alone_gives_alerts_and_no_series(alertmanager_with_alerts):
    backend = live(alertmanager=alertmanager_with_alerts.url)

    result = metrics(backend, service="payment-service", metric="cpu_usage_percent")

    assert names(result) == ["HighCPUUsage"]
    assert result.series == []


def test_alertname_and_service_filters_combine(alertmanager_with_alerts):
    backend = live(alertmanager=alertmanager_with_alerts.url)

    shown = metrics(backend, alertname="NoisyBatchJob", service="batch-runner", state="any")
    assert [(alert["alertname"], alert["state"]) for alert in shown.alerts] == [("NoisyBatchJob", "suppressed")]
    assert names(metrics(backend, alertname="NoisyBatchJob", service="payment-service", state="any")) == []
    # issue 9: a silenced alert is not active, so the default (firing or pending) leaves it out
    assert names(metrics(backend, alertname="NoisyBatchJob", service="batch-runner")) == []


def test_the_searched_range_is_stated_also_without_any_series(prometheus, alertmanager_with_alerts):
    """MetricsResult.searched_range (issue 9): absolute times in UTC, from both sources, empty result too."""
    backend = live(prometheus=prometheus.url, alertmanager=alertmanager_with_alerts.url)
    since = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    expected = "2026-01-02T03:04:05+00:00..2026-01-02T04:04:05+00:00"
    named = TimeRange(since, since + timedelta(hours=1))

    both = backend.query_metrics(service="no-such-service", alertname=None, metric=None, range=named)
    alerts_only = live(alertmanager=alertmanager_with_alerts.url).query_metrics(
        service=None, alertname="NoSuchAlert", metric=None, range=named
    )

    assert (both.alerts, both.series, both.searched_range) == ([], [], expected)
    assert (alerts_only.alerts, alerts_only.searched_range) == ([], expected)
    default = backend.query_metrics(service="no-such-service", alertname=None, metric=None)
    start, end = (datetime.fromisoformat(end) for end in default.searched_range.split(".."))
    assert end - start == timedelta(hours=1) and abs(end - backend.now()) < timedelta(seconds=30)


def test_unknown_service_gives_empty_lists(prometheus, alertmanager_with_alerts):
    backend = live(prometheus=prometheus.url, alertmanager=alertmanager_with_alerts.url)

    result = metrics(backend, service="no-such-service")

    assert (result.alerts, result.series) == ([], [])


@pytest.mark.parametrize("broken", ["prometheus", "alertmanager"])
def test_an_unreachable_part_raises_instead_of_answering_empty(prometheus, closed_url, broken):
    urls = {"prometheus": prometheus.url, broken: closed_url}

    with pytest.raises(BackendError, match="connection refused"):
        metrics(live(timeout=2, **urls), service="payment-service")


def test_known_services_come_from_prometheus_once(prometheus, monkeypatch):
    backend = live(prometheus=prometheus.url)
    asked = []
    label_values = backend.parts["prometheus"].label_values
    monkeypatch.setattr(
        backend.parts["prometheus"], "label_values", lambda label: asked.append(label) or label_values(label)
    )

    assert backend.known_services() == ["order-service", "payment-service"]
    assert backend.known_services() == ["order-service", "payment-service"]
    assert asked == ["service"]


def test_known_services_unknown_without_prometheus_or_when_it_fails(alertmanager_with_alerts, closed_url):
    assert live(alertmanager=alertmanager_with_alerts.url).known_services() is None
    assert live(prometheus=closed_url).known_services() is None


def test_logs_come_from_loki(loki):
    loki.answer_streams([{"stream": {"service": "checkout"}, "values": [["1714557600000000000", "ERROR boom"]]}])
    backend = live(loki=loki.url)

    result = backend.query_logs(LogQuery("checkout", ("boom",), None, parse_window("1h", backend.now()), 20))

    assert [log["message"] for log in result.logs] == ["ERROR boom"]
    assert loki.last_params["query"] == '{service="checkout"} |~ "(?i)boom"'


def test_a_failing_loki_raises(loki):
    loki.status = 500
    backend = live(loki=loki.url)

    with pytest.raises(BackendError, match="HTTP 500"):
        backend.query_logs(LogQuery(None, (), None, parse_window("1h", backend.now()), 20))


def test_resolved_alerts_are_refused_by_a_live_source_not_answered_with_none(closed_url):
    # issue 9: Alertmanager and Prometheus forget an alert once it ends, so an empty list is no evidence
    with pytest.raises(BackendError, match="a live alert source lists no resolved alerts"):
        metrics(live(alertmanager=closed_url), alertname="HighCPUUsage", state="resolved")


# --- issue 12: reachability, the service label and aliases, no silent demo knowledge -------------------


def test_every_part_unreachable_is_one_error_naming_each_url(closed_url):
    other = closed_url.rsplit(":", 1)[0] + ":1"
    backend = live(timeout=2, prometheus=closed_url, alertmanager=other)

    with pytest.raises(BackendError) as caught:
        backend.check_reachable()

    message = str(caught.value)
    assert message.startswith("no backend answered: ") and "\n" not in message
    assert f"prometheus: GET {closed_url}/-/ready failed: connection refused" in message
    assert f"alertmanager: GET {other}/-/ready failed" in message


def test_ask_with_every_part_unreachable_exits_1_with_one_line_pointing_at_doctor(closed_url):
    from tests.cli._util import assert_clean_error, evcli

    other = closed_url.rsplit(":", 1)[0] + ":1"
    run = evcli("ask", "Why is payment-service slow?", "--prometheus", closed_url, "--alertmanager", other)

    line = assert_clean_error(run, 1, "no backend answered: ", f"prometheus: GET {closed_url}/-/ready", other)
    assert line.endswith("(check each backend with `evcli doctor`)")


def test_one_part_answering_is_enough_to_go_on(prometheus, closed_url):
    live(timeout=2, prometheus=prometheus.url, alertmanager=closed_url).check_reachable()


def test_the_configured_service_label_names_the_services(prometheus):
    backend = LiveBackend.from_specs(
        {
            "prometheus": BackendSpec(
                url=prometheus.url, options={"service_label": "job", "service_aliases": "pay=payment"}
            )
        }
    )

    assert {"order", "payment"} <= set(backend.known_services() or [])  # job values, not service values
    assert "payment-service" not in (backend.known_services() or [])
    assert (backend.resolve_service("PAYMENT"), backend.resolve_service("pay")) == ("payment", "payment")
    assert backend.resolve_service("billing") is None
    assert backend.service_aliases() == {"payment": ["pay"]}
    (series,) = metrics(backend, service="payment", metric="cpu_usage_percent").series
    assert series["service"] == "payment" and series["points"] > 0


def test_an_unknown_service_gets_close_names_from_the_label_values(prometheus):
    from evcli.tools.fetch import resolve_service

    assert resolve_service("payments", live(prometheus=prometheus.url)) == (
        None,
        "unknown service 'payments'; close names: payment-service",
    )


def test_live_backends_without_runbooks_never_use_the_demo_runbooks(prometheus):
    from evcli.backends.spec import EnvironmentSpec

    knowledge = EnvironmentSpec.from_options(None, None, {"prometheus": prometheus.url}).knowledge_backend()

    with pytest.raises(BackendError, match="no runbooks configured"):
        knowledge.search("cpu", limit=3, alertname=None, service=None)
    with pytest.raises(BackendError, match="no runbooks configured"):
        knowledge.skills()
