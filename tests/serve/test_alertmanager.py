"""A real Alertmanager delivers to a real `evcli serve` through its own webhook_configs receiver."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.backends.conftest import _ready, _require, fetch_json, free_port, wait_until

ALERT = {"alertname": "SSHBruteForce", "service": "auth", "severity": "warning"}


def _alertmanager(start_process, home, receiver_url: str) -> str:
    (home / "alertmanager.yml").write_text(
        "route:\n  receiver: evcli\n  group_by: [alertname]\n  group_wait: 1s\n  group_interval: 1s\n"
        "  repeat_interval: 1h\nreceivers:\n  - name: evcli\n    webhook_configs:\n"
        f"      - url: {receiver_url}\n        send_resolved: true\n"
    )
    port = free_port()
    process, log = start_process(
        [
            _require("prometheus-alertmanager"),
            f"--config.file={home / 'alertmanager.yml'}",
            f"--storage.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        "serve-alertmanager-log",
    )
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: _ready(url), "Alertmanager to be ready", process, log)
    return url


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
