"""CallBatch (evcli/tools/batch.py) on the packaged snapshots: calls of one reply decided and recorded as one
by one (a widening after a precise query that found nothing, a runbook block already returned, the
offline engine's replies of several calls), each under its own timeout, and given up at once."""

from __future__ import annotations

import sys
import threading
import time
import traceback
from typing import Any

import pytest

from evcli.backends.snapshot import SnapshotBackend, demo_env_dir
from evcli.contracts import ToolInvocation
from evcli.evals.cases import load_cases
from evcli.gatekeeper.rules import load_rules
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore
from evcli.tools import runner
from evcli.tools.batch import CallBatch
from evcli.tools.context import build_environment
from evcli.tools.runner import ToolEnvironment, ToolSettings, stored_guards
from tests.agents.one_by_one import run_in_turn, tool_runner
from tests.conftest import REPO

Call = tuple[str, dict[str, Any]]


class Session:
    """A stored session whose calls are asked as one reply and recorded through the store."""

    def __init__(self, store: TraceStore, env: ToolEnvironment, *, narrow: bool = False) -> None:
        self.store, self.env, self.narrow = store, env, narrow
        self.id = store.create_session("batch test").session_id

    def record(self, invocation):
        return self.store.record_invocation(self.id, invocation, check=stored_guards(invocation, self.env.settings))

    def reply(self, calls: list[Call]) -> list[Any]:
        """The calls as one reply, side by side: what each shows (see `shown`)."""
        history = list(self.store.load(self.id).invocations)
        with CallBatch(self.env, history, self.record, narrow=self.narrow) as reply:
            for name, params in calls:
                reply.ask(name, params)
            return [shown(s.invocation or s.refusal) for s in reply.settle()]

    def in_turn(self, calls: list[Call]) -> list[Any]:
        """The calls run one by one as before (tests/agents/one_by_one.py): what each shows."""
        history = list(self.store.load(self.id).invocations)
        return [shown(outcome) for outcome in run_in_turn(self.env, history, self.record, calls, narrow=self.narrow)]


class Counting(SnapshotBackend):
    """The demo snapshot, counting the log searches that reach it (per service)."""

    def __init__(self) -> None:
        super().__init__(demo_env_dir())
        self.searched: list[str | None] = []

    def query_logs(self, query):
        self.searched.append(query.service)
        return super().query_logs(query)


def on_backend(backend: Any, settings: ToolSettings | None = None) -> ToolEnvironment:
    """The packaged environment's tools with `backend` serving the evidence."""
    env = build_environment(settings=settings)
    env.backend = backend
    return env


@pytest.fixture
def store(db_path):
    with TraceStore(db_path) as opened:
        yield opened


def shown(outcome: ToolInvocation | str | None) -> Any:
    """A refusal's message, or the recorded invocation's id, output and dedup reason (no timings)."""
    if isinstance(outcome, ToolInvocation):
        return (outcome.invocation_id, outcome.output, outcome.dedup_reason)
    return outcome


def test_a_wider_call_after_a_precise_one_that_finds_nothing_is_refused_as_one_by_one(store):
    calls = [
        ("query_logs", {"service": "inventory-service", "query": "NoSuchThing"}),  # precise, finds nothing
        ("query_metrics", {"service": "payment-service"}),
        ("query_logs", {"service": "inventory-service"}),  # drops the keywords: wider
    ]
    results = []
    for run in (Session.reply, Session.in_turn):
        env = on_backend(backend := Counting())
        results.append((run(Session(store, env, narrow=True), calls), backend.searched))

    side_by_side, in_turn = results
    (first, metrics, wider), searched = side_by_side
    assert side_by_side == in_turn
    assert searched == ["inventory-service"]  # the refused call never ran
    assert first[0] == 1 and metrics[0] == 2
    assert wider == (
        "query_logs refused: narrow task — invocation #1 already found no evidence for a precise query and this "
        "call is wider: it loosens the keywords ('NoSuchThing' → '(none)'). Report the no-evidence result instead."
    )


def test_a_call_after_one_that_waited_for_its_turn_is_capped_without_running(store):
    """The wider call waits for the precise one (which finds lines, so it runs at its turn, as the cap's
    second call); the narrower call asked next must wait for it too: started early, it would have run
    before the cap refused it."""
    calls = [
        ("query_logs", {"service": "order-service", "query": "HikariPool"}),  # precise, finds lines
        ("query_logs", {"service": "order-service"}),  # wider: decided once the first is recorded
        ("query_logs", {"service": "order-service", "query": "HikariPool timeout"}),  # narrower: over the cap
    ]
    results = []
    for run in (Session.reply, Session.in_turn):
        env = on_backend(backend := Counting(), ToolSettings(max_calls_per_tool=2))
        results.append((run(Session(store, env, narrow=True), calls), backend.searched))

    side_by_side, in_turn = results
    (first, wider, capped), searched = side_by_side
    assert side_by_side == in_turn
    assert searched == ["order-service", "order-service"]  # the capped call never ran
    assert (first[0], wider[0]) == (1, 2)
    assert capped == "query_logs refused: this session already made 2 calls (cap 2)"


def test_a_runbook_block_an_earlier_call_of_the_reply_returned_is_left_out_as_one_by_one(store):
    calls = [
        ("lookup_knowledge", {"query": "heap dump OOMKilled"}),
        ("query_logs", {"service": "order-service", "query": "OutOfMemoryError"}),
        ("lookup_knowledge", {"query": "OOMKilled heap dump"}),  # the same blocks, asked differently
    ]
    side_by_side = Session(store, build_environment()).reply(calls)

    assert side_by_side == Session(store, build_environment()).in_turn(calls)
    _, output, dedup_reason = side_by_side[2]
    assert output["evidence_blocks"] == [] and "already returned by invocation #1" in dedup_reason


class Hanging(SnapshotBackend):
    """The demo snapshot whose log searches never check their deadline: they wait for `release`."""

    def __init__(self) -> None:
        super().__init__(demo_env_dir())
        self.release = threading.Event()
        self.started = threading.Semaphore(0)

    def query_logs(self, query):
        self.started.release()
        self.release.wait(30)
        return super().query_logs(query)


HANGING_CALLS = [
    ("query_logs", {"service": service}) for service in ("order-service", "user-service", "payment-service")
]


def test_each_call_of_a_reply_has_its_own_timeout_and_they_run_out_together(store):
    env = on_backend(backend := Hanging(), ToolSettings(timeout_s=0.5))
    try:
        started = time.perf_counter()
        session = Session(store, env)
        session.reply(HANGING_CALLS)
        took = time.perf_counter() - started
    finally:
        backend.release.set()

    recorded = store.load(session.id).invocations
    assert [(i.invocation_id, i.error_message) for i in recorded] == [(n, "timed out after 0.5s") for n in (1, 2, 3)]
    # one call: 0.5 s, then up to 1 s for its worker to stop (it never does); three one by one: 4.5 s
    assert 0.5 < took < 2 * 1.5, took


def test_a_batch_given_up_stops_waiting_at_once(store):
    """An interrupt while the calls run (close without settle): nothing is recorded and no thread of
    the batch is left waiting for a backend that never answers."""
    env = on_backend(backend := Hanging())
    session = Session(store, env)
    try:
        reply = CallBatch(env, [], session.record, narrow=False)
        for name, params in HANGING_CALLS:
            reply.ask(name, params)
        for _ in HANGING_CALLS:
            assert backend.started.acquire(timeout=5)
        assert len(waiting_for_calls()) == len(HANGING_CALLS)
        started = time.perf_counter()
        reply.close()
        closed = time.perf_counter() - started
        deadline = time.monotonic() + 1
        while waiting_for_calls() and time.monotonic() < deadline:
            time.sleep(0.01)
        still_waiting = waiting_for_calls()
    finally:
        backend.release.set()

    assert closed < 0.2 and still_waiting == []
    assert store.load(session.id).invocations == []


def waiting_for_calls() -> list[str]:
    """The threads waiting for a call's fetch to end (in `evcli.tools.runner._wait`): the batch's own ones, not
    the fetches stuck in a backend (the calls' kept threads go back to the process's pool, evcli.core.pools)."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return [
        names.get(ident, str(ident))
        for ident, frame in sys._current_frames().items()
        if any(seen.f_code is runner._wait.__code__ for seen, _ in traceback.walk_stack(frame))
    ]


# --- the offline engine, whose replies ask for several calls ---------------------------------------


def broad_cases() -> list[Any]:
    return [case for case in load_cases(REPO / "evcli/evals/suites/diagnosis.toml") if "broad" in case.id]


def recorded(store: TraceStore, session_id: str) -> dict[str, Any]:
    """What a run recorded and answered, without ids, timings or the session's own id."""
    document = store.load(session_id)
    return {
        "invocations": [
            invocation.model_dump(mode="json", exclude={"duration_ms", "created_at"})
            for invocation in document.invocations
        ],
        "executor": [s.output for s in document.stage_outputs if s.stage == "execute"],
        "answer": [s.output for s in document.stage_outputs if s.stage == "compose"],
        "verdict": document.run.verdict,
    }


def test_the_offline_engine_records_and_answers_exactly_as_one_by_one(store, monkeypatch):
    """Each case is run side by side, then one by one as before (tests/agents/one_by_one.py) right after: the
    knowledge index (shared by the runs, its BM25 scores depending on every directory indexed so far) is then
    the same for both."""
    cases = broad_cases()
    assert len(cases) >= 20

    def run(case: Any) -> dict[str, Any]:
        pipeline = Pipeline(store=store, rules=load_rules(), env_spec=case.env_spec())
        return recorded(store, pipeline.ask(case.question).session_id)

    several = 0
    for case in cases:
        side_by_side = run(case)
        with monkeypatch.context() as patched:
            patched.setattr(Pipeline, "_tool_runner", tool_runner)
            assert side_by_side == run(case), case.id
        several += len(side_by_side["invocations"]) > 2
    assert several >= 20  # replies of several calls were run side by side


def test_calls_side_by_side_build_no_ast_objects_in_their_threads(tmp_path, monkeypatch):
    """CPython 3.11 keeps one counter per interpreter while it turns source into `ast` objects, so two threads
    doing it at once fail ("AST constructor recursion depth mismatch", seen in CI): what the calls build on
    first use (pydantic models, numpy.ma) is built before they run side by side, and the metric cache is read
    without numpy's header parser. A whole diagnosis parses no source into `ast` objects outside the main
    thread."""
    import ast

    parsed_in: list[str] = []
    parse = ast.parse

    def recording(*args, **kwargs):
        parsed_in.append(threading.current_thread().name)
        return parse(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", recording)
    monkeypatch.setenv("EVCLI_HOME", str(tmp_path / "home"))
    from evcli.store.db import TraceStore

    with TraceStore(tmp_path / "x.db") as store:
        pipeline = Pipeline(store=store, rules=load_rules(), env_spec={"env_dir": str(demo_env_dir())})
        for question in ("Why is order-service failing?", "why is payment-service CPU high? check its metrics"):
            pipeline.ask(question)
    assert [name for name in parsed_in if name != threading.main_thread().name] == []
