"""Prompt caching (issue 23): every request of a role starts with the same bytes, Claude models get Anthropic's
cache marks where litellm documents them, and the cached share a provider reports lands in the store and in
`evcli trace`. Real HTTP against the scripted server; nothing is patched."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from evcli.agents.engine import RoleRequest, ToolCall, Turn
from evcli.agents.executor import tool_schemas
from evcli.agents.llm import LiteLLMEngine, build_messages, with_cache_marks
from evcli.agents.prompts import load_prompt
from evcli.agents.roles import Models
from evcli.gatekeeper.rules import load_rules
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore
from tests.agents.scripted_server import (
    ANTHROPIC_PATH,
    BEDROCK_CONVERSE_PATH,
    ScriptedServer,
    answer,
    calls,
    role_of,
    tool_messages,
)
from tests.cli._util import evcli

MARK = {"type": "ephemeral"}
EXECUTOR_CALLS = [
    ("query_metrics", {"service": "payment-service", "alertname": "HighCPUUsage"}),
    ("query_logs", {"service": "payment-service", "query": "timeout"}),
]
# (prompt tokens, of them cached, completion tokens) of each executor reply, as a provider with a warm cache reports
EXECUTOR_USAGE = [(8000, 0, 40), (9100, 7200, 40), (9900, 8960, 200)]


def usage(prompt: int, completion: int, cached: int | None = None) -> dict[str, Any]:
    details = {} if cached is None else {"prompt_tokens_details": {"cached_tokens": cached}}
    return {"usage": {"prompt_tokens": prompt, "completion_tokens": completion, **details}}


def scripted_model(body: dict[str, Any]) -> dict[str, Any]:
    """Planner, an Executor that calls one tool per reply before answering, Verifier and Composer; only the
    Executor's replies report cached tokens."""
    role = role_of(body)
    if role == "executor":
        done = len(tool_messages(body))
        prompt, cached, completion = EXECUTOR_USAGE[done]
        if done < len(EXECUTOR_CALLS):
            return calls(EXECUTOR_CALLS[done], **usage(prompt, completion, cached))
        document = {"answer_version": "executor_evidence_v2", "claims": [], "missing_info": ["scripted"]}
        return answer(document, **usage(prompt, completion, cached))
    documents = {
        "planner": {"selected_skill": None, "selection_reason": "r", "plan": ["query_metrics"], "reasoning": "r"},
        "verifier": {
            "verdict": "LOW_CONFID",
            "groundedness_score": 0.0,
            "critical_fact_count": 0,
            "claim_checks": [],
            "facts_checked": [],
            "rationale": "no verified claims",
        },
        "composer": {"answer_summary": "No finding.", "recommended_actions": [], "user_facing_answer": "No finding."},
    }
    return answer(documents[str(role)], **usage(1000, 50))


@pytest.fixture(autouse=True)
def api_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-scripted-cache-test-0000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-scripted-cache-test-0000")


@pytest.fixture
def asked(tmp_path):
    """One `ask` through the pipeline, every role played over HTTP: (server, store path, session id)."""
    db = tmp_path / "trace.db"
    with ScriptedServer(scripted_model) as server, TraceStore(db) as store:
        pipeline = Pipeline(
            store=store,
            rules=load_rules(),
            env_spec={},
            models=Models(default="openai/scripted", api_base=server.url + "/v1"),
        )
        session_id = pipeline.ask("Why is payment-service CPU usage high?").session_id
    return server, db, session_id


def dumped(value: Any) -> str:
    """The JSON text of a request part as it was sent (key order kept)."""
    return json.dumps(value, ensure_ascii=False)


# --- a stable prefix -------------------------------------------------------------------------------------


def test_consecutive_executor_requests_repeat_the_previous_request_and_add_to_it(asked):
    server, _, _ = asked
    requests = server.requests_for("executor")

    assert len(requests) == 3  # two tool calls, then the document
    first = requests[0]
    for earlier, later in zip(requests, requests[1:], strict=False):
        # system prompt first, the tool schemas in the same order: the same text in every request of the role
        assert dumped(later["messages"][0]) == dumped(first["messages"][0])
        assert later["messages"][0]["role"] == "system"
        assert dumped(later["tools"]) == dumped(first["tools"])
        # nothing that changes per step comes before the new turns: the earlier request is the later one's prefix
        assert dumped(later["messages"][: len(earlier["messages"])]) == dumped(earlier["messages"])
        assert len(later["messages"]) > len(earlier["messages"])
    assert [tool["function"]["name"] for tool in first["tools"]] == [
        schema["function"]["name"] for schema in tool_schemas()
    ]
    # an OpenAI-compatible server caches a repeated prefix by itself: it is sent no cache mark
    assert all("cache_control" not in dumped(body) for body in server.requests)


# --- the cached share: store and trace ------------------------------------------------------------------


def test_cached_tokens_reported_by_the_provider_are_stored_per_step_and_traced(asked):
    _, db, session_id = asked
    with TraceStore(db) as store:
        steps = store.load(session_id).steps

    executor = [(s.prompt_tokens, s.cached_tokens, s.completion_tokens) for s in steps if s.agent == "executor"]
    assert executor == EXECUTOR_USAGE
    assert {s.agent: s.cached_tokens for s in steps if s.agent != "executor"} == dict.fromkeys(
        ("planner", "verifier", "composer"),
        None,  # the reply reported no cache figure
    )

    traced = evcli("trace", session_id, "--db", db)

    assert traced.exit_code == 0, traced
    lines = traced.stdout.splitlines()
    executor_lines = [line for line in lines if " executor r1." in line]
    assert [line.split(" ms · ", 1)[1] for line in executor_lines] == [
        "tokens 8000+40 · cached 0/8.0k (0%)",
        "tokens 9100+40 · cached 7.2k/9.1k (79%)",
        "tokens 9900+200 · cached 9.0k/9.9k (91%)",
    ]
    planner_line = next(line for line in lines if " planner r1." in line)
    assert planner_line.endswith("tokens 1000+50")  # not reported: no share shown
    prompt = sum(s.prompt_tokens for s in steps)
    completion = sum(s.completion_tokens for s in steps)
    header = next(line for line in lines if "agent steps (" in line)
    cached = 7200 + 8960
    assert header.endswith(
        f"agent steps ({len(steps)}) · tokens {prompt}+{completion} · "
        f"cached {cached / 1000:.1f}k/{prompt / 1000:.1f}k ({cached / prompt:.0%})"
    )

    document = evcli("trace", session_id, "--db", db, "--json").json()
    assert [s.get("cached_tokens") for s in document["steps"] if s["agent"] == "executor"] == [0, 7200, 8960]
    assert all("cached_tokens" not in s for s in document["steps"] if s["agent"] != "executor")


# --- Anthropic's cache marks ----------------------------------------------------------------------------


def executor_request(turns: int) -> RoleRequest:
    transcript = [
        Turn(call=ToolCall(id=f"toolu_{n}", name=name, arguments=arguments), view=f"<evidence {n}>", reply=n)
        for n, (name, arguments) in enumerate(EXECUTOR_CALLS[:turns], start=1)
    ]
    return RoleRequest(
        role="executor",
        prompt=load_prompt("executor"),
        payload={"question": "q"},
        tools=list(tool_schemas()),
        transcript=transcript,
    )


def marks_in(value: Any) -> list[str]:
    """Where a request holds a cache_control, as paths."""
    if isinstance(value, dict):
        here = ["cache_control"] if "cache_control" in value else []
        return here + [f"{key}.{path}" for key, item in value.items() for path in marks_in(item)]
    if isinstance(value, list):
        return [f"{index}.{path}" for index, item in enumerate(value) for path in marks_in(item)]
    return []


def test_a_claude_model_marks_the_end_of_the_system_prompt_and_of_the_conversation():
    anthropic_usage = {"input_tokens": 1900, "cache_read_input_tokens": 7000, "cache_creation_input_tokens": 200}
    with ScriptedServer([calls(EXECUTOR_CALLS[1], usage=anthropic_usage)]) as server:
        engine = LiteLLMEngine("anthropic/claude-sonnet-4-5", api_base=server.url)
        reply = engine.complete(executor_request(turns=1))

    assert server.paths == [ANTHROPIC_PATH]  # litellm spoke Anthropic's Messages API
    (body,) = server.requests
    # the system prompt, unchanged, with the mark on its (one) block: tools and system prompt are cached together
    assert body["system"] == [{"type": "text", "text": load_prompt("executor").text, "cache_control": MARK}]
    # and the end of the conversation: the next step's request reads everything up to here from the cache
    last = body["messages"][-1]
    assert last["role"] == "user" and last["content"][-1]["type"] == "tool_result"
    assert sorted(marks_in(body)) == [
        f"messages.{len(body['messages']) - 1}.content.0.content.0.cache_control",  # in the tool result's text
        "system.0.cache_control",
    ]
    # litellm's usage: every input token in prompt_tokens, the cache read as cached_tokens
    assert (reply.usage.prompt_tokens, reply.usage.cached_tokens) == (1900 + 7000 + 200, 7000)
    assert [call.name for call in reply.tool_calls] == ["query_logs"]


def test_a_claude_model_on_bedrock_gets_cache_points_where_the_marks_are(monkeypatch):
    for name, value in {"AWS_ACCESS_KEY_ID": "AKIDSCRIPTED", "AWS_SECRET_ACCESS_KEY": "s" * 40}.items():
        monkeypatch.setenv(name, value)  # litellm signs the request; the scripted server does not check it
    monkeypatch.setenv("AWS_REGION_NAME", "us-east-1")
    converse_usage = {"inputTokens": 1900, "cacheReadInputTokens": 7000, "cacheWriteInputTokens": 200}
    with ScriptedServer([calls(EXECUTOR_CALLS[1], usage=converse_usage)]) as server:
        engine = LiteLLMEngine("bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0", api_base=server.url)
        reply = engine.complete(executor_request(turns=1))

    assert BEDROCK_CONVERSE_PATH.fullmatch(server.paths[0])  # litellm spoke Bedrock's Converse API
    (body,) = server.requests
    point = {"cachePoint": {"type": "default"}}  # what litellm makes of the mark on Bedrock
    assert body["system"] == [{"text": load_prompt("executor").text}, point]
    last = body["messages"][-1]
    assert [next(iter(block)) for block in last["content"]] == ["toolResult", "cachePoint"]
    assert sum(json.dumps(message).count('"cachePoint"') for message in body["messages"]) == 1
    assert (reply.usage.prompt_tokens, reply.usage.cached_tokens) == (1900 + 7000 + 200, 7000)


def test_a_single_request_role_marks_only_its_system_prompt():
    with ScriptedServer([answer({"verdict": "PASS"})]) as server:
        engine = LiteLLMEngine("anthropic/claude-sonnet-4-5", api_base=server.url)
        request = RoleRequest(role="verifier", prompt=load_prompt("verifier"), payload={"verified_claims": []})
        reply = engine.complete(request)

    (body,) = server.requests
    assert role_of(body) == "verifier"
    assert marks_in(body) == ["system.0.cache_control"]  # its input document is new each time: not worth writing
    assert reply.usage.cached_tokens == 0  # litellm reads Anthropic's usage without a cache read as none read


@pytest.mark.parametrize(
    ("model", "marked"),
    [
        ("anthropic/claude-sonnet-4-5", True),
        ("bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0", True),
        ("vertex_ai/claude-sonnet-4@20250514", True),
        ("openrouter/anthropic/claude-sonnet-4", True),
        ("bedrock/amazon.nova-pro-v1:0", False),
        ("vertex_ai/gemini-2.5-pro", False),  # litellm would create a context cache: another mechanism
        ("openai/gpt-4o", False),  # OpenAI caches a repeated prefix of 1024 tokens or more by itself
        ("openai/claude-via-a-compatible-proxy", False),
    ],
)
def test_which_models_are_sent_cache_marks(model, marked):
    assert LiteLLMEngine(model)._marks_cache() is marked


def test_cache_marks_leave_every_text_as_it_was():
    messages = build_messages(executor_request(turns=2))

    conversation = with_cache_marks(messages, conversation=True)
    single = with_cache_marks(messages, conversation=False)

    def texts(marked: list[dict[str, Any]]) -> list[Any]:
        return [
            "".join(block["text"] for block in m["content"]) if isinstance(m["content"], list) else m["content"]
            for m in marked
        ]

    assert texts(conversation) == texts(single) == [m["content"] for m in messages]
    assert [marks_in(m) for m in conversation] == [
        ["content.0.cache_control"],
        *[[]] * (len(messages) - 2),
        ["content.0.cache_control"],
    ]
    assert [bool(marks_in(m)) for m in single] == [True] + [False] * (len(messages) - 1)
    assert messages == build_messages(executor_request(turns=2))  # the input is not changed
    assert re.match(r"You are the Executor", conversation[0]["content"][0]["text"])
