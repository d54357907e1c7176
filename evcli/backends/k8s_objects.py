"""Kubernetes objects as the API serves them (and `kubectl get -o json` writes them), read into evidence
items (pure: no I/O).

A `Cluster` holds the raw objects of one cluster by kind (pods, deployments, replicasets, nodes, events,
services) whatever their source: a snapshot's `k8s/` directory (evcli.backends.snapshot_k8s) or the API
(evcli.backends.kubernetes). The item builders read those dicts:
  pods      phase, readiness, restarts, each container's waiting reason, current and last termination
            (reason, exit code, start and finish), requests and limits, its node and workload
  events    type, reason, object, count, first and last time (or the age a `kubectl describe` states)
  rollouts  one per ReplicaSet of a Deployment: revision, images, created, replicas; the active one
            carries the Deployment's status and conditions
  nodes     conditions (Ready, MemoryPressure, DiskPressure, PIDPressure), taints, allocatable
  services  type, selector, ports and the workloads the selector routes to
  logs      lines of `kubectl logs [--previous] [--timestamps]`

Invariants:
  - a pod belongs to its workload through its owner references: a ReplicaSet to its Deployment (the
    ReplicaSet's own owner, else its name without the pod's `pod-template-hash`), a StatefulSet,
    DaemonSet or Job by name; a pod without an owner to its `app.kubernetes.io/name`/`app` label, else
    to its own name. The workload name passed through `Resolve` (the environment's aliases) is the
    item's `service`, the name logs and metrics use.
  - items are plain JSON values in a fixed order (troubled pods and nodes first, newest events first,
    revisions newest first), so the same objects always give the same refs;
  - times are the API's RFC 3339 times, shown in the environment's zone, to the second.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from evcli.core.time import TimeRange

Resolve = Callable[[str], str]  # a workload name -> the environment's name for that service
Item = dict[str, Any]

KINDS = {
    "Pod": "pods",
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "Node": "nodes",
    "Event": "events",
    "Service": "services",
}
PRESSURES = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")
REVISION = "deployment.kubernetes.io/revision"
CHANGE_CAUSE = "kubernetes.io/change-cause"
TEMPLATE_HASH = "pod-template-hash"
APP_LABELS = ("app.kubernetes.io/name", "app")
CLUSTER_KINDS = ("Node", "Namespace", "PersistentVolume", "StorageClass", "ClusterRole")  # objects of no namespace
_TIMESTAMPED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (.*)$")


# A Deployment's pod: <deployment>-<pod-template hash>-<5 characters>, both drawn from the alphabet Kubernetes
# names them with (no vowels and no 0, 1, 3: a random suffix never spells a word such as "-report-daily").
_KUBE_ALPHABET = "[bcdfghjklmnpqrstvwxz2456789]"
_POD_NAME = re.compile(rf"^(?P<service>[a-z0-9][a-z0-9-]*?)-{_KUBE_ALPHABET}{{6,10}}-{_KUBE_ALPHABET}{{5}}$")


def pod_service(name: str) -> str | None:
    """The Deployment a Kubernetes pod name belongs to, None when `name` is not one."""
    match = _POD_NAME.match(name)
    return match["service"] if match else None


@dataclass
class Cluster:
    """The raw objects of one cluster, by kind; an object already held (same kind, namespace and name) is
    not added twice (a `List` dump and a per-kind file may both hold it)."""

    pods: list[Item] = field(default_factory=list)
    deployments: list[Item] = field(default_factory=list)
    replicasets: list[Item] = field(default_factory=list)
    nodes: list[Item] = field(default_factory=list)
    events: list[Item] = field(default_factory=list)
    services: list[Item] = field(default_factory=list)
    _held: set[tuple[str, str, str]] = field(default_factory=set, repr=False)

    def add(self, kind: str, obj: Item) -> bool:
        """Hold `obj` (False when its kind is not one evcli reads)."""
        array = KINDS.get(kind)
        if array is None:
            return False
        key = (kind, namespace_of(obj), name_of(obj))
        if key not in self._held or not key[2]:
            self._held.add(key)
            getattr(self, array).append(obj)
        return True

    def holds(self, kind: str, namespace: str, name: str) -> bool:
        return (kind, namespace, name) in self._held

    def counts(self) -> dict[str, int]:
        return {array: len(getattr(self, array)) for array in KINDS.values()}


@dataclass(frozen=True)
class PodLog:
    """The lines of one container's log (`kubectl logs`), numbered from 1; `lines` may be the last ones only."""

    namespace: str
    pod: str
    container: str | None
    previous: bool
    source: str  # the snapshot file or the API path it was read from
    lines: tuple[tuple[int, str], ...]
    digest: str = ""  # "sha256:<hex>" of a snapshot file; "" for the API


def split_document(document: Any) -> Iterator[tuple[str, Item]]:
    """(kind, object) of each object of a kubectl or API JSON document: a `List` (items carry their kind),
    a typed list (`PodList`: the API leaves the kind out of its items), or one object."""
    if not isinstance(document, dict):
        return
    kind = str(document.get("kind") or "")
    items = document.get("items")
    if isinstance(items, list):
        implied = kind.removesuffix("List") if kind.endswith("List") and kind != "List" else ""
        for item in items:
            if isinstance(item, dict):
                yield str(item.get("kind") or implied), item
    elif kind:
        yield kind, document


# --- metadata ------------------------------------------------------------------------------------


def _meta(obj: Item) -> Item:
    return obj.get("metadata") or {}


def name_of(obj: Item) -> str:
    return str(_meta(obj).get("name") or "")


def namespace_of(obj: Item) -> str:
    return str(_meta(obj).get("namespace") or "")


def labels_of(obj: Item) -> dict[str, str]:
    return {str(key): str(value) for key, value in (_meta(obj).get("labels") or {}).items()}


def _controller(obj: Item) -> Item | None:
    """The owner reference marked controller, else the first one."""
    owners = [owner for owner in _meta(obj).get("ownerReferences") or [] if isinstance(owner, dict)]
    return next((owner for owner in owners if owner.get("controller")), owners[0] if owners else None)


def parse_time(text: Any) -> datetime | None:
    """An RFC 3339 time of the API (`2024-01-29T02:03:12Z`, microseconds in event times), None when absent."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def shown(moment: datetime | None, zone: tzinfo) -> str | None:
    return None if moment is None else moment.astimezone(zone).isoformat(timespec="seconds")


def _kept(item: Item) -> Item:
    """The item without empty fields (None, "", empty lists and tables), so refs state only what is known."""
    return {key: value for key, value in item.items() if value not in (None, "", [], {})}


# --- workloads -----------------------------------------------------------------------------------


class Workloads:
    """The workload (Deployment, StatefulSet, …) each pod, ReplicaSet and event object belongs to."""

    def __init__(self, cluster: Cluster) -> None:
        self.replicasets = {(namespace_of(rs), name_of(rs)): rs for rs in cluster.replicasets}
        self.pods = {(namespace_of(pod), name_of(pod)): pod for pod in cluster.pods}

    def of_replicaset(self, namespace: str, name: str, template_hash: str | None = None) -> tuple[str, str]:
        replicaset = self.replicasets.get((namespace, name))
        if replicaset is not None:
            owner = _controller(replicaset)
            if owner is not None and owner.get("kind") == "Deployment":
                return "Deployment", str(owner.get("name") or name)
            if owner is None:
                return "ReplicaSet", name
            template_hash = template_hash or labels_of(replicaset).get(TEMPLATE_HASH)
        if template_hash and name.endswith(f"-{template_hash}"):
            return "Deployment", name.removesuffix(f"-{template_hash}")
        return "ReplicaSet", name

    def of_pod(self, pod: Item) -> tuple[str, str]:
        """(kind, name) of the pod's workload; kind "" for a pod that no controller owns."""
        owner, labels = _controller(pod), labels_of(pod)
        if owner is not None:
            kind, name = str(owner.get("kind") or ""), str(owner.get("name") or "")
            if kind == "ReplicaSet":
                return self.of_replicaset(namespace_of(pod), name, labels.get(TEMPLATE_HASH))
            return kind, name
        return "", next((labels[label] for label in APP_LABELS if labels.get(label)), name_of(pod))

    def of_object(self, kind: str, namespace: str, name: str) -> str | None:
        """The workload an event's object belongs to; None for a node or an object of no workload."""
        if kind == "Pod":
            pod = self.pods.get((namespace, name))
            if pod is not None:
                return self.of_pod(pod)[1]
            return pod_service(name)  # a pod no dump holds: its name tells
        if kind == "ReplicaSet":
            return self.of_replicaset(namespace, name)[1]
        return name if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob") else None


def workload_names(cluster: Cluster) -> list[str]:
    """Every workload the objects name: Deployments, and the workloads of pods and ReplicaSets."""
    workloads = Workloads(cluster)
    names = [name_of(deployment) for deployment in cluster.deployments]
    names += [workloads.of_pod(pod)[1] for pod in cluster.pods]
    names += [workloads.of_replicaset(*key)[1] for key in workloads.replicasets]
    return sorted({name for name in names if name})


# --- pods ----------------------------------------------------------------------------------------


def pod_items(cluster: Cluster, resolve: Resolve, zone: tzinfo) -> list[Item]:
    """One item per pod, troubled pods (not running and ready, restarted, waiting, terminated) first."""
    workloads = Workloads(cluster)
    items = [_pod_item(pod, workloads, resolve, zone) for pod in cluster.pods]
    return sorted(items, key=lambda item: (not pod_troubled(item), item["namespace"], item["pod"]))


def _pod_item(pod: Item, workloads: Workloads, resolve: Resolve, zone: tzinfo) -> Item:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    kind, workload = workloads.of_pod(pod)
    specs = {str(c.get("name")): c for c in spec.get("containers") or [] if isinstance(c, dict)}
    statuses = [s for s in status.get("containerStatuses") or [] if isinstance(s, dict)]
    containers = [_container(s, specs.get(str(s.get("name"))) or {}, zone) for s in statuses]
    reported = {container["name"] for container in containers}
    containers += [_container({}, c, zone) for name, c in specs.items() if name not in reported]  # not started yet
    init = [_container(s, {}, zone) for s in status.get("initContainerStatuses") or [] if isinstance(s, dict)]
    containers += [dict(container, init=True) for container in init if container_troubled(container)]
    ready = sum(1 for container in containers if container.get("ready") and not container.get("init"))
    regular = sum(1 for container in containers if not container.get("init"))
    item = {
        "service": resolve(workload),
        "namespace": namespace_of(pod),
        "pod": name_of(pod),
        "workload": f"{kind}/{workload}" if kind else "",
        "node": spec.get("nodeName"),
        "phase": status.get("phase") or "Unknown",
        "reason": status.get("reason"),
        "ready": f"{ready}/{regular}",
        "restarts": sum(int(container.get("restarts") or 0) for container in containers),
        "started": shown(parse_time(status.get("startTime")), zone),
        "containers": containers,
        "message": status.get("message"),
    }
    return _kept(item)


def _container(status: Item, spec: Item, zone: tzinfo) -> Item:
    state, last = status.get("state") or {}, (status.get("lastState") or {}).get("terminated")
    resources = spec.get("resources") or {}
    item: Item = {
        "name": str(status.get("name") or spec.get("name") or ""),
        "image": spec.get("image") or status.get("image"),
        "ready": bool(status.get("ready")),
        "restarts": int(status.get("restartCount") or 0),
    }
    if waiting := state.get("waiting"):
        item["waiting"] = waiting.get("reason") or "Waiting"
        item["waiting_message"] = waiting.get("message")
    elif running := state.get("running"):
        item["running_since"] = shown(parse_time(running.get("startedAt")), zone)
    elif terminated := state.get("terminated"):
        item["terminated"] = _termination(terminated, zone)
    if last:
        item["last_terminated"] = _termination(last, zone)
    item["requests"] = {str(k): str(v) for k, v in (resources.get("requests") or {}).items()}
    item["limits"] = {str(k): str(v) for k, v in (resources.get("limits") or {}).items()}
    return _kept(item)


def _termination(terminated: Item, zone: tzinfo) -> Item:
    return _kept(
        {
            "reason": terminated.get("reason") or ("Completed" if terminated.get("exitCode") == 0 else "Error"),
            "exit_code": terminated.get("exitCode"),
            "signal": terminated.get("signal"),
            "started": shown(parse_time(terminated.get("startedAt")), zone),
            "finished": shown(parse_time(terminated.get("finishedAt")), zone),
        }
    )


def container_troubled(container: Item) -> bool:
    terminated = container.get("terminated") or {}
    return bool(
        container.get("waiting")
        or container.get("restarts")
        or (terminated and terminated.get("exit_code") not in (0, None))
        or container.get("last_terminated")
    )


def pod_troubled(item: Item) -> bool:
    if item.get("phase") == "Succeeded":
        return False
    containers = item.get("containers") or []
    unready = item.get("phase") != "Running" or any(not c.get("ready") for c in containers if not c.get("init"))
    return unready or bool(item.get("reason")) or any(container_troubled(c) for c in containers)


def pod_reasons(item: Item) -> set[str]:
    """The reasons a pod states: its own, and each container's waiting, termination and last termination reason."""
    reasons = {item.get("reason")}
    for container in item.get("containers") or []:
        reasons |= {container.get("waiting"), (container.get("terminated") or {}).get("reason")}
        reasons.add((container.get("last_terminated") or {}).get("reason"))
    return {str(reason).lower() for reason in reasons if reason}


# --- events --------------------------------------------------------------------------------------


def event_items(cluster: Cluster, resolve: Resolve, zone: tzinfo, within: TimeRange | None) -> tuple[list[Item], int]:
    """Events (core/v1 and events.k8s.io/v1 shapes) whose first..last time meets `within`, newest first, and
    how many were left out for having no time (an event only a `kubectl describe` states, by its age)."""
    workloads, found, undated = Workloads(cluster), [], 0
    for event in cluster.events:
        involved = event.get("involvedObject") or event.get("regarding") or {}
        kind, name = str(involved.get("kind") or ""), str(involved.get("name") or "")
        # a node's events are kept in the `default` namespace, but a node belongs to none
        namespace = str(involved.get("namespace") or ("" if kind in CLUSTER_KINDS else namespace_of(event)))
        series = event.get("series") or {}
        first = parse_time(
            event.get("firstTimestamp") or event.get("deprecatedFirstTimestamp") or event.get("eventTime")
        )
        last = parse_time(
            series.get("lastObservedTime")
            or event.get("lastTimestamp")
            or event.get("deprecatedLastTimestamp")
            or event.get("eventTime")
        )
        first, last = first or last, last or first
        if within is not None and (first is None or last is None or not within.overlaps(TimeRange(first, last))):
            undated += first is None
            continue
        owner = workloads.of_object(kind, namespace, name)
        source = event.get("source") or event.get("deprecatedSource") or {}
        reporter = " ".join(str(part) for part in (source.get("component"), source.get("host")) if part)
        item = {
            "service": resolve(owner) if owner else None,
            "namespace": namespace,
            "object": f"{kind}/{name}",
            "type": event.get("type"),
            "reason": event.get("reason") or "",
            "count": int(series.get("count") or event.get("count") or event.get("deprecatedCount") or 1),
            "first": shown(first, zone),
            "last": shown(last, zone),
            "age": event.get("age"),  # only an event read from `kubectl describe` has an age and no time
            "reporter": reporter or event.get("reportingComponent") or event.get("reportingController"),
            "message": event.get("message") or event.get("note"),
        }
        found.append((last, _kept(item)))
    found.sort(key=lambda pair: (pair[0] is None, -(pair[0].timestamp() if pair[0] else 0), _order(pair[1])))
    return [item for _, item in found], undated


def _order(item: Item) -> tuple[str, ...]:
    return tuple(str(item.get(key) or "") for key in ("namespace", "object", "reason", "first", "message"))


# --- rollouts ------------------------------------------------------------------------------------


def rollout_items(cluster: Cluster, resolve: Resolve, zone: tzinfo, within: TimeRange | None) -> list[Item]:
    """One item per ReplicaSet of a Deployment (its revision), newest revision first per Deployment. With a
    range, revisions created outside it are left out, but never the active one (the Deployment's state)."""
    workloads = Workloads(cluster)
    deployments = {(namespace_of(d), name_of(d)): d for d in cluster.deployments}
    revisions: dict[tuple[str, str], list[Item]] = {key: [] for key in deployments}
    for key, owned in workloads.replicasets.items():
        kind, owner = workloads.of_replicaset(*key)
        if kind == "Deployment":
            revisions.setdefault((key[0], owner), []).append(owned)
    items: list[Item] = []
    for (namespace, name), replicasets in sorted(revisions.items()):
        deployment = deployments.get((namespace, name))
        replicasets.sort(key=lambda rs: (-_revision(rs), name_of(rs)))
        active = _active(deployment, replicasets)
        listed: list[Item | None] = [*replicasets] or [None]  # a Deployment whose ReplicaSets no dump holds
        for replicaset in listed:
            is_active = replicaset is active
            created = parse_time(_meta(replicaset or deployment or {}).get("creationTimestamp"))
            if not is_active and within is not None and (created is None or not within.contains(created)):
                continue
            item = _revision_item(namespace, name, replicaset, deployment if is_active else None, resolve, zone)
            items.append(dict(item, active=is_active) if replicaset is not None else item)
    return items


def _revision(obj: Item | None) -> int:
    try:
        return int((_meta(obj or {}).get("annotations") or {}).get(REVISION) or 0)
    except ValueError:
        return 0


def _active(deployment: Item | None, replicasets: list[Item]) -> Item | None:
    """The ReplicaSet of the Deployment's current revision, else its newest one."""
    wanted = _revision(deployment)
    return next(
        (rs for rs in replicasets if wanted and _revision(rs) == wanted), replicasets[0] if replicasets else None
    )


def _revision_item(
    namespace: str, name: str, replicaset: Item | None, deployment: Item | None, resolve: Resolve, zone: tzinfo
) -> Item:
    source = replicaset or deployment or {}
    template = (source.get("spec") or {}).get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    status = (replicaset or {}).get("status") or {}
    item: Item = {
        "service": resolve(name),
        "namespace": namespace,
        "deployment": name,
        "revision": _revision(source) or None,
        "replicaset": name_of(replicaset) if replicaset else None,
        "created": shown(parse_time(_meta(source).get("creationTimestamp")), zone),
        "images": [str(c.get("image")) for c in containers if isinstance(c, dict) and c.get("image")],
        "change_cause": (_meta(source).get("annotations") or {}).get(CHANGE_CAUSE),
    }
    if replicaset is not None:
        item.update(replicas=int(status.get("replicas") or 0), ready=int(status.get("readyReplicas") or 0))
    if deployment is not None:
        spec, state = deployment.get("spec") or {}, deployment.get("status") or {}
        item["desired"] = spec.get("replicas")
        for key in ("updated", "available", "unavailable"):
            item[key] = state.get(f"{key}Replicas")
        item["conditions"] = [_condition(c, zone) for c in state.get("conditions") or [] if isinstance(c, dict)]
    return _kept(item)


def _condition(condition: Item, zone: tzinfo) -> Item:
    since = parse_time(condition.get("lastTransitionTime"))
    return _kept(
        {
            "type": condition.get("type"),
            "status": condition.get("status"),
            "reason": condition.get("reason"),
            "since": shown(since, zone),
        }
    )


# --- nodes ---------------------------------------------------------------------------------------


def node_items(cluster: Cluster, zone: tzinfo) -> list[Item]:
    """One item per node, those not Ready or under pressure first."""
    items = [_node_item(node, zone) for node in cluster.nodes]
    return sorted(items, key=lambda item: (not node_troubled(item), item["node"]))


def _node_item(node: Item, zone: tzinfo) -> Item:
    spec, status = node.get("spec") or {}, node.get("status") or {}
    conditions = [_node_condition(c, zone) for c in status.get("conditions") or [] if isinstance(c, dict)]
    taints = [f"{t.get('key')}:{t.get('effect')}" for t in spec.get("taints") or [] if isinstance(t, dict)]
    item = {
        "node": name_of(node),
        "conditions": conditions,
        "pressure": [c["type"] for c in conditions if c.get("type") in PRESSURES and c.get("status") == "True"],
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": taints,
        "allocatable": {str(k): str(v) for k, v in (status.get("allocatable") or {}).items()},
    }
    return _kept(item)


def _node_condition(raw: Item, zone: tzinfo) -> Item:
    """A node condition; an abnormal one with its message (`kubelet has insufficient memory available`)."""
    condition = _condition(raw, zone)
    if abnormal(condition) and raw.get("message"):
        condition["message"] = raw["message"]
    return condition


def abnormal(condition: Item) -> bool:
    if condition.get("type") == "Ready":
        return condition.get("status") != "True"
    return condition.get("status") == "True" and condition.get("type") in PRESSURES


def node_troubled(item: Item) -> bool:
    return any(abnormal(condition) for condition in item.get("conditions") or []) or bool(item.get("unschedulable"))


def node_reasons(item: Item) -> set[str]:
    """The abnormal conditions' types and reasons (`MemoryPressure`, `KubeletNotReady`)."""
    found = {str(c.get(key)).lower() for c in item.get("conditions") or [] if abnormal(c) for key in ("type", "reason")}
    return found - {"none"}


# --- services and topology -----------------------------------------------------------------------


def _selected(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(str(key)) == str(value) for key, value in selector.items())


def routes(cluster: Cluster) -> dict[tuple[str, str], list[str]]:
    """(namespace, Service name) -> the workloads its selector routes to: Deployments whose pod template
    it selects, and the workloads of the pods it selects."""
    workloads = Workloads(cluster)
    found: dict[tuple[str, str], list[str]] = {}
    for service in cluster.services:
        namespace, selector = namespace_of(service), (service.get("spec") or {}).get("selector") or {}
        targets = [
            name_of(d)
            for d in cluster.deployments
            if namespace_of(d) == namespace and _selected(selector, _template_labels(d))
        ]
        targets += [
            workloads.of_pod(pod)[1]
            for pod in cluster.pods
            if namespace_of(pod) == namespace and _selected(selector, labels_of(pod))
        ]
        found[(namespace, name_of(service))] = sorted(set(targets))
    return found


def _template_labels(deployment: Item) -> dict[str, str]:
    labels = (((deployment.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
    return {str(key): str(value) for key, value in labels.items()}


def service_items(cluster: Cluster, resolve: Resolve) -> list[Item]:
    routed = routes(cluster)
    items = []
    for service in cluster.services:
        spec, key = service.get("spec") or {}, (namespace_of(service), name_of(service))
        targets = [resolve(target) for target in routed.get(key, [])]
        ports = [_port(port) for port in spec.get("ports") or [] if isinstance(port, dict)]
        selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items()))
        item = {
            "service": targets[0] if len(targets) == 1 else None,
            "namespace": key[0],
            "name": key[1],
            "type": spec.get("type") or "ClusterIP",
            "selector": selector,
            "routes_to": targets,
            "ports": ports,
        }
        items.append(_kept(item))
    return sorted(items, key=lambda item: (item["namespace"], item["name"]))


def _port(port: Item) -> str:
    target = port.get("targetPort")
    text = f"{port.get('port')}/{port.get('protocol') or 'TCP'}"
    return f"{text}->{target}" if target not in (None, port.get("port")) else text


def service_addresses(cluster: Cluster, resolve: Resolve) -> dict[str, tuple[str, ...]]:
    """Each name a Service is reached by (`payment`, `payment.shop`, `payment.shop.svc`,
    `payment.shop.svc.cluster.local`, lower-cased) -> the services its selector routes to."""
    found: dict[str, dict[str, None]] = {}
    for (namespace, name), targets in routes(cluster).items():
        if not targets:
            continue
        forms = [name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"]
        for form in forms if namespace else forms[:1]:
            found.setdefault(form.lower(), {}).update(dict.fromkeys(resolve(target) for target in targets))
    return {form: tuple(targets) for form, targets in found.items()}


def template_texts(cluster: Cluster, resolve: Resolve) -> dict[str, list[str]]:
    """Service -> the env values, commands and arguments of its pod templates (Deployments) and pods."""
    workloads = Workloads(cluster)
    specs = [(name_of(d), ((d.get("spec") or {}).get("template") or {}).get("spec") or {}) for d in cluster.deployments]
    specs += [(workloads.of_pod(pod)[1], pod.get("spec") or {}) for pod in cluster.pods]
    found: dict[str, list[str]] = {}
    for workload, spec in specs:
        texts = found.setdefault(resolve(workload), [])
        for container in spec.get("containers") or []:
            if isinstance(container, dict):
                texts += [
                    str(env["value"])
                    for env in container.get("env") or []
                    if isinstance(env, dict) and env.get("value")
                ]
                texts += [str(part) for part in (container.get("command") or []) + (container.get("args") or [])]
    return {workload: texts for workload, texts in found.items() if texts}


# --- logs ----------------------------------------------------------------------------------------


def log_items(
    logs: Iterable[PodLog], cluster: Cluster, resolve: Resolve, zone: tzinfo, within: TimeRange | None
) -> list[Item]:
    """One item per log line; a line of `kubectl logs --timestamps` has its time, and with a range only
    lines inside it are kept (lines without a time are then left out)."""
    workloads, items = Workloads(cluster), []
    for log in logs:
        owner = workloads.of_object("Pod", log.namespace, log.pod)
        for number, text in log.lines:
            matched = _TIMESTAMPED.match(text)
            moment = parse_time(_seconds(matched.group(1))) if matched else None
            if within is not None and (moment is None or not within.contains(moment)):
                continue
            item = {
                "service": resolve(owner) if owner else None,
                "namespace": log.namespace,
                "pod": log.pod,
                "container": log.container,
                "previous": log.previous,
                "line_number": number,
                "timestamp": shown(moment, zone),
                "message": matched.group(2) if matched else text,
                "source": log.source,
            }
            items.append(_kept(item))
    return items


def _seconds(stamp: str) -> str:
    """`2024-01-29T02:03:12.123456789Z` with at most microseconds (Python reads no nanoseconds)."""
    return re.sub(r"(\.\d{6})\d+", r"\1", stamp)
