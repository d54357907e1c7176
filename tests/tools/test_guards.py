"""Guards on tool calls within a session (evcli.tools.guards through run_tool): parameter
validation, the per-tool call cap, identical repeats and the narrow-task no-widening rule.

Every refused call must be refused before any backend sees it: the demo snapshot backend is
wrapped in a spy that counts queries.
"""

from __future__ import annotations

import socket

import pytest

from evcli.backends.snapshot import SnapshotBackend, demo_env_dir
from evcli.core.errors import EXIT_USAGE, BadInput
from evcli.store.db import TraceStore
from evcli.tools.context import build_environment
from evcli.tools.guards import ToolRefused
from evcli.tools.runner import SessionView, ToolSettings, run_tool


class SpyBackend:
    """The demo snapshot, counting every query that reaches it."""

    def __init__(self) -> None:
        self._inner = SnapshotBackend(demo_env_dir())
        self.calls: list[tuple[str, dict]] = []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def query_logs(self, query):
        self.calls.append(("query_logs", {"service": query.service, "keywords": query.keywords}))
        return self._inner.query_logs(query)

    def query_metrics(self, **kwargs):
        self.calls.append(("query_metrics", kwargs))
        return self._inner.query_metrics(**kwargs)


def make_env(settings: ToolSettings | None = None):
    env = build_environment(settings=settings)
    spy = SpyBackend()
    env.backend = spy
    return env, spy


@pytest.fixture
def store(db_path):
    with TraceStore(db_path) as trace_store:
        yield trace_store


class Session:
    """A stored session: calls are run with the session's view and recorded, so ids are real."""

    def __init__(self, store: TraceStore, env, *, narrow: bool) -> None:
        self.store, self.env, self.narrow = store, env, narrow
        self.id = store.create_session("guard test", config={"task_scope": "narrow" if narrow else "broad"}).session_id

    def view(self) -> SessionView:
        return SessionView(invocations=self.store.load(self.id).invocations, narrow=self.narrow)

    def call(self, tool: str, params: dict):
        invocation = run_tool(tool, params, self.env, self.view())
        return self.store.record_invocation(self.id, invocation)

    def refused(self, tool: str, params: dict) -> str:
        spy_calls = len(self.env.backend.calls)
        with pytest.raises(ToolRefused) as caught:
            run_tool(tool, params, self.env, self.view())
        assert caught.value.exit_code == EXIT_USAGE
        assert len(self.env.backend.calls) == spy_calls, "a refused call reached the backend"
        return caught.value.message


# --- validation happens before anything else ---------------------------------------------


@pytest.mark.parametrize(
    ("tool", "params", "prefix"),
    [
        ("query_logs", {"service": "order service"}, "query_logs: service: "),
        ("query_logs", {"service": "order-service", "limit": 0}, "query_logs: limit: "),
        ("query_logs", {"service": "order-service", "limit": 501}, "query_logs: limit: "),
        ("query_logs", {"service": "order-service", "window": "yesterday"}, "query_logs: window: "),
        ("query_logs", {"service": "order-service", "query": '"HikariPool'}, "query_logs: query: "),
        ("query_logs", {"service": "order-service", "grep": "x"}, "query_logs: grep: "),
        ("query_metrics", {"service": "payment-service", "window": "45x"}, "query_metrics: window: "),
        ("lookup_knowledge", {"query": "heap", "limit": 0}, "lookup_knowledge: limit: "),
        ("query_profiles", {"service": "order-service"}, "unknown tool 'query_profiles'"),
    ],
)
def test_invalid_parameters_are_bad_input_and_never_reach_the_backend(tool, params, prefix):
    env, spy = make_env()
    with pytest.raises(BadInput) as caught:
        run_tool(tool, params, env)
    assert caught.value.message.startswith(prefix), caught.value.message
    assert caught.value.exit_code == EXIT_USAGE
    assert spy.calls == []


# --- per-session call cap ------------------------------------------------------------------


def test_call_cap_per_tool_and_session(store):
    env, spy = make_env(ToolSettings(max_calls_per_tool=2))
    session = Session(store, env, narrow=False)
    session.call("query_logs", {"service": "order-service", "query": "HikariPool"})
    session.call("query_logs", {"service": "payment-service", "query": "timeout"})
    assert len(spy.calls) == 2

    message = session.refused("query_logs", {"service": "user-service", "query": "slow"})
    assert message == "query_logs refused: this session already made 2 calls (cap 2)"

    # the cap is per tool: another tool still runs, and is capped on its own
    assert (
        session.call("query_metrics", {"service": "payment-service"}).retrieval_details.evidence_status == "supported"
    )
    session.call("query_metrics", {"service": "order-service"})
    assert "query_metrics refused: this session already made 2 calls (cap 2)" == session.refused(
        "query_metrics", {"service": "user-service"}
    )
    # and per session: a fresh session starts from zero
    other = Session(store, env, narrow=False)
    assert other.call("query_logs", {"service": "user-service", "query": "slow"}).invocation_id == 1


def test_failed_calls_count_towards_the_cap(store):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = build_environment(loki=f"http://127.0.0.1:{port}", settings=ToolSettings(max_calls_per_tool=1))
    session = Session(store, env, narrow=False)
    first = session.call("query_logs", {"service": "order-service"})
    assert first.retrieval_details.evidence_status == "failed"
    with pytest.raises(ToolRefused, match=r"already made 1 calls \(cap 1\)"):
        run_tool("query_logs", {"service": "payment-service"}, env, session.view())


# --- identical repeats -------------------------------------------------------------------------


def test_identical_repeat_is_refused_naming_the_earlier_invocation(store):
    env, _ = make_env()
    session = Session(store, env, narrow=False)
    session.call("query_metrics", {"service": "payment-service"})
    first = session.call("query_logs", {"service": "order-service", "query": "HikariPool", "level": "ERROR"})
    assert first.invocation_id == 2

    message = session.refused("query_logs", {"service": "order-service", "query": "HikariPool", "level": "ERROR"})
    assert message == "query_logs refused: identical to invocation #2 (supported); cite that invocation instead"


@pytest.mark.parametrize(
    "same",
    [
        {"service": "order-service", "query": "HikariPool", "level": "ERROR", "limit": 50, "level_strict": False},
        {"service": " order-service ", "query": "HikariPool ", "level": "error"},
        {"query": "HikariPool", "level": "ERROR", "service": "order-service"},
    ],
)
def test_repeats_are_compared_after_validation(store, same):
    """Defaults spelt out, whitespace, level case or key order do not make a call new."""
    env, _ = make_env()
    session = Session(store, env, narrow=False)
    session.call("query_logs", {"service": "order-service", "query": "HikariPool", "level": "ERROR"})
    assert "identical to invocation #1" in session.refused("query_logs", same)


@pytest.mark.parametrize(
    "different",
    [
        {"service": "order-service", "query": "HikariPool", "level": "WARN"},
        {"service": "order-service", "query": "HikariPool", "level": "ERROR", "limit": 10},
        {"service": "order-service", "query": "HikariPool timeout", "level": "ERROR"},
        {"service": "order-service", "query": "HikariPool", "level": "ERROR", "window": "15m"},
    ],
)
def test_a_call_differing_in_any_parameter_is_not_a_repeat(store, different):
    env, spy = make_env()
    session = Session(store, env, narrow=False)
    session.call("query_logs", {"service": "order-service", "query": "HikariPool", "level": "ERROR"})
    second = session.call("query_logs", different)
    assert second.invocation_id == 2
    assert len(spy.calls) == 2


def test_the_repeat_message_carries_the_earlier_status(store):
    env, _ = make_env()
    session = Session(store, env, narrow=False)
    session.call("query_logs", {"service": "inventory-service", "query": "HikariCP"})
    message = session.refused("query_logs", {"service": "inventory-service", "query": "HikariCP"})
    assert "identical to invocation #1 (no_evidence)" in message


# --- narrow task: no widening after a precise query found nothing -----------------------------

PRECISE = {"service": "inventory-service", "query": "HikariCP timeout", "level": "ERROR", "window": "30m"}

WIDER = {
    "service changed": ({**PRECISE, "service": "order-service"}, "drops or changes the service"),
    "fewer keywords": ({**PRECISE, "query": "HikariCP"}, "loosens the keywords"),
    "no keywords": ({**PRECISE, "query": ""}, "loosens the keywords"),
    "a keyword inside another": ({**PRECISE, "query": "Hikari timeout"}, "loosens the keywords"),
    "longer window": ({**PRECISE, "window": "2h"}, "widens the time range (window=30m → window=2h)"),
    "earlier since": ({**PRECISE, "window": None, "since": "-2h"}, "widens the time range (window=30m → since=-2h)"),
    "default range": ({**PRECISE, "window": None}, "widens the time range (window=30m → the default range)"),
    "level dropped": ({key: value for key, value in PRECISE.items() if key != "level"}, "lowers or drops the level"),
    "level lowered": ({**PRECISE, "level": "WARN"}, "lowers or drops the level"),
}

NARROWER = {
    "more keywords": {**PRECISE, "query": "HikariCP timeout pool"},
    "a more specific keyword": {**PRECISE, "query": "HikariCP-1 timeout"},  # lines with it hold HikariCP too
    "shorter window": {**PRECISE, "window": "10m"},
    "later since": {**PRECISE, "window": None, "since": "-10m"},
    "fewer lines": {**PRECISE, "limit": 5},
}


def _narrow_session_after_no_evidence(store, *, narrow: bool) -> Session:
    env, _ = make_env()
    session = Session(store, env, narrow=narrow)
    first = session.call("query_logs", PRECISE)
    assert first.retrieval_details.evidence_status == "no_evidence"
    assert first.invocation_id == 1
    return session


@pytest.mark.parametrize("case", list(WIDER))
def test_narrow_task_refuses_a_wider_query_after_no_evidence(store, case):
    params, reason = WIDER[case]
    session = _narrow_session_after_no_evidence(store, narrow=True)
    message = session.refused("query_logs", params)
    assert message.startswith("query_logs refused: narrow task — invocation #1 already found no evidence"), message
    assert reason in message
    assert "Report the no-evidence result instead" in message


@pytest.mark.parametrize("case", list(WIDER))
def test_broad_task_allows_the_same_wider_query(store, case):
    params, _ = WIDER[case]
    session = _narrow_session_after_no_evidence(store, narrow=False)
    second = session.call("query_logs", params)
    assert second.invocation_id == 2
    assert second.success


@pytest.mark.parametrize("case", list(NARROWER))
def test_narrow_task_allows_a_narrower_query(store, case):
    session = _narrow_session_after_no_evidence(store, narrow=True)
    second = session.call("query_logs", NARROWER[case])
    assert second.invocation_id == 2
    assert second.retrieval_details.evidence_status == "no_evidence"


def test_narrow_task_allows_raising_the_minimum_level(store):
    session = _narrow_session_after_no_evidence(store, narrow=True)
    second = session.call("query_logs", {**PRECISE, "level": "FATAL"})
    assert second.invocation_id == 2


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("query_metrics", {"service": "inventory-service"}),
        ("query_metrics", {"window": "2h"}),
        ("lookup_knowledge", {"query": "HikariCP connection pool"}),
    ],
)
def test_narrow_task_allows_another_tool(store, tool, params):
    session = _narrow_session_after_no_evidence(store, narrow=True)
    second = session.call(tool, params)
    assert second.invocation_id == 2
    assert second.success


def test_narrow_task_widening_is_only_refused_after_no_evidence(store):
    """A precise query that found something may be followed by a wider one."""
    env, _ = make_env()
    session = Session(store, env, narrow=True)
    first = session.call("query_logs", {"service": "order-service", "query": "HikariPool timeout", "level": "ERROR"})
    assert first.retrieval_details.evidence_status == "supported"
    assert session.call("query_logs", {"service": "order-service", "query": "HikariPool"}).invocation_id == 2


def test_narrow_task_an_imprecise_no_evidence_query_does_not_lock_the_session(store):
    """Only a *precise* query (service and keywords) that found nothing forbids widening."""
    env, _ = make_env()
    session = Session(store, env, narrow=True)
    first = session.call("query_logs", {"service": "inventory-service", "level": "FATAL"})
    assert first.retrieval_details.evidence_status == "no_evidence"
    second = session.call("query_logs", {"service": "order-service"})
    assert second.invocation_id == 2


def test_narrow_task_query_metrics_keeps_its_alertname(store):
    env, _ = make_env()
    session = Session(store, env, narrow=True)
    first = session.call("query_metrics", {"alertname": "RedisLatencyHigh", "window": "30m"})
    assert first.retrieval_details.evidence_status == "no_evidence"

    message = session.refused("query_metrics", {"window": "30m"})
    assert "invocation #1 already found no evidence" in message
    assert "drops or changes the alertname (RedisLatencyHigh → any)" in message
    assert "widens the time range (window=30m → window=6h)" in session.refused(
        "query_metrics", {"alertname": "RedisLatencyHigh", "window": "6h"}
    )
    # narrower: the same alert on one service in a shorter window
    assert (
        session.call(
            "query_metrics", {"alertname": "RedisLatencyHigh", "service": "payment-service", "window": "10m"}
        ).invocation_id
        == 2
    )


def test_narrow_task_guard_is_per_tool(store):
    """A no-evidence query_logs does not restrict query_metrics, even a broad one."""
    session = _narrow_session_after_no_evidence(store, narrow=True)
    broad_metrics = session.call("query_metrics", {"window": "1d"})
    assert broad_metrics.success
    assert broad_metrics.invocation_id == 2
