"""m006_step_cached_tokens: the prompt tokens a provider read from its cache, per agent step; a store written
before it upgrades, and its steps read (and export) as they did."""

from __future__ import annotations

import json

from sqlite_utils import Database

from evcli.contracts import AgentStep, SessionDocument
from evcli.store.db import TraceStore
from evcli.store.documents import to_canonical
from evcli.store.migrations import migrations

STAMP = "2026-01-01T00:00:00.000000Z"


def test_a_store_of_the_previous_schema_upgrades_and_its_steps_report_no_cache_figure(db_path):
    db_path.parent.mkdir(parents=True)
    db = Database(db_path)
    migrations.apply(db, stop_before="m006_step_cached_tokens")
    assert "cached_tokens" not in db["agent_step"].columns_dict
    db["diagnosis_run"].insert(
        {"session_id": "old-1", "question": "q", "mode": "chat", "status": "completed", "config": "{}"}
        | dict.fromkeys(("prompt_audit", "self_evaluation", "annotations"), "{}")
        | {"created_at": STAMP, "updated_at": STAMP}
    )
    old_step = {"agent": "executor", "round": 1, "step_index": 1, "model": "openai/m", "has_tool_call": 1}
    old_step |= {"model_input_summary": "", "model_output_summary": "", "duration_ms": 1.0, "status": "completed"}
    db["agent_step"].insert(
        old_step | {"session_id": "old-1", "prompt_tokens": 9100, "completion_tokens": 40, "created_at": STAMP}
    )
    db.conn.close()

    store = TraceStore(db_path)

    assert migrations.pending(store.db) == []
    assert store.db["agent_step"].columns_dict["cached_tokens"] is int
    document = store.load("old-1")
    (step,) = document.steps
    assert (step.prompt_tokens, step.cached_tokens) == (9100, None)
    # a step without a cache figure exports as it did before the column existed
    assert "cached_tokens" not in json.loads(to_canonical(document))["steps"][0]


def test_a_cache_figure_is_stored_and_round_trips_through_export_and_import(tmp_path, db_path):
    store = TraceStore(db_path)
    run = store.create_session("q")
    for index, cached in enumerate((None, 0, 7200), start=1):
        step = AgentStep(agent="executor", step_index=index, prompt_tokens=9100, completion_tokens=40)
        store.record_step(run.session_id, step.model_copy(update={"cached_tokens": cached}))

    exported = to_canonical(store.load(run.session_id))

    assert [s.cached_tokens for s in store.load(run.session_id).steps] == [None, 0, 7200]
    assert [s.get("cached_tokens") for s in json.loads(exported)["steps"]] == [None, 0, 7200]
    assert "cached_tokens" not in json.loads(exported)["steps"][0]  # None: the key is left out, not null
    other = TraceStore(tmp_path / "other.db")
    other.import_document(SessionDocument.model_validate_json(exported))
    assert to_canonical(other.load(run.session_id)) == exported
    raw = other.conn.execute("SELECT cached_tokens FROM agent_step ORDER BY step_index").fetchall()
    assert [row[0] for row in raw] == [None, 0, 7200]
