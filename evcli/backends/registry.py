"""Live evidence backends, found by what they provide.

Each `BackendKind` names a backend (its `--NAME URL` option and its key in a stored environment
spec), the capabilities it provides and the `module:function` that builds it from a `BackendSpec`.
Builders are imported only when a backend is used, so the CLI can list the options without
loading any backend. Adding a backend is one module with a builder plus one `register` line below.

Which backend serves a capability when several are configured: the one that lists the capability
earliest among its own capabilities (a backend names what it is best at first), then registry order.
An object built for a capability provides that capability's methods:
  alerts   alerts(filters: dict[str, str] | None, now: datetime | None) -> list[alert record]
  metrics  summarise(service, metric, window) -> MetricsResult (series and a note, no alerts)
           services() -> list[str] (the service names it knows)
  logs     query_logs(LogQuery) -> LogResult
  knowledge  search(query, *, limit, alertname, service) -> list[block dict: doc, title, heading, text,
             relevance_level, score, layer]; skills() -> list[skill dict: name, doc, title, alerts, services]
  kubernetes  objects(namespace) -> (k8s_objects.Cluster, digests); pod_logs(namespace, pod, containers,
             previous, tail) -> list[PodLog] (evcli.backends.kubernetes; a snapshot's k8s/ reads the same way)
  traces   query(trace_graph.TraceQuery) -> live_traces.LiveTraceResult (spans, stats, edges, digests);
           services() -> list[str]; resolve(name) -> str | None (a service by name or pod; a snapshot's
           traces/ answers the same way, evcli.backends.snapshot_traces)

A backend is live (the default) when it is given a URL with its own `--NAME URL` option; a
non-live one (`url_option=False`, e.g. `runbooks`) is built from the environment's runbooks
directory instead and serves its capability when no configured live backend does
(EnvironmentSpec.knowledge_backend): its BackendSpec's `url` is that directory, its `directories`
option (DIRECTORIES_OPTION, a JSON list) all the directories when there are several or none, and
its `index` option (INDEX_OPTION) the knowledge index file when one was chosen.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evcli.contracts import BackendSpec

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
INDEX_OPTION = "index"  # a directory-built backend's option: the knowledge index file
DIRECTORIES_OPTION = "directories"  # a directory-built backend's option: all its directories (JSON list)


class Capability(StrEnum):
    ALERTS = "alerts"
    METRICS = "metrics"
    LOGS = "logs"
    KNOWLEDGE = "knowledge"
    CHANGES = "changes"  # incident against baseline over every series and log (a snapshot: find_changes)
    KUBERNETES = "kubernetes"  # pods, events, rollouts, nodes, Services, pod logs (query_kubernetes)
    TRACES = "traces"  # spans, their stats and call edges (query_traces)


@dataclass(frozen=True)
class BackendKind:
    name: str  # option `--name`, key in the stored environment spec
    capabilities: tuple[Capability, ...]  # strongest first
    builder: str | Callable[[BackendSpec], Any]  # "module:function", or the function itself
    help: str  # the option's help text
    url_option: bool = True  # False: built from the runbooks directory; no option, never a live backend
    option: str | None = None  # the option's name when it is not `--<name>` (kubernetes: --kubeconfig)

    def build(self, spec: BackendSpec) -> Any:
        builder = self.builder
        if isinstance(builder, str):
            module, _, function = builder.partition(":")
            builder = getattr(importlib.import_module(module), function)
        return builder(spec)

    @property
    def flag(self) -> str:
        return self.option or "--" + self.name.replace("_", "-")


BACKENDS: dict[str, BackendKind] = {}


def register(kind: BackendKind) -> BackendKind:
    if not _NAME.match(kind.name):
        raise ValueError(f"backend names are lower-case identifiers, got {kind.name!r}")
    if kind.name in BACKENDS:
        raise ValueError(f"backend {kind.name!r} is already registered")
    if not kind.capabilities:
        raise ValueError(f"backend {kind.name!r} provides no capability")
    BACKENDS[kind.name] = kind
    return kind


def backend_kind(name: str) -> BackendKind:
    """The registered backend called `name`; an unknown name is a `KeyError` naming the known ones."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}") from None


def live_backends() -> list[BackendKind]:
    """The backends given a URL (`--NAME URL`, a key of the stored spec), in registry order."""
    return [kind for kind in BACKENDS.values() if kind.url_option]


def providers(capability: Capability) -> list[BackendKind]:
    """The backends providing `capability`, most preferred first."""
    order = list(BACKENDS)
    found = [kind for kind in BACKENDS.values() if capability in kind.capabilities]
    return sorted(found, key=lambda kind: (kind.capabilities.index(capability), order.index(kind.name)))


register(
    BackendKind(
        "prometheus", (Capability.METRICS, Capability.ALERTS), "evcli.backends.prometheus:build", "Prometheus base URL."
    )
)
register(
    BackendKind("alertmanager", (Capability.ALERTS,), "evcli.backends.alertmanager:build", "Alertmanager base URL.")
)
register(BackendKind("loki", (Capability.LOGS,), "evcli.backends.loki:build", "Loki base URL."))
register(BackendKind("jaeger", (Capability.TRACES,), "evcli.backends.jaeger:build", "Jaeger query base URL (:16686)."))
register(BackendKind("tempo", (Capability.TRACES,), "evcli.backends.tempo:build", "Grafana Tempo base URL (:3200)."))
register(
    BackendKind(
        "kubernetes",
        (Capability.KUBERNETES,),
        "evcli.backends.kubernetes:build",
        "Kubernetes (read-only): a kubeconfig file, `default` ($KUBECONFIG, else ~/.kube/config) or `in-cluster`.",
        option="--kubeconfig",
    )
)
register(
    BackendKind(
        "runbooks",
        (Capability.KNOWLEDGE,),
        "evcli.backends.runbooks:build",
        "Markdown runbooks of the --runbooks directory (default: the --env directory, else the demo).",
        url_option=False,
    )
)
