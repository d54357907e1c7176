"""`evcli ask`: the whole chain from the command line, with the offline engine and with a scripted model.

Every test checks the exit code, what reached stdout and stderr, and the rows
the run left in the trace store.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evcli.agents.prompts import load_prompt
from tests.agents.scripted_server import (
    ScriptedServer,
    answer,
    calls,
    error,
    role_of,
    tool_messages,
)
from tests.cli._util import TABLES, assert_clean_error, counts, evcli

CPU_QUESTION = "Only confirm whether payment-service has a HighCPUUsage alert firing"
HIKARI_QUESTION_ZH = "只确认 inventory-service 是否存在 HikariCP 连接池耗尽日志。"
ROLES = ("planner", "executor", "verifier", "composer")
KEY = "sk-cli-ask-test-key-7f3a9c"
DECOY = "sk-ant-decoy-key-5b8e2d41"
LIE = "payment-service was restarted by the OOM killer at 22:40"
ZH_OVERSTATEMENTS = ("不存在", "已排除", "确认没有", "系统正常")
_CJK = re.compile(r"[\u4e00-\u9fff]")


# --- reading the store -----------------------------------------------------------------------


def rows(db: Path, table: str, session_id: str | None = None) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        if session_id is None:
            found = conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
        else:
            found = conn.execute(f"SELECT * FROM {table} WHERE session_id = ? ORDER BY rowid", [session_id]).fetchall()
        return [dict(row) for row in found]
    finally:
        conn.close()


def run_row(db: Path, session_id: str) -> dict[str, Any]:
    (row,) = rows(db, "diagnosis_run", session_id)
    return row


def db_text(db: Path) -> str:
    """Every stored value of every table, as one string (for leak checks)."""
    return json.dumps({table: rows(db, table) for table in TABLES}, ensure_ascii=False, default=str)


def session_id_from_human(stdout: str) -> str:
    match = re.search(r"· session (\S+)\s*$", stdout.strip().splitlines()[-1])
    assert match, stdout
    return match.group(1)


# --- the offline chain: English, narrow, one alert ---------------------------------------------


def test_ask_prints_a_cited_answer_with_its_evidence_and_verdict(db_path):
    run = evcli("ask", CPU_QUESTION)

    assert run.exit_code == 0, run
    assert run.stderr == ""  # not a terminal: no progress lines
    lines = run.stdout.splitlines()
    finding = [line for line in lines if line.startswith("- ") and line.endswith("[1].")]
    assert finding == ["- payment-service has a firing HighCPUUsage alert: current=92%, duration=25m [1]."], run
    assert "Evidence" in lines
    evidence = lines[lines.index("Evidence") + 1 :]
    (resolved,) = [line for line in evidence if line.startswith("[1] ")]
    match = re.fullmatch(r"\[1\] query_metrics #1 (\$\.alerts\[\d+\]): (.*)", resolved)
    assert match, resolved
    raw_path, text = match.groups()
    assert "current=92%" in text and "state=firing" in text and "HighCPUUsage" in text
    session_id = session_id_from_human(run.stdout)
    assert lines[-1] == f"verdict PASS · gate pass/none · session {session_id}"

    # The evidence printed is the ref text the tool recorded, under that raw path.
    (invocation,) = rows(db_path, "tool_invocation", session_id)
    assert (invocation["invocation_id"], invocation["tool_name"]) == (1, "query_metrics")
    refs = {ref["raw_path"]: ref["text"] for ref in json.loads(invocation["retrieval_details"])["evidence_refs"]}
    assert refs[raw_path] == text
    assert run_row(db_path, session_id)["status"] == "completed"
    assert run_row(db_path, session_id)["verdict"] == "PASS"


def test_ask_json_is_one_document_and_the_store_holds_the_whole_run(db_path):
    run = evcli("ask", CPU_QUESTION, "--json")

    assert run.exit_code == 0, run
    assert run.stderr == ""
    result = run.json()  # one JSON document, nothing else on stdout
    assert set(result) == {
        "session_id",
        "question",
        "query",
        "verdict",
        "gate",
        "answer",
        "claims",
        "hypotheses",
        "missing_info",
        "fallback",
        "rounds",
        "models",
        "usage",
    }
    assert result["question"] == CPU_QUESTION
    # the question as code read it, the stored reading
    assert (result["query"]["answer"], result["query"]["services"]) == ("confirm", ["payment-service"])
    session_id = result["session_id"]
    assert result["verdict"] == "PASS"
    assert result["gate"] == {"status": "pass", "severity": "none", "failed_rules": []}
    assert set(result["answer"]) == {"answer_summary", "user_facing_answer", "recommended_actions"}
    assert "[1]" in result["answer"]["user_facing_answer"]
    assert "current=92%" in result["answer"]["user_facing_answer"]
    (claim,) = result["claims"]
    assert claim["citation"] == 1
    assert claim["claim_type"] == "observation"
    (evidence,) = claim["evidence"]
    assert set(evidence) == {"tool_name", "source_invocation_id", "raw_path", "text"}
    assert (evidence["tool_name"], evidence["source_invocation_id"]) == ("query_metrics", 1)
    assert re.fullmatch(r"\$\.alerts\[\d+\]", evidence["raw_path"])
    assert "current=92%" in evidence["text"]
    assert isinstance(result["missing_info"], list)
    assert result["fallback"] is None
    assert result["rounds"] == 1
    assert result["models"] == {role: "offline" for role in ROLES}
    assert result["usage"] == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "model_calls": len(rows(db_path, "agent_step", session_id)),
    }

    # diagnosis_run: completed, PASS, four prompt versions and no prompt text
    run_record = run_row(db_path, session_id)
    assert (run_record["status"], run_record["verdict"], run_record["question"]) == ("completed", "PASS", CPU_QUESTION)
    audit = json.loads(run_record["prompt_audit"])
    assert [p["name"] for p in audit["prompts"]] == list(ROLES)
    assert audit["prompts"] == [load_prompt(role).audit() for role in ROLES]
    assert all(set(p) == {"name", "resource", "version"} for p in audit["prompts"]), audit
    config = json.loads(run_record["config"])
    assert config["models"] == {role: "offline" for role in ROLES}
    assert config["task_scope"] == "narrow"

    stages = rows(db_path, "stage_output", session_id)
    assert [(s["stage"], s["round"], s["status"]) for s in stages] == [
        ("plan", 1, "COMPLETED"),
        ("execute", 1, "COMPLETED"),
        ("verify", 1, "COMPLETED"),
        ("compose", 1, "COMPLETED"),
    ]
    assert json.loads(stages[2]["parse_status"])["effective_verdict"] == "PASS"
    assert json.loads(stages[3]["output"])["user_facing_answer"] == result["answer"]["user_facing_answer"]

    steps = rows(db_path, "agent_step", session_id)
    assert [(s["agent"], s["step_index"], s["has_tool_call"]) for s in steps] == [
        ("planner", 1, 0),
        ("executor", 2, 1),
        ("executor", 3, 0),
        ("verifier", 4, 0),
        ("composer", 5, 0),
    ]
    assert all(s["model"] == "offline" and s["status"] == "completed" for s in steps)

    invocations = rows(db_path, "tool_invocation", session_id)
    assert [(i["invocation_id"], i["tool_name"], i["success"]) for i in invocations] == [(1, "query_metrics", 1)]
    assert json.loads(invocations[0]["input_params"])["service"] == "payment-service"

    (gate_row,) = rows(db_path, "gate_result", session_id)
    assert (gate_row["seq"], gate_row["round"], gate_row["status"], gate_row["severity"]) == (1, 1, "pass", "none")

    # the prompt text itself is never stored

    stored = db_text(db_path)
    for role in ROLES:
        body = load_prompt(role).text
        assert body[:80] not in stored, role


def test_ask_in_chinese_answers_in_chinese_without_overstating_no_evidence(db_path, rules):
    run = evcli("ask", HIKARI_QUESTION_ZH, "--json")

    assert run.exit_code == 0, run
    assert run.stderr == ""
    result = run.json()
    answer_text = result["answer"]["user_facing_answer"]
    assert _CJK.search(answer_text) and _CJK.search(result["answer"]["answer_summary"])
    assert "[1]" in answer_text
    (claim,) = result["claims"]
    assert claim["claim_type"] == "negative_observation"
    assert claim["no_evidence"] is True
    (evidence,) = claim["evidence"]
    assert (evidence["tool_name"], evidence["raw_path"]) == ("query_logs", "$.no_evidence")
    shown = json.dumps(result["answer"], ensure_ascii=False)
    for phrase in (*ZH_OVERSTATEMENTS, *rules.overstatement_phrases):
        assert phrase not in shown, phrase

    session_id = result["session_id"]
    assert json.loads(run_row(db_path, session_id)["config"])["language"] == "zh"
    # a narrow task makes one precise query and does not widen it after no evidence
    (invocation,) = rows(db_path, "tool_invocation", session_id)
    assert invocation["tool_name"] == "query_logs"
    details = json.loads(invocation["retrieval_details"])
    assert details["evidence_status"] == "no_evidence"
    assert json.loads(invocation["input_params"])["service"] == "inventory-service"

    human = evcli("ask", HIKARI_QUESTION_ZH)
    assert human.exit_code == 0, human
    assert "发现：" in human.stdout
    assert "[1] query_logs #1 $.no_evidence: " in human.stdout
    for phrase in ZH_OVERSTATEMENTS:
        assert phrase not in human.stdout.split("Evidence")[0], phrase


# --- --fail-on -------------------------------------------------------------------------------------


@pytest.mark.parametrize("fail_on", ["low_confid", "reject"])
def test_fail_on_leaves_a_pass_at_exit_0(db_path, fail_on):
    run = evcli("ask", CPU_QUESTION, "--fail-on", fail_on, "--json")

    assert run.exit_code == 0, run
    assert run.json()["verdict"] == "PASS"
    assert run_row(db_path, run.json()["session_id"])["verdict"] == "PASS"


def test_fail_on_with_an_unknown_value_is_a_usage_error_before_any_work(db_path):
    run = evcli("ask", CPU_QUESTION, "--fail-on", "x")

    assert_clean_error(run, 2, "--fail-on", "low_confid", "reject")
    assert not db_path.exists() or counts(db_path)["diagnosis_run"] == 0


# --- a scripted model behind --model openai/scripted ---------------------------------------------------


def _payload(body: dict[str, Any]) -> dict[str, Any]:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return json.loads(user.split("\n", 1)[1])


class ScriptedModel:
    """All four roles; the Executor's final document is what each test varies."""

    def __init__(self, executor_document) -> None:
        self.executor_document = executor_document

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        role = role_of(body)
        if role == "planner":
            return answer(
                {
                    "selected_skill": None,
                    "selection_reason": "scripted",
                    "plan": ["query_metrics payment-service HighCPUUsage"],
                    "reasoning": "scripted",
                }
            )
        if role == "executor":
            if not tool_messages(body) and body.get("tools"):
                return calls(("query_metrics", {"service": "payment-service", "alertname": "HighCPUUsage"}))
            return self.executor_document(body)
        if role == "verifier":
            claims = _payload(body)["verified_claims"]
            checks = [
                {"claim_id": c["claim_id"], "verification": "direct_support", "is_critical": True, "note": "ok"}
                for c in claims
            ]
            return answer(
                {
                    "verdict": "PASS" if claims else "LOW_CONFID",
                    "groundedness_score": 1.0 if claims else 0.0,
                    "critical_fact_count": len(claims),
                    "claim_checks": checks,
                    "facts_checked": [],
                    "rationale": "scripted verifier",
                }
            )
        if role == "composer":
            payload = _payload(body)
            text = " ".join(f"{c['claim_text']} [{c['citation']}]" for c in payload["allowed_claims"])
            text = text or "The evidence is incomplete; no finding was verified."
            return answer({"answer_summary": text, "recommended_actions": [], "user_facing_answer": text})
        return error(400, f"unexpected role {role!r}")


def fabricated_invocation(body: dict[str, Any]) -> dict[str, Any]:
    binding = {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": "query_metrics",
        "source_invocation_id": 41,
        "raw_path": "$.alerts[0]",
        "evidence_excerpt": "CPU usage of payment-service is 92% (threshold 80%)",
    }
    claim = {
        "claim_id": "claim-1",
        "claim_type": "observation",
        "claim_text": LIE,
        "support_level": "direct",
        "evidence_bindings": [binding],
    }
    return answer(
        {
            "answer_version": "executor_evidence_v2",
            "claims": [claim],
            "hypotheses": [],
            "recommended_actions": [],
            "missing_info": [],
        }
    )


def malformed_json(body: dict[str, Any]) -> dict[str, Any]:
    return answer('{"answer_version": "executor_evidence_v2", "claims": [ this is not json')


@pytest.fixture
def scripted(request, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ScriptedServer(ScriptedModel(request.param)) as server:
        yield server


def ask_scripted(server: ScriptedServer, *extra: str):
    return evcli("ask", CPU_QUESTION, "--model", "openai/scripted", "--api-base", server.url + "/v1", *extra)


@pytest.mark.parametrize("scripted", [fabricated_invocation], indirect=True)
@pytest.mark.parametrize(("fail_on", "code"), [(None, 0), ("reject", 4), ("low_confid", 4)])
def test_a_fabricated_invocation_id_is_a_reject(scripted, db_path, fail_on, code):
    run = ask_scripted(scripted, *(("--fail-on", fail_on) if fail_on else ()))

    assert run.exit_code == code, run
    assert run.stderr == ""
    assert LIE not in run.stdout and "OOM" not in run.stdout
    last = run.stdout.strip().splitlines()[-1]
    session_id = session_id_from_human(run.stdout)
    assert last == (
        f"verdict REJECT · gate fail/reject (binding.invocation_exists) · fallback: gate_reject · session {session_id}"
    )

    record = run_row(db_path, session_id)
    assert (record["status"], record["verdict"]) == ("completed", "REJECT")
    assert json.loads(record["config"])["models"] == {role: "openai/scripted" for role in ROLES} | {
        "api_base": scripted.url + "/v1"
    }
    # the draft and the repair round's draft (the same fabrication again) are both gated and both rejected
    gate_rows = rows(db_path, "gate_result", session_id)
    assert [(g["status"], g["severity"]) for g in gate_rows] == [("fail", "reject")] * 2
    assert all(json.loads(g["result"])["failed_rules"] == ["binding.invocation_exists"] for g in gate_rows)
    compose = [s for s in rows(db_path, "stage_output", session_id) if s["stage"] == "compose"]
    assert json.loads(compose[-1]["parse_status"])["fallback"] == "gate_reject"
    # a gate reject never reaches the Verifier model
    assert scripted.requests_for("verifier") == [] and scripted.requests_for("composer") == []
    steps = rows(db_path, "agent_step", session_id)
    assert [s["agent"] for s in steps] == ["planner"] + ["executor"] * 4  # two steps a round, two rounds
    assert all(s["model"] == "openai/scripted" for s in steps)
    assert KEY not in db_text(db_path)


@pytest.mark.parametrize("scripted", [malformed_json], indirect=True)
@pytest.mark.parametrize(("fail_on", "code"), [(None, 0), ("low_confid", 3), ("reject", 0)])
def test_malformed_executor_json_is_low_confidence(scripted, db_path, fail_on, code):
    run = ask_scripted(scripted, "--json", *(("--fail-on", fail_on) if fail_on else ()))

    assert run.exit_code == code, run
    assert run.stderr == ""
    result = run.json()
    assert result["verdict"] == "LOW_CONFID"
    assert result["claims"] == []
    assert result["models"] == {role: "openai/scripted" for role in ROLES} | {"api_base": scripted.url + "/v1"}

    session_id = result["session_id"]
    record = run_row(db_path, session_id)
    assert (record["status"], record["verdict"]) == ("completed", "LOW_CONFID")
    execute = [s for s in rows(db_path, "stage_output", session_id) if s["stage"] == "execute"]
    assert [s["status"] for s in execute] == ["INVALID_OUTPUT"]  # the Executor is never retried
    assert "this is not json" in execute[0]["raw_text"]
    assert [i["tool_name"] for i in rows(db_path, "tool_invocation", session_id)] == ["query_metrics"]
    assert len(scripted.requests_for("executor")) == 3  # the tool call, the prose, one repair request (issue 12)
    assert KEY not in db_text(db_path)


# --- model failures ---------------------------------------------------------------------------------------


def test_a_missing_api_key_fails_before_any_session_naming_variable_and_roles(db_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", DECOY)  # a key of another provider in the environment

    run = evcli("ask", CPU_QUESTION, "--model", "openai/gpt-4o-mini")

    line = assert_clean_error(run, 2, "OPENAI_API_KEY")  # issue 12: checked before a session exists
    assert "the planner, executor, verifier and composer model openai/gpt-4o-mini" in line
    assert not db_path.exists() or rows(db_path, "diagnosis_run") == []
    assert DECOY not in run.stderr


def test_a_rejected_api_key_never_reaches_the_store_or_stderr(db_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ScriptedServer([error(401, "Incorrect API key provided")]) as server:
        run = evcli("ask", CPU_QUESTION, "--model", "openai/scripted", "--api-base", server.url + "/v1")
        (request,) = server.requests

    assert_clean_error(run, 1, "planner")
    assert KEY not in run.stderr
    assert request["model"] == "scripted"
    (record,) = rows(db_path, "diagnosis_run")
    assert record["status"] == "failed"
    assert KEY not in db_text(db_path)


def test_ask_json_prints_the_ask_result_with_sorted_keys(db_path):
    """`ask --json` prints the AskResult with its keys sorted at every level (print_json), so a
    typed result dumps the same document whatever its field order."""
    run = evcli("ask", CPU_QUESTION, "--json")

    assert run.exit_code == 0, run
    result = run.json()
    assert list(result) == [
        "answer",
        "claims",
        "fallback",
        "gate",
        "hypotheses",
        "missing_info",
        "models",
        "query",
        "question",
        "rounds",
        "session_id",
        "usage",
        "verdict",
    ]
    assert list(result["answer"]) == ["answer_summary", "recommended_actions", "user_facing_answer"]
    assert list(result["usage"]) == ["completion_tokens", "model_calls", "prompt_tokens"]
    assert (result["verdict"], result["rounds"], result["usage"]["prompt_tokens"]) == ("PASS", 1, 0)


# --- live backends with runbooks (issue 26) -------------------------------------------------------------

SSHD_RUNBOOK = """---
title: SSH brute force
alerts: [SSHBruteForce]
services: [sshd]
---
# SSH brute force

## Diagnose
Count the "Failed password" lines per source address in the sshd auth log.

## Mitigate
Block the source address with fail2ban.
"""


def test_live_backends_look_up_the_runbooks_directory_given(sshd_alertmanager, tmp_path, db_path):
    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "sshd.md").write_text(SSHD_RUNBOOK, encoding="utf-8")

    run = evcli("ask", "Why is sshd alerting?", "--alertmanager", sshd_alertmanager, "--runbooks", runbooks, "--json")

    assert run.exit_code == 0, run
    result = run.json()
    answer_text = result["answer"]["user_facing_answer"]
    assert "holds no runbooks" not in answer_text and "none were looked up" not in answer_text, answer_text
    session_id = result["session_id"]
    lookups = [i for i in rows(db_path, "tool_invocation", session_id) if i["tool_name"] == "lookup_knowledge"]
    assert lookups, rows(db_path, "tool_invocation", session_id)
    details = json.loads(lookups[0]["retrieval_details"])
    assert details["evidence_status"] == "supported"
    assert "fail2ban" in " ".join(ref["text"] for ref in details["evidence_refs"]) or "Failed password" in " ".join(
        ref["text"] for ref in details["evidence_refs"]
    )
    config = json.loads(run_row(db_path, session_id)["config"])
    assert "knowledge" in config["environment"]["capabilities"]
    # Alertmanager serves no logs and the question asks for none: no log search that could only fail
    tools = [i["tool_name"] for i in rows(db_path, "tool_invocation", session_id)]
    assert "query_logs" not in tools and "pass --loki" not in answer_text, tools
