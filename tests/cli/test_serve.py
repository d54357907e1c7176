"""`evcli serve --once PAYLOAD` (the POST /alerts path without HTTP), its notification, and its usage errors."""

from __future__ import annotations

import json
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.cli._util import assert_clean_error, evcli
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


def test_once_refuses_a_payload_that_is_not_webhook_v4_and_stores_nothing(tmp_path):
    db = tmp_path / "serve.db"
    payload = tmp_path / "list.json"
    payload.write_text(json.dumps([{"labels": {"alertname": "A"}, "status": {"state": "active"}}]))
    assert_clean_error(evcli("serve", "--once", payload, "--db", db), 2, "not a webhook v4 payload")
    assert _rows(db, "SELECT * FROM alert_queue") == [] and _rows(db, "SELECT * FROM diagnosis_run") == []


def test_each_finished_report_is_posted_to_the_notify_url(tmp_path):
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
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        run = evcli("serve", "--once", HOST_ALERTS, "--env", HOST_ENV, "--db", tmp_path / "s.db", "--notify-url", url)
    finally:
        server.shutdown()
        server.server_close()
    assert run.exit_code == 0, run
    [note] = posted
    assert note["session_id"] == run.json()["diagnosed"][0]["session_id"] and note["alertname"] == "SSHBruteForce"
    assert note["verdict"] == run.json()["diagnosed"][0]["verdict"]
    assert "SSHBruteForce" in note["text"] and "\n- [1] " in note["text"]  # the Markdown brief report, cited
    assert "[^" not in note["text"]  # no footnotes: chat tools do not render them


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
