"""`evcli ask` with a model Planner that proposes its own reading of the question, over real HTTP.

The scripted OpenAI-compatible server plays every role; the Planner's reading adds one service and one
phrase the code did not read, and invents a service and a phrase. The Executor's request must carry the
code's scope widened by the two valid ones only, the session must record the proposal and why the other
two were dropped, and the scope the Gatekeeper checks must stay the code's own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from evcli.store.db import TraceStore
from tests.agents.scripted_server import ScriptedServer, answer
from tests.agents.test_pipeline_llm import CPU_QUESTION, KEY, Model, payload_of
from tests.cli._util import evcli

READING = {
    "services": ["order-service", "ghost-service"],
    "phrases": ["CPU usage", "connection pool exhausted"],
}
DROPPED = [
    "service 'ghost-service': no service or alias of this environment",
    "phrase 'connection pool exhausted': not in the question",
]


def planner_with_reading(body: dict[str, Any]) -> dict[str, Any]:
    return answer(
        {
            "selected_skill": None,
            "selection_reason": "scripted",
            "plan": ['query_metrics {"service": "payment-service", "alertname": "HighCPUUsage"}'],
            "reasoning": "confirm the alert first",
            "reading": READING,
        }
    )


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = Model()
    model.overrides["planner"] = planner_with_reading
    with ScriptedServer(model) as running:
        yield running


def test_the_executor_gets_the_scope_widened_by_what_code_kept_of_the_planners_reading(server, db_path):
    run = evcli("ask", CPU_QUESTION, "--model", "openai/scripted", "--api-base", server.url + "/v1", "--json")

    assert run.exit_code == 0, run
    session_id = run.json()["session_id"]
    planner_scope = payload_of(server.requests_for("planner")[0])["scope"]
    assert "order-service" not in planner_scope["services"] and planner_scope["phrases"] == []
    for request in server.requests_for("executor"):  # every step of the Executor, over the wire
        scope = payload_of(request)["scope"]
        assert scope["services"] == [*planner_scope["services"], "order-service"]
        assert scope["phrases"] == ["CPU usage"]
        assert {key: value for key, value in scope.items() if key not in ("services", "phrases")} == {
            key: value for key, value in planner_scope.items() if key not in ("services", "phrases")
        }

    with TraceStore(db_path) as store:
        document = store.load(session_id)
    plan = document.latest_stage("plan")
    assert plan is not None and plan.output is not None
    assert plan.output["reading"] == READING  # the proposal, as the model sent it
    assert plan.parse_status["reading"] == {
        "accepted": {"services": ["order-service"], "phrases": ["CPU usage"]},
        "dropped": DROPPED,
    }
    code_scope = document.run.config.scope
    assert code_scope is not None and code_scope.model_dump(mode="json") == planner_scope  # what the gate checks

    trace = evcli("trace", session_id)
    assert trace.exit_code == 0, trace
    (line,) = [line for line in trace.stdout.splitlines() if "reading: " in line]
    assert line.split("reading: ", 1)[1] == (
        'accepted services order-service, phrases "CPU usage"; dropped ' + "; ".join(DROPPED)
    )
    assert KEY not in json.dumps(document.model_dump(mode="json"))
