"""A snapshot's `k8s/` directory: what kubectl wrote about the cluster (DESIGN §5).

```
DIR/k8s/**/*.json        `kubectl get pods,deployments,replicasets,nodes,events,services -A -o json`: one
                         `List`, one file per kind, or single objects, under any name (not under logs/)
DIR/k8s/describe/**/*.txt  `kubectl describe pods|nodes|deployments …`: pods and the `Events:` rows of
                         every described object, for what no JSON file holds
DIR/k8s/logs/<namespace>/<pod>[.previous].log              `kubectl logs [--previous] [--timestamps]`
DIR/k8s/logs/<namespace>/<pod>/<container>[.previous].log  the same, of one container of the pod
```

Every file is read through `evcli.core.files` (inside the directory, regular files, bounded size,
the tool call's deadline checked). Objects read from JSON win over described ones (same kind,
namespace and name); a described event is kept only for an object no JSON event names. A file that
cannot be read fails every query of the directory (`BackendError` naming it), as a broken alerts.json
does: evidence read from part of a dump would be stated as the whole. The sha256 of each file read
is kept for the invocation's digests.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from evcli.backends.alerts import iso_utc
from evcli.backends.k8s_describe import described
from evcli.backends.k8s_objects import (
    Cluster,
    PodLog,
    parse_time,
    service_addresses,
    split_document,
    template_texts,
    workload_names,
)
from evcli.core.errors import BackendError, BadInput
from evcli.core.files import LIMITS, Lines, ReadLimits, open_text, read_bytes, walk

Severity = Literal["error", "warning"]
K8S_DIR = "k8s"
DESCRIBE_DIR = "describe"
LOGS_DIR = "logs"
PREVIOUS = ".previous"
# `kubectl get -A -o json` of a large cluster is larger than a document evcli reads elsewhere
DUMP_LIMITS = ReadLimits(max_file_bytes=64 << 20, max_total_bytes=256 << 20)


@dataclass
class KubeDump:
    """What the JSON and describe files hold, the sha256 of each, and what could not be read."""

    cluster: Cluster = field(default_factory=Cluster)
    digests: dict[str, str] = field(default_factory=dict)  # path relative to the snapshot -> "sha256:<hex>"
    problems: list[str] = field(default_factory=list)  # "k8s/pods.json: invalid JSON: …"
    other_kinds: Counter[str] = field(default_factory=Counter)  # kinds evcli does not read (ConfigMap, …)
    ignored: list[tuple[Path, str]] = field(default_factory=list)  # files that are none of the layout's
    log_files: list[Path] = field(default_factory=list)


class KubernetesInfo(BaseModel):
    """`evcli env check`'s account of k8s/."""

    path: str = f"{K8S_DIR}/"
    json_files: int
    described_files: int
    log_files: int
    objects: dict[str, int]  # pods, deployments, replicasets, nodes, events, services
    other_kinds: dict[str, int] = Field(default_factory=dict)
    workloads: list[str] = Field(default_factory=list)
    first: str | None = None  # oldest and newest event or container termination time
    last: str | None = None


class SnapshotKubernetes:
    """The k8s/ directory of one snapshot, read once."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.root = directory / K8S_DIR

    @property
    def present(self) -> bool:
        return self.root.is_dir()

    def relative(self, path: Path) -> str:
        return path.relative_to(self.directory).as_posix()

    @cached_property
    def dump(self) -> KubeDump:
        """Every JSON and describe file read (problems collected, never raised) and the log files found."""
        dump = KubeDump()
        if not self.present:
            return dump
        try:
            found = walk(self.root, within=self.directory, skip_hidden=True, limits=DUMP_LIMITS)
        except BadInput as error:
            dump.problems.append(f"{K8S_DIR}/: {error.message}")
            return dump
        dump.problems += [f"{self.relative(path)}: {reason}" for path, reason in found.refused]
        described_files: list[Path] = []
        for path in [*found.files, *found.others]:
            part = path.relative_to(self.root).parts[0]
            if part == LOGS_DIR and path.suffix == ".log" and len(path.relative_to(self.root).parts) in (3, 4):
                dump.log_files.append(path)
            elif part == DESCRIBE_DIR and path.suffix == ".txt":
                described_files.append(path)
            elif path.suffix == ".json" and part not in (LOGS_DIR, DESCRIBE_DIR):
                self._read_json(path, dump)
            else:
                dump.ignored.append((path, "not a k8s/ file (*.json, describe/*.txt, logs/<namespace>/<pod>*.log)"))
        for path in sorted(described_files):  # after every JSON file: JSON objects win
            self._read_described(path, dump)
        return dump

    def _bytes(self, path: Path, dump: KubeDump) -> bytes | None:
        try:
            data = read_bytes(path, self.directory, DUMP_LIMITS.max_file_bytes)
        except OSError as error:
            dump.problems.append(f"{self.relative(path)}: cannot read: {error}")
            return None
        dump.digests[self.relative(path)] = "sha256:" + hashlib.sha256(data).hexdigest()
        return data

    def _read_json(self, path: Path, dump: KubeDump) -> None:
        data = self._bytes(path, dump)
        if data is None:
            return
        try:
            document = json.loads(data)
        except ValueError as error:
            dump.problems.append(f"{self.relative(path)}: invalid JSON: {error}")
            return
        objects = list(split_document(document))
        if not objects:
            dump.problems.append(f"{self.relative(path)}: not a Kubernetes object or list (no kind, no items)")
        for kind, obj in objects:
            if not dump.cluster.add(kind, obj):
                dump.other_kinds[kind or "(no kind)"] += 1

    def _read_described(self, path: Path, dump: KubeDump) -> None:
        data = self._bytes(path, dump)
        if data is None:
            return
        named_by_json = {_involved(event) for event in dump.cluster.events}
        for kind, obj in described(data.decode("utf-8", errors="replace")):
            meta = obj["metadata"]
            if kind == "Pod" and dump.cluster.holds("Pod", meta["namespace"], meta["name"]):
                continue
            if kind == "Event" and _involved(obj) in named_by_json:
                continue
            dump.cluster.add(kind, obj)

    def checked(self) -> KubeDump:
        """The dump, or BackendError naming the first file that could not be read."""
        if not self.present:
            raise BackendError(
                f"this snapshot has no {K8S_DIR}/ directory: add what `kubectl get pods,deployments,replicasets,"
                f"nodes,events,services -A -o json` writes there, or query a cluster with --kubeconfig"
            )
        dump = self.dump
        if dump.problems:
            raise BackendError(dump.problems[0])
        return dump

    def objects(self, namespace: str | None) -> tuple[Cluster, dict[str, str]]:
        """Every object of the dump (the caller keeps the namespace it asks for) and the files' digests."""
        dump = self.checked()
        return dump.cluster, dump.digests

    def workloads(self) -> list[str]:
        """The workloads the dump names (Deployments, owners of pods); none when it cannot be read."""
        return workload_names(self.dump.cluster) if self.present and not self.dump.problems else []

    def topology(self, resolve: Callable[[str], str | None]) -> tuple[dict[str, list[str]], dict[str, tuple[str, ...]]]:
        """(service -> the env values, commands and arguments of its pod templates; Service address -> the
        services it routes to), services named as `resolve` names them (else by their workload's name);
        both empty without k8s/ or when it cannot be read (find_changes ranks without them)."""
        if not self.present or self.dump.problems:
            return {}, {}
        cluster = self.dump.cluster

        def named(workload: str) -> str:
            return resolve(workload) or workload

        return template_texts(cluster, named), service_addresses(cluster, named)

    def span(self) -> tuple[datetime, datetime, str] | None:
        """(oldest, newest, "k8s/") of the event and container start/termination times; BackendError
        when a file cannot be read. Creation times are left out: a Deployment made a year ago does not
        make the snapshot a year long."""
        if not self.present:
            return None
        times = [moment for moment in _times(self.checked().cluster) if moment is not None]
        return (min(times), max(times), f"{K8S_DIR}/") if times else None

    # logs

    def log_pods(self) -> list[tuple[str, str]]:
        """(namespace, pod) of every log file."""
        return sorted({_log_target(path.relative_to(self.root))[:2] for path in self.dump.log_files})

    def pod_logs(self, namespace: str, pod: str, containers: list[str], previous: bool, tail: int) -> list[PodLog]:
        """The last `tail` lines of each log file of the pod, current or previous (the files there are name
        the containers, so `containers` is not needed)."""
        logs = []
        for path in self.dump.log_files:
            found_namespace, found_pod, container, is_previous = _log_target(path.relative_to(self.root))
            if (found_namespace, found_pod, is_previous) != (namespace, pod, previous):
                continue
            logs.append(self._read_log(path, namespace, pod, container, previous, tail))
        return logs

    def _read_log(
        self, path: Path, namespace: str, pod: str, container: str | None, previous: bool, tail: int
    ) -> PodLog:
        last: deque[tuple[int, str]] = deque(maxlen=tail)
        digest = hashlib.sha256()
        try:
            with open_text(path, self.directory) as handle:
                for number, line in enumerate(Lines(handle, LIMITS.max_line_chars), start=1):
                    digest.update(line.encode("utf-8"))
                    if line.strip():
                        last.append((number, line.rstrip("\r\n")))
        except OSError as error:
            raise BackendError(f"{self.relative(path)}: cannot read: {error}") from error
        return PodLog(
            namespace, pod, container, previous, self.relative(path), tuple(last), f"sha256:{digest.hexdigest()}"
        )

    # env check

    def check(
        self, problem: Callable[[Severity, str, str], None], ignore: Callable[[Path, str], None]
    ) -> KubernetesInfo | None:
        """What k8s/ holds, for `evcli env check` (None without k8s/): each file that cannot be read is an
        error `problem(severity, path, message)`, each file of no known kind `ignore(path, reason)`d."""
        if not self.present:
            return None
        dump = self.dump
        for message in dump.problems:
            where, _, text = message.partition(": ")
            problem("error", where, text)
        for path, reason in dump.ignored:
            ignore(path, reason)
        times = sorted(moment for moment in _times(dump.cluster) if moment is not None)  # aware: sorted as instants
        if not any(dump.cluster.counts().values()) and not dump.log_files:
            problem("warning", f"{K8S_DIR}/", "holds no Kubernetes object and no pod log")
        return KubernetesInfo(
            json_files=sum(1 for path in dump.digests if path.endswith(".json")),
            described_files=sum(1 for path in dump.digests if path.endswith(".txt")),
            log_files=len(dump.log_files),
            objects=dump.cluster.counts(),
            other_kinds=dict(sorted(dump.other_kinds.items())),
            workloads=workload_names(dump.cluster),
            first=iso_utc(times[0]) if times else None,
            last=iso_utc(times[-1]) if times else None,
        )


def _involved(event: dict) -> tuple[str, str, str]:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    return (str(involved.get("kind")), str(involved.get("namespace") or ""), str(involved.get("name")))


def _log_target(relative: Path) -> tuple[str, str, str | None, bool]:
    """(namespace, pod, container or None, previous) of `logs/<ns>/<pod>[.previous].log` or
    `logs/<ns>/<pod>/<container>[.previous].log`."""
    parts = relative.parts
    stem = relative.name.removesuffix(".log")
    previous = stem.endswith(PREVIOUS)
    stem = stem.removesuffix(PREVIOUS)
    if len(parts) == 4:
        return parts[1], parts[2], stem, previous
    return parts[1], stem, None, previous


def _times(cluster: Cluster) -> list[datetime | None]:
    times: list[datetime | None] = []
    for event in cluster.events:
        series = event.get("series") or {}
        for key in (
            "firstTimestamp",
            "lastTimestamp",
            "eventTime",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
        ):
            times.append(parse_time(event.get(key)))
        times.append(parse_time(series.get("lastObservedTime")))
    for pod in cluster.pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            for state in ((status or {}).get("state") or {}, (status or {}).get("lastState") or {}):
                terminated = state.get("terminated") or {}
                times += [parse_time(terminated.get("startedAt")), parse_time(terminated.get("finishedAt"))]
    return times
