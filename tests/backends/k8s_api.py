"""A loopback stand-in for the Kubernetes API server, on 127.0.0.1, serving the objects of the test
snapshot (tests/backends/k8s_env/k8s) at the paths the official client calls.

No cluster can start here; this server answers as the API reference says the API answers: typed lists
(`PodList`, whose items carry no kind), `/api/v1/namespaces/{ns}/pods/{pod}/log` as plain text (the
last `tailLines` lines; `previous=true` of a container that never restarted is a 400 `Status`), a
`Status` document for every error. It records each request (method, path, query, Authorization
header) so a test can check what the client sent; `failures` maps a path to the status it answers.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from evcli.backends.k8s_objects import Cluster, name_of, namespace_of, split_document

DUMP = Path(__file__).resolve().parent / "k8s_env" / "k8s"
TOKEN = "k8s-loopback-token-7f3a9c"
# path segment of each kind -> (API group prefix, list kind)
RESOURCES = {
    "pods": ("/api/v1", "PodList"),
    "events": ("/api/v1", "EventList"),
    "services": ("/api/v1", "ServiceList"),
    "nodes": ("/api/v1", "NodeList"),
    "deployments": ("/apis/apps/v1", "DeploymentList"),
    "replicasets": ("/apis/apps/v1", "ReplicaSetList"),
}


def dump_cluster() -> Cluster:
    """The test snapshot's JSON objects (not the described ones: the API has no `kubectl describe`)."""
    cluster = Cluster()
    for path in sorted(DUMP.glob("*.json")):
        for kind, obj in split_document(json.loads(path.read_text())):
            cluster.add(kind, obj)
    return cluster


class KubeApi:
    def __init__(self, cluster: Cluster | None = None) -> None:
        self.cluster = cluster or dump_cluster()
        self.requests: list[dict[str, Any]] = []
        self.failures: dict[str, int] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> KubeApi:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def kubeconfig(self, path: Path) -> Path:
        """A kubeconfig whose current context reaches this server with a bearer token (JSON is YAML)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "loopback", "cluster": {"server": self.url}}],
            "users": [{"name": "reader", "user": {"token": TOKEN}}],
            "contexts": [{"name": "loopback", "context": {"cluster": "loopback", "user": "reader"}}],
            "current-context": "loopback",
        }
        path.write_text(json.dumps(config))
        return path

    # answers

    def answer(self, method: str, target: str) -> tuple[int, str, bytes]:
        parts = urllib.parse.urlsplit(target)
        path, query = parts.path, dict(urllib.parse.parse_qsl(parts.query))
        if path in self.failures:
            return self._status(self.failures[path], "Forbidden", "forbidden by the test")
        if method != "GET":
            return self._status(405, "MethodNotAllowed", f"{method} is not served here")
        if path.rstrip("/") == "/version":  # the client asks /version/
            return 200, "application/json", json.dumps({"major": "1", "minor": "29", "gitVersion": "v1.29.1"}).encode()
        segments = path.strip("/").split("/")
        if len(segments) == 7 and segments[-1] == "log":  # api v1 namespaces NS pods POD log
            return self._log(segments[3], segments[5], query)
        for resource, (prefix, list_kind) in RESOURCES.items():
            if path == f"{prefix}/{resource}":
                return self._list(resource, list_kind, None)
            if path.startswith(f"{prefix}/namespaces/") and path.endswith(f"/{resource}"):
                return self._list(resource, list_kind, path.split("/")[-2])
        return self._status(404, "NotFound", f"the server could not find the requested resource ({path})")

    def _list(self, resource: str, list_kind: str, namespace: str | None) -> tuple[int, str, bytes]:
        items = []
        for obj in getattr(self.cluster, resource):
            if namespace is None or namespace_of(obj) == namespace:
                items.append({key: value for key, value in obj.items() if key not in ("kind", "apiVersion")})
        version = "apps/v1" if resource in ("deployments", "replicasets") else "v1"
        document = {"kind": list_kind, "apiVersion": version, "metadata": {"resourceVersion": "4242"}, "items": items}
        return 200, "application/json", json.dumps(document).encode()

    def _log(self, namespace: str, pod: str, query: dict[str, str]) -> tuple[int, str, bytes]:
        if not any(name_of(obj) == pod and namespace_of(obj) == namespace for obj in self.cluster.pods):
            return self._status(404, "NotFound", f'pods "{pod}" not found')
        previous = query.get("previous") == "true"
        file = DUMP / "logs" / namespace / f"{pod}{'.previous' if previous else ''}.log"
        if not file.is_file():
            message = f'previous terminated container "{query.get("container")}" in pod "{pod}" not found'
            return self._status(400, "BadRequest", message)
        lines = file.read_text().splitlines()
        tail = int(query.get("tailLines", len(lines)))
        return 200, "text/plain", ("\n".join(lines[-tail:]) + "\n").encode()

    @staticmethod
    def _status(code: int, reason: str, message: str) -> tuple[int, str, bytes]:
        status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason}
        return code, "application/json", json.dumps(status | {"code": code}).encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                api.requests.append(
                    {
                        "method": self.command,
                        "path": parts.path,
                        "query": dict(urllib.parse.parse_qsl(parts.query)),
                        "authorization": self.headers.get("Authorization"),
                    }
                )
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                code, content_type, body = api.answer(self.command, self.path)
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        return Handler
