"""`kubectl describe` text read back into objects of the API's shape (pure), so that one reader
(evcli.backends.k8s_objects) serves both: a described pod becomes a Pod (node, owner, phase, each
container's state, last state, restarts, requests and limits) and each row of an `Events:` table an Event.

What describe writes and the JSON lacks is only the event table; what it cannot give is an event's
time: it writes an age relative to when it ran ("2m (x12 over 10m)"), so a described event keeps
that age as written and has no first/last time. A document starts at a `Name:` line in column 0;
its kind is told by the fields only that kind has (a pod's `Containers:` in column 0, a node's
`Roles:`, a deployment's `StrategyType:`, a ReplicaSet's `Pods Status:`, a Service's `Selector:`
with `Type:`).
"""

from __future__ import annotations

import email.utils
import re
from collections.abc import Iterator
from typing import Any

Item = dict[str, Any]
_FIELD = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z][A-Za-z0-9 ./-]*?):(?:\s+(?P<value>.*?))?\s*$")
_COUNTED = re.compile(r"\(x(\d+) over [^)]*\)")
_EVENT_COLUMNS = ("Type", "Reason", "Age", "From", "Message")


def described(text: str) -> Iterator[tuple[str, Item]]:
    """(kind, object) of each document: a Pod for a described pod, then one Event per row of its
    `Events:` table (any kind's)."""
    for block in _documents(text.splitlines()):
        top = _top_fields(block)
        kind = _kind(top, block)
        name, namespace = top.get("Name", ""), top.get("Namespace", "")
        if not name:
            continue
        if kind == "Pod":
            yield "Pod", _pod(name, namespace, top, block)
        for index, row in enumerate(_event_rows(block)):
            yield "Event", _event(kind, name, namespace, index, row)


def _documents(lines: list[str]) -> Iterator[list[str]]:
    block: list[str] = []
    for line in lines:
        if line.startswith("Name:") and any(existing.strip() for existing in block):
            yield block
            block = []
        block.append(line.rstrip("\n"))
    if any(line.strip() for line in block):
        yield block


def _top_fields(block: list[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in block:
        match = _FIELD.match(line)
        if match and not match["indent"]:
            fields.setdefault(match["key"], (match["value"] or "").strip())
    return fields


def _kind(top: dict[str, str], block: list[str]) -> str:
    if "Containers" in top and ("Node" in top or "Start Time" in top):
        return "Pod"
    if "Roles" in top or "Taints" in top:
        return "Node"
    if "StrategyType" in top:
        return "Deployment"
    if "Pods Status" in top:
        return "ReplicaSet"
    if "Selector" in top and "Type" in top:
        return "Service"
    return str(top.get("Kind") or "Object")


def _time(text: str | None) -> str | None:
    """`Mon, 29 Jan 2024 10:03:12 +0800` (RFC 1123 with a numeric zone) as ISO 8601."""
    if not text:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return moment.isoformat() if moment.tzinfo is not None else None


# --- a pod ---------------------------------------------------------------------------------------


def _pod(name: str, namespace: str, top: dict[str, str], block: list[str]) -> Item:
    metadata: Item = {"name": name, "namespace": namespace, "labels": _labels(block)}
    owner = top.get("Controlled By", "")
    if "/" in owner:
        kind, _, owner_name = owner.partition("/")
        metadata["ownerReferences"] = [{"kind": kind, "name": owner_name, "controller": True}]
    specs, statuses = [], []
    for container_name, fields, nested in _containers(block):
        resources = {key: nested.get(key.capitalize(), {}) for key in ("limits", "requests")}
        specs.append({"name": container_name, "image": fields.get("Image"), "resources": resources})
        statuses.append(_container_status(container_name, fields, nested))
    status: Item = {
        "phase": top.get("Status"),
        "startTime": _time(top.get("Start Time")),
        "containerStatuses": statuses,
    }
    if top.get("Reason"):
        status["reason"] = top["Reason"]
    node = top.get("Node", "").partition("/")[0]
    return {
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"nodeName": node or None, "containers": specs},
        "status": status,
    }


def _labels(block: list[str]) -> dict[str, str]:
    """`Labels:` and its continuation lines (`key=value` each)."""
    labels: dict[str, str] = {}
    inside = False
    for line in block:
        if line.startswith("Labels:"):
            inside, line = True, line.removeprefix("Labels:")
        elif inside and (not line.startswith(" ") or _FIELD.match(line)):
            break
        if inside and "=" in line:
            key, _, value = line.strip().partition("=")
            labels[key] = value
    return labels


def _containers(block: list[str]) -> Iterator[tuple[str, dict[str, str], dict[str, dict[str, str]]]]:
    """(name, fields, nested) of each container under the top-level `Containers:`: `fields` its own
    lines (`State: Waiting`), `nested` the lines indented under a field (State's Reason, Limits' memory)."""
    start = next((i for i, line in enumerate(block) if line.startswith("Containers:")), None)
    if start is None:
        return
    name, parent = "", ""
    fields: dict[str, str] = {}
    nested: dict[str, dict[str, str]] = {}
    for line in block[start + 1 :]:
        if line and not line.startswith(" "):
            break
        match = _FIELD.match(line)
        if not match:
            continue
        depth, key, value = len(match["indent"]), match["key"], (match["value"] or "").strip()
        if depth == 2 and not value:
            if name:
                yield name, fields, nested
            name, fields, nested = key, {}, {}
        elif depth == 4:
            fields[key], parent = value, key
        elif depth >= 6 and parent:
            nested.setdefault(parent, {})[key] = value
    if name:
        yield name, fields, nested


def _container_status(name: str, fields: dict[str, str], nested: dict[str, dict[str, str]]) -> Item:
    restarts = fields.get("Restart Count", "")
    return {
        "name": name,
        "ready": fields.get("Ready") == "True",
        "restartCount": int(restarts) if restarts.isdigit() else 0,
        "state": _state(fields.get("State"), nested.get("State") or {}),
        "lastState": _state(fields.get("Last State"), nested.get("Last State") or {}),
    }


def _state(state: str | None, details: dict[str, str]) -> Item:
    if not state:
        return {}
    key = state.split()[0].lower()
    if key == "waiting":
        return {"waiting": {"reason": details.get("Reason"), "message": details.get("Message")}}
    if key == "running":
        return {"running": {"startedAt": _time(details.get("Started"))}}
    if key == "terminated":
        code = details.get("Exit Code", "")
        return {
            "terminated": {
                "reason": details.get("Reason"),
                "exitCode": int(code) if code.lstrip("-").isdigit() else None,
                "startedAt": _time(details.get("Started")),
                "finishedAt": _time(details.get("Finished")),
            }
        }
    return {}


# --- events --------------------------------------------------------------------------------------


def _event_rows(block: list[str]) -> Iterator[dict[str, str]]:
    """The rows of the `Events:` table, cut at the header's column starts (kubectl aligns them)."""
    start = next((i for i, line in enumerate(block) if line.startswith("Events:")), None)
    if start is None or start + 1 >= len(block):
        return
    header = block[start + 1]
    offsets = [header.find(column) for column in _EVENT_COLUMNS]
    if any(offset < 0 for offset in offsets):
        return
    for line in block[start + 2 :]:
        if not line.strip() or not line.startswith(" "):
            break
        if set(line.strip()) <= {"-", " "}:
            continue
        bounds = [*offsets[1:], None]
        yield {
            column: line[offset:end].strip()
            for column, offset, end in zip(_EVENT_COLUMNS, offsets, bounds, strict=True)
        }


def _event(kind: str, name: str, namespace: str, index: int, row: dict[str, str]) -> Item:
    counted = _COUNTED.search(row["Age"])
    return {
        "kind": "Event",
        "metadata": {"name": f"{name}.described-{index + 1}", "namespace": namespace},
        "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
        "type": row["Type"],
        "reason": row["Reason"],
        "count": int(counted.group(1)) if counted else 1,
        "age": row["Age"],
        "source": {"component": row["From"]},
        "message": row["Message"],
    }
