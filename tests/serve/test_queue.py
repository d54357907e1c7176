"""The alert queue in a real trace store file: webhook checks, duplicates, resolutions, full queue, orphans."""

from __future__ import annotations

import socket

import pytest
from sqlite_utils import Database

from evcli.contracts import SessionConfig
from evcli.core.errors import BadInput
from evcli.serve.queue import accept, label_fingerprint, webhook_alerts
from evcli.store.db import TraceStore
from evcli.store.migrations import migrations
from tests.serve.conftest import delivery


def _accept(store, payload, max_queue=100):
    return accept(store, payload, max_queue=max_queue, repeat_interval_s=3600)


def test_duplicates_resolutions_and_a_new_firing_after_resolution(db_path):
    store = TraceStore(db_path)
    firing = delivery({"alertname": "A"}, {"alertname": "A"})  # the same alert twice in one delivery
    assert _accept(store, firing) == {"queued": 1, "duplicates": 1, "resolved": 0}
    resolved = delivery({"alertname": "A", "status": "resolved"})
    assert _accept(store, resolved) == {"queued": 0, "duplicates": 0, "resolved": 1}
    assert _accept(store, resolved) == {"queued": 0, "duplicates": 1, "resolved": 0}
    assert _accept(store, firing)["queued"] == 1  # fired again after resolving: a new incident
    rows = store.alert_queue_rows()
    assert [(row["state"], row["resolves"]) for row in rows] == [("queued", None), ("resolved", 1), ("queued", None)]
    other_group = delivery({"alertname": "A"}, group_key="another")
    assert _accept(store, other_group)["queued"] == 1


def test_a_delivery_that_does_not_fit_is_stored_not_at_all(db_path):
    store = TraceStore(db_path)
    assert _accept(store, delivery({"alertname": "A"}, {"alertname": "B"}), max_queue=2)["queued"] == 2
    assert _accept(store, delivery({"alertname": "C"}, {"alertname": "D", "status": "resolved"}), max_queue=2) is None
    assert [row["alertname"] for row in store.alert_queue_rows()] == ["A", "B"]


def test_claim_finish_and_orphans_of_a_dead_owner(db_path):
    store = TraceStore(db_path)
    _accept(store, delivery({"alertname": "A"}, {"alertname": "B"}))
    first = store.claim_alert()
    assert first["alertname"] == "A" and first["alert"]["labels"]["alertname"] == "A"
    store.finish_alert(first["id"], session_id="s1", verdict="PASS", duration_s=0.5, tool_errors=0, model_errors=0)
    second = store.claim_alert()
    assert store.claim_alert() is None
    assert store.requeue_orphaned_alerts() == (0, 0)  # its owner (this process) is alive
    dead = f"{socket.gethostname()}:999999999:1"
    store.conn.execute("UPDATE alert_queue SET owner = ? WHERE id = ?", [dead, second["id"]])
    assert store.requeue_orphaned_alerts() == (1, 0)
    again = store.claim_alert()
    assert (again["id"], again["attempts"]) == (second["id"], 2)
    stats = store.alert_queue_stats((0.25, 1.0))
    assert stats["states"] == {"done": 1, "running": 1} and stats["verdicts"] == {"PASS": 1}
    assert stats["buckets"] == [0, 1] and stats["count"] == 1


def test_an_orphan_whose_session_completed_is_done_and_one_whose_session_did_not_is_queued_again(db_path):
    """The worker died after the diagnosis completed but before it recorded the outcome: not diagnosed twice."""
    store = TraceStore(db_path)
    _accept(store, delivery({"alertname": "A"}, {"alertname": "B"}))
    finished, interrupted = store.claim_alert(), store.claim_alert()
    for claimed, question in ((finished, "Why is A firing?"), (interrupted, "Why is B firing?")):
        run = store.create_session(question, mode="aiops", config=SessionConfig())
        store.attach_session(claimed["id"], run.session_id)
        claimed["session_id"] = run.session_id
    store.update_run(finished["session_id"], status="completed", verdict="PASS")
    dead = f"{socket.gethostname()}:999999999:1"
    store.conn.execute("UPDATE alert_queue SET owner = ?", [dead])

    assert store.requeue_orphaned_alerts() == (1, 1)

    rows = {row["id"]: row for row in store.alert_queue_rows()}
    assert (rows[finished["id"]]["state"], rows[finished["id"]]["verdict"]) == ("done", "PASS")
    assert rows[finished["id"]]["session_id"] == finished["session_id"] and rows[finished["id"]]["finished_at"]
    assert rows[interrupted["id"]]["state"] == "queued"
    assert store.claim_alert()["id"] == interrupted["id"] and store.claim_alert() is None


@pytest.mark.parametrize(
    "payload, reason",
    [
        ({"version": "4", "groupKey": "g", "alerts": [{"status": "firing", "labels": {"alertname": 1}}]}, None),
        ({"version": 4, "groupKey": "g", "alerts": [{"status": "firing", "labels": {"alertname": "A"}}]}, None),
        ({"version": "4", "groupKey": 7, "alerts": []}, "groupKey"),
        ({"version": "4", "groupKey": "g", "alerts": ["x"]}, "alert #1"),
    ],
)
def test_webhook_checks(payload, reason):
    if reason is None:  # accepted: numbers are labels' strings, a numeric version is version 4
        [row] = webhook_alerts(payload)
        assert row["fingerprint"] == label_fingerprint(row["alert"]["labels"])
        return
    with pytest.raises(BadInput, match=reason):
        webhook_alerts(payload)


def test_upgrade_from_the_previous_schema_adds_the_queue(db_path):
    db_path.parent.mkdir(parents=True)
    migrations.apply(Database(db_path), stop_before="m005_alert_queue")
    store = TraceStore(db_path)
    assert "alert_queue" in store.db.table_names()
    assert _accept(store, delivery({"alertname": "A"}))["queued"] == 1
