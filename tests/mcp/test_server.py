"""`evcli mcp` (evcli/mcp/server.py) through the MCP SDK's own client, over stdio and streamable HTTP:
the tools listed, an evidence call recorded in the store, claims checked, a session read back, a diagnosis."""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.cli._util import evcli
from tests.mcp.conftest import http_client, run_scenario

QUESTION = "Why are orders timing out?"
POOL_ERRORS = {"service": "order-service", "query": '"Connection is not available"'}


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def _rows(db, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
    with sqlite3.connect(db, timeout=30) as conn:
        conn.row_factory = sqlite3.Row
        return conn.execute(sql, params).fetchall()


def _claim(claim_id: str, invocation_id: int, ref: dict[str, Any], *, timeout: str = "30000ms") -> dict[str, Any]:
    """A claim quoting one pool-timeout log line; `timeout` other than the line's own forges it."""
    stamp = ref["text"].split()[1]  # `<path:line> <timestamp> <LEVEL> <line>`
    return {
        "claim_id": claim_id,
        "claim_type": "observation",
        "claim_text": f"order-service logged ERROR at {stamp}: HikariPool-1 - Connection is not available, "
        f"request timed out after {timeout}",
        "evidence_bindings": [
            {
                "tool_name": "query_logs",
                "source_invocation_id": invocation_id,
                "raw_path": ref["raw_path"],
                "evidence_excerpt": ref["text"].replace("30000ms", timeout),
            }
        ],
    }


def test_lists_every_registry_tool_with_the_schema_the_model_sees(connect):
    from evcli.agents.executor import tool_schemas
    from evcli.tools import registry

    seen: dict[str, Any] = {}

    async def scenario() -> None:
        async with connect() as client:
            seen.update({tool.name: tool for tool in (await client.list_tools()).tools})

    run_scenario(scenario)
    assert list(seen) == [*registry.names(), "check_claims", "get_session", "diagnose"]
    for schema in tool_schemas():
        function = schema["function"]
        listed = seen[function["name"]]
        assert listed.description.startswith(function["description"])
        for name, field in function["parameters"]["properties"].items():
            assert listed.input_schema["properties"][name] == field  # type, enum, default and description alike
    assert set(seen["query_logs"].input_schema["properties"]) >= {"service", "query", "session_id", "question"}
    assert seen["check_claims"].input_schema["required"] == ["session_id", "claims"]


def test_query_logs_returns_refs_and_is_recorded_in_a_stored_session(connect, db_path):
    replies: list[Any] = []

    async def scenario() -> None:
        async with connect() as client:
            first = await client.call_tool("query_logs", {**POOL_ERRORS, "question": QUESTION})
            replies.append(first)
            session_id = first.structured_content["session_id"]
            again = {"service": "order-service", "query": "timeout", "session_id": session_id}
            replies.append(await client.call_tool("query_logs", again))

    run_scenario(scenario)
    first, second = replies
    assert not first.is_error and not second.is_error, (_text(first), _text(second))
    session_id = first.structured_content["session_id"]
    invocation = first.structured_content["invocation"]
    assert invocation["invocation_id"] == 1 and invocation["tool_name"] == "query_logs"
    refs = invocation["retrieval_details"]["evidence_refs"]
    assert [ref["raw_path"] for ref in refs][:2] == ["$.logs[0]", "$.logs[1]"]
    assert "$.stats" in [ref["raw_path"] for ref in refs]
    assert all("Connection is not available" in ref["text"] for ref in refs if ref["raw_path"].startswith("$.logs"))
    text = _text(first)
    assert text.startswith(f"session {session_id}\n")
    assert '<evidence invocation="1" tool="query_logs" status="supported">' in text
    assert f"{refs[0]['raw_path']}: " in text
    assert second.structured_content["session_id"] == session_id
    assert second.structured_content["invocation"]["invocation_id"] == 2

    (run,) = _rows(db_path, "SELECT * FROM diagnosis_run WHERE session_id = ?", (session_id,))
    assert run["question"] == QUESTION and run["status"] == "completed"
    stored = _rows(db_path, "SELECT * FROM tool_invocation WHERE session_id = ? ORDER BY invocation_id", (session_id,))
    assert [(row["invocation_id"], row["tool_name"]) for row in stored] == [(1, "query_logs"), (2, "query_logs")]
    details = json.loads(stored[0]["retrieval_details"])
    assert details["evidence_refs"] == refs


def test_check_claims_passes_an_honest_claim_and_fails_a_forged_one(connect):
    checked: list[Any] = []

    async def scenario() -> None:
        async with connect() as client:
            found = await client.call_tool("query_logs", {**POOL_ERRORS, "question": QUESTION})
            invocation = found.structured_content["invocation"]
            ref = invocation["retrieval_details"]["evidence_refs"][0]
            claims = [
                _claim("honest", invocation["invocation_id"], ref),
                _claim("forged", invocation["invocation_id"], ref, timeout="3000ms"),
            ]
            session_id = found.structured_content["session_id"]
            checked.append(await client.call_tool("check_claims", {"session_id": session_id, "claims": claims}))
            checked.append(await client.call_tool("check_claims", {"session_id": session_id, "claims": claims[:1]}))

    run_scenario(scenario)
    both, honest_only = (_text(result).splitlines() for result in checked)
    assert not any(result.is_error for result in checked)
    assert both[1] == '<gate status="fail" severity="reject">'
    assert "honest: pass" in both
    (forged,) = [line for line in both if line.startswith("forged: ")]
    assert forged.startswith("forged: fail binding.excerpt_supported (reject)") and "3000ms" in forged
    assert honest_only[1:] == ['<gate status="pass" severity="none">', "honest: pass", "</gate>"]


def test_get_session_is_the_session_as_evcli_export_writes_it(connect):
    replies: list[Any] = []

    async def scenario() -> None:
        async with connect() as client:
            found = await client.call_tool("query_logs", {**POOL_ERRORS, "question": QUESTION})
            session_id = found.structured_content["session_id"]
            replies.append(await client.call_tool("get_session", {"session": session_id}))
            replies.append(await client.call_tool("get_session", {"session": "last"}))

    run_scenario(scenario)
    by_id, last = replies
    assert not by_id.is_error, _text(by_id)
    session_id = by_id.structured_content["run"]["session_id"]
    exported = evcli("export", session_id)
    assert exported.exit_code == 0, exported
    assert by_id.structured_content == exported.json() == json.loads(_text(by_id))
    assert [i["tool_name"] for i in by_id.structured_content["invocations"]] == ["query_logs"]
    assert last.structured_content == by_id.structured_content


def test_diagnose_runs_the_whole_chain_and_stores_its_session(connect, db_path):
    replies: list[Any] = []

    async def scenario() -> None:
        async with connect() as client:
            replies.append(await client.call_tool("diagnose", {"question": QUESTION}))

    run_scenario(scenario)
    (reply,) = replies
    assert not reply.is_error, _text(reply)
    result = reply.structured_content
    assert result["verdict"] in ("PASS", "LOW_CONFID", "REJECT") and result["answer"]["user_facing_answer"]
    assert result["claims"] and result["models"]["executor"] == "offline"
    assert _text(reply).endswith(f"· session {result['session_id']}")
    assert f"verdict {result['verdict']} · gate {result['gate']['status']}" in _text(reply)
    (run,) = _rows(db_path, "SELECT * FROM diagnosis_run WHERE session_id = ?", (result["session_id"],))
    assert run["status"] == "completed" and run["verdict"] == result["verdict"] and run["question"] == QUESTION
    assert _rows(db_path, "SELECT count(*) FROM tool_invocation WHERE session_id = ?", (result["session_id"],))[0][0]


def test_bad_input_is_an_error_result_of_one_line(stdio_client):
    """Through the protocol: an error result (not a protocol error, not a traceback); the cases are in test_service."""
    replies: list[Any] = []

    async def scenario() -> None:
        async with stdio_client() as client:
            replies.append(await client.call_tool("query_logs", {"limit": "many", "question": QUESTION}))
            replies.append(await client.call_tool("get_session", {"session": "20990101T000000-abcdef"}))

    run_scenario(scenario)
    assert [reply.is_error for reply in replies] == [True, True]
    assert [_text(reply) for reply in replies] == [
        "query_logs: limit: Input should be a valid integer, unable to parse string as an integer",
        "unknown session '20990101T000000-abcdef' (list sessions with `evcli sessions`)",
    ]


def test_a_session_takes_calls_only_on_its_own_environment(stdio_client, start_http):
    """A session started on the demo environment is refused by a server on another one."""
    replies: list[Any] = []
    edge = start_http("--env", "edge")

    async def scenario() -> None:
        async with stdio_client() as client:
            found = await client.call_tool("query_logs", {**POOL_ERRORS, "question": QUESTION})
        async with http_client(edge.url) as client:
            session_id = found.structured_content["session_id"]
            replies.append(await client.call_tool("query_logs", {"query": "error", "session_id": session_id}))

    run_scenario(scenario)
    (reply,) = replies
    assert reply.is_error
    assert "ran on the packaged demo environment; this server serves environment env_dir=" in _text(reply)


def test_http_with_a_token_refuses_clients_without_it(start_http):
    server = start_http("--token-env", "EVCLI_TEST_MCP_TOKEN", env={"EVCLI_TEST_MCP_TOKEN": "s3cret-token"})
    listed: list[Any] = []

    async def scenario() -> None:
        from mcp import MCPError

        async with http_client(server.url, token="s3cret-token") as client:
            listed.extend((await client.list_tools()).tools)
        with pytest.raises(ExceptionGroup) as wrong_token:
            async with http_client(server.url, token="wrong") as client:
                await client.list_tools()
        assert wrong_token.group_contains(MCPError, match="error response", depth=2)  # the SDK's words for a 401

    run_scenario(scenario)
    assert "query_logs" in [tool.name for tool in listed]
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    request = urllib.request.Request(server.url, data=json.dumps(initialize).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
