"""Webhook v4 deliveries to queue rows, and accepting them into the trace store's alert queue.

A delivery is checked whole before anything is stored: any other shape is a BadInput naming what is wrong.
An alert's identity is Alertmanager's `fingerprint` (computed from its labels when a sender leaves it out)
within the delivery's `groupKey`.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from evcli.aiops import parse_alert_payload
from evcli.core.errors import BadInput

if TYPE_CHECKING:
    from evcli.store.db import TraceStore

WEBHOOK_SHAPE = 'an Alertmanager webhook v4 payload ({"version": "4", "groupKey": "...", "alerts": [...]})'
STATUSES = ("firing", "resolved")


def read_delivery(body: bytes) -> Any:
    """The JSON of a request body or payload file, or a BadInput saying why it is not JSON."""
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"the body is not JSON ({exc}); expected {WEBHOOK_SHAPE}") from exc
    except RecursionError as exc:
        raise BadInput("the body is nested too deeply to be an alert payload") from exc


def webhook_alerts(data: Any) -> list[dict[str, Any]]:
    """The queue rows of a webhook v4 delivery (group_key, fingerprint, alertname, status, alert)."""
    if not isinstance(data, dict) or str(data.get("version")) != "4" or not isinstance(data.get("alerts"), list):
        raise BadInput(f"not a webhook v4 payload; expected {WEBHOOK_SHAPE}")
    if not isinstance(data.get("groupKey"), str):
        raise BadInput(f"a webhook payload without a groupKey string; expected {WEBHOOK_SHAPE}")
    if not data["alerts"]:
        raise BadInput("a webhook payload with no alerts")
    for number, raw in enumerate(data["alerts"], start=1):
        if not isinstance(raw, dict) or raw.get("status") not in STATUSES:
            raise BadInput(f"webhook alert #{number}: not an object with status firing or resolved")
    parsed = parse_alert_payload(data, "webhook")
    return [
        {
            "group_key": data["groupKey"],
            "fingerprint": str(raw.get("fingerprint") or label_fingerprint(alert.labels)),
            "alertname": alert.alertname,
            "status": raw["status"],
            "alert": alert.as_dict(),
        }
        for raw, alert in zip(data["alerts"], parsed, strict=True)
    ]


def as_delivery(data: Any, source: str) -> Any:
    """A webhook v4 delivery as it is; any other payload `evcli aiops` reads (a snapshot's alerts.json,
    Prometheus' or Alertmanager's API answer) as the delivery Alertmanager would send of its firing and
    resolved alerts, grouped under `source` (pending and suppressed alerts are not sent by Alertmanager)."""
    if isinstance(data, dict) and "version" in data:
        return data
    alerts = [alert for alert in parse_alert_payload(data, source) if alert.state in STATUSES]
    if not alerts:
        raise BadInput(f"{source}: no firing or resolved alert to diagnose")
    return {
        "version": "4",
        "groupKey": f"{{}}:{{file={source!r}}}",
        "status": "firing" if any(alert.state == "firing" for alert in alerts) else "resolved",
        "alerts": [
            {
                "status": alert.state,
                "labels": alert.labels,
                "annotations": alert.annotations,
                **({"startsAt": alert.starts_at} if alert.starts_at else {}),
            }
            for alert in alerts
        ],
    }


def label_fingerprint(labels: dict[str, str]) -> str:
    """A stable identity of a label set, for senders that leave `fingerprint` out."""
    return hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]


def accept(store: TraceStore, data: Any, *, max_queue: int, repeat_interval_s: float) -> dict[str, int] | None:
    """Queue a delivery: counts of queued, duplicate and resolved alerts, or None when the queue is full."""
    from evcli.store.query import iso_utc

    rows = webhook_alerts(data)
    since = iso_utc(datetime.now(UTC) - timedelta(seconds=repeat_interval_s))
    return store.enqueue_alerts(rows, max_queue=max_queue, repeat_since=since)
