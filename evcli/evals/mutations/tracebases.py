"""Base sessions whose claims cite query_traces items: spans, call edges, the stats and their count per service,
and negatives on a trace search (issue 22), for the trace mutation classes (evcli.evals.mutations.traces).

Each environment with traces/ gives two kinds of base, annotated `trace_base`:
  - the offline chain's sessions on trace questions (which service is slow, who calls a service, where its
    errors come from): the claims the engine writes, quoting edges and stats whole;
  - one session of real query_traces calls whose claims a faithful writer makes of their items: each edge in
    words, the slowest call, one percentile cited by its field, spans with their duration, start and status,
    the stats and the count per service, a negative on an errors_only search of one operation, a zero count.
Every number, name and time of a claim is read from the items the calls returned, never written here. The
packaged environments with traces/ are found by `trace_envs`; tests name their own (tests/backends/traces_env).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from evcli.contracts import Query, SessionDocument, StageOutput, ToolInvocation
from evcli.evals.mutations.scope import _binding, _calls, _claim, _document, _ref
from evcli.tools.refs import number

QUESTIONS = ("Which service is slow?", "Who calls payment?", "Where do checkout's errors come from?")


def trace_envs() -> list[Path]:
    """The packaged environments that hold traces/."""
    from evcli.backends.spec import PACKAGED_ENVS

    return sorted(
        path for path in PACKAGED_ENVS.iterdir() if (path / "env.toml").is_file() and (path / "traces").is_dir()
    )


def trace_bases(directory: Path) -> list[SessionDocument]:
    """The offline chain's sessions on QUESTIONS, then the session of claims on every kind of trace item."""
    return [*_offline_sessions(directory), _claims_session(directory)]


def _offline_sessions(directory: Path) -> list[SessionDocument]:
    from evcli.agents.roles import Models
    from evcli.gatekeeper.rules import load_rules
    from evcli.pipeline import Pipeline
    from evcli.store.db import TraceStore

    documents = []
    with tempfile.TemporaryDirectory() as scratch, TraceStore(Path(scratch) / "traces.db") as store:
        pipeline = Pipeline(
            store=store, rules=load_rules(), models=Models(default="offline"), env_spec={"env_dir": str(directory)}
        )
        for question in QUESTIONS:
            document = store.load(pipeline.ask(question).session_id)
            document.run.annotations["sample"] = {"kind": "trace_base", "question": question}
            documents.append(document)
    return documents


def _ms(value: Any) -> str:
    return f"{number(value)}ms"


def _edge_claims(call: ToolInvocation) -> list[dict]:
    """Each edge in words, the slowest call, and the slowest call's p99 cited by its field."""
    edges = call.output["edges"]
    claims = [
        _claim(
            f"e{index}",
            "observation",
            f"{edge['caller']} calls {edge['callee']}: {edge['calls']} calls, {edge['errors']} errors, "
            f"p50 {_ms(edge['p50_ms'])}, p90 {_ms(edge['p90_ms'])}, p99 {_ms(edge['p99_ms'])}",
            _binding(call, f"$.edges[{index}]", _ref(call, f"$.edges[{index}]")),
        )
        for index, edge in enumerate(edges[:3])
    ]
    slowest = max(range(len(edges)), key=lambda index: edges[index]["p99_ms"])
    edge, path = edges[slowest], f"$.edges[{slowest}]"
    claims.append(
        _claim(
            "slowest",
            "observation",
            f"The slowest call is {edge['caller']} → {edge['callee']} (p99 {_ms(edge['p99_ms'])})",
            _binding(call, path, _ref(call, path)),
        )
    )
    claims.append(
        _claim(
            "p99",
            "observation",
            f"{edge['caller']} → {edge['callee']} has a p99 of {_ms(edge['p99_ms'])}",
            _binding(call, f"{path}.p99_ms", _ref(call, path)),
        )
    )
    return claims


_STATUS_WORDS = {"error": " and failed", "ok": " and succeeded"}


def _span_claims(call: ToolInvocation) -> list[dict]:
    """The first spans called by another service: duration, start and status."""
    called = [(index, span) for index, span in enumerate(call.output["spans"]) if span.get("parent_service")]
    return [
        _claim(
            f"s{index}",
            "observation",
            f"{span['service']}'s {span['operation']} span took {_ms(span['duration_ms'])} from {span['start']}"
            + _STATUS_WORDS.get(span["status"], ""),
            _binding(call, f"$.spans[{index}]", _ref(call, f"$.spans[{index}]")),
        )
        for index, span in called[:3]
    ]


def _stats_claims(call: ToolInvocation) -> list[dict]:
    stats = call.output["stats"]
    counted = sorted(stats["by_service"].items(), key=lambda entry: -entry[1])[:2]
    excerpt = _ref(call, "$.stats")
    return [
        _claim(
            "stats",
            "observation",
            f"{stats['spans']} spans in {stats['traces']} traces, {stats['errors']} errors; p50 {_ms(stats['p50_ms'])}, "
            f"p90 {_ms(stats['p90_ms'])}, p99 {_ms(stats['p99_ms'])}",
            _binding(call, "$.stats", excerpt),
        ),
        _claim(
            "by-service",
            "observation",
            f"{counted[0][0]} had {counted[0][1]} spans, {counted[1][0]} {counted[1][1]}",
            _binding(call, "$.stats", excerpt),
        ),
    ]


def _claims_session(directory: Path) -> SessionDocument:
    from evcli.session_setup import environment_overview
    from evcli.tools.context import build_environment

    env = build_environment(directory)
    graph = _calls(env, ("query_traces", {"count_by": "service"}))[0]
    failing = next(edge for edge in graph.output["edges"] if edge["errors"])
    callee = failing["callee"]
    # a service no failing call touches: its own spans are error-free (a caller's spans fail with its callee's)
    touched = {name for edge in graph.output["edges"] if edge["errors"] for name in (edge["caller"], edge["callee"])}
    services = [name for edge in graph.output["edges"] for name in (edge["caller"], edge["callee"])]
    quiet = next((name for name in services if name not in touched), None) or next(
        edge["caller"] for edge in graph.output["edges"] if not edge["errors"]
    )
    calls = _calls(
        env,
        ("query_traces", {"count_by": "service"}),
        ("query_traces", {"service": callee, "operation": "refund", "errors_only": True}),
        ("query_traces", {"service": quiet}),
    )
    searched, quiet_stats = calls[1], calls[2].output["stats"]
    claims = [*_edge_claims(calls[0]), *_span_claims(calls[0]), *_stats_claims(calls[0])]
    claims.append(
        _claim(
            "negative",
            "negative_observation",
            f"{callee} had no failed refund spans in the searched range.",
            _binding(searched, "$.no_evidence", _ref(searched, "$.no_evidence")),
        )
    )
    claims.append(
        _claim(
            "zero",
            "observation",
            f"{quiet} had 0 errors in {quiet_stats['spans']} spans",
            _binding(calls[2], "$.stats", _ref(calls[2], "$.stats")),
        )
    )
    scope = Query(services=[callee, quiet], task_scope="narrow")
    document = _document("traces-claims", f"How do {callee} and {quiet} call and fail?", scope, calls, claims)
    document.run.config = document.run.config.model_copy(update={"environment": environment_overview(env)})
    # a plan, so a mutation the gate lets through can be replayed from the gate as any session is
    plan = {"plan": ["Read the call graph, a failing callee's refund errors and a quiet caller's spans."]}
    document.stage_outputs.insert(0, StageOutput(stage="plan", output=plan))
    document.run.annotations["sample"] = {"kind": "trace_base", "description": "claims on every kind of trace item"}
    return document
