"""A Kubernetes cluster as a live evidence backend, through the official `kubernetes` client, read-only.

`--kubeconfig PATH` (EVCLI_KUBERNETES, `[backends.kubernetes] url`) names a kubeconfig file, and the
`context` option a context in it (default: the file's current context); `--kubeconfig default` reads
$KUBECONFIG, else ~/.kube/config; `--kubeconfig in-cluster` uses the service account of the pod evcli
runs in. The spec's timeout bounds each request; `ca_bundle` and `insecure_skip_verify` override the
kubeconfig's TLS settings; `retries` are the client's connection retries. Credentials stay where the
kubeconfig keeps them: nothing of them is stored or shown.

Read-only is enforced in one place: every request the client sends passes `refuse_writes` (from
`ReadOnlyApiClient.call_api`), which refuses any method but GET, and any watch, before anything is
sent. The reads made are the lists of `LISTS`, a pod's log and the server's version.
Objects are fetched as the API's JSON (`_preload_content=False`: no client models), so they reach
evcli.backends.k8s_objects in the shape a snapshot's `kubectl get -o json` has. The client is
imported when the backend first talks to the cluster (`pip install 'evcli[k8s]'`).

Threads: one API client serves every thread (the tool calls of one model reply): it is made once,
under a lock; its urllib3 pool manager is thread-safe and the generated client keeps no per-request
state on itself (each read builds its API class and returns the response it got). A token the
kubeconfig refreshes may be refreshed by two threads at once; both set a valid one.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
from typing import TYPE_CHECKING, Any

from evcli.backends.k8s_objects import Cluster, PodLog, split_document
from evcli.core.errors import BackendError

if TYPE_CHECKING:
    from evcli.contracts import BackendSpec

DEFAULT = "default"  # $KUBECONFIG, else ~/.kube/config
IN_CLUSTER = "in-cluster"
CONTEXT_OPTION = "context"
# array -> (API class, the all-namespaces list, the one-namespace list or None for cluster-wide objects)
LISTS: dict[str, tuple[str, str, str | None]] = {
    "pods": ("CoreV1Api", "list_pod_for_all_namespaces", "list_namespaced_pod"),
    "deployments": ("AppsV1Api", "list_deployment_for_all_namespaces", "list_namespaced_deployment"),
    "replicasets": ("AppsV1Api", "list_replica_set_for_all_namespaces", "list_namespaced_replica_set"),
    "events": ("CoreV1Api", "list_event_for_all_namespaces", "list_namespaced_event"),
    "services": ("CoreV1Api", "list_service_for_all_namespaces", "list_namespaced_service"),
    "nodes": ("CoreV1Api", "list_node", None),
}
_NO_PREVIOUS = "previous terminated container"  # the API's 400 for `previous=true` of a container never restarted


class ReadOnlyViolation(BackendError):
    """A request that is not a read was about to be sent (a bug: evcli never writes to a cluster)."""


def refuse_writes(method: str, url: str) -> None:
    """The one read-only check: GET only, never a watch."""
    parts = urllib.parse.urlsplit(url)
    watch = urllib.parse.parse_qs(parts.query).get("watch", ["false"])[0].lower() in ("true", "1")
    if method.upper() != "GET" or watch:
        raise ReadOnlyViolation(f"refused {method} {parts.path}: evcli only reads a cluster (list, get, logs)")


def build(spec: BackendSpec) -> KubernetesBackend:
    return KubernetesBackend(spec)


class KubernetesBackend:
    name = "kubernetes"

    def __init__(self, spec: BackendSpec) -> None:
        self.spec = spec
        self._api: Any = None
        self._api_lock = threading.Lock()

    @property
    def source(self) -> str:
        """What the backend was pointed at, for messages: the kubeconfig path, `default` or `in-cluster`."""
        return self.spec.url

    def api(self) -> Any:
        """The read-only API client, configured on first use (by one thread: callers at once share it)."""
        with self._api_lock:
            if self._api is None:
                self._api = _read_only_client(self._configuration())
            return self._api

    def _configuration(self) -> Any:
        try:
            from kubernetes import client, config
        except ImportError:
            raise BackendError("the Kubernetes backend needs the kubernetes client: pip install 'evcli[k8s]'") from None
        configuration = client.Configuration()
        try:
            if self.spec.url == IN_CLUSTER:
                config.load_incluster_config(client_configuration=configuration)
            else:
                # read now, not when the client was imported; KUBECONFIG may list several files (a:b)
                path = (os.environ.get("KUBECONFIG") or "~/.kube/config") if self.spec.url == DEFAULT else self.spec.url
                config.load_kube_config(
                    config_file=os.path.expanduser(path),
                    context=self.spec.options.get(CONTEXT_OPTION),
                    client_configuration=configuration,
                    persist_config=False,
                )
        except (config.ConfigException, OSError, ValueError, TypeError) as error:
            raise BackendError(f"cannot load the Kubernetes configuration {self.source}: {_one_line(error)}") from None
        if self.spec.ca_bundle:
            configuration.ssl_ca_cert = self.spec.ca_bundle
        if self.spec.insecure_skip_verify:
            configuration.verify_ssl = False
        configuration.retries = self.spec.retries
        return configuration

    def probe(self) -> None:
        self._read("VersionApi", "get_code")

    def objects(self, namespace: str | None) -> tuple[Cluster, dict[str, str]]:
        """The objects of `LISTS` (of one namespace, nodes of the whole cluster) and no digests."""
        cluster = Cluster()
        for api_class, every, namespaced in LISTS.values():
            if namespace is not None and namespaced is not None:
                document = self._read(api_class, namespaced, namespace=namespace)
            else:
                document = self._read(api_class, every)
            for kind, obj in split_document(document):
                cluster.add(kind, obj)
        return cluster, {}

    def pod_logs(self, namespace: str, pod: str, containers: list[str], previous: bool, tail: int) -> list[PodLog]:
        """The last `tail` lines of each container's log, with their times (`timestamps=true`); a container
        that never restarted has no previous log (no lines, not an error)."""
        logs = []
        for container in containers:
            flag = str(previous).lower()
            where = (
                f"/api/v1/namespaces/{namespace}/pods/{pod}/log?container={container}&previous={flag}&tailLines={tail}"
            )
            options = {"container": container, "previous": previous, "tail_lines": tail, "timestamps": True}
            try:
                text = self._read("CoreV1Api", "read_namespaced_pod_log", pod, namespace, raw=True, **options)
            except _NoPreviousLog:
                text = ""
            numbered = tuple(enumerate((line for line in text.splitlines() if line.strip()), start=1))
            logs.append(PodLog(namespace, pod, container, previous, where, numbered))
        return logs

    def _read(self, api_class: str, method: str, *args: Any, raw: bool = False, **kwargs: Any) -> Any:
        """One read: the decoded JSON answer (the body's text with `raw`); failures are one-line BackendErrors."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        api = self.api()
        call = getattr(getattr(client, api_class)(api), method)
        try:
            response = call(*args, _preload_content=False, _request_timeout=self.spec.timeout, **kwargs)
            body = response.data
        except ApiException as error:
            if error.status == 400 and _NO_PREVIOUS in str(error.body or ""):
                raise _NoPreviousLog() from None
            reason = _one_line(error.reason or "")
            raise BackendError(f"{method} at {api.configuration.host} answered HTTP {error.status} {reason}") from None
        except (HTTPError, OSError) as error:
            raise BackendError(
                f"cannot reach the Kubernetes API at {api.configuration.host}: {_one_line(error)}"
            ) from None
        if raw:
            return body.decode("utf-8", errors="replace")
        try:
            return json.loads(body)
        except ValueError as error:
            raise BackendError(f"{method} at {api.configuration.host} returned invalid JSON: {error}") from None


class _NoPreviousLog(Exception):
    pass


def _read_only_client(configuration: Any) -> Any:
    from kubernetes.client import ApiClient

    class ReadOnlyApiClient(ApiClient):
        """The client's one way out: every request of every API class is made through `call_api`."""

        def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            refuse_writes(method, url)
            return super().call_api(method, url, *args, **kwargs)

    return ReadOnlyApiClient(configuration)


def _one_line(error: object) -> str:
    return " ".join(str(error).split())[:300]
