"""`evcli trace SESSION|FILE`: the whole story of a session, as a tree or as the export document."""

from __future__ import annotations

import json

import pytest

from tests.cli._util import (
    assert_clean_error,
    evcli,
    gate_rows,
    import_sample,
    kind_of,
    load_json,
    sample_files,
    snapshot,
)
from tests.conftest import sample

BASES = [p for p in sample_files() if kind_of(p) == "base"]


def _claims(document):
    execute = [s for s in document["stage_outputs"] if s["stage"] == "execute"][-1]
    return execute["output"]["claims"]


def test_trace_stored_base_session_shows_the_whole_story(tmp_path):
    db = tmp_path / "x.db"
    path = sample("broad-order-service")
    document = load_json(path)
    sid = import_sample(path, db)
    assert evcli("gate", sid, "--db", db).exit_code == 0  # a second gate result for the history
    before = snapshot(db)

    run = evcli("trace", sid, "--db", db)

    assert run.exit_code == 0, run
    assert run.stderr == ""
    out = run.stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"session {sid} · chat · status completed · verdict PASS · ")
    assert f"question: {document['run']['question']}" in out
    assert f"tool invocations ({len(document['invocations'])})" in out
    for invocation in document["invocations"]:
        assert f"#{invocation['invocation_id']} {invocation['tool_name']}(" in out, invocation["invocation_id"]
    claims = _claims(document)
    assert len(claims) == 6
    assert f"executor · round 1 · COMPLETED · {len(claims)} claims" in out
    for claim in claims:
        assert f"{claim['claim_id']} {claim['claim_type']}: {claim['claim_text']}" in out, claim["claim_id"]
    # Gate history: the imported result and the new one, both pass.
    assert "gate results (2)" in out
    history = [line for line in lines if "· round 1 · pass/none · gatekeeper-rules-v1 · failed: none" in line]
    assert len(history) == 2
    assert "#1 " + document["gate_results"][0]["created_at"] in history[0]
    assert "#2 " in history[1]
    # Each binding is marked with its status in the newest gate result.
    assert sum(line.rstrip().endswith("pass") and "“" in line for line in lines) == 7
    assert "verifier · PASS · groundedness 1.0" in out
    assert "agent steps (4)" in out
    # trace only reads.
    assert snapshot(db) == before


def test_trace_shows_failed_gate_history_of_a_fault(tmp_path):
    db = tmp_path / "x.db"
    sid = import_sample(sample("fault-duplicate-item-binding"), db)
    assert evcli("gate", sid, "--db", db).exit_code == 3

    run = evcli("trace", sid, "--db", db)

    assert run.exit_code == 0, run
    lines = run.stdout.splitlines()
    assert "gate results (1)" in run.stdout
    assert any("#1 " in line and "fail/low_confid" in line and "failed: binding.unique_item" in line for line in lines)
    binding_lines = [line for line in lines if "query_metrics #1 $.alerts[0] “" in line]
    assert [line.rstrip().rsplit(" ", 1)[-1] for line in binding_lines] == ["pass", "fail"]


def test_trace_of_ungated_session_marks_bindings_not_gated(tmp_path):
    db = tmp_path / "x.db"
    sid = import_sample(sample("fault-field-absent"), db)

    run = evcli("trace", sid, "--db", db)

    assert run.exit_code == 0, run
    assert "gate results (0)" in run.stdout
    assert "$.alerts[0].detail" in run.stdout
    assert any(line.rstrip().endswith("not gated") for line in run.stdout.splitlines())
    assert gate_rows(db, sid) == []


def test_trace_shows_non_ascii_question(tmp_path):
    db = tmp_path / "x.db"
    path = sample("negative-inventory-hikaricp")
    sid = import_sample(path, db)

    run = evcli("trace", sid, "--db", db)

    assert run.exit_code == 0, run
    question = load_json(path)["run"]["question"]
    assert any(ord(ch) > 127 for ch in question)
    assert f"question: {question}" in run.stdout


@pytest.mark.parametrize("path", BASES, ids=lambda p: p.stem)
def test_trace_json_of_stored_session_equals_the_export_document(path, tmp_path):
    db = tmp_path / "x.db"
    sid = import_sample(path, db)

    run = evcli("trace", sid, "--db", db, "--json")

    assert run.exit_code == 0, run
    assert run.stderr == ""
    assert json.loads(run.stdout) == load_json(path)


@pytest.mark.parametrize("path", sample_files(), ids=lambda p: p.stem)
def test_trace_json_of_file_equals_the_file(path, db_path):
    run = evcli("trace", path, "--json")

    assert run.exit_code == 0, run
    assert json.loads(run.stdout) == load_json(path)
    assert not db_path.exists()


def test_trace_of_file_needs_no_store(db_path, tmp_path):
    path = sample("narrow-payment-highcpu")

    run = evcli("trace", path)

    assert run.exit_code == 0, run
    assert "question: Only confirm whether payment-service currently has a HighCPUUsage alert firing." in run.stdout
    assert "#1 query_metrics(alertname=HighCPUUsage, service=payment-service, window=30m) · supported" in run.stdout
    assert "claim-1 observation:" in run.stdout
    assert not db_path.exists()

    # A --db that does not exist does not matter for a file either.
    run = evcli("trace", path, "--db", tmp_path / "missing.db")
    assert run.exit_code == 0, run
    assert not (tmp_path / "missing.db").exists()


def test_trace_unknown_session(tmp_path):
    db = tmp_path / "x.db"
    import_sample(sample("narrow-payment-highcpu"), db)

    assert_clean_error(evcli("trace", "nope-123", "--db", db), 2, "unknown session 'nope-123'")


def test_trace_missing_store(tmp_path):
    missing = tmp_path / "missing.db"

    assert_clean_error(evcli("trace", "sample-narrow-payment-highcpu", "--db", missing), 1, "no trace store")
    assert not missing.exists()


def test_trace_invalid_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"run": ', encoding="utf-8")

    assert_clean_error(evcli("trace", path), 2, "is not valid JSON")


# --- product bugs ---------------------------------------------------------------------------------


def _with_raw_path(tmp_path, raw_path):
    document = load_json(sample("narrow-payment-highcpu"))
    _claims(document)[0]["evidence_bindings"][0]["raw_path"] = raw_path
    path = tmp_path / "raw-path.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_trace_shows_cited_raw_path_verbatim(tmp_path):
    path = _with_raw_path(tmp_path, "$.alerts[i]")
    gate = evcli("gate", path)
    assert gate.exit_code == 4 and "$.alerts[i]" in gate.stdout  # gate shows it

    run = evcli("trace", path)

    assert run.exit_code == 0, run
    assert "query_metrics #1 $.alerts[i] “" in run.stdout


def test_trace_survives_markup_like_raw_path(tmp_path):
    path = _with_raw_path(tmp_path, "$.alerts[/]")

    run = evcli("trace", path)

    assert run.exit_code == 0, run
    assert "query_metrics #1 $.alerts[/] “" in run.stdout


# --- matched facts --------------------------------------------------------------------------------


def _fact_lines(stdout: str) -> list[str]:
    """The lines under a binding that state one matched fact (without the tree's guides)."""
    shown = [line.split("── ", 1)[-1].rstrip() for line in stdout.splitlines()]
    return [line for line in shown if " = $." in line or " ≠ $." in line or line.endswith(": no field states it")]


def test_trace_shows_the_facts_the_gate_matched_under_each_binding():
    document = load_json(sample("broad-order-service"))
    facts = [
        fact for binding in document["gate_results"][-1]["result"]["checked_bindings"] for fact in binding["facts"]
    ]

    run = evcli("trace", sample("broad-order-service"))

    assert run.exit_code == 0, run
    lines = run.stdout.splitlines()
    assert _fact_lines(run.stdout) == [f"{f['claim']} = {f['field']} {f['evidence']}" for f in facts]
    binding = next(i for i, line in enumerate(lines) if "query_metrics #1 $.alerts[0] “" in line)
    assert [line.split("── ", 1)[-1] for line in lines[binding + 1 : binding + 4]] == [
        "firing = $.alerts[0].state firing",
        "91% = $.alerts[0].value 91.0%",
        "18 minutes = $.alerts[0].duration 18m",
    ]


def test_trace_shows_a_fact_that_failed_and_one_no_field_states(tmp_path):
    db = tmp_path / "x.db"
    sid = import_sample(sample("fault-fact-unit-changed"), db)
    assert evcli("gate", sid, "--db", db).exit_code == 4
    stored = json.loads(gate_rows(db, sid)[-1]["result"])
    failed = [f for b in stored["checked_bindings"] for f in b["facts"] if not f["ok"]]
    assert failed and "claim.facts_match" in stored["failed_rules"]

    run = evcli("trace", sid, "--db", db)

    assert run.exit_code == 0, run
    assert "3.8MB ≠ $.series[0].max 3.8GB" in _fact_lines(run.stdout)
    assert [line for line in _fact_lines(run.stdout) if " ≠ " in line] == [
        f"{f['claim']} ≠ {f['field']} {f['evidence']}" for f in failed
    ]

    document = load_json(sample("broad-order-service"))
    document["gate_results"][-1]["result"]["checked_bindings"][0]["facts"].append(
        {"claim": "38 [b]x[/b]", "field": "", "evidence": "", "ok": False}
    )
    path = tmp_path / "no-field.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    run = evcli("trace", path)
    assert run.exit_code == 0, run
    assert "38 [b]x[/b]: no field states it" in _fact_lines(run.stdout)  # markup-like text shown as written


def test_trace_of_a_session_gated_before_facts_renders_as_before(tmp_path):
    document = load_json(sample("broad-order-service"))
    with_facts = evcli("trace", sample("broad-order-service"))
    for binding in document["gate_results"][-1]["result"]["checked_bindings"]:
        del binding["facts"]
    path = tmp_path / "before-facts.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    run = evcli("trace", path)

    assert run.exit_code == 0, run
    assert _fact_lines(run.stdout) == []
    facts = set(_fact_lines(with_facts.stdout))
    assert run.stdout.splitlines() == [
        line for line in with_facts.stdout.splitlines() if line.split("── ", 1)[-1].rstrip() not in facts
    ]


def test_trace_json_carries_the_matched_facts():
    run = evcli("trace", sample("broad-order-service"), "--json")

    assert run.exit_code == 0, run
    bindings = run.json()["gate_results"][-1]["result"]["checked_bindings"]
    assert {"claim": "91%", "field": "$.alerts[0].value", "evidence": "91.0%", "ok": True} in bindings[0]["facts"]


def test_trace_shows_the_answer_kind_read_and_the_words_it_came_from(tmp_path):
    """`ask` stores the question's reading; `trace` shows its answer kind, the field a breakdown counts by,
    the other kinds named and the question's words each came from."""
    db = tmp_path / "x.db"
    asked = evcli("ask", "which IP sent the most 401s to nginx?", "--env", "host", "--db", db, "--json")
    assert asked.exit_code == 0, asked
    query = asked.json()["query"]
    assert (query["answer"], query["by"]) == ("breakdown", "address")

    run = evcli("trace", asked.json()["session_id"], "--db", db)

    assert run.exit_code == 0, run
    assert "answer: breakdown by address — “which”, “IP”, “most”" in run.stdout
