"""A real Alertmanager delivers to a real `evcli serve` through its own webhook_configs receiver."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.backends.conftest import fetch_json, start_alertmanager

ALERT = {"alertname": "SSHBruteForce", "service": "auth", "severity": "warning"}


def _alertmanager(start_process, home, receiver_url: str) -> str:
    config = (
        "route:\n  receiver: evcli\n  group_by: [alertname]\n  group_wait: 1s\n  group_interval: 1s\n"
        "  repeat_interval: 1h\nreceivers:\n  - name: evcli\n    webhook_configs:\n"
        f"      - url: {receiver_url}\n        send_resolved: true\n"
    )
    return start_alertmanager(start_process, home, config, "serve-alertmanager-log").url


def _post_alert(alertmanager: str, **times: datetime) -> None:
    body = {
        "labels": ALERT,
        "annotations": {"summary": "Many failed SSH logins on web-01"},
        **{key: moment.isoformat().replace("+00:00", "Z") for key, moment in times.items()},
    }
    fetch_json(alertmanager + "/api/v2/alerts", [body])


def test_alertmanager_delivers_firing_then_resolved_alerts_to_evcli_serve(start_serve, start_process, tmp_path):
    server = start_serve()
    alertmanager = _alertmanager(start_process, tmp_path, server.url + "/alerts")
    started = datetime.now(UTC) - timedelta(minutes=5)
    _post_alert(alertmanager, startsAt=started)
    server.wait_for(
        lambda: server.rows("SELECT id FROM alert_queue WHERE state = 'done'"), "Alertmanager's delivery, diagnosed"
    )
    [row] = server.rows("SELECT * FROM alert_queue")
    assert row["alertname"] == "SSHBruteForce" and row["group_key"].endswith('{alertname="SSHBruteForce"}')
    assert json.loads(row["alert"])["labels"]["service"] == "auth"
    status, page = server.request("/")
    assert status == 200 and row["session_id"].encode() in page
    status, report = server.request(f"/sessions/{row['session_id']}")
    assert status == 200 and b"SSHBruteForce" in report

    _post_alert(alertmanager, startsAt=started, endsAt=datetime.now(UTC) - timedelta(seconds=1))
    server.wait_for(
        lambda: server.rows("SELECT id FROM alert_queue WHERE state = 'resolved'"), "the resolution from Alertmanager"
    )
    [resolved] = server.rows("SELECT * FROM alert_queue WHERE state = 'resolved'")
    assert resolved["resolves"] == row["id"] and resolved["fingerprint"] == row["fingerprint"]
    assert b"(resolved " in server.request("/")[1]
    assert len(server.rows("SELECT * FROM diagnosis_run")) == 1  # Alertmanager's re-sends are not diagnosed again
