"""The chain one stage at a time (plan, execute, gate, verify, compose), replay, and trace of an asked session."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evcli.agents.prompts import load_prompt
from tests.agents.scripted_server import ScriptedServer, answer, error, role_of
from tests.cli._util import TABLES, assert_clean_error, counts, evcli
from tests.conftest import sample

QUESTION = "Only confirm whether payment-service has a HighCPUUsage alert firing"
FINDING = "payment-service has a firing HighCPUUsage alert: current=92%, duration=25m"
ROLES = ("planner", "executor", "verifier", "composer")
KEY = "sk-cli-stages-test-key-1d4e"


# --- the store ------------------------------------------------------------------------------------


def rows(db: Path, table: str, session_id: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        found = conn.execute(f"SELECT * FROM {table} WHERE session_id = ? ORDER BY rowid", [session_id]).fetchall()
        return [dict(row) for row in found]
    finally:
        conn.close()


def raw_session(db: Path, session_id: str) -> dict[str, list[tuple]]:
    """Every row of one session, as stored, for byte-for-byte comparisons."""
    conn = sqlite3.connect(db)
    try:
        return {
            table: conn.execute(f"SELECT * FROM {table} WHERE session_id = ? ORDER BY rowid", [session_id]).fetchall()
            for table in TABLES
        }
    finally:
        conn.close()


def strip(row: dict[str, Any]) -> dict[str, Any]:
    """A row without its session id: what a copied row shares with its source."""
    return {key: value for key, value in row.items() if key != "session_id"}


def run_row(db: Path, session_id: str) -> dict[str, Any]:
    (row,) = rows(db, "diagnosis_run", session_id)
    return row


def stages(db: Path, session_id: str) -> list[str]:
    return [row["stage"] for row in rows(db, "stage_output", session_id)]


def ask(db: Path) -> str:
    run = evcli("ask", QUESTION, "--json")
    assert run.exit_code == 0, run
    session_id = run.json()["session_id"]
    assert run_row(db, session_id)["status"] == "completed"
    return session_id


def plan(question: str = QUESTION) -> str:
    run = evcli("plan", question)
    assert run.exit_code == 0, run
    (session_id,) = run.stdout.split()
    return session_id


# --- stage by stage ---------------------------------------------------------------------------------


def test_stage_by_stage_runs_the_chain_in_order_and_refuses_it_out_of_order(db_path):
    # plan: a new session, its id alone on stdout, the steps on stderr
    run = evcli("plan", QUESTION)
    assert run.exit_code == 0, run
    (session_id,) = run.stdout.split()
    assert re.fullmatch(r"\d{8}T\d{6}-[0-9a-f]{6}", session_id)
    assert run.stderr.splitlines()[0].startswith("1. query_metrics(service='payment-service', alertname='HighCPUUsage'")
    assert run_row(db_path, session_id)["status"] == "running"
    assert run_row(db_path, session_id)["question"] == QUESTION
    (plan_row,) = rows(db_path, "stage_output", session_id)
    assert (plan_row["stage"], plan_row["status"]) == ("plan", "COMPLETED")
    stored_plan = json.loads(plan_row["output"])
    assert stored_plan["selected_skill"] == "diagnose-high-cpu"
    assert stored_plan["plan"][0].startswith("query_metrics(")
    assert rows(db_path, "tool_invocation", session_id) == []
    assert [s["agent"] for s in rows(db_path, "agent_step", session_id)] == ["planner"]

    # verify and compose before there is anything to verify: usage errors, nothing written
    before = raw_session(db_path, session_id)
    assert_clean_error(evcli("compose", session_id), 2, "has not been verified", f"evcli verify {session_id}")
    assert raw_session(db_path, session_id) == before

    # execute: tools called and recorded, the executor output stored; human text, JSON with --json
    run = evcli("execute", session_id[:-2])  # a unique prefix names the session
    assert run.exit_code == 0, run
    assert run.stderr == ""
    lines = run.stdout.splitlines()
    assert lines[:2] == ["1 claim", f"claim-1 (observation) {FINDING}."]
    assert re.fullmatch(r"  ← query_metrics #1 \$\.alerts\[\d+\]: .*current=92%.*", lines[2]), run
    assert lines[-1] == f"status COMPLETED · session {session_id} · next: evcli gate {session_id}"
    data = json.loads(rows(db_path, "stage_output", session_id)[1]["output"])
    data = {"session_id": session_id, "status": "COMPLETED", "output": data}
    assert (data["session_id"], data["status"]) == (session_id, "COMPLETED")
    (claim,) = data["output"]["claims"]
    assert claim["claim_text"] == FINDING + "."
    assert claim["evidence_bindings"][0]["source_invocation_id"] == 1
    invocations = rows(db_path, "tool_invocation", session_id)
    assert [(i["invocation_id"], i["tool_name"]) for i in invocations] == [(1, "query_metrics")]
    assert stages(db_path, session_id) == ["plan", "execute"]
    assert json.loads(rows(db_path, "stage_output", session_id)[1]["output"]) == data["output"]

    # execute again: refused, with the replay hint; nothing written
    before = raw_session(db_path, session_id)
    assert_clean_error(evcli("execute", session_id), 2, "already executed", f"evcli replay {session_id} --from execute")
    assert raw_session(db_path, session_id) == before

    # verify before the gate: refused with a hint naming `evcli gate`
    assert_clean_error(evcli("verify", session_id), 2, "has not been gated", f"evcli gate {session_id}")
    assert raw_session(db_path, session_id) == before

    # gate: exit 0 and one gate_result row
    run = evcli("gate", session_id)
    assert run.exit_code == 0, run
    assert "gate pass severity none" in run.stdout
    (gate_row,) = rows(db_path, "gate_result", session_id)
    assert (gate_row["seq"], gate_row["round"], gate_row["status"], gate_row["severity"]) == (1, 1, "pass", "none")

    # verify: the effective verdict (human text by default)
    run = evcli("verify", "last", "--json")
    assert run.exit_code == 0, run
    data = json.loads(run.stdout)
    assert (data["status"], data["effective_verdict"], data["output"]["verdict"]) == ("COMPLETED", "PASS", "PASS")
    assert stages(db_path, session_id) == ["plan", "execute", "verify"]
    verify_row = rows(db_path, "stage_output", session_id)[-1]
    assert json.loads(verify_row["parse_status"])["effective_verdict"] == "PASS"
    assert run_row(db_path, session_id)["status"] == "running"

    # compose: the answer, with its evidence and verdict line
    run = evcli("compose", session_id)
    assert run.exit_code == 0, run
    lines = run.stdout.splitlines()
    assert f"- {FINDING} [1]." in lines
    assert any(re.fullmatch(r"\[1\] query_metrics #1 \$\.alerts\[\d+\]: .*current=92%.*", line) for line in lines), run
    assert lines[-1] == f"verdict PASS · gate pass/none · session {session_id}"
    assert stages(db_path, session_id) == ["plan", "execute", "verify", "compose"]
    record = run_row(db_path, session_id)
    assert (record["status"], record["verdict"]) == ("completed", "PASS")
    assert [s["agent"] for s in rows(db_path, "agent_step", session_id)] == [
        "planner",
        "executor",
        "executor",
        "verifier",
        "composer",
    ]
    # the stages run by hand produce what `ask` produces
    asked = evcli("ask", QUESTION, "--json").json()
    composed = evcli("compose", session_id, "--json")
    assert composed.exit_code == 0, composed
    assert composed.json()["answer"] == asked["answer"]
    assert composed.json()["claims"] == asked["claims"]


def test_plan_json_prints_the_session_and_its_plan(db_path):
    run = evcli("plan", QUESTION, "--json")

    assert run.exit_code == 0, run
    data = run.json()
    assert set(data) == {"session_id", "plan"}
    (plan_row,) = rows(db_path, "stage_output", data["session_id"])
    assert json.loads(plan_row["output"]) == data["plan"]


def test_compose_before_verify_on_a_gated_session_is_a_usage_error(db_path):
    first = plan()
    assert evcli("execute", first).exit_code == 0
    assert evcli("gate", first).exit_code == 0
    other = plan()
    assert other != first
    assert evcli("execute", other).exit_code == 0

    for session_id in (first, other):
        before = raw_session(db_path, session_id)
        assert_clean_error(evcli("compose", session_id), 2, session_id, "has not been verified", "evcli verify")
        assert raw_session(db_path, session_id) == before
        assert run_row(db_path, session_id)["status"] == "running"


@pytest.mark.parametrize(
    "args",
    [("execute",), ("verify",), ("compose",), ("replay", "--from", "verify"), ("replay", "--from", "execute")],
    ids=lambda args: "-".join(args),
)
def test_an_unknown_session_id_is_a_usage_error(db_path, args):
    session_id = ask(db_path)  # a store with one session in it
    before = counts(db_path)

    run = evcli(args[0], "20990101T000000-abcdef", *args[1:])

    assert_clean_error(run, 2, "unknown session", "20990101T000000-abcdef")
    assert counts(db_path) == before
    assert run_row(db_path, session_id)["status"] == "completed"


# --- replay ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("from_stage", "kept_stages", "new_agents"),
    [
        ("execute", ["plan"], ["executor", "executor", "verifier", "composer"]),
        ("gate", ["plan", "execute"], ["verifier", "composer"]),
        ("verify", ["plan", "execute"], ["verifier", "composer"]),
        ("compose", ["plan", "execute", "verify"], ["composer"]),
    ],
)
def test_replay_is_a_new_session_that_reuses_the_upstream_outputs(db_path, from_stage, kept_stages, new_agents):
    original = ask(db_path)
    before = raw_session(db_path, original)
    original_invocations = rows(db_path, "tool_invocation", original)
    original_stages = rows(db_path, "stage_output", original)

    run = evcli("replay", original, "--from", from_stage, "--json")

    assert run.exit_code == 0, run
    assert run.stderr == ""
    result = run.json()
    new = result["session_id"]
    assert new != original
    assert result["verdict"] == "PASS"
    assert result["claims"][0]["evidence"][0]["source_invocation_id"] == 1
    assert "current=92%" in result["answer"]["user_facing_answer"]

    # the original session is untouched, row for row and byte for byte
    assert raw_session(db_path, original) == before

    record = run_row(db_path, new)
    assert (record["status"], record["verdict"], record["question"]) == ("completed", "PASS", QUESTION)
    config = json.loads(record["config"])
    assert config["replay_of"] == {"session_id": original, "from": from_stage}
    assert config["models"] == {role: "offline" for role in ROLES}
    assert json.loads(record["prompt_audit"])["prompts"] == [load_prompt(role).audit() for role in ROLES]

    # upstream stage outputs are copied as they were; the rest is run anew
    new_stages = rows(db_path, "stage_output", new)
    assert [s["stage"] for s in new_stages] == kept_stages + [
        s for s in ["execute", "verify", "compose"] if s not in kept_stages
    ]
    for copied, source in zip(new_stages[: len(kept_stages)], original_stages, strict=False):
        assert {k: v for k, v in copied.items() if k not in ("id", "session_id")} == {
            k: v for k, v in source.items() if k not in ("id", "session_id")
        }
    assert [s["agent"] for s in rows(db_path, "agent_step", new)] == new_agents

    invocations = rows(db_path, "tool_invocation", new)
    assert len(invocations) == len(original_invocations) == 1
    if from_stage == "execute":
        # fresh tool calls: same query on the same environment, recorded again for the new session
        assert invocations[0]["created_at"] > original_invocations[0]["created_at"]
        assert invocations[0]["input_params"] == original_invocations[0]["input_params"]
        assert invocations[0]["output"] == original_invocations[0]["output"]
    else:
        assert [strip(i) for i in invocations] == [strip(i) for i in original_invocations]

    gate_rows = rows(db_path, "gate_result", new)
    original_gate = rows(db_path, "gate_result", original)
    if from_stage in ("verify", "compose"):
        assert [strip({**g, "id": None}) for g in gate_rows] == [strip({**g, "id": None}) for g in original_gate]
    else:
        (regated,) = gate_rows
        assert regated["created_at"] > original_gate[0]["created_at"]
        assert (regated["status"], regated["severity"]) == ("pass", "none")


def test_replay_human_output_names_the_new_session(db_path):
    original = ask(db_path)

    run = evcli("replay", original, "--from", "verify")

    assert run.exit_code == 0, run
    assert f"- {FINDING} [1]." in run.stdout.splitlines()
    match = re.fullmatch(r"verdict PASS · gate pass/none · session (\S+)", run.stdout.splitlines()[-1])
    assert match and match.group(1) != original
    assert json.loads(run_row(db_path, match.group(1))["config"])["replay_of"] == {
        "session_id": original,
        "from": "verify",
    }


def test_replay_from_an_unknown_stage_is_a_usage_error(db_path):
    original = ask(db_path)
    before = counts(db_path)
    snapshot = raw_session(db_path, original)

    run = evcli("replay", original, "--from", "bogus")

    assert_clean_error(run, 2, "--from", "bogus", "verify")
    assert counts(db_path) == before
    assert raw_session(db_path, original) == snapshot


@pytest.mark.parametrize(("from_stage", "done"), [("verify", ("execute",)), ("compose", ("execute", "gate"))])
def test_replay_from_a_stage_the_session_never_reached_is_refused_without_a_new_session(db_path, from_stage, done):
    original = plan()
    for command in done:
        assert evcli(command, original).exit_code == 0
    before = counts(db_path)

    run = evcli("replay", original, "--from", from_stage)

    line = assert_clean_error(run, 2)
    assert original in line, line  # the error is about the session the user named
    assert counts(db_path) == before  # and no half-made session is left behind


def _verifier_and_composer_only(body: dict[str, Any]) -> dict[str, Any]:
    role = role_of(body)
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    payload = json.loads(user.split("\n", 1)[1])
    if role == "verifier":
        claims = payload["verified_claims"]
        return answer(
            {
                "verdict": "PASS",
                "groundedness_score": 1.0,
                "critical_fact_count": len(claims),
                "claim_checks": [
                    {
                        "claim_id": c["claim_id"],
                        "verification": "direct_support",
                        "is_critical": True,
                        "note": "scripted",
                    }
                    for c in claims
                ],
                "facts_checked": [],
                "rationale": "scripted verifier on recorded evidence",
            }
        )
    if role == "composer":
        text = " ".join(f"{c['claim_text']} [{c['citation']}]" for c in payload["allowed_claims"])
        return answer({"answer_summary": text, "recommended_actions": [], "user_facing_answer": text})
    return error(400, f"the replay must not call the {role}")


def test_replay_from_verify_with_another_model_reuses_the_recorded_evidence(db_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    original = ask(db_path)
    before = raw_session(db_path, original)
    original_invocations = rows(db_path, "tool_invocation", original)

    with ScriptedServer(_verifier_and_composer_only) as server:
        api_base = server.url + "/v1"
        run = evcli(
            "replay", original, "--from", "verify", "--model", "openai/scripted", "--api-base", api_base, "--json"
        )
        roles = [role_of(body) for body in server.requests]

    assert run.exit_code == 0, run
    assert run.stderr == ""
    assert roles == ["verifier", "composer"]
    result = run.json()
    new = result["session_id"]
    assert new != original
    assert result["verdict"] == "PASS"
    assert result["answer"]["user_facing_answer"] == f"{FINDING}. [1]"
    assert result["claims"][0]["evidence"][0]["source_invocation_id"] == 1

    steps = rows(db_path, "agent_step", new)
    assert [(s["agent"], s["model"], s["status"]) for s in steps] == [
        ("verifier", "openai/scripted", "completed"),
        ("composer", "openai/scripted", "completed"),
    ]
    verify_row = [s for s in rows(db_path, "stage_output", new) if s["stage"] == "verify"][-1]
    assert json.loads(verify_row["output"])["rationale"] == "scripted verifier on recorded evidence"
    assert [strip(i) for i in rows(db_path, "tool_invocation", new)] == [strip(i) for i in original_invocations]
    config = json.loads(run_row(db_path, new)["config"])
    assert config["replay_of"] == {"session_id": original, "from": "verify"}
    assert config["models"]["verifier"] == config["models"]["composer"] == "openai/scripted"
    assert raw_session(db_path, original) == before
    assert all(KEY not in json.dumps(raw_session(db_path, sid), default=str) for sid in (original, new))


def _verifier_with_a_critical_gap(body: dict[str, Any]) -> dict[str, Any]:
    """A verifier that cannot confirm the claim (LOW_CONFID, a critical gap: what an evidence retry is for)."""
    role = role_of(body)
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    payload = json.loads(user.split("\n", 1)[1])
    if role == "verifier":
        checks = [
            {"claim_id": c["claim_id"], "verification": "no_evidence", "is_critical": True, "note": "scripted gap"}
            for c in payload["verified_claims"]
        ]
        return answer(
            {
                "verdict": "LOW_CONFID",
                "groundedness_score": 0.2,
                "critical_fact_count": len(checks),
                "claim_checks": checks,
                "facts_checked": [],
                "rationale": "scripted: not confirmed",
            }
        )
    return _verifier_and_composer_only(body)


def test_replay_from_verify_runs_no_tool_after_a_low_confid_verdict(db_path, monkeypatch):
    """A replay rests on the evidence it was given: a LOW_CONFID verdict with a critical gap, which in a
    whole chain gets one evidence retry, gets none in a replay from verify (no executor, no tool call)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    original = ask(db_path)
    original_invocations = rows(db_path, "tool_invocation", original)

    with ScriptedServer(_verifier_with_a_critical_gap) as server:
        api_base = server.url + "/v1"
        run = evcli(
            "replay", original, "--from", "verify", "--model", "openai/scripted", "--api-base", api_base, "--json"
        )
        roles = [role_of(body) for body in server.requests]

    assert run.exit_code == 0, run
    result = run.json()
    new = result["session_id"]
    assert (result["verdict"], result["rounds"]) == ("LOW_CONFID", 1)
    assert roles == ["verifier", "composer"]
    # not one tool ran: the replayed session holds the original's invocations and nothing else
    assert [strip(i) for i in rows(db_path, "tool_invocation", new)] == [strip(i) for i in original_invocations]
    assert [s["agent"] for s in rows(db_path, "agent_step", new)] == ["verifier", "composer"]
    assert stages(db_path, new) == ["plan", "execute", "verify", "compose"]
    assert len(rows(db_path, "gate_result", new)) == 1


def test_replay_copies_only_the_gate_result_it_reuses_not_the_sessions_gate_history(db_path):
    original = ask(db_path)
    for _ in range(2):  # re-gating appends to the original's history
        assert evcli("gate", original).exit_code == 0
    original_gates = rows(db_path, "gate_result", original)
    assert [g["seq"] for g in original_gates] == [1, 2, 3]

    run = evcli("replay", original, "--from", "verify", "--json")

    assert run.exit_code == 0, run
    new = run.json()["session_id"]
    (copied,) = rows(db_path, "gate_result", new)
    latest = original_gates[-1]
    assert copied["seq"] == 1  # the replayed session's history starts with it
    assert {k: copied[k] for k in ("round", "status", "severity", "result")} == {
        k: latest[k] for k in ("round", "status", "severity", "result")
    }
    assert evcli("gate", new).exit_code == 0  # and goes on from there
    assert [g["seq"] for g in rows(db_path, "gate_result", new)] == [1, 2]
    assert [g["seq"] for g in rows(db_path, "gate_result", original)] == [1, 2, 3]


def test_replay_accepts_an_exported_session_file(db_path):
    path = sample("narrow-payment-highcpu")

    run = evcli("replay", path, "--from", "verify", "--json")

    assert run.exit_code == 0, run
    new = run.json()["session_id"]
    assert json.loads(run_row(db_path, new)["config"])["replay_of"]["from"] == "verify"


# --- trace ------------------------------------------------------------------------------------------------


def test_trace_of_an_asked_session_shows_every_stage(db_path):
    session_id = ask(db_path)

    run = evcli("trace", session_id)

    assert run.exit_code == 0, run
    assert run.stderr == ""
    out = run.stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"session {session_id} · chat · status completed · verdict PASS · ")
    assert f"question: {QUESTION}" in out
    assert "plan · skill diagnose-high-cpu" in out
    assert "1. query_metrics(service='payment-service', alertname='HighCPUUsage', state='any')" in out
    assert "tool invocations (1)" in out
    assert "#1 query_metrics(alertname=HighCPUUsage, service=payment-service, state=any) · supported" in out
    assert "executor · round 1 · COMPLETED · 1 claims" in out
    assert f"claim-1 observation: {FINDING}." in out
    (binding,) = [line for line in lines if "query_metrics #1 $.alerts[" in line]
    assert binding.rstrip().endswith("pass")  # the binding's status in the gate result
    assert "gate results (1)" in out
    assert "· round 1 · pass/none · gatekeeper-rules-v1 · failed: none" in out
    assert "verifier · PASS · groundedness 1.0" in out
    assert f"composer · {FINDING} [1]." in out
    assert "agent steps (5)" in out
    assert run_row(db_path, session_id)["status"] == "completed"


def test_verify_prints_its_verdict_and_claim_checks_as_text(db_path):
    session_id = plan()
    assert evcli("execute", session_id).exit_code == 0
    assert evcli("gate", session_id).exit_code == 0
    run = evcli("verify", session_id)
    assert run.exit_code == 0, run
    lines = run.stdout.splitlines()
    assert lines[0] == "verdict PASS"
    assert re.fullmatch(r"claim-1: direct_support, critical — .+", lines[1]), run
    assert lines[-1] == f"status COMPLETED · session {session_id} · next: evcli compose {session_id}"
