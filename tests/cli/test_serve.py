"""`evcli serve --once PAYLOAD` (the POST /alerts path without HTTP), its notification, and its usage errors."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.cli._util import assert_clean_error, evcli
from tests.conftest import REPO
from tests.serve.conftest import HOST_ALERTS, HOST_ENV


def _rows(db, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_once_diagnoses_each_firing_alert_once(tmp_path):
    db = tmp_path / "serve.db"
    run = evcli("serve", "--once", HOST_ALERTS, "--env", HOST_ENV, "--db", db)
    assert run.exit_code == 0, run
    [diagnosed] = run.json()["diagnosed"]
    assert diagnosed["alertname"] == "SSHBruteForce" and diagnosed["verdict"] in ("PASS", "LOW_CONFID", "REJECT")
    assert _rows(db, "SELECT session_id, mode, status FROM diagnosis_run") == [
        (diagnosed["session_id"], "aiops", "completed")
    ]
    again = evcli("serve", "--once", HOST_ALERTS, "--env", HOST_ENV, "--db", db)
    assert again.exit_code == 0 and again.json() == {"queued": 0, "duplicates": 1, "resolved": 0, "diagnosed": []}


def test_once_takes_a_packaged_alerts_json_as_alertmanager_would_deliver_it(tmp_path):
    """The host environment's alerts.json (Alertmanager's API list) and the demo's (Prometheus' API answer,
    cut to one alert plus a pending one, which Alertmanager would not send) go through the queue."""
    db = tmp_path / "serve.db"
    run = evcli("serve", "--once", HOST_ENV / "alerts.json", "--env", HOST_ENV, "--db", db)
    assert run.exit_code == 0, run
    listed = json.loads((HOST_ENV / "alerts.json").read_text(encoding="utf-8"))
    active = [a["labels"]["alertname"] for a in listed if a["status"]["state"] == "active"]
    diagnosed = run.json()["diagnosed"]
    assert sorted(d["alertname"] for d in diagnosed) == sorted(active) and "SSHBruteForce" in active
    assert all(d["session_id"] and d["verdict"] for d in diagnosed)
    demo = json.loads((REPO / "evcli" / "demo" / "alerts.json").read_text(encoding="utf-8"))
    firing = next(a for a in demo["data"]["alerts"] if a.get("state") == "firing")
    pending = dict(firing, state="pending", labels=dict(firing["labels"], alertname="NotYet"))
    payload = tmp_path / "prometheus-alerts.json"
    payload.write_text(json.dumps({"status": "success", "data": {"alerts": [firing, pending]}}), encoding="utf-8")
    run = evcli("serve", "--once", payload, "--db", db)
    assert run.exit_code == 0, run
    assert run.json()["queued"] == 1 and [d["alertname"] for d in run.json()["diagnosed"]] == [
        firing["labels"]["alertname"]
    ]
    queued = _rows(db, "SELECT group_key FROM alert_queue ORDER BY rowid")
    assert queued[-1] == ("{}:{file='prometheus-alerts.json'}",)


def test_once_refuses_a_file_that_is_no_alert_payload_and_stores_nothing(tmp_path):
    db = tmp_path / "serve.db"
    payload = tmp_path / "other.json"
    payload.write_text(json.dumps({"items": [{"name": "A"}]}))
    assert_clean_error(evcli("serve", "--once", payload, "--db", db), 2, "not an alert payload")
    assert _rows(db, "SELECT * FROM alert_queue") == [] and _rows(db, "SELECT * FROM diagnosis_run") == []


@contextmanager
def _webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback webhook: (its base URL, the JSON bodies posted to it)."""
    posted: list[dict[str, Any]] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            posted.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", posted
    finally:
        server.shutdown()
        server.server_close()


def test_each_finished_report_is_posted_to_the_notify_url(tmp_path):
    with _webhook() as (base, posted):
        url = f"{base}/hook"
        run = evcli("serve", "--once", HOST_ALERTS, "--env", HOST_ENV, "--db", tmp_path / "s.db", "--notify-url", url)
    assert run.exit_code == 0, run
    [note] = posted
    assert note["session_id"] == run.json()["diagnosed"][0]["session_id"] and note["alertname"] == "SSHBruteForce"
    assert note["verdict"] == run.json()["diagnosed"][0]["verdict"]
    assert "SSHBruteForce" in note["text"] and "\n- [1] " in note["text"]  # the Markdown brief report, cited
    assert "[^" not in note["text"]  # no footnotes: chat tools do not render them


def test_a_slack_notification_is_block_kit_text_and_blocks_only(tmp_path):
    with _webhook() as (base, posted):
        url = f"{base}/services/T0/B1"
        run = evcli(
            "serve", "--once", HOST_ALERTS, "--env", HOST_ENV, "--db", tmp_path / "s.db",
            "--notify-url", url, "--notify-format", "slack",
        )  # fmt: skip
    assert run.exit_code == 0, run
    [message] = posted
    assert set(message) == {"text", "blocks"}  # what Slack's incoming webhooks take
    assert message["blocks"][0]["type"] == "header" and "SSHBruteForce" in json.dumps(message["blocks"])
    assert run.json()["diagnosed"][0]["session_id"] in json.dumps(message["blocks"])
    assert_clean_error(evcli("serve", "--once", HOST_ALERTS, "--notify-format", "teams"), 2, "--notify-format")


def test_usage_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("EVCLI_NO_SUCH_TOKEN", raising=False)
    assert_clean_error(evcli("serve", "--token-env", "EVCLI_NO_SUCH_TOKEN"), 2, "EVCLI_NO_SUCH_TOKEN")
    assert_clean_error(evcli("serve", "--listen", "nohost"), 2, "--listen")
    assert_clean_error(evcli("serve", "--repeat-interval", "soon"), 2)


def test_once_refuses_a_fifo_a_device_and_an_oversized_payload_and_stores_nothing(tmp_path, fifo):
    db = tmp_path / "serve.db"
    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as handle:
        handle.truncate(3 << 30)  # 3 GiB of holes
    for payload, fragment in (
        (fifo, "refused: not a regular file (a FIFO)"),
        ("/dev/zero", "refused: not a regular file (a character device)"),
        (sparse, "is larger than 8 MiB, the limit for an alert payload"),
    ):
        assert_clean_error(evcli("serve", "--once", payload, "--db", db), 2, str(payload), fragment)
    assert _rows(db, "SELECT * FROM alert_queue") == [] and _rows(db, "SELECT * FROM diagnosis_run") == []
