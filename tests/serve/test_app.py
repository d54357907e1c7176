"""POST /alerts and the pages of a real `evcli serve` process (host snapshot environment, offline model)."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

from tests.serve.conftest import delivery


def _done(server, count: int) -> bool:
    return len(server.rows("SELECT id FROM alert_queue WHERE state = 'done'")) >= count


def test_firing_alert_is_diagnosed_listed_and_reported_then_resolved(start_serve):
    server = start_serve()
    status, body = server.request("/alerts", delivery({"alertname": "SSHBruteForce"}))
    assert (status, json.loads(body)) == (202, {"queued": 1, "duplicates": 0, "resolved": 0})
    server.wait_for(lambda: _done(server, 1), "the diagnosis")
    [row] = server.rows("SELECT * FROM alert_queue")
    assert row["verdict"] in ("PASS", "LOW_CONFID", "REJECT") and row["attempts"] == 1
    [run] = server.rows("SELECT * FROM diagnosis_run")
    assert (run["session_id"], run["mode"], run["status"]) == (row["session_id"], "aiops", "completed")
    assert "SSHBruteForce" in run["question"]
    status, page = server.request("/")
    assert status == 200 and row["session_id"].encode() in page and b"SSHBruteForce" in page
    status, report = server.request(f"/sessions/{row['session_id']}")
    assert status == 200 and report.startswith(b"<!DOCTYPE html>") and b"Content-Security-Policy" in report
    status, exported = server.request(f"/sessions/{row['session_id']}.json")
    assert status == 200 and json.loads(exported)["run"]["session_id"] == row["session_id"]
    assert server.request("/sessions/nosuchsession")[0] == 404

    status, body = server.request("/alerts", delivery({"alertname": "SSHBruteForce", "status": "resolved"}))
    assert (status, json.loads(body)) == (202, {"queued": 0, "duplicates": 0, "resolved": 1})
    resolved = server.rows("SELECT * FROM alert_queue WHERE state = 'resolved'")
    assert [r["resolves"] for r in resolved] == [row["id"]]
    assert b"(resolved " in server.request("/")[1]
    assert len(server.rows("SELECT * FROM diagnosis_run")) == 1  # a resolution is not diagnosed


def test_duplicate_delivery_is_diagnosed_once(start_serve):
    server = start_serve()
    payload = delivery({"alertname": "SSHBruteForce"}, {"alertname": "HighHTTP401Rate", "service": "nginx"})
    assert json.loads(server.request("/alerts", payload)[1])["queued"] == 2
    assert json.loads(server.request("/alerts", payload)[1]) == {"queued": 0, "duplicates": 2, "resolved": 0}
    server.wait_for(lambda: _done(server, 2), "two diagnoses")
    assert json.loads(server.request("/alerts", payload)[1])["duplicates"] == 2  # still within the repeat interval
    assert len(server.rows("SELECT * FROM alert_queue")) == 2
    assert len(server.rows("SELECT * FROM diagnosis_run")) == 2
    metrics = server.request("/metrics")[1].decode()
    assert 'evcli_serve_alerts_received_total{status="firing"} 6' in metrics
    assert "evcli_serve_duplicate_alerts_total 4" in metrics
    assert "evcli_serve_diagnosis_duration_seconds_count 2" in metrics
    assert 'evcli_serve_queue_depth{state="queued"} 0' in metrics
    assert (
        sum(
            int(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith("evcli_serve_diagnoses_total{")
        )
        == 2
    )
    checked = subprocess.run(["promtool", "check", "metrics"], input=metrics, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # Prometheus's own linter of the text format


MALFORMED = [
    (b"not json", "not JSON"),
    (b"[]", "webhook v4"),
    (json.dumps({"version": "3", "groupKey": "g", "alerts": []}).encode(), "webhook v4"),
    (json.dumps({"version": "4", "alerts": [{"status": "firing", "labels": {"alertname": "A"}}]}).encode(), "groupKey"),
    (json.dumps({"version": "4", "groupKey": "g", "alerts": []}).encode(), "no alerts"),
    (
        json.dumps({"version": "4", "groupKey": "g", "alerts": [{"status": "firing", "labels": {}}]}).encode(),
        "alertname",
    ),
    (
        json.dumps(
            {"version": "4", "groupKey": "g", "alerts": [{"status": "odd", "labels": {"alertname": "A"}}]}
        ).encode(),
        "status",
    ),
]


def test_malformed_payloads_get_400_with_the_reason_a_log_line_and_nothing_stored(start_serve):
    server = start_serve()
    for body, reason in MALFORMED:
        status, answer = server.request("/alerts", raw=body)
        assert status == 400 and reason in json.loads(answer)["error"], (body, answer)
    assert server.rows("SELECT * FROM alert_queue") == []
    assert server.rows("SELECT * FROM diagnosis_run") == []
    assert server.log.read_text().count("refused (400)") == len(MALFORMED)
    assert f"evcli_serve_rejected_deliveries_total {len(MALFORMED)}" in server.request("/metrics")[1].decode()


def test_full_queue_answers_503_and_stores_nothing_of_that_delivery(start_serve):
    server = start_serve("--max-queue", "3")
    too_many = delivery(*({"alertname": f"A{n}"} for n in range(4)))
    assert server.request("/alerts", too_many)[0] == 503
    assert server.rows("SELECT * FROM alert_queue") == []
    assert server.request("/alerts", delivery(*({"alertname": f"B{n}"} for n in range(3))))[0] == 202
    assert "refused (503)" in server.log.read_text()


def test_a_burst_of_200_alerts_loses_none(start_serve):
    server = start_serve()
    payloads = [delivery({"alertname": f"Burst{n}"}, group_key=f"burst-{n}") for n in range(200)]
    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda payload: server.request("/alerts", payload)[0], payloads))
    assert statuses == [202] * 200
    names = {row["alertname"] for row in server.rows("SELECT alertname FROM alert_queue")}
    assert names == {f"Burst{n}" for n in range(200)}
    assert 'evcli_serve_alerts_received_total{status="firing"} 200' in server.request("/metrics")[1].decode()


def test_kill_9_mid_diagnosis_then_restart_loses_nothing_and_diagnoses_nothing_twice(start_serve):
    server = start_serve()
    names = [f"Crash{n}" for n in range(5)]
    assert server.request("/alerts", delivery(*({"alertname": name} for name in names)))[0] == 202
    server.wait_for(
        lambda: _done(server, 1) and server.rows("SELECT id FROM alert_queue WHERE state = 'running'"),
        "one diagnosis done and the next one running",
    )
    server.kill()
    assert server.rows("SELECT id FROM alert_queue WHERE state = 'running'")  # killed mid-diagnosis
    restarted = start_serve(db=server.db)
    restarted.wait_for(lambda: _done(restarted, 5), "all five diagnoses after the restart")
    rows = restarted.rows("SELECT * FROM alert_queue ORDER BY id")
    assert [row["alertname"] for row in rows] == names and {row["state"] for row in rows} == {"done"}
    completed = restarted.rows("SELECT session_id FROM diagnosis_run WHERE status = 'completed'")
    assert sorted(r["session_id"] for r in completed) == sorted(row["session_id"] for row in rows)
    assert "queued again" in restarted.log.read_text()


def test_a_token_refuses_unauthenticated_requests(start_serve):
    server = start_serve("--token-env", "EVCLI_TEST_TOKEN", env={"EVCLI_TEST_TOKEN": "s3cret-token"})
    started = server.log.read_text()
    assert f"listening on {server.url} (loopback only" in started and "token required" in started
    assert "s3cret-token" not in started
    payload = delivery({"alertname": "SSHBruteForce"})
    assert server.request("/alerts", payload)[0] == 401
    assert server.request("/alerts", payload, token="wrong")[0] == 401
    assert server.request("/")[0] == 401 and server.request("/metrics")[0] == 401
    assert server.rows("SELECT * FROM alert_queue") == []
    assert server.request("/alerts", payload, token="s3cret-token")[0] == 202
    assert server.request("/", token="s3cret-token")[0] == 200
    assert server.request("/healthz")[0] == 200
