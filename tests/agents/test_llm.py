"""evcli/agents/llm.py over real HTTP, against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from dataclasses import replace

import pytest

from evcli.agents.engine import EngineError, Prompt, RoleRequest, ToolCall, Turn
from evcli.agents.executor import tool_schemas
from evcli.agents.jsonparse import parse_json_object
from evcli.agents.llm import LiteLLMEngine, build_messages
from evcli.agents.prompts import load_prompt
from evcli.core.errors import BadInput
from evcli.tools.registry import validate_params
from tests.agents.scripted_server import ScriptedServer, answer, calls, error

KEY = "sk-scripted-test-key-123456"
PLAN = {"selected_skill": None, "selection_reason": "r", "plan": ["query_metrics payment-service"], "reasoning": "r"}


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture
def serve():
    """serve(script) -> a started ScriptedServer, stopped after the test."""
    servers: list[ScriptedServer] = []

    def start(script) -> ScriptedServer:
        servers.append(ScriptedServer(script).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def engine_for(server: ScriptedServer, **options) -> LiteLLMEngine:
    return LiteLLMEngine("openai/scripted", api_base=server.url + "/v1", **options)


def planner_request(payload: dict | None = None) -> RoleRequest:
    return RoleRequest(
        role="planner",
        prompt=load_prompt("planner"),
        payload=payload or {"question": "q"},
        response_schema={"type": "object"},
    )


def executor_request(transcript: list[Turn] | None = None) -> RoleRequest:
    return RoleRequest(
        role="executor",
        prompt=load_prompt("executor"),
        payload={"question": "q"},
        tools=list(tool_schemas()),
        transcript=transcript or [],
        response_schema={"type": "object"},
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- answers -------------------------------------------------------------------------


def test_plain_json_answer_and_what_the_model_was_shown(serve):
    server = serve([answer(PLAN)])
    payload = {"question": "支付服务 CPU 为什么高?", "language": "zh"}

    reply = engine_for(server).complete(planner_request(payload))

    assert json.loads(reply.text) == PLAN
    assert reply.tool_calls == []
    assert reply.model == "scripted"
    body = server.requests[0]
    assert server.paths == ["/v1/chat/completions"]
    assert body["model"] == "scripted"
    system, user = body["messages"]
    assert system == {"role": "system", "content": load_prompt("planner").text}
    intro, document = user["content"].split("\n", 1)
    assert "input document" in intro
    assert json.loads(document) == payload
    assert "支付服务" in document  # ensure_ascii=False: the model reads the question as written
    assert body["response_format"] == {"type": "json_object"}
    assert "tools" not in body


def test_fenced_json_passes_through_as_text(serve):
    fenced = "```json\n" + json.dumps(PLAN) + "\n```"
    server = serve([answer(fenced)])

    reply = engine_for(server).complete(planner_request())

    assert reply.text == fenced  # extracting the document is the role's job, not the adapter's
    assert parse_json_object(reply.text) == PLAN


def test_tool_calls_are_parsed_and_undecodable_arguments_reach_the_tool_layer(serve):
    server = serve(
        [
            calls(
                ("query_metrics", {"service": "payment-service", "alertname": "HighCPUUsage"}),
                ("query_logs", '{"service": "payment-service", "query": '),
            )
        ]
    )

    reply = engine_for(server).complete(executor_request())

    good, broken = reply.tool_calls
    assert good.name == "query_metrics"
    assert good.arguments == {"service": "payment-service", "alertname": "HighCPUUsage"}
    assert good.id.startswith("call_")
    assert broken.arguments == {"__invalid_json__": '{"service": "payment-service", "query": '}
    with pytest.raises(BadInput, match="^query_logs: "):  # rejected as a bad call, not a crash
        validate_params(broken.name, broken.arguments)
    with pytest.raises(BadInput, match="__invalid_json__"):
        validate_params("query_metrics", broken.arguments)
    assert reply.text == ""


def test_usage_is_recorded(serve):
    server = serve([answer(PLAN, usage={"prompt_tokens": 1234, "completion_tokens": 56})])

    reply = engine_for(server).complete(planner_request())

    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (1234, 56)


def test_request_carries_tools_and_the_transcript_as_tool_messages(serve):
    from evcli.tools.context import build_environment
    from evcli.tools.runner import run_tool
    from evcli.tools.view import model_view

    invocation = run_tool(
        "query_metrics", {"service": "payment-service", "alertname": "HighCPUUsage"}, build_environment(None)
    ).model_copy(update={"invocation_id": 1})
    refused = ToolCall(id="call_b", name="query_logs", arguments={"service": "nope!"})
    transcript = [
        Turn(
            call=ToolCall(id="call_a", name="query_metrics", arguments=invocation.input_params),
            view=model_view(invocation),
            invocation=invocation,
        ),
        Turn(call=refused, view='<refused tool="query_logs">query_logs: service: bad name</refused>'),
    ]
    server = serve([answer("{}")])

    engine_for(server).complete(executor_request(transcript))

    body = server.requests[0]
    assert body["tools"] == list(tool_schemas())
    assert body["tool_choice"] == "auto"
    assert "response_format" not in body  # JSON mode only on a call that offers no tools
    messages = body["messages"][2:]
    assert [m["role"] for m in messages] == ["assistant", "tool", "assistant", "tool"]
    (first_call,) = messages[0]["tool_calls"]
    assert first_call["id"] == "call_a"
    assert first_call["function"]["name"] == "query_metrics"
    assert json.loads(first_call["function"]["arguments"]) == invocation.input_params
    assert messages[1]["tool_call_id"] == "call_a"
    assert messages[1]["content"] == model_view(invocation)
    assert messages[1]["content"].startswith('<evidence invocation="1" tool="query_metrics" status="supported">')
    assert "$.alerts[0]: HighCPUUsage" in messages[1]["content"]
    assert messages[3] == {"role": "tool", "tool_call_id": "call_b", "content": transcript[1].view}


def test_last_executor_step_keeps_the_tools_but_calls_none_and_asks_for_json(serve):
    server = serve([answer("{}")])
    tools = list(tool_schemas())
    transcript = [Turn(call=ToolCall(id="", name="query_metrics", arguments={}), view="<evidence/>")]
    request = RoleRequest(
        role="executor",
        prompt=load_prompt("executor"),
        payload={"question": "q"},
        tools=tools,
        transcript=transcript,
        response_schema={"type": "object"},
        last_step=True,
    )

    engine_for(server).complete(request)

    body = server.requests[0]
    # the same tools as every step before (a provider's prompt cache reads the whole earlier request) ...
    assert [tool["function"]["name"] for tool in body["tools"]] == [tool["function"]["name"] for tool in tools]
    assert body["tool_choice"] == "none"  # ... but none may be called
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][2]["tool_calls"][0]["id"] == body["messages"][3]["tool_call_id"] == "call_1"
    assert body["messages"][-1]["role"] == "user" and "last step" in body["messages"][-1]["content"]
    earlier = build_messages(replace(request, last_step=False))
    sent = [{key: value for key, value in message.items() if value is not None} for message in body["messages"]]
    expected = [{key: value for key, value in message.items() if value is not None} for message in earlier]
    assert sent[: len(expected)] == expected and len(sent) == len(expected) + 1  # the step before is its prefix


def test_a_provider_rejecting_response_format_is_asked_once_more_without_it(serve):
    server = serve([error(400, "response_format is not supported by this model"), answer(PLAN)])

    reply = engine_for(server).complete(planner_request())

    assert json.loads(reply.text) == PLAN
    assert [("response_format" in body) for body in server.requests] == [True, False]


def test_a_bad_request_without_response_format_is_not_retried(serve):
    server = serve([error(400, "messages: invalid role")])
    request = RoleRequest(role="planner", prompt=load_prompt("planner"), payload={})  # no schema, no JSON mode

    with pytest.raises(EngineError) as caught:
        engine_for(server).complete(request)

    assert caught.value.retryable is False
    assert "rejected the request: messages: invalid role" in caught.value.message
    assert len(server.requests) == 1


# --- failures ------------------------------------------------------------------------


def test_server_error_is_asked_again_with_backoff_then_reported(serve):
    server = serve([error(500, "upstream exploded")] * 3)

    with pytest.raises(EngineError) as caught:
        engine_for(server, retries=2, backoff=0.01).complete(planner_request())

    assert caught.value.retryable is True
    assert "HTTP 500" in caught.value.message and "upstream exploded" in caught.value.message
    assert len(server.requests) == 3  # our retries only: litellm's and the HTTP client's are off


def test_rate_limit_then_success_is_one_answer(serve):
    server = serve([error(429, "slow down"), answer(PLAN)])

    reply = engine_for(server, backoff=0.01).complete(planner_request())

    assert json.loads(reply.text) == PLAN
    assert len(server.requests) == 2


def test_rate_limit_is_retryable(serve):
    server = serve([error(429, "slow down")])

    with pytest.raises(EngineError) as caught:
        engine_for(server, retries=0).complete(planner_request())

    assert caught.value.retryable is True
    assert "rate limited" in caught.value.message


def test_sleeping_past_the_timeout_is_retryable(serve):
    server = serve([{"sleep": 1.5, **answer(PLAN)}])

    with pytest.raises(EngineError) as caught:
        engine_for(server, timeout=0.5).complete(planner_request())

    assert caught.value.retryable is True
    assert caught.value.message == f"model openai/scripted at {server.url}/v1 did not answer within 0.5s"


def test_unauthorized_names_the_key_variable_and_never_the_key(serve):
    server = serve([error(401, f"Incorrect API key provided: {KEY}")])

    with pytest.raises(EngineError) as caught:
        engine_for(server).complete(planner_request())

    assert caught.value.retryable is False
    assert caught.value.message == "OPENAI_API_KEY is not set or invalid for model openai/scripted"
    assert KEY not in str(caught.value)


def test_missing_key_fails_before_any_network_call(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")

    with pytest.raises(EngineError) as caught:
        LiteLLMEngine("openai/gpt-4o-mini", timeout=2).complete(planner_request())

    assert caught.value.retryable is False
    assert caught.value.message == "OPENAI_API_KEY is not set or invalid for model openai/gpt-4o-mini"


def test_a_named_key_variable_is_used_and_reported(serve, monkeypatch):
    server = serve([answer(PLAN), error(401, "no")])
    monkeypatch.setenv("MY_GATEWAY_KEY", "gw-secret-value")
    engine = engine_for(server, api_key_env="MY_GATEWAY_KEY")

    engine.complete(planner_request())
    with pytest.raises(EngineError) as caught:
        engine.complete(planner_request())

    assert caught.value.message == "MY_GATEWAY_KEY is not set or invalid for model openai/scripted"
    monkeypatch.delenv("MY_GATEWAY_KEY")
    with pytest.raises(EngineError, match="^MY_GATEWAY_KEY is not set"):
        engine.complete(planner_request())
    assert len(server.requests) == 2


def test_an_openai_compatible_server_needs_no_key(serve, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    server = serve([answer(PLAN)])

    assert json.loads(engine_for(server).complete(planner_request()).text) == PLAN


def test_unreachable_server_names_the_url():
    url = f"http://127.0.0.1:{closed_port()}/v1"

    with pytest.raises(EngineError) as caught:
        LiteLLMEngine("openai/scripted", api_base=url, timeout=5).complete(planner_request())

    assert caught.value.message.startswith(f"cannot reach model server at {url}")
    assert "\n" not in caught.value.message
    assert caught.value.retryable is True


def test_unknown_model_is_not_retryable(serve):
    server = serve([error(404, "The model `scripted` does not exist")])

    with pytest.raises(EngineError) as caught:
        engine_for(server).complete(planner_request())

    assert caught.value.retryable is False
    assert "was not found" in caught.value.message


def test_a_reply_that_is_not_a_chat_completion_is_a_one_line_error(serve):
    server = serve([{"raw": "<html>502 from a proxy</html>"}])

    with pytest.raises(EngineError) as caught:
        engine_for(server).complete(planner_request())

    assert "\n" not in caught.value.message
    assert caught.value.message.startswith(f"model openai/scripted at {server.url}/v1 failed")


# --- wiring ---------------------------------------------------------------------------


def test_engine_name_is_the_model_string():
    assert LiteLLMEngine("anthropic/claude-x").name == "anthropic/claude-x"


def test_build_engines_shares_one_engine_for_one_model(serve):
    from evcli.agents.roles import Models, build_engines

    url = serve([]).url + "/v1"
    engines = build_engines(Models(default="openai/scripted", api_base=url, timeout=7, max_tokens=300, retries=1))

    assert {id(engine) for engine in engines.values()} == {id(engines["planner"])}
    assert isinstance(engines["verifier"], LiteLLMEngine)
    assert (engines["verifier"].api_base, engines["verifier"].timeout) == (url, 7)
    assert (engines["verifier"].max_tokens, engines["verifier"].retries) == (300, 1)


def test_a_role_with_its_own_limits_gets_its_own_engine(serve):
    from evcli.agents.roles import CallLimits, Models, build_engines

    slow = CallLimits(timeout=120, max_tokens=64, retries=0)
    models = Models(
        default="openai/scripted", api_base=serve([]).url + "/v1", timeout=5, role_limits={"executor": slow}
    )

    engines = build_engines(models)

    assert (engines["executor"].timeout, engines["executor"].max_tokens, engines["executor"].retries) == (120, 64, 0)
    assert engines["planner"] is engines["verifier"] is not engines["executor"]
    assert engines["planner"].timeout == 5


def test_importing_the_adapter_does_not_import_litellm():
    code = "import sys, evcli.agents.llm, evcli.pipeline; assert 'litellm' not in sys.modules, 'litellm imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_prompt_text_is_the_system_message_verbatim(serve):
    server = serve([answer("{}")])
    prompt = Prompt(name="planner", version="t", resource="prompts/planner.md", text="You are the Planner.\nline 2")

    engine_for(server).complete(RoleRequest(role="planner", prompt=prompt, payload={}))

    assert server.requests[0]["messages"][0]["content"] == prompt.text
    assert "response_format" not in server.requests[0]  # no schema asked for


# --- limits, structured output, repair ---------------------------------------------------


def test_a_call_past_its_timeout_closes_the_connection(serve):
    server = serve([{"sleep": 1.0, **answer(PLAN)}])

    with pytest.raises(EngineError, match="did not answer within 0.3s"):
        engine_for(server, timeout=0.3).complete(planner_request())

    server.stop()  # joins the handler: it has looked at the connection after its sleep
    assert server.abandoned == 1  # the server could stop generating: nobody waits for the answer


def test_max_tokens_is_sent_and_absent_when_unset(serve):
    server = serve([answer(PLAN), answer(PLAN)])

    engine_for(server, max_tokens=256).complete(planner_request())
    engine_for(server).complete(planner_request())

    assert server.requests[0]["max_tokens"] == 256
    assert "max_tokens" not in server.requests[1]


def test_a_model_with_schema_support_is_asked_for_the_role_schema(serve):
    server = serve([answer(PLAN)])
    schema = {"type": "object", "properties": {"plan": {"type": "array"}}}
    request = RoleRequest(role="planner", prompt=load_prompt("planner"), payload={}, response_schema=schema)

    LiteLLMEngine("openai/gpt-4o-mini", api_base=server.url + "/v1").complete(request)

    response_format = server.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "planner_output"
    assert response_format["json_schema"]["schema"]["properties"] == schema["properties"]


def test_a_repair_request_carries_the_unusable_reply_and_the_problem(serve):
    from evcli.agents.engine import Repair

    server = serve([answer(PLAN)])
    request = planner_request()
    repaired = RoleRequest(
        role=request.role,
        prompt=request.prompt,
        payload=request.payload,
        response_schema=request.response_schema,
        repair=Repair(reply="Sure, here you go", problem="the reply is prose, not one JSON document"),
    )

    engine_for(server).complete(repaired)

    *_, assistant, user = server.requests[0]["messages"]
    assert assistant == {"role": "assistant", "content": "Sure, here you go"}
    assert user["role"] == "user" and "the reply is prose, not one JSON document" in user["content"]


def test_a_200_body_that_is_not_json_is_a_server_error_asked_again(serve):
    server = serve([{"raw": "not json at all"}, answer(PLAN)])

    reply = engine_for(server, backoff=0.01).complete(planner_request())

    assert json.loads(reply.text) == PLAN
    assert len(server.requests) == 2


def test_every_tool_parameter_is_described_to_the_model():
    # the model is told what each parameter takes (with an example), from the same text `evcli tool --help` shows
    from evcli.agents.executor import tool_schemas
    from evcli.tools import registry

    for schema in tool_schemas()[:-1]:  # the last is check_claims, the Gatekeeper (no registry tool)
        function = schema["function"]
        spec = registry.get(function["name"])
        for name, parameter in function["parameters"]["properties"].items():
            assert parameter.get("description") == spec.parameter_help(name), (function["name"], name)
            assert parameter["description"], (function["name"], name)
    query = next(s for s in tool_schemas() if s["function"]["name"] == "query_logs")["function"]["parameters"]
    assert "ANDed" in query["properties"]["query"]["description"]
    assert "30m, 2h" in query["properties"]["window"]["description"]


def test_the_executor_prompt_states_every_enabled_gate_rule():
    from evcli.agents.prompts import load_prompt
    from evcli.gatekeeper.rules import load_rules

    text = load_prompt("executor").text
    assert "{{" not in text
    for rule in load_rules().rules.values():
        assert (f"- {rule.id} ({rule.default_severity}): {rule.description}" in text) is rule.enabled


def test_calls_of_one_reply_go_back_as_one_assistant_message_with_its_text(serve):
    # a model asking for two calls at once (and saying why) sees that reply as it wrote it, then both results
    first = Turn(
        call=ToolCall(id="call_a", name="query_metrics", arguments={"service": "payment-service"}),
        view="<evidence a/>",
        reply=1,
        text="Checking metrics and logs together.",
    )
    second = Turn(call=ToolCall(id="call_b", name="query_logs", arguments={}), view="<evidence b/>", reply=1)
    third = Turn(call=ToolCall(id="call_c", name="lookup_knowledge", arguments={"query": "cpu"}), view="<c/>", reply=2)
    server = serve([answer("{}")])

    engine_for(server).complete(executor_request([first, second, third]))

    messages = server.requests[0]["messages"][2:]
    assert [m["role"] for m in messages] == ["assistant", "tool", "tool", "assistant", "tool"]
    assert messages[0]["content"] == "Checking metrics and logs together."
    assert [c["id"] for c in messages[0]["tool_calls"]] == ["call_a", "call_b"]
    assert [m["tool_call_id"] for m in messages[1:3]] == ["call_a", "call_b"]
    assert not messages[3].get("content") and [c["id"] for c in messages[3]["tool_calls"]] == ["call_c"]


# --- the context budget --------------------------------------------------------------------------


def _big_turn(number: int, reply: int) -> Turn:
    refs = "\n".join(f"$.logs[{i}]: logs/app.log:{i} ERROR request {number}-{i} failed " + "x" * 400 for i in range(6))
    view = f'<evidence invocation="{number}" tool="query_logs" status="supported">\ncall: query_logs()\n{refs}\n</evidence>'
    return Turn(
        call=ToolCall(id=f"call_{number}", name="query_logs", arguments={"query": str(number)}), view=view, reply=reply
    )


def test_over_the_budget_the_oldest_evidence_is_cut_to_short_refs(serve, monkeypatch):
    """EVCLI_CONTEXT_TOKENS sets the budget: what goes over HTTP fits it by cutting the oldest evidence
    first, each of its refs keeping its first characters verbatim, with a line that says it was cut."""
    import math

    from evcli.agents.llm import CHARS_PER_TOKEN, CONTEXT_SHARE, build_messages

    transcript = [_big_turn(1, 1), _big_turn(2, 2), _big_turn(3, 3)]
    whole = sum(len(m.get("content") or "") for m in build_messages(executor_request(transcript)))
    tokens = math.ceil((whole - 1000) / (CONTEXT_SHARE * CHARS_PER_TOKEN))  # one block cut is enough
    monkeypatch.setenv("EVCLI_CONTEXT_TOKENS", str(tokens))
    server = serve([answer("{}")])
    engine = engine_for(server)

    engine.complete(executor_request(transcript))

    messages = server.requests[0]["messages"]
    tools = [m["content"] for m in messages if m["role"] == "tool"]
    assert sum(len(m.get("content") or "") for m in messages) <= engine.context_chars() < whole
    assert tools[1:] == [turn.view for turn in transcript[1:]]  # only the oldest was cut
    assert "trimmed: refs cut to 120 characters" in tools[0]
    first_ref = next(line for line in tools[0].splitlines() if line.startswith("$.logs[0]: "))
    original = next(line for line in transcript[0].view.splitlines() if line.startswith("$.logs[0]: "))
    assert first_ref.endswith("…") and original.startswith(first_ref[:-1])  # still a verbatim prefix


def test_far_over_the_budget_every_older_block_is_cut_and_the_newest_kept(serve, monkeypatch):
    monkeypatch.setenv("EVCLI_CONTEXT_TOKENS", "100")
    transcript = [_big_turn(1, 1), _big_turn(2, 2), _big_turn(3, 3)]
    server = serve([answer("{}")])

    engine_for(server).complete(executor_request(transcript))

    tools = [m["content"] for m in server.requests[0]["messages"] if m["role"] == "tool"]
    assert all("trimmed: refs cut" in view for view in tools[:2])
    assert tools[2] == transcript[2].view  # the evidence the model is reading now is whole


def test_within_the_budget_nothing_is_cut(serve, monkeypatch):
    monkeypatch.delenv("EVCLI_CONTEXT_TOKENS", raising=False)
    transcript = [_big_turn(1, 1), _big_turn(2, 2)]
    server = serve([answer("{}")])

    engine_for(server).complete(executor_request(transcript))

    tools = [m["content"] for m in server.requests[0]["messages"] if m["role"] == "tool"]
    assert tools == [turn.view for turn in transcript]  # an unmapped model gets DEFAULT_CONTEXT_TOKENS
