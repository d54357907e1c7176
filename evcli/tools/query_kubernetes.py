"""`query_kubernetes`: what a cluster says about a service: its pods, their events, its rollouts, the nodes
its pods run on, the Services routing to it, and its pods' logs.

Refs: `$.pods[i]` (`checkout-7c9f6d8b5-x2k4q service=checkout namespace=shop workload=Deployment/checkout
node=node-2 phase=Running ready=0/1 restarts=7; container app … waiting=CrashLoopBackOff last terminated
reason=OOMKilled exit_code=137 …; requests cpu=250m …`), `$.events[i]` (type, reason, object, count,
first and last time, message), `$.rollouts[i]` (one revision of a Deployment: its ReplicaSet, images,
created, replicas; the active one with the Deployment's status and conditions), `$.nodes[i]`
(conditions: Ready, MemoryPressure, DiskPressure, PIDPressure), `$.services[i]` (a Service, its
selector and the workloads it routes to), `$.logs[i]` (one line of `kubectl logs [--previous]`).

Where from: a snapshot's k8s/ directory (evcli.backends.snapshot_k8s) or a cluster's API (--kubeconfig,
evcli.backends.kubernetes), both read by evcli.backends.k8s_objects; an environment with neither fails
the call (never "no evidence"). Each item's `service` is its pod's workload under the environment's
name for it, so pods, logs and metrics name one service.

Filters: namespace, service (a workload by its name in logs and metrics, an alias, or the name of a
Service routing to it), pod, reason (a pod's or container's waiting or termination reason, an event's
reason, a node condition, a Deployment condition's reason), kind (one array). The range
(since/until/window; a live cluster: the last hour by default) applies to what has a time: events
(first..last meets it), rollout revisions (created in it; the active one is always shown) and log
lines; pods and nodes are their state when the dump was taken (live: now). Nodes are those the
selected pods run on when a namespace, service or pod is named. `kind=logs` reads the last `limit`
lines of each pod named (pod or service), `previous` those of the container before its last restart.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from evcli.core.errors import BackendError
from evcli.tools import registry
from evcli.tools.fetch import (
    LIVE_DEFAULT_SPAN,
    Outcome,
    call_range,
    environment_zone,
    is_snapshot,
    prepare_clock,
    searched_scope,
    unknown_service_outcome,
)
from evcli.tools.params import NAME, TimeExpression, ToolParams
from evcli.tools.refs import pairs

if TYPE_CHECKING:
    from evcli.backends import k8s_objects as k8s
    from evcli.core.time import TimeRange
    from evcli.tools.runner import SessionView, ToolEnvironment

K8S_NAME = r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$"  # a namespace or pod name (DNS subdomain)
REASON = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
STATE_ARRAYS = ("pods", "events", "rollouts", "nodes", "services")  # what a call without `kind` returns
MAX_LOG_PODS = 5  # pods whose logs one call reads
Kind = Literal["pods", "events", "rollouts", "nodes", "services", "logs"]


class QueryKubernetesParams(ToolParams):
    namespace: str | None = Field(None, pattern=K8S_NAME)
    service: str | None = Field(None, pattern=NAME)
    pod: str | None = Field(None, pattern=K8S_NAME)
    kind: Kind | None = None
    reason: str | None = Field(None, pattern=REASON)
    previous: bool = False
    since: TimeExpression = None
    until: TimeExpression = None
    window: str | None = None
    limit: int = Field(20, ge=1, le=100)

    @model_validator(mode="after")
    def _logs_of_pods(self) -> QueryKubernetesParams:
        if self.kind == "logs" and not (self.pod or self.service):
            raise ValueError("kind=logs needs a pod or a service")
        if self.kind == "logs" and self.reason:
            raise ValueError("reason does not apply to kind=logs")
        if self.previous and self.kind != "logs":
            raise ValueError("previous applies to kind=logs only")
        return self


# --- refs ----------------------------------------------------------------------------------------


def pod_text(item: dict[str, Any]) -> str:
    head = " ".join([item["pod"], *pairs(item, ("service", "namespace", "workload", "node", "phase", "reason"))])
    head += " " + " ".join(pairs(item, ("ready", "restarts", "started")))
    parts = [head, *(container_text(container) for container in item.get("containers") or [])]
    parts += [f"message: {item['message']}"] if item.get("message") else []
    return "; ".join(parts)


def container_text(container: dict[str, Any]) -> str:
    words = [f"{'init ' if container.get('init') else ''}container {container.get('name')}"]
    words += pairs(container, ("image",))
    words += [f"ready={str(bool(container.get('ready'))).lower()}", f"restarts={container.get('restarts', 0)}"]
    if container.get("waiting"):
        words.append(f"waiting={container['waiting']}")
        words += [f"({container['waiting_message']})"] if container.get("waiting_message") else []
    if container.get("running_since"):
        words.append(f"running since {container['running_since']}")
    for key, label in (("terminated", "terminated"), ("last_terminated", "last terminated")):
        if container.get(key):
            words.append(
                " ".join([label, *pairs(container[key], ("reason", "exit_code", "signal", "started", "finished"))])
            )
    for key in ("requests", "limits"):
        if container.get(key):
            words.append(" ".join([key, *(f"{name}={value}" for name, value in sorted(container[key].items()))]))
    return " ".join(words)


def event_text(item: dict[str, Any]) -> str:
    head = " ".join(str(part) for part in (item.get("type"), item.get("reason"), item.get("object")) if part)
    tail = pairs(item, ("service", "namespace", "count", "first", "last", "age"))
    tail += [f"from {item['reporter']}"] if item.get("reporter") else []
    return f"{head} {' '.join(tail)}: {item.get('message') or ''}".rstrip(": ")


def rollout_text(item: dict[str, Any]) -> str:
    words = [f"Deployment {item['namespace']}/{item['deployment']}", *pairs(item, ("service", "revision"))]
    words += pairs(item, ("replicaset", "created"))
    words += [f"images={','.join(item['images'])}"] if item.get("images") else []
    words += pairs(item, ("replicas", "ready"))
    words += ["active"] if item.get("active") else []
    parts = [" ".join(words)]
    parts += [f"change-cause: {item['change_cause']}"] if item.get("change_cause") else []
    status = pairs(item, ("desired", "updated", "available", "unavailable"))
    parts += [" ".join(["deployment", *status])] if status else []
    parts += (
        [f"conditions: {', '.join(condition_text(c) for c in item['conditions'])}"] if item.get("conditions") else []
    )
    return "; ".join(parts)


def condition_text(condition: dict[str, Any]) -> str:
    detail = " ".join(str(condition[key]) for key in ("reason",) if condition.get(key))
    detail += f" since {condition['since']}" if condition.get("since") and (detail or condition.get("message")) else ""
    detail += f": {condition['message']}" if condition.get("message") else ""
    return f"{condition.get('type')}={condition.get('status')}" + (f" ({detail.strip()})" if detail.strip() else "")


def node_text(item: dict[str, Any]) -> str:
    from evcli.backends import k8s_objects as k8s

    conditions = [
        condition_text(c) if k8s.abnormal(c) else f"{c.get('type')}={c.get('status')}"
        for c in item.get("conditions") or []
    ]
    parts = [f"node {item['node']}: {' '.join(conditions) or 'no conditions'}"]
    parts += ["unschedulable"] if item.get("unschedulable") else []
    parts += [f"taints {', '.join(item['taints'])}"] if item.get("taints") else []
    allocatable = " ".join(f"{name}={value}" for name, value in sorted((item.get("allocatable") or {}).items()))
    parts += [f"allocatable {allocatable}"] if allocatable else []
    return "; ".join(parts)


def service_text(item: dict[str, Any]) -> str:
    routed = ", ".join(item.get("routes_to") or []) or "no workload"
    words = [f"Service {item['namespace']}/{item['name']}", *pairs(item, ("service", "type", "selector"))]
    words += [f"routes to {routed}"]
    words += [f"ports {', '.join(item['ports'])}"] if item.get("ports") else []
    return " ".join(words)


def log_text(item: dict[str, Any]) -> str:
    where = " ".join([item["pod"], *pairs(item, ("service", "namespace", "container"))])
    where += " previous container" if item.get("previous") else ""
    stamp = f"{item['timestamp']} " if item.get("timestamp") else ""
    return f"{where} line {item.get('line_number')}: {stamp}{item.get('message', '')}"


# --- the call ------------------------------------------------------------------------------------


def scope(params: QueryKubernetesParams) -> dict[str, Any]:
    found: dict[str, Any] = {"service": params.service, "window": params.window, "since": params.since}
    found.update(until=params.until, limit=params.limit)
    found = {key: value for key, value in found.items() if value is not None}
    named = (("namespace", params.namespace), ("pod", params.pod), ("kind", params.kind), ("reason", params.reason))
    found["keywords"] = [f"{key}={value}" for key, value in named if value] + (["previous"] if params.previous else [])
    return found


def precise(params: dict[str, Any]) -> bool:
    return bool(params.get("service") or params.get("pod"))


def wider(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    for key in ("service", "pod", "namespace", "reason", "kind"):
        if old.get(key) and new.get(key) != old.get(key):
            return f"it drops or changes the {key} ({old.get(key)} → {new.get(key) or 'any'})"
    return None


def kubernetes_source(backend: Any) -> Any:
    """What serves the call: the snapshot's k8s/ directory, or the live backend's kubernetes part."""
    from evcli.backends.registry import Capability

    if is_snapshot(backend) and hasattr(backend, "kubernetes"):
        return backend.kubernetes
    part = backend.serving(Capability.KUBERNETES) if hasattr(backend, "serving") else None
    if part is None:
        raise BackendError("no Kubernetes evidence here: pass --kubeconfig PATH (or default, in-cluster)")
    return part


@dataclass(frozen=True)
class Wanted:
    """What the call asks for; `services` the lower-cased names an item of the asked service has."""

    namespace: str | None
    services: frozenset[str] | None
    pod: str | None
    reason: str | None

    def keeps(self, item: dict[str, Any], reasons: set[str] | None = None) -> bool:
        if self.namespace and item.get("namespace") != self.namespace:
            return False
        if self.services is not None and str(item.get("service") or "").lower() not in self.services:
            return False
        return self.reason is None or (reasons is not None and self.reason in reasons)


def fetch(params: QueryKubernetesParams, env: ToolEnvironment, session: SessionView) -> Outcome:
    from evcli.backends import k8s_objects as k8s
    from evcli.core.time import TimeRange

    found_scope, backend = scope(params), env.backend
    source = kubernetes_source(backend)
    named = call_range(params, backend)
    whole = _span(backend) if named is None and is_snapshot(backend) else None
    found_scope.update(searched_scope(named, backend, whole))
    within = named
    if within is None and not is_snapshot(backend):
        within = TimeRange(backend.now() - LIVE_DEFAULT_SPAN, backend.now())
    cluster, digests = source.objects(params.namespace)
    resolve, zone = _resolver(backend), environment_zone(backend)
    pods = k8s.pod_items(cluster, resolve, zone)
    events, undated = k8s.event_items(cluster, resolve, zone, within)
    services: frozenset[str] | None = None
    if params.service:
        services = _asked(params.service, backend, cluster, resolve)
        present = {str(item.get("service") or "").lower() for item in [*pods, *events]} - {""}
        if not services & (present | {name.lower() for name in k8s.workload_names(cluster)}):
            message = _unknown(
                params.service, sorted({str(i["service"]) for i in [*pods, *events] if i.get("service")})
            )
            return unknown_service_outcome(message, SPEC.array_names, found_scope)
    wanted = Wanted(params.namespace, services, params.pod, params.reason.lower() if params.reason else None)
    arrays, notes, log_digests = _arrays(params, wanted, cluster, pods, events, resolve, zone, within, source)
    if undated and "events" in arrays:
        notes.append(f"{undated} described event(s) without a time left out (a range was searched)")
    output: dict[str, Any] = {name: [] for name in SPEC.array_names}
    total, truncated = 0, False
    for name, items in arrays.items():
        cap = min(params.limit, env.settings.max_items) if name != "logs" else env.settings.max_items
        output[name], total, truncated = items[:cap], total + len(items), truncated or len(items) > cap
    counts = ", ".join(f"{len(items)} {name}" for name, items in arrays.items())
    output.update(total=total, truncated=truncated, message="; ".join([counts, *notes]))
    output["searched_range"] = found_scope["range"]
    if digests or log_digests:  # files of a snapshot (a live cluster's answers are not kept)
        output["digests"] = dict(sorted({**digests, **log_digests}.items()))
    return Outcome(output, found_scope)


def _arrays(
    params: QueryKubernetesParams,
    wanted: Wanted,
    cluster: k8s.Cluster,
    pods: list[dict[str, Any]],
    events: list[dict[str, Any]],
    resolve: k8s.Resolve,
    zone: Any,
    within: TimeRange | None,
    source: Any,
) -> tuple[dict[str, list[dict[str, Any]]], list[str], dict[str, str]]:
    """The items of each array asked, filtered; notes on what was left out; the digests of log files read."""
    from evcli.backends import k8s_objects as k8s

    asked = (params.kind,) if params.kind else STATE_ARRAYS
    # the pods named (namespace, service, pod) whatever their reasons: their nodes, rollouts, Services and logs
    located = [pod for pod in pods if replace(wanted, reason=None).keeps(pod) and wanted.pod in (None, pod["pod"])]
    found: dict[str, list[dict[str, Any]]] = {}
    notes: list[str] = []
    digests: dict[str, str] = {}
    if "pods" in asked:
        found["pods"] = [pod for pod in located if wanted.keeps(pod, k8s.pod_reasons(pod))]
    if "events" in asked:
        found["events"] = [
            event
            for event in events
            if wanted.keeps(event, {str(event.get("reason")).lower()})
            and (wanted.pod is None or event.get("object") == f"Pod/{wanted.pod}")
        ]
    if "rollouts" in asked:
        deployments = {str(pod.get("workload", "")).removeprefix("Deployment/") for pod in located}
        found["rollouts"] = [
            rollout
            for rollout in k8s.rollout_items(cluster, resolve, zone, within)
            if wanted.keeps(rollout, {str(c.get("reason")).lower() for c in rollout.get("conditions") or []})
            and (wanted.pod is None or rollout["deployment"] in deployments)
        ]
    if "nodes" in asked:
        nodes = k8s.node_items(cluster, zone)
        if wanted.namespace or wanted.services is not None or wanted.pod:
            hosts = {pod.get("node") for pod in located}
            if len(kept := [node for node in nodes if node["node"] in hosts]) < len(nodes):
                notes.append("nodes: those the selected pods run on")
            nodes = kept
        found["nodes"] = [node for node in nodes if wanted.reason is None or wanted.reason in k8s.node_reasons(node)]
    if "services" in asked:
        routed_to = {str(pod.get("service") or "").lower() for pod in located}
        found["services"] = [
            service
            for service in k8s.service_items(cluster, resolve)
            if wanted.reason is None
            and (wanted.namespace is None or service["namespace"] == wanted.namespace)
            and (wanted.services is None or wanted.services & {s.lower() for s in service.get("routes_to") or []})
            and (wanted.pod is None or routed_to & {s.lower() for s in service.get("routes_to") or []})
        ]
    if params.kind == "logs":
        logs, named = _logs(params, wanted, cluster, located, resolve, source)
        found["logs"] = k8s.log_items(logs, cluster, resolve, zone, within)
        digests = {log.source: log.digest for log in logs if log.digest}
        if left_out := sum(len(log.lines) for log in logs) - len(found["logs"]):
            notes.append(f"{left_out} log line(s) read outside the range or without a time left out")
        notes += [f"logs of {MAX_LOG_PODS} of {named} pods read; name a pod"] if named > MAX_LOG_PODS else []
    return found, notes, digests


def _logs(
    params: QueryKubernetesParams,
    wanted: Wanted,
    cluster: k8s.Cluster,
    located: list[dict[str, Any]],
    resolve: k8s.Resolve,
    source: Any,
) -> tuple[list[k8s.PodLog], int]:
    """The last `limit` lines of each container of the pods named (at most MAX_LOG_PODS pods), and how many
    pods were named."""
    from evcli.backends import k8s_objects as k8s

    containers = {(pod["namespace"], pod["pod"]): [c["name"] for c in pod.get("containers") or []] for pod in located}
    workloads = k8s.Workloads(cluster)
    for namespace, pod in getattr(source, "log_pods", list)():  # a snapshot's log files of pods no JSON holds
        owner = workloads.of_object("Pod", namespace, pod)
        item = {"namespace": namespace, "service": resolve(owner) if owner else None}
        if (namespace, pod) not in containers and wanted.pod in (None, pod) and wanted.keeps(item):
            containers[(namespace, pod)] = []
    logs = [
        log
        for namespace, pod in sorted(containers)[:MAX_LOG_PODS]
        for log in source.pod_logs(namespace, pod, containers[(namespace, pod)], params.previous, params.limit)
    ]
    return logs, len(containers)


def _asked(name: str, backend: Any, cluster: k8s.Cluster, resolve: k8s.Resolve) -> frozenset[str]:
    """The names an item of the asked service may have: the name, the service the environment resolves it
    to, and the workloads a Service of that name routes to."""
    from evcli.backends import k8s_objects as k8s

    names = {name.lower()}
    resolved = backend.resolve_service(name) if hasattr(backend, "resolve_service") else None
    names |= {resolved.lower()} if resolved else set()
    for (_, service), targets in k8s.routes(cluster).items():
        if service.lower() == name.lower():
            names |= {resolve(target).lower() for target in targets}
    return frozenset(names)


def _unknown(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name.lower(), [service.lower() for service in known], n=5, cutoff=0.6)
    close += [service for service in known if name.lower() in service.lower() and service.lower() not in close]
    if close:
        return f"unknown service {name!r} in the cluster's objects; close names: {', '.join(close[:5])}"
    return f"unknown service {name!r} in the cluster's objects; known: {', '.join(known[:20]) or 'none'}"


def _resolver(backend: Any) -> Callable[[str], str]:
    """A workload's name -> the environment's name for its service (an alias target, else itself)."""
    resolve_service = getattr(backend, "resolve_service", None)
    cache: dict[str, str] = {}

    def resolve(workload: str) -> str:
        if workload not in cache:
            cache[workload] = (resolve_service(workload) if resolve_service else None) or workload
        return cache[workload]

    return resolve


def _span(backend: Any) -> str | None:
    span = backend.span
    return span.text(environment_zone(backend)) if span is not None and span.is_bounded else None


SPEC = registry.register(
    registry.ToolSpec(
        name="query_kubernetes",
        description=(
            "Kubernetes evidence of a service, a pod or a namespace: `$.pods[i]` (phase, ready, restarts, each "
            "container's waiting reason such as CrashLoopBackOff or ImagePullBackOff, last termination reason, "
            "exit code and time such as OOMKilled/137, requests and limits, node), `$.events[i]` (type, reason, "
            "object, count, first and last time, message), `$.rollouts[i]` (a Deployment's revisions: images, "
            "created, replicas; the active one with the Deployment's conditions), `$.nodes[i]` (Ready, "
            "MemoryPressure, DiskPressure) and `$.services[i]` (selector, the workloads it routes to); kind=logs: "
            "`$.logs[i]`, the last lines of a pod's containers (previous: before the last restart). A pod's "
            "service is its Deployment, named as logs and metrics name it. The range (since/until or window) "
            "applies to events, revisions and log lines; pods and nodes are their current state."
        ),
        summary="Pods, events, rollouts, nodes, Services and pod logs of a Kubernetes cluster.",
        params=QueryKubernetesParams,
        option_help={
            "namespace": "Only objects of this namespace, e.g. shop.",
            "service": "A service (its Deployment or other workload, by its name in logs and metrics, an alias, or "
            "the name of a Service routing to it).",
            "pod": "One pod by name, e.g. checkout-7c9f6d8b5-x2k4q.",
            "kind": "Only one array: pods, events, rollouts, nodes, services, or logs (needs a pod or a service).",
            "reason": "Only what states this reason: OOMKilled, CrashLoopBackOff, ImagePullBackOff, BackOff, "
            "MemoryPressure, ProgressDeadlineExceeded (case-insensitive).",
            "previous": "With kind=logs: the log of each container before its last restart (kubectl logs --previous).",
            "limit": "At most N items per array (1-100); with kind=logs the last N lines of each pod.",
        },
        arrays=(
            registry.EvidenceArray("pods", pod_text),
            registry.EvidenceArray("events", event_text),
            registry.EvidenceArray("rollouts", rollout_text),
            registry.EvidenceArray("nodes", node_text),
            registry.EvidenceArray("services", service_text),
            registry.EvidenceArray("logs", log_text),
        ),
        fetch=fetch,
        scope=scope,
        reads=("kubernetes",),
        prepare=prepare_clock,  # the snapshot's span and clock, before the deadline (they read the trace index)
        precise=precise,
        wider=wider,
    )
)
