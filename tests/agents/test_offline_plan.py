"""The compiled plan (evcli.agents.offline.plan): the Planner states the calls the Executor then makes.

Each question runs through the real Pipeline on a packaged environment (a real SQLite store, the snapshot
backends); the plan the Planner stored is compared with the invocations the Executor recorded.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evcli.agents.offline.payload import Ask, Call
from evcli.agents.offline.plan import Known, compile_plan
from evcli.backends.snapshot import demo_env_dir
from evcli.contracts import SessionDocument
from evcli.gatekeeper.rules import load_rules
from evcli.messages import catalogue
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore

ENVS = Path(demo_env_dir()).parent / "envs"


def _run(question: str, env_dir: Path, db: Path) -> SessionDocument:
    pipeline = Pipeline(store=TraceStore(db), rules=load_rules(), env_spec={"env_dir": str(env_dir)}, max_steps=8)
    session_id = pipeline.create_session(question).session_id
    pipeline.plan(session_id)
    pipeline.execute(session_id)
    return pipeline.store.load(session_id)


def _made(document: SessionDocument) -> list[str]:
    """The calls the Executor made, by key (validated parameters, defaults filled in)."""
    return [Call(i.tool_name, i.input_params).key for i in document.invocations]


def _stated(document: SessionDocument) -> list[str]:
    """The calls the Planner's steps name (`name(key=value, …) — purpose`), by key."""
    plan = document.latest_stage("plan")
    assert plan is not None
    calls = []
    for step in plan.output["plan"]:
        if " — " not in step:
            continue  # a step that names no call ("then the services what changed ranks first …")
        node = ast.parse(step.split(" — ")[0], mode="eval").body
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            arguments = {str(word.arg): ast.literal_eval(word.value) for word in node.keywords}
            calls.append(Call(node.func.id, arguments).key)
    return calls


QUESTIONS = [  # (environment, question, the tools of calls only results decide): both languages, many kinds
    (demo_env_dir(), "Why is order-service failing? It keeps restarting and checkout requests time out.", ()),
    (demo_env_dir(), "How many ERROR lines did payment-service log?", ()),
    (demo_env_dir(), "when did the first ERROR appear in payment-service?", ()),
    (demo_env_dir(), "Is inventory-service healthy?", ()),
    (demo_env_dir(), "Only confirm whether payment-service currently has a HighCPUUsage alert firing.", ()),
    (demo_env_dir(), "order-service 为什么一直重启？", ()),
    (ENVS / "edge", "which IP sent the most requests to nginx?", ()),
    (ENVS / "mesh", "which service is slow?", ("query_traces",)),  # the traces the search found, by id
]


@pytest.mark.parametrize(("env_dir", "question", "decided"), QUESTIONS, ids=[q for _, q, _ in QUESTIONS])
def test_the_planner_states_the_calls_the_executor_makes(
    env_dir: Path, question: str, decided: tuple[str, ...], tmp_path: Path
) -> None:
    document = _run(question, env_dir, tmp_path / "evcli.db")
    stated, made = _stated(document), _made(document)
    assert stated and made
    assert [call for call in made if call in stated] == stated  # every stated call is made, in that order
    # and nothing else is made but what only a result decides (here: a trace fetched by the id a search found)
    assert {call.split("{")[0] for call in made if call not in stated} <= set(decided)


def test_a_diagnosis_naming_no_service_states_what_changed_first_then_its_suspects(tmp_path: Path) -> None:
    document = _run("what is the root cause of the incident?", demo_env_dir(), tmp_path / "evcli.db")
    plan = document.latest_stage("plan")
    assert plan is not None
    steps = plan.output["plan"]
    assert steps[0].startswith("find_changes(")
    assert steps[-1] == catalogue("en")("plan.then_suspects")
    assert _made(document)[0] == _stated(document)[0]  # what changed is searched before anything else
    changes = next(i for i in document.invocations if i.tool_name == "find_changes")
    suspects = [str(item["service"]) for item in changes.output.get("suspects") or []]
    searched = [i.input_params.get("service") for i in document.invocations if i.tool_name == "query_metrics"]
    assert suspects and suspects[0] in searched  # the first suspect's alerts and series are read next


ALERTS = [
    {"alertname": "HighCPUUsage", "service": "payment-service", "state": "firing"},
    {"alertname": "HighMemory", "service": "order-service", "state": "firing"},
    {"alertname": "DiskFull", "service": "billing", "state": "resolved"},
]


def _ask(**fields: object) -> Ask:
    return Ask(
        **({"language": "en", "narrow": False, "services": (), "alertnames": (), "terms": (), "window": None} | fields)
    )  # type: ignore[arg-type]


def test_laid_out_in_advance_the_environments_alerts_stand_in_for_the_alert_search() -> None:
    plan = compile_plan(_ask(), "why are requests failing?", Known.foreseen(ALERTS))
    searched = [call.arguments.get("service") for call in plan.calls if call.name == "query_metrics"]
    assert searched[1:] == ["payment-service", "order-service"]  # the firing services, after the alert search
    knowledge = next(call for call in plan.calls if call.name == "lookup_knowledge")
    assert knowledge.arguments["alertname"] == "HighCPUUsage"  # the first service's firing alert
    named = compile_plan(_ask(alertnames=("HighMemory",)), "why is HighMemory firing?", Known.foreseen(ALERTS))
    assert [c.arguments.get("service") for c in named.calls if c.name == "query_metrics"][1:] == ["order-service"]


def test_made_the_plan_waits_for_each_phases_results() -> None:
    first = compile_plan(_ask(), "why are requests failing?", Known.made({}, set(), None))
    assert [call.name for call in first.calls] == ["query_metrics"]  # which services alert: nothing else yet
    done = {call.key for call in first.calls}
    second = compile_plan(_ask(), "why are requests failing?", Known.made({}, done, None))
    assert second.calls == first.calls  # the search found nothing (no result): no service to search
