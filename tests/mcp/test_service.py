"""`McpService` (evcli/mcp/service.py) without the SDK: the CLI's guards, timeout and masking hold for MCP
calls, every failure is one line, and a tool registered at run time is served with its own schema."""

from __future__ import annotations

import time
from typing import Any

import pytest

from evcli.mcp.service import McpService, Reply
from evcli.store.db import TraceStore
from evcli.tools import registry
from evcli.tools.fetch import Outcome
from evcli.tools.runner import TIMEOUT_ENV
from tests.tools.test_registry import QUERY_EVENTS

QUESTION = "Why are orders timing out?"


def _service(db_path) -> McpService:
    """The service `evcli mcp` builds on the demo environment, with the offline models and the shipped rules."""
    from evcli.agents.roles import Models
    from evcli.gatekeeper.rules import load_rules
    from evcli.pipeline import Pipeline

    return McpService(Pipeline(store=TraceStore(db_path), rules=load_rules(None), models=Models(), env_spec={}))


@pytest.fixture
def service(db_path) -> McpService:
    return _service(db_path)


def _one_line_error(reply: Reply) -> str:
    assert reply.is_error and reply.data is None, reply
    assert "\n" not in reply.text and "Traceback" not in reply.text, reply.text
    return reply.text


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("query_logs", {"limit": "many", "question": QUESTION}, "query_logs: limit: Input should be a valid integer"),
        ("query_logs", {"service": "order-service"}, "query_logs: give session_id (record the call in that session)"),
        ("query_logs", {"bogus": 1, "question": QUESTION}, "query_logs: bogus: Extra inputs are not permitted"),
        ("query_logs", {"question": ["a", "list"]}, "query_logs: question must be a non-empty string"),
        ("query_logs", {"session_id": "20990101T000000-abcdef"}, "unknown session '20990101T000000-abcdef'"),
        ("check_claims", {"session_id": "last", "claims": []}, "no session is stored yet (run `evcli ask` first)"),
        ("check_claims", {"claims": []}, "check_claims: session_id must be a non-empty string"),
        ("get_session", {"session": "nope/../x"}, "'nope/../x' is not a valid session id"),
        ("diagnose", {"question": "  "}, "diagnose: question must be a non-empty string"),
        (
            "diagnose",
            {"question": QUESTION, "model": "gpt"},
            "diagnose: unknown parameter 'model'; parameters: question",
        ),
        ("no_such_tool", {}, "unknown tool 'no_such_tool'; tools: query_metrics, query_logs, lookup_knowledge"),
    ],
)
def test_bad_input_is_one_line_and_starts_nothing(service, db_path, tool, arguments, message):
    assert message in _one_line_error(service.call(tool, arguments))
    assert service.store.list_sessions() == []


def test_claims_that_are_not_a_list_of_objects_are_refused(service):
    found = service.call("query_logs", {"service": "order-service", "question": QUESTION})
    session_id = found.data["session_id"]
    for claims in ("all of them", [1, 2], None):
        reply = service.call("check_claims", {"session_id": session_id, "claims": claims})
        assert _one_line_error(reply) == "check_claims: claims must be a list of claim objects"


def test_the_session_guards_of_the_cli_hold(service):
    """An identical repeat and a call past the per-tool cap are refused, in one line, and not recorded."""
    first = service.call("query_logs", {"service": "order-service", "query": "timeout", "question": QUESTION})
    session_id = first.data["session_id"]
    again = service.call("query_logs", {"service": "order-service", "query": "timeout", "session_id": session_id})
    assert _one_line_error(again) == (
        "query_logs refused: identical to invocation #1 (supported); cite that invocation instead"
    )
    for limit in range(1, 8):  # 7 more: 8 calls, the cap
        assert not service.call("query_logs", {"limit": limit, "session_id": session_id}).is_error
    capped = service.call("query_logs", {"limit": 9, "session_id": session_id})
    assert _one_line_error(capped) == "query_logs refused: this session already made 8 calls (cap 8)"
    assert len(service.store.load(session_id).invocations) == 8


def test_secrets_in_questions_and_parameters_are_masked(service, db_path):
    reply = service.call(
        "query_logs", {"query": "password=hunter2", "question": "Why does login fail with password=hunter2?"}
    )
    assert not reply.is_error, reply.text
    document = service.store.load(reply.data["session_id"])
    assert document.run.question == "Why does login fail with password=***"
    assert document.invocations[0].input_params["query"] == "password=***"
    assert "hunter2" not in reply.text and "hunter2" not in str(reply.data)
    assert "hunter2" not in service.call("get_session", {"session": "last"}).text


def test_an_unexpected_error_is_one_masked_line(service, monkeypatch, caplog):
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom with token=abc123secret\nand a second line")

    monkeypatch.setattr("evcli.tools.runner.run_tool", broken)
    reply = service.call("query_logs", {"question": QUESTION})
    assert _one_line_error(reply) == (
        "unexpected RuntimeError: boom with token=*** and a second line (the server's stderr has the traceback)"
    )
    assert "Traceback" in caplog.text  # for the operator, on the server's stderr


def _slow_events(params: Any, env: Any, session: Any) -> Outcome:
    time.sleep(3)  # past the timeout below; the runner's worker thread is a daemon
    raise AssertionError("not reached in time")


def test_a_tool_registered_at_run_time_is_served_under_the_cli_timeout(monkeypatch, db_path):
    """`query_events` (tests/tools/test_registry.py) registered with a fetch slower than $EVCLI_TOOL_TIMEOUT_S:
    listed with its own schema, and its call recorded as failed and returned as an error."""
    from dataclasses import replace

    monkeypatch.setenv(TIMEOUT_ENV, "0.2")
    slow = replace(QUERY_EVENTS, fetch=_slow_events)
    registry.register(slow)
    try:
        service = _service(db_path)
        (listed,) = [tool for tool in service.tools() if tool.name == "query_events"]
        assert listed.description == QUERY_EVENTS.description
        assert listed.input_schema["properties"]["kind"]["description"] == "Event kind: Normal or Warning."
        started = time.monotonic()
        reply = service.call("query_events", {"kind": "Warning", "question": "any warning events?"})
        assert time.monotonic() - started < 2.5
    finally:
        registry.unregister(slow.name)
    assert reply.is_error and 'status="failed"' in reply.text and "error: timed out after 0.2s" in reply.text
    (stored,) = service.store.load(reply.data["session_id"]).invocations
    assert not stored.success and stored.error_message == "timed out after 0.2s"
