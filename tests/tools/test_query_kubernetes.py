"""`query_kubernetes` on the hand-written snapshot tests/backends/k8s_env, through the CLI as a user and a
model call it: refs of pods, events, rollouts, nodes, Services and pod logs; the filters; what a failed and
an empty call state; a claim citing an item recorded, gated, re-derived against the snapshot, and refused
once its ref or its source is changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evcli.agents.executor import tool_schemas
from evcli.contracts import StageOutput
from evcli.store.db import TraceStore
from evcli.tools import registry
from tests.cli._util import assert_clean_error, evcli

ENV = Path(__file__).resolve().parent.parent / "backends" / "k8s_env"
CRASHING = "checkout-7c9f6d8b5-x2k4q"


def query(*args: Any, env: Path = ENV) -> dict[str, Any]:
    run = evcli("tool", "query_kubernetes", "--env", env, "--json", *args)
    assert run.exit_code == 0, run
    return run.json()


def refs(invocation: dict[str, Any]) -> dict[str, str]:
    return {ref["raw_path"]: ref["text"] for ref in invocation["retrieval_details"]["evidence_refs"]}


def test_a_crashing_pod_states_its_oom_kill_exit_code_waiting_reason_node_and_resources():
    found = refs(query("--service", "checkout", "--kind", "pods"))
    assert found["$.pods[0]"] == (
        f"{CRASHING} service=checkout-service namespace=shop workload=Deployment/checkout node=node-2 phase=Running "
        "ready=0/1 restarts=7 started=2024-01-29T09:58:05+08:00; container app image=shop/checkout:1.4.2 "
        "ready=false restarts=7 waiting=CrashLoopBackOff (back-off 5m0s restarting failed container=app "
        f"pod={CRASHING}_shop(uid-{CRASHING})) last terminated reason=OOMKilled exit_code=137 "
        "started=2024-01-29T10:02:40+08:00 finished=2024-01-29T10:03:12+08:00 requests cpu=250m memory=256Mi "
        "limits memory=512Mi"
    )
    assert found["$.pods[1]"].startswith("checkout-7c9f6d8b5-m8z2n service=checkout-service")
    assert len(found) == 2  # the alias `checkout` asks for the service checkout-service: its two pods only


def test_a_reason_finds_what_states_it_in_pods_events_and_nodes():
    oom = query("--reason", "oomkilled")
    output = oom["output"]
    assert [pod["pod"] for pod in output["pods"]] == [CRASHING, "worker-6f5d8c7b9-p4x7r"]
    assert [event["object"] for event in output["events"]] == ["Pod/worker-6f5d8c7b9-p4x7r"]
    assert output["nodes"] == [] and output["services"] == [] and output["rollouts"] == []
    pulling = refs(query("--reason", "ImagePullBackOff", "--kind", "pods"))
    assert list(pulling) == ["$.pods[0]"] and "waiting=ImagePullBackOff" in pulling["$.pods[0]"]
    pressure = refs(query("--reason", "MemoryPressure", "--kind", "nodes"))
    assert pressure == {
        "$.nodes[0]": "node node-2: MemoryPressure=True (KubeletHasInsufficientMemory since 2024-01-29T10:01:30+08:00: "
        "kubelet has insufficient memory available) DiskPressure=False PIDPressure=False Ready=True; taints "
        "node.kubernetes.io/memory-pressure:NoSchedule; allocatable cpu=3920m memory=15323904Ki pods=110"
    }
    deadline = query("--reason", "ProgressDeadlineExceeded", "--kind", "rollouts")["output"]["rollouts"]
    assert [(r["deployment"], r["revision"]) for r in deadline] == [("payment", 1)]


def test_events_in_a_range_with_count_and_first_and_last_time_and_the_range_recorded():
    invocation = query("--service", "checkout", "--kind", "events", "--since", "10:05", "--until", "10:15")
    assert refs(invocation) == {
        "$.events[0]": f"Warning BackOff Pod/{CRASHING} service=checkout-service namespace=shop count=12 "
        "first=2024-01-29T10:03:20+08:00 last=2024-01-29T10:14:05+08:00 from kubelet node-2: Back-off restarting "
        f"failed container app in pod {CRASHING}_shop(uid-{CRASHING})",
        "$.events[1]": f"Normal Killing Pod/{CRASHING} service=checkout-service namespace=shop count=3 "
        "first=2024-01-29T10:02:50+08:00 last=2024-01-29T10:09:40+08:00 from kubelet node-2: Container app failed "
        "liveness probe, will be restarted",
    }
    details = invocation["retrieval_details"]
    assert (details["range"], details["range_origin"]) == (
        "2024-01-29T10:05:00+08:00..2024-01-29T10:15:00+08:00",
        "question/call",
    )
    whole = query("--kind", "events")["retrieval_details"]
    assert whole["range_origin"] == "whole snapshot" and whole["range"].startswith("2024-01-29T09:40:05+08:00..")


def test_the_rollout_history_and_the_services_routing_to_a_deployment():
    found = refs(query("--service", "checkout", "--kind", "rollouts"))
    assert found["$.rollouts[0]"] == (
        "Deployment shop/checkout service=checkout-service revision=3 replicaset=checkout-7c9f6d8b5 "
        "created=2024-01-29T09:58:00+08:00 images=shop/checkout:1.4.2 replicas=2 ready=1 active; change-cause: "
        "kubectl set image deployment/checkout app=shop/checkout:1.4.2; deployment desired=2 updated=2 available=1 "
        "unavailable=1; conditions: Available=False (MinimumReplicasUnavailable since 2024-01-29T10:03:12+08:00), "
        "Progressing=True (NewReplicaSetAvailable since 2024-01-29T09:58:00+08:00)"
    )
    assert found["$.rollouts[1]"] == (
        "Deployment shop/checkout service=checkout-service revision=2 replicaset=checkout-5d8f7b6c4 "
        "created=2024-01-20T16:00:00+08:00 images=shop/checkout:1.4.1 replicas=0 ready=0"
    )
    # the Service's name asks for what it routes to
    services = refs(query("--service", "frontend", "--kind", "services"))
    assert services == {
        "$.services[0]": "Service shop/frontend service=frontend type=ClusterIP selector=app=frontend routes to "
        "frontend ports 80/TCP->3000"
    }


def test_a_service_call_returns_its_pods_events_rollouts_nodes_and_services_capped_by_limit():
    output = query("--service", "payment")["output"]
    counts = {name: len(output[name]) for name in ("pods", "events", "rollouts", "nodes", "services", "logs")}
    assert counts == {"pods": 1, "events": 2, "rollouts": 1, "nodes": 1, "services": 1, "logs": 0}
    assert output["nodes"][0]["node"] == "node-1"  # the node its pod runs on, not every node
    capped = query("--limit", "2")["output"]
    assert len(capped["pods"]) == 2 and capped["truncated"] is True and capped["total"] == 23


def test_pod_logs_the_previous_container_and_the_files_read():
    invocation = query("--pod", CRASHING, "--kind", "logs", "--previous", "--limit", "2")
    assert refs(invocation) == {
        "$.logs[0]": f"{CRASHING} service=checkout-service namespace=shop previous container line 4: "
        "2024-01-29T10:03:01+08:00 GC overhead: heap usage 498MiB of 512MiB",
        "$.logs[1]": f"{CRASHING} service=checkout-service namespace=shop previous container line 5: "
        "2024-01-29T10:03:08+08:00 java.lang.OutOfMemoryError: Java heap space",
    }
    source = f"k8s/logs/shop/{CRASHING}.previous.log"
    assert invocation["output"]["logs"][0]["source"] == source
    assert invocation["output"]["digests"][source].startswith("sha256:")
    # a pod only `kubectl describe` and its log file know, logged per container
    worker = refs(query("--service", "worker", "--kind", "logs", "--previous"))
    assert worker["$.logs[2]"] == (
        "worker-6f5d8c7b9-p4x7r service=worker namespace=shop container=app previous container line 3: Killed"
    )


def test_an_unknown_service_is_no_evidence_with_close_names_and_a_missing_k8s_is_a_failure(tmp_path):
    unknown = query("--service", "chekout")
    assert unknown["retrieval_details"]["evidence_status"] == "no_evidence"
    assert refs(unknown)["$.no_evidence"].endswith(
        "message=unknown service 'chekout' in the cluster's objects; close names: checkout-service"
    )
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "api.log").write_text("2024-01-29T02:00:00Z ERROR boom\n")
    failed = evcli("tool", "query_kubernetes", "--env", tmp_path, "--json")
    assert failed.exit_code == 1, failed
    assert failed.json()["retrieval_details"]["evidence_status"] == "failed"
    assert "no k8s/ directory" in failed.json()["error_message"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--kind", "logs"), "kind=logs needs a pod or a service"),
        (("--kind", "logs", "--pod", CRASHING, "--reason", "OOMKilled"), "reason does not apply to kind=logs"),
        (("--previous",), "previous applies to kind=logs only"),
        (("--pod", "Not_A_Pod"), "query_kubernetes: pod:"),
        (("--kind", "secrets"), "query_kubernetes: kind:"),
    ],
)
def test_bad_parameters_are_a_usage_error(args, message):
    assert_clean_error(evcli("tool", "query_kubernetes", "--env", ENV, *args), 2, message)


def test_the_tool_is_registered_for_the_cli_and_the_models_schema_with_its_parameters_explained():
    assert "query_kubernetes" in registry.names("backend")
    schema = next(s for s in tool_schemas() if s["function"]["name"] == "query_kubernetes")["function"]
    properties = schema["parameters"]["properties"]
    assert {"namespace", "service", "pod", "kind", "reason", "previous", "since", "until", "window", "limit"} == set(
        properties
    )
    assert all(properties[name].get("description") for name in properties)
    assert "OOMKilled" in properties["reason"]["description"] and "$.rollouts[i]" in schema["description"]
    helped = evcli("tool", "query_kubernetes", "--help")
    assert helped.exit_code == 0 and "--reason" in helped.stdout and "--kubeconfig" in helped.stdout


# --- a claim citing an item: recorded, gated, re-derived --------------------------------------------


def _claim(claim_id: str, text: str, raw_path: str, excerpt: str) -> dict[str, Any]:
    binding = {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": "query_kubernetes",
        "source_invocation_id": 1,
        "raw_path": raw_path,
        "evidence_excerpt": excerpt,
    }
    return {
        "claim_id": claim_id,
        "claim_type": "observation",
        "claim_text": text,
        "support_level": "direct",
        "evidence_bindings": [binding],
    }


CLAIMS = [
    _claim(
        "c1",
        f"checkout-service pod {CRASHING} was OOMKilled with exit code 137 at 2024-01-29T10:03:12+08:00 and has "
        "restarted 7 times",
        "$.pods[0]",
        f"{CRASHING} service=checkout-service … restarts=7 … last terminated reason=OOMKilled exit_code=137 "
        "started=2024-01-29T10:02:40+08:00 finished=2024-01-29T10:03:12+08:00",
    ),
    _claim(
        "c2",
        "node-2 reports MemoryPressure since 2024-01-29T10:01:30+08:00",
        "$.nodes[0]",
        "node node-2: MemoryPressure=True (KubeletHasInsufficientMemory since 2024-01-29T10:01:30+08:00",
    ),
]


def _gated_session(db: Path, env: Path) -> str:
    with TraceStore(db) as store:
        config = {"task_scope": "broad", "env": {"env_dir": str(env)}}
        session_id = store.create_session("why does checkout keep crashing?", config=config).session_id
    recorded = evcli("tool", "query_kubernetes", "--service", "checkout", "--session", session_id, "--db", db)
    assert recorded.exit_code == 0, recorded
    document = {"answer_version": "executor_evidence_v2", "claims": CLAIMS}
    document |= {"hypotheses": [], "recommended_actions": [], "missing_info": []}
    with TraceStore(db) as store:
        store.record_stage_output(session_id, StageOutput(stage="execute", output=document))
    return session_id


def test_a_claim_citing_a_pod_and_a_node_passes_the_gate_and_re_derives_from_the_snapshot(tmp_path):
    env, db = Path(shutil.copytree(ENV, tmp_path / "env")), tmp_path / "trace.db"
    session_id = _gated_session(db, env)
    passed = evcli("gate", session_id, "--db", db, "--json")
    assert passed.exit_code == 0, passed
    assert passed.json()["result"]["status"] == "pass"
    against = evcli("gate", session_id, "--db", db, "--against", env, "--json")
    assert against.exit_code == 0, against

    # the dump changes under the session: the cited pod's exit code no longer re-derives
    dump = env / "k8s" / "cluster.json"
    dump.write_text(dump.read_text().replace('"exitCode": 137', '"exitCode": 143'))
    changed = evcli("gate", session_id, "--db", db, "--against", env, "--json")
    assert changed.exit_code == 4, changed
    assert "provenance.source_matches" in changed.json()["result"]["failed_rules"]


def test_a_tampered_ref_or_a_wrong_exit_code_is_rejected(tmp_path):
    db = tmp_path / "trace.db"
    session_id = _gated_session(db, ENV)
    exported = tmp_path / "session.json"
    assert evcli("export", session_id, "--output", exported, "--db", db).exit_code == 0
    document = json.loads(exported.read_text())
    (invocation,) = document["invocations"]
    for ref in invocation["retrieval_details"]["evidence_refs"]:
        if ref["raw_path"] == "$.pods[0]":
            ref["text"] = ref["text"].replace("exit_code=137", "exit_code=1")
    exported.write_text(json.dumps(document))
    tampered = evcli("gate", exported, "--json")
    assert tampered.exit_code == 4, tampered
    assert "invocation.refs_derivable" in tampered.json()["result"]["failed_rules"]

    wrong = dict(CLAIMS[0], claim_text=CLAIMS[0]["claim_text"].replace("exit code 137", "exit code 143"))
    with TraceStore(db) as store:
        output = {"answer_version": "executor_evidence_v2", "claims": [wrong], "hypotheses": []}
        store.record_stage_output(
            session_id, StageOutput(stage="execute", output=output | {"recommended_actions": [], "missing_info": []})
        )
    rejected = evcli("gate", session_id, "--db", db, "--json")
    assert rejected.exit_code == 4, rejected
