"""A snapshot's k8s/ directory (evcli.backends.snapshot_k8s, k8s_objects, k8s_describe) on the hand-written
dump in tests/backends/k8s_env: the shapes kubectl and the API write, read into items; pods mapped to their
Deployment through ReplicaSets and named as the environment names the service; `kubectl describe` text
filling what no JSON holds; the snapshot's services, clock and `evcli env check` reading k8s/ too."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from evcli.backends import k8s_objects as k8s
from evcli.backends.k8s_describe import described
from evcli.backends.snapshot import SnapshotBackend
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange
from tests.cli._util import evcli

ENV = Path(__file__).resolve().parent / "k8s_env"
ZONE = ZoneInfo("Asia/Shanghai")


@pytest.fixture
def env_copy(tmp_path) -> Path:
    return Path(shutil.copytree(ENV, tmp_path / "env"))


def backend(directory: Path = ENV) -> SnapshotBackend:
    return SnapshotBackend(directory)


def resolve_with(snapshot: SnapshotBackend):
    return lambda workload: snapshot.resolve_service(workload) or workload


def test_a_list_typed_lists_and_both_event_apis_are_read_and_other_kinds_counted():
    dump = backend().kubernetes.dump
    assert dump.problems == [] and dict(dump.other_kinds) == {"ConfigMap": 1}
    # cluster.json is a `List`; events.json a typed EventList whose items carry no kind; events-v1.json is
    # events.k8s.io/v1; the describe file adds the worker pod and the rows of its Events table
    assert dump.cluster.counts() == {
        "pods": 5,
        "deployments": 3,
        "replicasets": 4,
        "nodes": 2,
        "events": 9,
        "services": 3,
    }
    assert sorted(dump.digests) == [
        "k8s/cluster.json",
        "k8s/describe/pods.txt",
        "k8s/events-v1.json",
        "k8s/events.json",
    ]
    assert all(digest.startswith("sha256:") and len(digest) == 71 for digest in dump.digests.values())


def test_pods_belong_to_their_deployment_through_the_replicaset_and_take_the_environments_name():
    snapshot = backend()
    pods = {item["pod"]: item for item in k8s.pod_items(snapshot.kubernetes.dump.cluster, resolve_with(snapshot), ZONE)}
    crashing = pods["checkout-7c9f6d8b5-x2k4q"]
    # env.toml: [services.checkout-service] aliases = ["checkout"], the name its logs and metrics use
    assert crashing["service"] == "checkout-service" and crashing["workload"] == "Deployment/checkout"
    assert crashing["node"] == "node-2" and crashing["phase"] == "Running" and crashing["ready"] == "0/1"
    (app,) = crashing["containers"]
    assert app["waiting"] == "CrashLoopBackOff" and app["restarts"] == 7
    assert app["last_terminated"] == {
        "reason": "OOMKilled",
        "exit_code": 137,
        "started": "2024-01-29T10:02:40+08:00",
        "finished": "2024-01-29T10:03:12+08:00",
    }
    assert app["requests"] == {"cpu": "250m", "memory": "256Mi"} and app["limits"] == {"memory": "512Mi"}
    assert pods["payment-6b7d9c8f5-q7w2p"]["service"] == "payment"
    assert pods["payment-6b7d9c8f5-q7w2p"]["containers"][0]["waiting"] == "ImagePullBackOff"
    # troubled pods first: not ready, restarted or waiting; the healthy ones after
    assert list(pods)[:3] == ["checkout-7c9f6d8b5-x2k4q", "payment-6b7d9c8f5-q7w2p", "worker-6f5d8c7b9-p4x7r"]


def test_a_pod_whose_replicaset_no_dump_holds_belongs_to_the_deployment_its_template_hash_names():
    cluster = k8s.Cluster()
    pod = {
        "metadata": {
            "name": "api-5f6d7c8b9-abcde",
            "namespace": "web",
            "labels": {"app": "api", "pod-template-hash": "5f6d7c8b9"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "api-5f6d7c8b9", "controller": True}],
        },
        "status": {"phase": "Running"},
    }
    bare = {"metadata": {"name": "debug", "namespace": "web", "labels": {"app.kubernetes.io/name": "toolbox"}}}
    cluster.add("Pod", pod)
    cluster.add("Pod", bare)
    items = {item["pod"]: item for item in k8s.pod_items(cluster, lambda name: name, UTC)}
    assert items["api-5f6d7c8b9-abcde"]["service"] == "api"
    assert items["debug"]["service"] == "toolbox" and "workload" not in items["debug"]
    assert k8s.workload_names(cluster) == ["api", "toolbox"]


def test_describe_text_gives_a_pod_and_its_events_and_json_objects_win():
    text = (ENV / "k8s" / "describe" / "pods.txt").read_text()
    found = list(described(text))
    kinds = [(kind, obj["metadata"]["name"]) for kind, obj in found]
    assert kinds[:4] == [
        ("Pod", "worker-6f5d8c7b9-p4x7r"),
        ("Event", "worker-6f5d8c7b9-p4x7r.described-1"),
        ("Event", "worker-6f5d8c7b9-p4x7r.described-2"),
        ("Event", "worker-6f5d8c7b9-p4x7r.described-3"),
    ]
    worker = found[0][1]
    assert worker["metadata"]["ownerReferences"] == [
        {"kind": "ReplicaSet", "name": "worker-6f5d8c7b9", "controller": True}
    ]
    (status,) = worker["status"]["containerStatuses"]
    assert status["restartCount"] == 1 and status["ready"] is True
    assert status["lastState"]["terminated"] == {
        "reason": "OOMKilled",
        "exitCode": 137,
        "startedAt": "2024-01-29T09:40:05+08:00",
        "finishedAt": "2024-01-29T10:06:29+08:00",
    }
    assert worker["spec"]["containers"][0]["resources"] == {
        "limits": {"memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "768Mi"},
    }
    oom = found[1][1]
    assert (oom["reason"], oom["count"], oom["age"], oom["source"]) == (
        "OOMKilled",
        1,
        "8m (x1 over 8m)",
        {"component": "kubelet"},
    )
    # checkout-7c9f6d8b5-x2k4q is described too, but the JSON holds it and its events: the JSON's are kept
    cluster = backend().kubernetes.dump.cluster
    named = [e for e in cluster.events if e.get("involvedObject", {}).get("name") == "checkout-7c9f6d8b5-x2k4q"]
    assert [e["reason"] for e in named] == [
        "BackOff",
        "Killing",
    ]
    assert sum(pod["metadata"]["name"] == "checkout-7c9f6d8b5-x2k4q" for pod in cluster.pods) == 1


def test_events_of_both_apis_are_items_newest_first_and_an_age_is_not_a_time():
    snapshot = backend()
    events, undated = k8s.event_items(snapshot.kubernetes.dump.cluster, resolve_with(snapshot), ZONE, None)
    assert undated == 0
    node = next(e for e in events if e["object"] == "Node/node-2")
    # events.k8s.io/v1: regarding, note, series; a node belongs to no namespace (its events live in `default`)
    assert node == {
        "object": "Node/node-2",
        "type": "Warning",
        "reason": "NodeHasInsufficientMemory",
        "count": 3,
        "first": "2024-01-29T10:01:30+08:00",
        "last": "2024-01-29T10:12:00+08:00",
        "reporter": "kubelet node-2",
        "message": "Node node-2 status is now: NodeHasInsufficientMemory",
    }
    dated = [e["last"] for e in events if "last" in e]
    assert dated == sorted(dated, reverse=True) and events[len(dated)]["age"] == "8m (x1 over 8m)"
    window = TimeRange(datetime(2024, 1, 29, 10, 10, tzinfo=ZONE), datetime(2024, 1, 29, 10, 15, tzinfo=ZONE))
    inside, undated = k8s.event_items(snapshot.kubernetes.dump.cluster, resolve_with(snapshot), ZONE, window)
    assert [(e["object"], e["reason"]) for e in inside] == [
        ("Pod/payment-6b7d9c8f5-q7w2p", "BackOff"),
        ("Pod/checkout-7c9f6d8b5-x2k4q", "BackOff"),
        ("Node/node-2", "NodeHasInsufficientMemory"),
    ]
    assert undated == 3  # the described worker events: an age, no time


def test_rollouts_are_the_revision_history_of_each_deployment_from_its_replicasets():
    snapshot = backend()
    rollouts = k8s.rollout_items(snapshot.kubernetes.dump.cluster, resolve_with(snapshot), ZONE, None)
    checkout = [r for r in rollouts if r["deployment"] == "checkout"]
    assert [(r["revision"], r["replicaset"], r["images"], r.get("active")) for r in checkout] == [
        (3, "checkout-7c9f6d8b5", ["shop/checkout:1.4.2"], True),
        (2, "checkout-5d8f7b6c4", ["shop/checkout:1.4.1"], False),
    ]
    active = checkout[0]
    assert active["created"] == "2024-01-29T09:58:00+08:00" and (active["desired"], active["available"]) == (2, 1)
    assert active["conditions"][0] == {
        "type": "Available",
        "status": "False",
        "reason": "MinimumReplicasUnavailable",
        "since": "2024-01-29T10:03:12+08:00",
    }
    # a range keeps the revisions created in it, and always the active one
    since_the_incident = TimeRange(datetime(2024, 1, 29, 9, 0, tzinfo=ZONE), None)
    kept = k8s.rollout_items(snapshot.kubernetes.dump.cluster, resolve_with(snapshot), ZONE, since_the_incident)
    assert [(r["deployment"], r["revision"]) for r in kept] == [("checkout", 3), ("frontend", 1), ("payment", 1)]


def test_nodes_state_their_conditions_and_services_the_workloads_they_route_to():
    snapshot = backend()
    cluster = snapshot.kubernetes.dump.cluster
    nodes = k8s.node_items(cluster, ZONE)
    assert [n["node"] for n in nodes] == ["node-2", "node-1"]  # the one under pressure first
    assert nodes[0]["pressure"] == ["MemoryPressure"] and nodes[0]["taints"] == [
        "node.kubernetes.io/memory-pressure:NoSchedule"
    ]
    assert nodes[0]["conditions"][0]["message"] == "kubelet has insufficient memory available"
    assert "message" not in nodes[1]["conditions"][0]  # a normal condition's message says nothing
    assert k8s.node_reasons(nodes[0]) == {"memorypressure", "kubelethasinsufficientmemory"}
    services = {s["name"]: s for s in k8s.service_items(cluster, resolve_with(snapshot))}
    assert (
        services["checkout"]["routes_to"] == ["checkout-service"] and services["checkout"]["selector"] == "app=checkout"
    )
    assert services["frontend"]["ports"] == ["80/TCP->3000"]


def test_the_snapshot_knows_the_workloads_its_capabilities_and_its_k8s_times():
    snapshot = backend()
    assert {"checkout-service", "payment", "frontend", "worker"} <= set(snapshot.known_services())
    assert "checkout" not in snapshot.known_services()  # an alias of checkout-service, not a service of its own
    assert snapshot.resolve_service("worker") == "worker"
    assert snapshot.capabilities()[-1] == "kubernetes"
    assert snapshot.kubernetes.span() == (
        datetime(2024, 1, 29, 9, 40, 5, tzinfo=ZONE),
        datetime(2024, 1, 29, 2, 14, 30, tzinfo=UTC),
        "k8s/",
    )


def test_without_env_toml_now_the_snapshots_clock_is_its_newest_kubernetes_time(env_copy):
    for folder in ("logs", "metrics"):
        shutil.rmtree(env_copy / folder)
    (env_copy / "env.toml").write_text('timezone = "Asia/Shanghai"\n')
    snapshot = backend(env_copy)
    assert snapshot.clock == (datetime(2024, 1, 29, 2, 14, 30, tzinfo=UTC), "newest timestamp (k8s/)")


def test_a_file_that_cannot_be_read_fails_the_query_naming_it(env_copy):
    (env_copy / "k8s" / "broken.json").write_text('{"kind": "PodList", "items": [')
    snapshot = backend(env_copy)
    with pytest.raises(BackendError, match=r"k8s/broken.json: invalid JSON"):
        snapshot.kubernetes.objects(None)
    assert snapshot.kubernetes.workloads() == []  # the services it would add are not guessed from part of a dump


def test_a_snapshot_without_k8s_says_how_to_add_it(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "api.log").write_text("2024-01-29T02:00:00Z ERROR boom\n")
    snapshot = backend(tmp_path)
    assert "kubernetes" not in snapshot.capabilities()
    with pytest.raises(BackendError, match=r"no k8s/ directory: add what `kubectl get pods,deployments"):
        snapshot.kubernetes.objects(None)


def test_env_check_reports_k8s_and_names_each_bad_or_unknown_file(env_copy):
    run = evcli("env", "check", ENV, "--json")
    assert run.exit_code == 0, run
    report = run.json()
    assert report["kubernetes"] == {
        "path": "k8s/",
        "json_files": 3,
        "described_files": 1,
        "log_files": 3,
        "objects": {"pods": 5, "deployments": 3, "replicasets": 4, "nodes": 2, "events": 9, "services": 3},
        "other_kinds": {"ConfigMap": 1},
        "workloads": ["checkout", "frontend", "payment", "worker"],
        "first": "2024-01-29T01:40:05Z",
        "last": "2024-01-29T02:14:30Z",
    }
    human = evcli("env", "check", ENV)
    assert (
        "k8s/: 5 pods, 3 deployments, 4 replicasets, 2 nodes, 9 events, 3 services (3 JSON, 1 describe, 3 log files)"
        in human.stdout
    )

    (env_copy / "k8s" / "broken.json").write_text("[1, 2")
    (env_copy / "k8s" / "notes.md").write_text("taken by hand\n")
    bad = evcli("env", "check", env_copy, "--json")
    assert bad.exit_code == 2, bad
    problems = {(p["severity"], p["path"], p["message"]) for p in bad.json()["problems"]}
    assert ("error", "k8s/broken.json", "invalid JSON: Expecting ',' delimiter: line 1 column 6 (char 5)") in problems
    assert any(p[1] == "k8s/notes.md" and p[2].startswith("ignored: not a k8s/ file") for p in problems)


def test_a_snapshot_of_only_k8s_is_evidence_enough_for_env_check(tmp_path):
    (tmp_path / "k8s").mkdir()
    shutil.copy(ENV / "k8s" / "events.json", tmp_path / "k8s" / "events.json")
    run = evcli("env", "check", tmp_path, "--json")
    assert run.exit_code == 0, run
    assert run.json()["kubernetes"]["objects"]["events"] == 5
    assert json.loads(json.dumps(run.json()["problems"])) == []
