"""Backends used from several threads at once, as the tool calls of one model reply use them
(evcli/tools/batch.py): each either shares what is safe to share or serialises what is not.

Every test starts its threads together behind a barrier, so without the lock or the once-only
construction it checks, the race it names happens."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from evcli.backends import kubernetes, logcolumns, logindex
from evcli.backends.http import Connection
from evcli.backends.logformats import ParseContext
from evcli.backends.runbooks import RunbooksBackend
from evcli.backends.snapshot import demo_env_dir
from evcli.backends.spec import EnvironmentSpec
from evcli.contracts import BackendSpec, ToolInvocation
from evcli.tools.context import build_environment
from evcli.tools.runner import run_tool

THREADS = 8


def at_once(work: Callable[[], Any], threads: int = THREADS) -> list[Any]:
    """`work()` in `threads` threads released together; their results (an exception is raised here)."""
    barrier = threading.Barrier(threads)

    def released() -> Any:
        barrier.wait()
        return work()

    with ThreadPoolExecutor(threads) as pool:
        return [future.result() for future in [pool.submit(released) for _ in range(threads)]]


def test_knowledge_searches_from_several_threads_share_one_index_serialised(tmp_path):
    """Each search re-indexes in a write transaction on the index's one connection: two at once on it
    failed with "cannot start a transaction within a transaction"."""
    backend = RunbooksBackend(demo_env_dir() / "runbooks", tmp_path / "kb.db")
    alone = backend.search("heap dump OOMKilled", limit=5, alertname=None, service=None)

    results = at_once(
        lambda: [backend.search("heap dump OOMKilled", limit=5, alertname=None, service=None) for _ in range(5)]
    )

    assert alone and all(found == alone for searches in results for found in searches)


def test_the_knowledge_backend_is_built_once_whichever_thread_asks_first(monkeypatch):
    built: list[int] = []
    environment = build_environment()
    original = EnvironmentSpec.knowledge_backend

    def slow_build(self, kb_path=None):
        built.append(1)
        time.sleep(0.05)  # long enough for every thread to find nothing built yet
        return original(self, kb_path)

    monkeypatch.setattr(EnvironmentSpec, "knowledge_backend", slow_build)
    backends = at_once(environment.knowledge)

    assert len(built) == 1 and all(backend is backends[0] for backend in backends)


class _CountedClient(httpx.Client):
    made: list[int] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _CountedClient.made.append(1)
        time.sleep(0.05)  # long enough for every thread to find no client yet
        super().__init__(*args, **kwargs)


def test_first_requests_at_once_share_one_http_client(monkeypatch):
    _CountedClient.made = []
    monkeypatch.setattr(httpx, "Client", _CountedClient)
    connection = Connection("http://127.0.0.1:9")  # never asked: the clients are only made

    clients = at_once(connection.client)

    assert len(_CountedClient.made) == 1 and all(client is clients[0] for client in clients)
    connection.close()


def test_the_kubernetes_client_is_made_once_for_threads_asking_at_once(monkeypatch):
    made: list[object] = []

    def configured(self):
        time.sleep(0.05)  # long enough for every thread to find no client yet
        return object()

    def client(configuration):
        made.append(configuration)
        return configuration

    monkeypatch.setattr(kubernetes.KubernetesBackend, "_configuration", configured)
    monkeypatch.setattr(kubernetes, "_read_only_client", client)
    backend = kubernetes.KubernetesBackend(BackendSpec(url="in-cluster"))

    clients = at_once(backend.api)

    assert len(made) == 1 and all(api is clients[0] for api in clients)


@pytest.fixture
def big_log(tmp_path) -> Path:
    (tmp_path / "logs").mkdir()
    path = tmp_path / "logs" / "checkout.log"
    line = "2026-07-08T23:{minute:02d}:00.000Z ERROR [checkout-1] payment {n} failed: upstream timeout\n"
    path.write_text("".join(line.format(minute=n % 60, n=n) for n in range(20_000)), encoding="utf-8")
    return path


def test_one_thread_builds_a_log_index_the_others_asking_for_it_wait_and_read_it(tmp_path, big_log, monkeypatch):
    builds: list[int] = []
    original = logcolumns.read_windows

    def counted(*args: Any, **kwargs: Any) -> Any:
        builds.append(1)
        time.sleep(0.05)  # long enough for every thread to find no index built yet
        return original(*args, **kwargs)

    monkeypatch.setattr(logcolumns, "read_windows", counted)
    context = ParseContext(clock=datetime(2026, 7, 8, 23, 59, tzinfo=UTC), tz=UTC)

    indexes = at_once(lambda: logindex.open_index(big_log, tmp_path, context, tmp_path / "home"), threads=4)

    assert len(builds) == 1
    assert {index.build_id for index in indexes} == {indexes[0].build_id}
    assert sorted(index.built for index in indexes) == [False, False, False, True]
    assert indexes[0].lines == 20_000


SNAPSHOT_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("query_logs", {"service": "order-service", "query": "HikariPool"}),
    ("query_logs", {"service": "user-service", "level": "WARN"}),
    ("query_logs", {"service": "payment-service"}),
    ("query_logs", {"service": "inventory-service", "query": "timeout"}),
    ("query_metrics", {"service": "payment-service"}),
    ("query_metrics", {"service": "order-service", "window": "30m"}),
    ("find_changes", {}),
    ("lookup_knowledge", {"query": "heap dump OOMKilled"}),
]


def answered(invocation: ToolInvocation) -> dict[str, Any]:
    assert invocation.retrieval_details is not None
    return {"output": invocation.output, "details": invocation.retrieval_details.model_dump(mode="json")}


def test_snapshot_calls_at_once_on_a_fresh_environment_answer_as_one_by_one(tmp_path, monkeypatch):
    """The snapshot's lazily read parts (config, clock, span, alerts, log indexes) are first read by
    several threads at once here: each call answers as it does alone."""
    one_by_one = [answered(run_tool(name, params, build_environment())) for name, params in SNAPSHOT_CALLS]
    monkeypatch.setenv("EVCLI_HOME", str(tmp_path / "fresh-home"))  # no log index built yet
    fresh = build_environment()
    barrier = threading.Barrier(len(SNAPSHOT_CALLS))

    def released(call: tuple[str, dict[str, Any]]) -> dict[str, Any]:
        barrier.wait()
        return answered(run_tool(*call, fresh))

    with ThreadPoolExecutor(len(SNAPSHOT_CALLS)) as pool:
        at_once_answers = list(pool.map(released, SNAPSHOT_CALLS))

    assert at_once_answers == one_by_one
    assert [answer["details"]["evidence_status"] for answer in one_by_one].count("failed") == 0


PROMETHEUS_CALLS: list[dict[str, Any]] = [
    {"metric": "go_gc_duration_seconds", "labels": ["quantile=0.5"], "window": "5m"},
    {"metric": "shop_queue_depth", "window": "5m"},
    {"service": "shop", "metric": "shop_orders_total", "window": "5m"},
    {"metric": "shop_queue_depth", "labels": ["queue=~pay.*"], "window": "5m"},
]


def series_of(invocation: ToolInvocation) -> list[tuple[str, dict[str, str]]]:
    assert invocation.success, invocation.error_message
    return [(item["metric"], item["labels"]) for item in invocation.output["series"]]


def test_prometheus_calls_at_once_share_one_client_and_each_gets_its_own_series(prometheus_scraping):
    """One Connection (one httpx client, its scrape interval read once) serves four calls at once against a
    real Prometheus; each answers the series it asked for, as it does alone (the values move every second)."""
    alone = [
        series_of(run_tool("query_metrics", params, build_environment(prometheus=prometheus_scraping.url)))
        for params in PROMETHEUS_CALLS
    ]
    shared = build_environment(prometheus=prometheus_scraping.url)
    barrier = threading.Barrier(len(PROMETHEUS_CALLS))

    def released(params: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
        barrier.wait()
        return series_of(run_tool("query_metrics", params, shared))

    with ThreadPoolExecutor(len(PROMETHEUS_CALLS)) as pool:
        at_once_series = list(pool.map(released, PROMETHEUS_CALLS))

    assert at_once_series == alone
    assert [len(series) for series in alone] == [1, 3, 2, 1]


INCIDENT = {"since": "2024-01-29T09:00:00+08:00", "until": "2024-01-29T10:30:00+08:00"}  # live: no range is now
KUBERNETES_CALLS: list[dict[str, Any]] = [
    {"service": "checkout", "kind": "pods", **INCIDENT},
    {"kind": "events", **INCIDENT},
    {"kind": "nodes", **INCIDENT},
    {"service": "checkout", "kind": "logs", **INCIDENT},
]


def test_kubernetes_calls_at_once_share_one_client_and_answer_as_alone(tmp_path):
    """One read-only API client, made by the first of four calls at once against the loopback API server,
    serves them all; each answers what it answers alone."""
    from tests.backends.k8s_api import KubeApi

    with KubeApi() as api:
        kubeconfig = str(api.kubeconfig(tmp_path / "kubeconfig"))
        alone = [
            answered(run_tool("query_kubernetes", params, build_environment(kubernetes=kubeconfig)))
            for params in KUBERNETES_CALLS
        ]
        shared = build_environment(kubernetes=kubeconfig)
        barrier = threading.Barrier(len(KUBERNETES_CALLS))

        def released(params: dict[str, Any]) -> dict[str, Any]:
            barrier.wait()
            return answered(run_tool("query_kubernetes", params, shared))

        with ThreadPoolExecutor(len(KUBERNETES_CALLS)) as pool:
            at_once_answers = list(pool.map(released, KUBERNETES_CALLS))

    assert at_once_answers == alone
    assert [answer["details"]["evidence_status"] for answer in alone] == ["supported"] * len(KUBERNETES_CALLS)
