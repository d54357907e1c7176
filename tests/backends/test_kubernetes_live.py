"""The live Kubernetes backend (evcli.backends.kubernetes): the official client, configured from a kubeconfig the
test writes, against a loopback API server (tests/backends/k8s_api.py) serving the test snapshot's objects at
the API's paths. What it asks (GETs only, with the kubeconfig's token), what it answers (the same items as the
snapshot), and each failure as one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evcli.backends.kubernetes import KubernetesBackend, ReadOnlyViolation, refuse_writes
from evcli.backends.live import LiveBackend
from evcli.backends.registry import backend_kind
from evcli.contracts import BackendSpec
from tests.backends.k8s_api import TOKEN, KubeApi
from tests.cli._util import evcli

CRASHING = "checkout-7c9f6d8b5-x2k4q"
INCIDENT = ("--since", "2024-01-29T09:00:00+08:00", "--until", "2024-01-29T10:30:00+08:00")
LISTS = {
    "/api/v1/pods",
    "/apis/apps/v1/deployments",
    "/apis/apps/v1/replicasets",
    "/api/v1/events",
    "/api/v1/services",
    "/api/v1/nodes",
}


@pytest.fixture
def api():
    with KubeApi() as running:
        yield running


@pytest.fixture
def kubeconfig(api, tmp_path) -> Path:
    return api.kubeconfig(tmp_path / "kubeconfig")


def query(kubeconfig: Path, *args: Any) -> Any:
    run = evcli("tool", "query_kubernetes", "--kubeconfig", kubeconfig, "--json", *args)
    assert TOKEN not in run.stdout + run.stderr
    return run


def refs(run: Any) -> dict[str, str]:
    return {ref["raw_path"]: ref["text"] for ref in run.json()["retrieval_details"]["evidence_refs"]}


def test_the_cluster_is_read_with_the_kubeconfigs_token_by_gets_only_and_answers_as_the_snapshot(api, kubeconfig):
    run = query(kubeconfig, "--service", "checkout", "--kind", "pods", *INCIDENT)
    assert run.exit_code == 0, run
    # the snapshot's item, in UTC (a live cluster has no env.toml: no zone, no alias checkout -> checkout-service)
    assert refs(run)["$.pods[0]"] == (
        f"{CRASHING} service=checkout namespace=shop workload=Deployment/checkout node=node-2 phase=Running "
        "ready=0/1 restarts=7 started=2024-01-29T01:58:05+00:00; container app image=shop/checkout:1.4.2 "
        "ready=false restarts=7 waiting=CrashLoopBackOff (back-off 5m0s restarting failed container=app "
        f"pod={CRASHING}_shop(uid-{CRASHING})) last terminated reason=OOMKilled exit_code=137 "
        "started=2024-01-29T02:02:40+00:00 finished=2024-01-29T02:03:12+00:00 requests cpu=250m memory=256Mi "
        "limits memory=512Mi"
    )
    assert "digests" not in run.json()["output"]  # what a live cluster answered is not kept to be re-read
    assert {request["path"] for request in api.requests} == LISTS
    assert {request["method"] for request in api.requests} == {"GET"}
    assert {request["authorization"] for request in api.requests} == {f"Bearer {TOKEN}"}
    assert not any("watch" in request["query"] for request in api.requests)


def test_a_namespace_is_asked_of_the_namespaced_endpoints_and_nodes_of_the_cluster(api, kubeconfig):
    run = query(kubeconfig, "--namespace", "shop", "--kind", "rollouts", *INCIDENT)
    assert run.exit_code == 0, run
    assert [item["deployment"] for item in run.json()["output"]["rollouts"]] == ["checkout", "frontend", "payment"]
    assert {request["path"] for request in api.requests} == {
        "/api/v1/namespaces/shop/pods",
        "/apis/apps/v1/namespaces/shop/deployments",
        "/apis/apps/v1/namespaces/shop/replicasets",
        "/api/v1/namespaces/shop/events",
        "/api/v1/namespaces/shop/services",
        "/api/v1/nodes",
    }


def test_the_previous_containers_log_is_read_with_its_times_and_none_is_no_evidence(api, kubeconfig):
    run = query(kubeconfig, "--pod", CRASHING, "--kind", "logs", "--previous", "--limit", "2", *INCIDENT)
    assert run.exit_code == 0, run
    assert refs(run) == {
        "$.logs[0]": f"{CRASHING} service=checkout namespace=shop container=app previous container line 1: "
        "2024-01-29T02:03:01+00:00 GC overhead: heap usage 498MiB of 512MiB",
        "$.logs[1]": f"{CRASHING} service=checkout namespace=shop container=app previous container line 2: "
        "2024-01-29T02:03:08+00:00 java.lang.OutOfMemoryError: Java heap space",
    }
    (read,) = [request for request in api.requests if request["path"].endswith("/log")]
    assert read["path"] == f"/api/v1/namespaces/shop/pods/{CRASHING}/log"
    assert read["query"] == {"container": "app", "previous": "true", "tailLines": "2", "timestamps": "true"}

    never_restarted = query(kubeconfig, "--service", "payment", "--kind", "logs", "--previous", *INCIDENT)
    assert never_restarted.exit_code == 0, never_restarted  # the API's 400 for a first container: no lines, no failure
    assert never_restarted.json()["retrieval_details"]["evidence_status"] == "no_evidence"


def test_without_a_range_a_live_call_searches_the_last_hour_and_says_so(kubeconfig):
    run = query(kubeconfig, "--service", "checkout")
    assert run.exit_code == 0, run
    output, details = run.json()["output"], run.json()["retrieval_details"]
    assert details["range_origin"] == "live default 1h"
    assert output["events"] == [] and len(output["pods"]) == 2  # the 2024 events are older; pods are their state now
    assert [r["revision"] for r in output["rollouts"]] == [3]  # the active revision always


def test_every_request_passes_the_read_only_check_before_it_is_sent(api, kubeconfig):
    from kubernetes import client

    backend = KubernetesBackend(BackendSpec(url=str(kubeconfig)))
    core = client.CoreV1Api(backend.api())
    with pytest.raises(ReadOnlyViolation, match="refused DELETE /api/v1/namespaces/shop/pods/x"):
        core.delete_namespaced_pod("x", "shop")
    with pytest.raises(ReadOnlyViolation, match="refused POST"):
        core.create_namespaced_pod("shop", {"metadata": {"name": "x"}})
    with pytest.raises(ReadOnlyViolation, match="refused GET /api/v1/pods"):
        core.list_pod_for_all_namespaces(watch=True)
    assert api.requests == []  # refused before anything went out
    for method in ("PUT", "PATCH"):
        with pytest.raises(ReadOnlyViolation):
            refuse_writes(method, "http://127.0.0.1/api/v1/nodes/node-1")
    refuse_writes("GET", "http://127.0.0.1/api/v1/pods?watch=false")


def test_the_backend_is_found_by_capability_probed_and_named_by_its_option(api, kubeconfig, monkeypatch):
    kind = backend_kind("kubernetes")
    assert kind.flag == "--kubeconfig" and kind.capabilities == ("kubernetes",)
    live = LiveBackend.from_specs({"kubernetes": BackendSpec(url=str(kubeconfig))})
    assert live.capabilities() == ["kubernetes"]
    live.check_reachable()
    assert [request["path"] for request in api.requests] == ["/version/"]
    monkeypatch.setenv("EVCLI_KUBERNETES", str(kubeconfig))  # the configuration's variable, as for the others
    run = evcli("tool", "query_kubernetes", "--kind", "nodes", "--reason", "MemoryPressure", "--json")
    assert run.exit_code == 0, run
    assert [node["node"] for node in run.json()["output"]["nodes"]] == ["node-2"]


def test_failures_are_one_line_and_a_failed_call_never_no_evidence(api, kubeconfig, tmp_path):
    api.failures["/api/v1/pods"] = 403
    forbidden = query(kubeconfig, "--kind", "pods")
    assert forbidden.exit_code == 1, forbidden
    assert forbidden.json()["retrieval_details"]["evidence_status"] == "failed"
    assert forbidden.json()["error_message"] == f"list_pod_for_all_namespaces at {api.url} answered HTTP 403 Forbidden"

    missing = query(tmp_path / "nowhere", "--kind", "pods")
    assert missing.exit_code == 1, missing
    assert missing.json()["error_message"].startswith(
        f"cannot load the Kubernetes configuration {tmp_path / 'nowhere'}"
    )

    closed = KubeApi()  # bound, never serving, then closed: its port refuses connections
    closed.server.server_close()
    unreachable = query(closed.kubeconfig(tmp_path / "closed"), "--kind", "pods")
    assert unreachable.exit_code == 1, unreachable
    assert unreachable.json()["error_message"].startswith(f"cannot reach the Kubernetes API at {closed.url}")


def test_default_reads_kubeconfig_from_the_environment_and_in_cluster_outside_a_pod_says_why(kubeconfig, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    run = query(Path("default"), "--kind", "nodes", "--reason", "MemoryPressure")
    assert run.exit_code == 0, run
    assert [node["node"] for node in run.json()["output"]["nodes"]] == ["node-2"]
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    outside = query(Path("in-cluster"), "--kind", "nodes")
    assert outside.exit_code == 1, outside
    assert outside.json()["error_message"].startswith("cannot load the Kubernetes configuration in-cluster: ")
