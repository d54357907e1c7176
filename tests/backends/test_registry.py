"""Backends are found by capability: preference order, registration rules, and a toy log backend
registered here that the tool layer's query_logs uses with no other change."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from evcli.backends import registry
from evcli.backends.base import LogQuery, LogResult, parse_window
from evcli.backends.live import LiveBackend
from evcli.backends.registry import BackendKind, Capability, providers
from evcli.backends.spec import EnvironmentSpec
from evcli.contracts import BackendSpec
from evcli.core.errors import BackendError
from evcli.tools.context import build_environment
from evcli.tools.runner import run_tool


@dataclass
class ToyLogs:
    """Logs from a list kept in memory; `url` says which instance was built."""

    url: str

    def query_logs(self, query: LogQuery) -> LogResult:
        lines = [f"ERROR {query.service} boom from {self.url}", f"INFO {query.service} fine"]
        found = [line for line in lines if all(word.lower() in line.lower() for word in query.keywords)]
        logs = [
            {
                "timestamp": "2026-07-08T23:00:00Z",  # a query may name no range (issue 9: the backend's default)
                "level": line.split()[0],
                "service": query.service,
                "instance": "toy-1",
                "message": line,
            }
            for line in found
        ]
        return LogResult(logs=logs, total=len(logs), truncated=False)


@pytest.fixture
def toy_logs(monkeypatch) -> BackendKind:
    kind = BackendKind("toy_logs", (Capability.LOGS,), lambda spec: ToyLogs(spec.url), "Toy log store URL.")
    monkeypatch.setitem(registry.BACKENDS, kind.name, kind)
    return kind


def names(kinds: list[BackendKind]) -> list[str]:
    return [kind.name for kind in kinds]


def test_each_capability_has_its_providers_most_preferred_first():
    assert names(providers(Capability.ALERTS)) == ["alertmanager", "prometheus"]
    assert names(providers(Capability.METRICS)) == ["prometheus"]
    assert names(providers(Capability.LOGS)) == ["loki"]


def test_a_registered_backend_joins_its_capability_after_the_earlier_ones(toy_logs):
    assert names(providers(Capability.LOGS)) == ["loki", "toy_logs"]
    assert toy_logs.flag == "--toy-logs"
    with pytest.raises(BackendError, match=r"^no log backend configured: pass --loki or --toy-logs$"):
        LiveBackend().query_logs(LogQuery("x", (), None, parse_window("5m", LiveBackend().now()), 10))


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        (BackendKind("loki", (Capability.LOGS,), "x:y", ""), "already registered"),
        (BackendKind("Bad-Name", (Capability.LOGS,), "x:y", ""), "lower-case identifiers"),
        (BackendKind("nothing", (), "x:y", ""), "provides no capability"),
    ],
)
def test_register_refuses_a_clash_a_bad_name_and_an_empty_backend(kind, problem):
    with pytest.raises(ValueError, match=problem):
        registry.register(kind)
    assert names(providers(Capability.LOGS)) == ["loki"]


def test_builders_are_imported_only_when_a_backend_is_built():
    built = registry.backend_kind("loki").build(BackendSpec(url="http://127.0.0.1:9", options={"service_label": "app"}))

    assert (built.url, built.service_label) == ("http://127.0.0.1:9", "app")
    with pytest.raises(KeyError, match="unknown backend 'nope'; known: prometheus, alertmanager, loki"):
        registry.backend_kind("nope")


def test_the_tool_layer_reads_logs_from_a_toy_backend_registered_in_the_test(toy_logs):
    environment = build_environment(spec=EnvironmentSpec(backends={"toy_logs": BackendSpec(url="toy://one")}))

    invocation = run_tool("query_logs", {"service": "checkout", "query": "boom"}, environment)

    assert invocation.success, invocation.error_message
    assert [log["message"] for log in invocation.output["logs"]] == ["ERROR checkout boom from toy://one"]


def test_a_stored_spec_naming_an_unregistered_backend_is_a_usage_error():
    from evcli.core.errors import BadInput

    with pytest.raises(BadInput, match="unknown backend 'toy_logs'"):
        EnvironmentSpec.from_config({"toy_logs": "toy://one"}).evidence_backend()


@dataclass
class ToyKnowledge:
    """Runbook blocks from a list kept in memory; `url` says which instance was built."""

    url: str

    def search(self, query: str, *, limit: int, alertname: str | None, service: str | None) -> list[dict]:
        block = {"doc": "toy.md", "title": "Toy", "heading": "Restart", "layer": "L1", "score": 1.0}
        return [{**block, "text": f"restart {service} ({query}) per {self.url}", "relevance_level": "PRECISE"}][:limit]

    def skills(self) -> list[dict]:
        return [{"name": "toy-restart", "doc": "toy.md", "title": "Toy", "alerts": [], "services": ["checkout"]}]


def test_knowledge_is_served_by_the_runbooks_directory_backend_unless_a_configured_one_provides_it(tmp_path):
    assert names(providers(Capability.KNOWLEDGE)) == ["runbooks"]
    assert "runbooks" not in names(registry.live_backends())  # no --runbooks URL option; --runbooks stays a dir
    (tmp_path / "db.md").write_text("# DB\n\n## Pool\n\nRaise the connection pool when it is exhausted.\n")
    environment = build_environment(spec=EnvironmentSpec(runbooks=tmp_path), kb_path=tmp_path / "kb.db")

    invocation = run_tool("lookup_knowledge", {"query": "connection pool exhausted"}, environment)

    assert invocation.success, invocation.error_message
    assert [(b["doc"], b["heading"]) for b in invocation.output["evidence_blocks"]] == [("db.md", "Pool")]
    assert "directory" not in invocation.output["evidence_blocks"][0]


def test_lookup_knowledge_reads_a_toy_knowledge_backend_registered_in_the_test(monkeypatch, tmp_path):
    kind = BackendKind("toy_kb", (Capability.KNOWLEDGE,), lambda spec: ToyKnowledge(spec.url), "Toy wiki URL.")
    monkeypatch.setitem(registry.BACKENDS, kind.name, kind)
    environment = build_environment(
        spec=EnvironmentSpec(backends={"toy_kb": BackendSpec(url="toy://wiki")}), kb_path=tmp_path / "kb.db"
    )

    invocation = run_tool("lookup_knowledge", {"query": "pool", "service": "checkout"}, environment)

    assert invocation.success, invocation.error_message
    assert [b["text"] for b in invocation.output["evidence_blocks"]] == ["restart checkout (pool) per toy://wiki"]
    assert invocation.relevance_level == "PRECISE"
    assert environment.knowledge().skills()[0]["name"] == "toy-restart"
    assert not (tmp_path / "kb.db").exists()  # the runbooks index was never opened
