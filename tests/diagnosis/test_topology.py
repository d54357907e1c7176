"""Topology from Kubernetes Services (evcli.diagnosis.topology): a service whose pod template names a Service's
address calls what the Service's selector routes to, and find_changes ranks with those calls when a
snapshot's k8s/ holds them."""

from __future__ import annotations

import json
from pathlib import Path

from evcli.diagnosis import topology
from tests.cli._util import evcli
from tests.tools.test_find_changes import build

ADDRESSES = {
    "payment": ("payment",),
    "payment.shop": ("payment",),
    "payment.shop.svc": ("payment",),
    "payment.shop.svc.cluster.local": ("payment",),
    "checkout": ("checkout", "checkout-canary"),
}


def test_a_template_naming_a_services_address_calls_the_workloads_it_routes_to():
    texts = {
        "gateway": ["http://checkout:8080", "--timeout=5s"],
        "checkout": ["PAYMENT=http://payment.shop.svc.cluster.local:8080/pay", "http://checkout:8080"],
        "mailer": ["smtp://payment.example.com:25", "https://api.payment-gateway.io"],  # other hosts, not the Service
    }
    assert topology.service_calls(texts, ADDRESSES) == {
        "gateway": ("checkout", "checkout-canary"),
        "checkout": ("payment", "checkout-canary"),  # naming its own Service calls the canary it also routes to
    }
    assert topology.service_calls(texts, {}) == {}


def test_only_a_service_routing_to_one_workload_is_a_name_log_lines_can_use():
    assert topology.single_routes(ADDRESSES) == {
        "payment": "payment",
        "payment.shop": "payment",
        "payment.shop.svc": "payment",
        "payment.shop.svc.cluster.local": "payment",
    }


def _cluster(directory: Path) -> None:
    """Deployments and Services of the gateway → checkout → payment shop, as `kubectl get -o json` writes them."""

    def deployment(name: str, env: dict[str, str]) -> dict:
        container = {"name": "app", "image": f"shop/{name}:1", "env": [{"name": k, "value": v} for k, v in env.items()]}
        template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
        spec = {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template}
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": spec,
        }

    def service(name: str) -> dict:
        spec = {"selector": {"app": name}, "ports": [{"port": 8080, "protocol": "TCP", "targetPort": 8080}]}
        return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "shop"}, "spec": spec}

    items = [
        deployment("gateway", {"CHECKOUT_URL": "http://checkout.shop:8080", "CATALOG_URL": "http://catalog:8080"}),
        deployment("checkout", {"PAYMENT_URL": "http://payment.shop.svc.cluster.local:8080"}),
        deployment("payment", {}),
        deployment("catalog", {}),
        *(service(name) for name in ("gateway", "checkout", "payment", "catalog")),
    ]
    (directory / "k8s").mkdir()
    (directory / "k8s" / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))


def _suspects(directory: Path) -> dict:
    run = evcli("tool", "find_changes", "--env", directory, "--json")
    assert run.exit_code == 0, run
    return run.json()["output"]


def test_find_changes_ranks_with_the_calls_kubernetes_services_show(tmp_path):
    directory = build(tmp_path / "env", topology=False)
    (directory / "logs" / "checkout.log").unlink()  # no peer named in a log line: only the cluster tells
    without = _suspects(directory)
    assert without["ranked_by"] == ["the kind of change", "onset order"]
    assert all(not suspect.get("explained_by") for suspect in without["suspects"])

    _cluster(directory)
    output = _suspects(directory)
    assert output["ranked_by"] == ["the kind of change", "onset order", "Kubernetes Services and their selectors"]
    suspects = {suspect["service"]: suspect for suspect in output["suspects"]}
    assert output["suspects"][0]["service"] == "payment"
    assert suspects["checkout"]["explained_by"] == ["payment"]  # its callee changed first
    assert suspects["gateway"]["explained_by"] == ["checkout"]
    assert suspects["payment"]["affects"] == ["checkout", "gateway"]
