"""The tool registry (evcli.tools.registry): a tool is one module.

A toy `query_events` tool, declared entirely in this file and registered by a
fixture, is runnable from `evcli tool`, offered to a model by the Executor, recorded
with its refs, gated and traced, with no other change to evcli. An unknown tool
name is an error everywhere.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from evcli.agents.calls import StepCounter
from evcli.agents.engine import EngineReply, RoleRequest, ToolCall, Turn
from evcli.agents.executor import run_executor, tool_schemas
from evcli.contracts import EvidenceBinding, StageOutput, ToolInvocation
from evcli.gatekeeper.checks import raw_path_format
from evcli.store.db import TraceStore
from evcli.tools import registry
from evcli.tools.context import build_environment
from evcli.tools.fetch import Outcome
from evcli.tools.params import ToolParams
from evcli.tools.registry import UnknownTool
from evcli.tools.runner import run_tool
from evcli.tools.view import model_view
from tests.cli._util import assert_clean_error, evcli

# --- the toy tool: everything a tool is, in one place ------------------------------------------

EVENTS = [
    {
        "kind": "Warning",
        "object": "pod/order-7f9",
        "reason": "BackOff",
        "message": "Back-off restarting failed container",
    },
    {"kind": "Normal", "object": "pod/order-7f9", "reason": "Pulled", "message": "Container image already present"},
]


class QueryEventsParams(ToolParams):
    kind: str | None = Field(None, pattern=r"^[A-Za-z]{1,20}$")
    limit: int = Field(10, ge=1, le=50)


def event_text(event: dict[str, Any]) -> str:
    return f"{event['kind']} {event['object']} {event['reason']}: {event['message']}"


def fetch_events(params: QueryEventsParams, env: Any, session: Any) -> Outcome:
    events = [event for event in EVENTS if params.kind in (None, event["kind"])][: params.limit]
    output = {"events": events, "total": len(events), "truncated": False, "message": f"{len(events)} events"}
    return Outcome(output, {"keywords": [params.kind] if params.kind else [], "limit": params.limit})


QUERY_EVENTS = registry.ToolSpec(
    name="query_events",
    description="Kubernetes events of the cluster, newest first, optionally of one kind.",
    summary="Kubernetes events, optionally of one kind.",
    params=QueryEventsParams,
    arrays=(registry.EvidenceArray("events", event_text),),
    fetch=fetch_events,
    scope=lambda params: {"limit": params.limit},
    option_help={"kind": "Event kind: Normal or Warning.", "limit": "At most N events."},
)
WARNING_REF = "Warning pod/order-7f9 BackOff: Back-off restarting failed container"


@pytest.fixture
def query_events():
    registry.register(QUERY_EVENTS)
    try:
        yield QUERY_EVENTS
    finally:
        registry.unregister(QUERY_EVENTS.name)


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "trace.db"


def new_session(db: Path) -> str:
    with TraceStore(db) as store:
        return store.create_session("any warning events?", config={"task_scope": "broad"}).session_id


def claim_citing(invocation_id: int, raw_path: str, excerpt: str) -> dict[str, Any]:
    return {
        "answer_version": "executor_evidence_v2",
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
        "claims": [
            {
                "claim_id": "c1",
                "claim_type": "observation",
                "claim_text": "order-7f9 is in BackOff",
                "evidence_bindings": [
                    {
                        "tool_name": "query_events",
                        "source_invocation_id": invocation_id,
                        "raw_path": raw_path,
                        "evidence_excerpt": excerpt,
                    }
                ],
            }
        ],
    }


def record_executor_output(db: Path, session_id: str, output: dict[str, Any]) -> None:
    with TraceStore(db) as store:
        store.record_stage_output(session_id, StageOutput(stage="execute", output=output))


# --- the toy tool end to end ------------------------------------------------------------------------


def test_registered_tool_is_a_cli_command_with_options_from_its_parameter_model(query_events):
    listing = evcli("tool", "--help")
    assert listing.exit_code == 0, listing
    assert "query_events" in listing.stdout and "Kubernetes events, optionally of one kind." in listing.stdout
    helped = evcli("tool", "query_events", "--help")
    assert (
        "--kind" in helped.stdout and "Event kind: Normal or Warning." in helped.stdout and "--session" in helped.stdout
    )

    run = evcli("tool", "query_events", "--kind", "Warning", "--json")
    assert run.exit_code == 0, run
    invocation = ToolInvocation.model_validate(run.json())
    assert invocation.input_params == {"kind": "Warning", "limit": 10}
    assert [(ref.raw_path, ref.text) for ref in invocation.retrieval_details.evidence_refs] == [
        ("$.events[0]", WARNING_REF)
    ]

    bad = evcli("tool", "query_events", "--kind", "War ning")
    assert_clean_error(bad, 2, "query_events: kind:")


class ScriptedExecutor:
    """An Engine (one `complete` call) that calls query_events once, then answers; it keeps what it was sent."""

    name = "scripted-executor"

    def __init__(self) -> None:
        self.requests: list[RoleRequest] = []

    def complete(self, request: RoleRequest) -> EngineReply:
        self.requests.append(request)
        if not request.transcript:
            return EngineReply(
                text="", tool_calls=[ToolCall(id="c1", name="query_events", arguments={"kind": "Warning"})]
            )
        return EngineReply(text=json.dumps(claim_citing(0, "$.events[0]", WARNING_REF)))


def test_registered_tool_is_offered_to_a_model_and_runs_its_calls(query_events):
    schema = next(s for s in tool_schemas() if s["function"]["name"] == "query_events")
    assert schema["function"]["description"] == QUERY_EVENTS.description
    assert set(schema["function"]["parameters"]["properties"]) == {"kind", "limit"}

    engine, environment = ScriptedExecutor(), build_environment()

    def run_call(call: ToolCall) -> Turn:
        invocation = run_tool(call.name, call.arguments, environment)
        return Turn(call=call, view=model_view(invocation), invocation=invocation)

    def run_calls(calls: list[ToolCall]) -> list[Turn]:
        return [run_call(call) for call in calls]

    result = run_executor(engine, {"question": "q"}, StepCounter(lambda step: None), run_calls, max_steps=3)
    assert result.status == "COMPLETED", result
    offered = [tool["function"]["name"] for tool in engine.requests[0].tools or []]
    tools = [*registry.BUILTINS, "query_events"]  # the shipped tools in their order, then the registered one
    assert offered == [*tools, "check_claims"]  # then the Gatekeeper on draft claims
    prompt = engine.requests[0].prompt.text  # the tool list and raw_path forms in the prompt come from the registry
    assert f"Tools: {', '.join(tools)}." in prompt
    assert "`$.logs[i]`, `$.stats`" in prompt and "`$.events[i]` or `$.no_evidence`" in prompt
    (turn,) = engine.requests[1].transcript
    assert f"$.events[0]: {WARNING_REF}" in turn.view


def test_registered_tool_is_recorded_gated_and_traced(query_events, db):
    session_id = new_session(db)
    recorded = evcli("tool", "query_events", "--kind", "Warning", "--session", session_id, "--db", db)
    assert recorded.exit_code == 0, recorded
    assert f"recorded as invocation #1 of session {session_id}" in recorded.stderr

    conn = sqlite3.connect(db)
    try:
        (tool_name, details) = conn.execute(
            "SELECT tool_name, retrieval_details FROM tool_invocation WHERE session_id = ?", [session_id]
        ).fetchone()
    finally:
        conn.close()
    assert tool_name == "query_events"
    assert json.loads(details)["evidence_refs"] == [{"raw_path": "$.events[0]", "text": WARNING_REF}]

    record_executor_output(db, session_id, claim_citing(1, "$.events[0]", WARNING_REF))
    passed = evcli("gate", session_id, "--db", db, "--json")
    assert passed.exit_code == 0, passed
    assert passed.json()["result"]["status"] == "pass"

    record_executor_output(db, session_id, claim_citing(1, "$.events[5]", WARNING_REF))
    rejected = evcli("gate", session_id, "--db", db, "--json")
    assert rejected.exit_code == 4, rejected
    assert "binding.raw_path_exists" in rejected.json()["result"]["failed_rules"]

    traced = evcli("trace", session_id, "--db", db)
    assert traced.exit_code == 0, traced
    assert "query_events" in traced.stdout and "$.events[0]" in traced.stdout


def test_raw_path_format_reads_the_registered_arrays(query_events):
    def problem(tool_name: str, raw_path: str) -> str | None:
        return raw_path_format(EvidenceBinding(tool_name=tool_name, raw_path=raw_path, evidence_excerpt="x"))

    assert problem("query_events", "$.events[0]") is None
    assert problem("query_events", "$.no_evidence") is None
    assert problem("query_events", "$.events[0].reason") is None  # one field of an item
    for wrong in ("$.logs[0]", "$.events[0].*", "$.events[01]", "$.events[-1]", "$.events[*]", "$..events[0]"):
        assert "does not name one item (or one field of an item) of query_events's" in problem("query_events", wrong)
    assert problem("query_metrics", "$.series[2]") is None
    assert "does not name one item" in problem("query_metrics", "$.logs[0]")


# --- unknown tools ----------------------------------------------------------------------------


def test_an_unregistered_tool_is_an_error_everywhere():
    assert "query_events" not in registry.names()
    assert_clean_error(evcli("tool", "query_events", "--kind", "Warning"), 2, "No such command 'query_events'")
    with pytest.raises(
        UnknownTool, match="unknown tool 'query_events'; tools: query_metrics, query_logs, lookup_knowledge"
    ):
        run_tool("query_events", {}, build_environment())
    message = raw_path_format(EvidenceBinding(tool_name="query_events", raw_path="$.events[0]", evidence_excerpt="x"))
    assert message is not None and "unknown tool 'query_events'" in message
    assert all(s["function"]["name"] != "query_events" for s in tool_schemas())


def test_a_name_cannot_be_registered_twice(query_events):
    other = registry.ToolSpec(
        name="query_events",
        description="",
        summary="",
        params=QueryEventsParams,
        arrays=(),
        fetch=fetch_events,
        scope=lambda params: {},
    )
    with pytest.raises(ValueError, match="already registered"):
        registry.register(other)
    assert registry.get("query_events") is QUERY_EVENTS


def test_every_parameter_the_model_sees_is_described_with_an_example():
    """Issue 23: the tool schemas document every parameter with an example of what it takes."""
    from evcli.agents.executor import tool_schemas

    for schema in tool_schemas():
        function = schema["function"]
        for name, parameter in function["parameters"].get("properties", {}).items():
            description = parameter.get("description", "")
            assert description, (function["name"], name)
            assert any(mark in description for mark in ("(", '"', "`", "e.g.", ": ")), (
                function["name"],
                name,
                description,
            )


def test_finding_a_builtin_imports_that_tool_alone_and_listing_imports_all():
    """`gate` reads the specs of the tools its session cited: one lookup imports that tool's module, not all six
    (start-up); listing the tools, or asking for an unknown one, still sees every built-in."""
    import subprocess
    import sys

    script = (
        "import sys\nfrom evcli.tools import registry\n"
        "assert registry.find('query_logs').name == 'query_logs'\n"
        "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.rsplit('.', 1)[-1] in registry.BUILTINS))\n"
        "print(registry.find('no_such_tool'), registry.names())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    alone, listed = done.stdout.splitlines()
    assert alone == "['query_logs']"
    assert listed == f"None {registry.BUILTINS}"
