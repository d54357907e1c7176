"""The tool calls of one model reply run side by side (evcli/tools/batch.py), with the outcome of one by one.

Over real HTTP: the scripted OpenAI-compatible server plays every role, and a Loki stand-in on
127.0.0.1 (tests/agents/slow_loki.py) takes a known time for each search. Every test also checks the
concurrency at the stand-in (the searches overlapped), so with MAX_PARALLEL_CALLS = 1 each of them
fails; what the model is shown is compared with the calls run one by one as before
(tests/agents/one_by_one.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from evcli.agents.roles import Models
from evcli.backends.spec import EnvironmentSpec
from evcli.gatekeeper.rules import load_rules
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore
from evcli.tools.context import build_environment
from evcli.tools.runner import ToolSettings
from tests.agents.one_by_one import tool_runner
from tests.agents.scripted_server import ScriptedServer, answer, calls, tool_messages
from tests.agents.slow_loki import MARKER, SlowLoki, start
from tests.agents.test_pipeline_llm import KEY, Model, evidence_blocks, evidence_document

QUESTION = "Why do checkout, payments and search fail?"
ONE_CALL_S = 0.8  # what one search takes at the stand-in


def search(service: str, *words: str) -> tuple[str, dict[str, Any]]:
    return ("query_logs", {"service": service, "query": " ".join((MARKER, *words))})


class Replies:
    """The Executor's replies in turn: a list of calls, or (after the last) its document. Records when each
    reply left and each request arrived, so a test can time what happened in between: the tool calls."""

    def __init__(self, *replies: list[tuple[str, dict[str, Any]]]) -> None:
        self.replies = list(replies)
        self.sent: list[float] = []
        self.arrived: list[float] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.arrived.append(time.perf_counter())
        step = len(self.arrived) - 1
        reply = calls(*self.replies[step]) if step < len(self.replies) else answer(evidence_document())
        self.sent.append(time.perf_counter())
        return reply

    def tool_time(self, step: int = 0) -> float:
        """From the reply asking for calls leaving to the next request arriving: the calls, plus little."""
        return self.arrived[step + 1] - self.sent[step]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture
def loki() -> Iterator[SlowLoki]:
    stand_in, server = start(SlowLoki())
    yield stand_in
    server.shutdown()
    server.server_close()


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def server(model) -> Iterator[ScriptedServer]:
    with ScriptedServer(model) as running:
        yield running


@pytest.fixture
def store(tmp_path) -> Iterator[TraceStore]:
    with TraceStore(tmp_path / "trace.db") as opened:
        yield opened


def ask(model: Model, server: ScriptedServer, store: TraceStore, loki: SlowLoki, replies: Replies, **settings: Any):
    """One run over the Loki stand-in with `replies` as the Executor; the stored session."""
    model.overrides["executor"] = replies
    pipeline = Pipeline(
        store=store,
        rules=load_rules(),
        env_spec={"loki": loki.url},
        models=Models(default="openai/scripted", api_base=server.url + "/v1", retries=0),
    )
    if settings:  # the tools' settings (the call cap) as evcli.tools.context builds them for the run
        spec = EnvironmentSpec.from_config(pipeline.env_spec)
        pipeline._tools = build_environment(spec=spec, settings=ToolSettings(**settings))
    return store.load(pipeline.ask(QUESTION).session_id)


def overlapped(searches) -> bool:
    """Whether every search started before the first of them ended."""
    return max(s.started for s in searches) < min(s.ended for s in searches)


def shown(server: ScriptedServer, request: int) -> list[str]:
    """The tool messages of the `request`-th Executor request, as the model got them."""
    return tool_messages(server.requests_for("executor")[request])


# --- the time of one call ------------------------------------------------------------------------


def test_three_calls_of_one_reply_take_the_time_of_one(model, server, store, loki):
    replies = Replies([search("checkout"), search("payments"), search("search")])
    session = ask(model, server, store, loki, replies)

    searches = loki.marked()
    assert sorted(s.service for s in searches) == ["checkout", "payments", "search"]
    assert overlapped(searches)
    took = replies.tool_time()
    print(f"\nthree calls of {ONE_CALL_S:.1f} s each: {took:.3f} s from the reply to the next request")
    assert ONE_CALL_S < took < 2 * ONE_CALL_S
    assert [(i.invocation_id, i.input_params["service"]) for i in session.invocations] == [
        (1, "checkout"),
        (2, "payments"),
        (3, "search"),
    ]
    assert all(i.duration_ms >= ONE_CALL_S * 1000 for i in session.invocations)


def test_the_model_gets_its_calls_back_in_the_order_it_asked_when_they_finish_the_other_way(model, server, store, loki):
    loki.delays = {"checkout": 1.2, "payments": 0.6, "search": 0.1}
    replies = Replies([search("checkout"), search("payments"), search("search")])
    session = ask(model, server, store, loki, replies)

    finished = sorted(loki.marked(), key=lambda s: s.ended)
    assert [s.service for s in finished] == ["search", "payments", "checkout"]  # the reverse of the ask order
    blocks = evidence_blocks(server.requests_for("executor")[1])
    assert [(b["id"], b["tool"]) for b in blocks] == [(1, "query_logs"), (2, "query_logs"), (3, "query_logs")]
    messages = shown(server, 1)
    assert [m.splitlines()[1] for m in messages] == [
        f"call: query_logs(service='{service}', query='{MARKER}', limit=50)"
        for service in ("checkout", "payments", "search")
    ]
    assert [i.input_params["service"] for i in session.invocations] == ["checkout", "payments", "search"]
    (assistant,) = [m for m in server.requests_for("executor")[1]["messages"] if m["role"] == "assistant"]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["query_logs"] * 3  # one message, as asked
    took = replies.tool_time()
    print(f"\ncalls of 1.2, 0.6 and 0.1 s: {took:.3f} s from the reply to the next request")
    assert 1.2 < took < 2 * 1.2


# --- refusals and the cap: decided as one by one -----------------------------------------------------


def one_by_one(monkeypatch, run):
    """`run()` with the Executor's calls run one after another as before (tests/agents/one_by_one.py)."""
    with monkeypatch.context() as patched:
        patched.setattr(Pipeline, "_tool_runner", tool_runner)
        return run()


_TIMES = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d)|@\d{19}")


def every_tool_message(server: ScriptedServer, since: int = 0) -> list[list[str]]:
    """The tool messages of each Executor request from the `since`-th on, with the stand-in's times (now-based:
    they differ from run to run) written as TIME."""
    return [[_TIMES.sub("TIME", m) for m in tool_messages(body)] for body in server.requests_for("executor")[since:]]


def test_an_identical_call_is_refused_as_one_by_one_and_never_runs(model, server, store, loki, monkeypatch):
    loki.delays = dict.fromkeys(("checkout", "payments", "search"), 0.4)
    script = (
        [search("checkout"), search("payments"), search("checkout")],  # the third repeats the first
        [search("payments"), search("search")],  # the first repeats a call of the reply before
    )
    session = ask(model, server, store, loki, Replies(*script))
    side_by_side = every_tool_message(server)
    first_run = loki.marked()
    requests = len(server.requests_for("executor"))
    one_by_one(monkeypatch, lambda: ask(model, server, store, loki, Replies(*script)))

    assert sorted(s.service for s in first_run) == ["checkout", "payments", "search"]  # refused calls never ran
    assert overlapped(first_run[:2])
    after_first, after_second = side_by_side[1], side_by_side[2]
    assert after_first[2] == (
        '<refused tool="query_logs">query_logs refused: identical to invocation #1 (supported); '
        "cite that invocation instead</refused>"
    )
    assert after_second[3] == (
        '<refused tool="query_logs">query_logs refused: identical to invocation #2 (supported); '
        "cite that invocation instead</refused>"
    )
    assert after_second[4].startswith('<evidence invocation="3" tool="query_logs" status="supported">')
    assert [i.input_params["service"] for i in session.invocations] == ["checkout", "payments", "search"]
    assert every_tool_message(server, requests) == side_by_side  # what running them one by one shows, exactly


def test_the_cap_counts_in_the_order_asked(model, server, store, loki, monkeypatch):
    loki.delays = dict.fromkeys(("checkout", "payments", "search"), 0.4)
    script = ([search("checkout"), search("payments"), search("search"), search("checkout", "connect")],)
    session = ask(model, server, store, loki, Replies(*script), max_calls_per_tool=2)
    side_by_side = every_tool_message(server)
    ran = loki.marked()
    requests = len(server.requests_for("executor"))
    one_by_one(monkeypatch, lambda: ask(model, server, store, loki, Replies(*script), max_calls_per_tool=2))

    assert [s.service for s in sorted(ran, key=lambda s: s.service)] == ["checkout", "payments"]
    assert overlapped(ran)
    refused = '<refused tool="query_logs">query_logs refused: this session already made 2 calls (cap 2)</refused>'
    assert side_by_side[1][2:] == [refused, refused]
    assert [(i.invocation_id, i.input_params["service"]) for i in session.invocations] == [
        (1, "checkout"),
        (2, "payments"),
    ]
    assert every_tool_message(server, requests) == side_by_side


def test_check_claims_sees_every_call_asked_before_it_and_none_after(model, server, store, loki):
    loki.delays = dict.fromkeys(("checkout", "payments", "search"), 0.4)

    def draft(claim_id: str, invocation_id: int) -> dict[str, Any]:
        binding = {
            "source_type": "tool_trace",
            "source_id": "",
            "tool_name": "query_logs",
            "source_invocation_id": invocation_id,
            "raw_path": "$.logs[0]",
            "evidence_excerpt": f"{MARKER} connect timeout after 3000 ms",
        }
        return {
            "claim_id": claim_id,
            "claim_type": "observation",
            "claim_text": "a log line reads upstream connect timeout after 3000 ms",
            "support_level": "direct",
            "evidence_bindings": [binding],
        }

    check = ("check_claims", {"claims": [draft("claim-2", 2), draft("claim-3", 3)]})
    session = ask(
        model, server, store, loki, Replies([search("checkout"), search("payments"), check, search("search")])
    )

    messages = shown(server, 1)
    assert [m.split(" ", 1)[0] for m in messages] == ["<evidence", "<evidence", "<gate", "<evidence"]
    assert messages[3].startswith('<evidence invocation="3" tool="query_logs"')
    gate_lines = dict(line.split(": ", 1) for line in messages[2].splitlines()[1:-1])
    assert "binding.invocation_exists" not in gate_lines["claim-2"]  # #2 was asked before: recorded by then
    assert "fail binding.invocation_exists" in gate_lines["claim-3"]  # #3 was asked after: not yet
    assert overlapped(loki.marked()[:2])
    assert [i.input_params["service"] for i in session.invocations] == ["checkout", "payments", "search"]
    assert session.latest_stage("execute").parse_status["drafts_checked"] == [messages[2]]
