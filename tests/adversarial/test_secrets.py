"""No corpus secret reaches the store, the knowledge index, a model or the screen (issue 11).

One environment, copied from the packaged demo, carries every secret of
tests/adversarial/secrets_corpus.py in a log file (a private key over several
lines too), a runbook and an alert payload. Each path runs through the real
CLI against real SQLite files; the assertion is always the same: dump every
table (`iterdump`) and every stream, and no corpus secret appears in them.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from evcli.backends.snapshot import demo_env_dir
from evcli.core.redaction import Redactor
from tests.adversarial.secrets_corpus import PEM_BLOCK_LINES, SECRETS, leaked
from tests.agents.scripted_server import ScriptedServer, answer, calls, role_of, tool_messages
from tests.cli._util import evcli

STAMP = "2026-07-08 23:05:{:02d}.000 ERROR [payment-service-7d9f8b6c4-x2k9p] c.e.payment.Vault - leakcheck {}"
QUESTION_SECRET = SECRETS[33]  # password='…' in the question itself


def _dump(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return "\n".join(conn.iterdump())


def _runbook() -> str:
    lines = "\n".join(f"- {entry.line}" for entry in SECRETS)
    block = "\n".join(PEM_BLOCK_LINES)
    return (
        f"---\ntitle: Leakcheck credentials rotation\nservices: [payment-service]\n---\n\n# Leakcheck credentials rotation\n\n"
        f"## Known credentials\n\n{lines}\n\n## Key\n\n{block}\n"
    )


@pytest.fixture
def secret_env(tmp_path) -> Path:
    env = tmp_path / "env"
    shutil.copytree(demo_env_dir(), env)
    log_lines = [STAMP.format(n % 60, entry.line) for n, entry in enumerate(SECRETS)]
    log_lines.append(STAMP.format(59, "loaded signing key"))
    log_lines += PEM_BLOCK_LINES  # a key block over several lines, no timestamps
    with (env / "logs" / "payment-service.log").open("a", encoding="utf-8") as log:
        log.write("\n".join(log_lines) + "\n")
    (env / "runbooks" / "leakcheck.md").write_text(_runbook(), encoding="utf-8")
    return env


def _alert_payload(tmp_path: Path) -> Path:
    annotations = {f"note{n}": entry.line for n, entry in enumerate(SECRETS)}
    annotations["summary"] = "leakcheck " + QUESTION_SECRET.line
    annotations["key"] = "\n".join(PEM_BLOCK_LINES)
    labels = {
        "alertname": "HighCPUUsage",
        "service": "payment-service",
        "dsn": SECRETS[17].line,
        "token": SECRETS[11].secret,
    }
    payload = tmp_path / "alert.json"
    payload.write_text(
        json.dumps(
            {
                "version": "4",
                "status": "firing",
                "alerts": [
                    {
                        "status": "firing",
                        "labels": labels,
                        "annotations": annotations,
                        "startsAt": "2026-07-08T22:50:00Z",
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    return payload


def _assert_clean(where: str, *texts: str) -> None:
    found = sorted({kind for text in texts for kind in leaked(text)})
    assert not found, f"{where}: {len(found)} secret kinds leaked: {found}"


def test_the_corpus_is_masked_line_by_line_and_as_a_block():
    redactor = Redactor()
    _assert_clean("mask_text", *(redactor.mask_text(entry.line) for entry in SECRETS))
    _assert_clean("mask_lines", *redactor.mask_lines(PEM_BLOCK_LINES))
    _assert_clean("mask (log items)", json.dumps(redactor.mask({"logs": [{"text": line} for line in PEM_BLOCK_LINES]})))
    assert len({entry.kind for entry in SECRETS}) >= 27


def test_masking_is_idempotent():
    redactor = Redactor()
    for entry in SECRETS:
        once = redactor.mask_text(entry.line)
        assert redactor.mask_text(once) == once, entry.kind


def test_tool_calls_recorded_into_a_session(secret_env, tmp_path):
    db = tmp_path / "t.db"
    ask = evcli(
        "ask",
        "Why is payment-service CPU usage high? " + QUESTION_SECRET.line,
        "--env",
        secret_env,
        "--db",
        db,
        "--json",
    )
    assert ask.exit_code in (0, 3), ask
    session = ask.json()["session_id"]
    logs = evcli(
        "tool",
        "query_logs",
        "--service",
        "payment-service",
        "--query",
        "leakcheck",
        "--window",
        "2h",
        "--limit",
        "500",
        "--env",
        secret_env,
        "--session",
        session,
        "--db",
        db,
        "--json",
    )
    assert logs.exit_code == 0, logs
    raw_logs = evcli(
        "tool",
        "query_logs",
        "--service",
        "payment-service",
        "--window",
        "2h",
        "--limit",
        "500",
        "--env",
        secret_env,
        "--db",
        db,
    )
    assert raw_logs.exit_code == 0, raw_logs
    knowledge = evcli(
        "tool",
        "lookup_knowledge",
        "--query",
        "leakcheck credentials",
        "--env",
        secret_env,
        "--session",
        session,
        "--db",
        db,
    )
    assert knowledge.exit_code == 0, knowledge
    trace = evcli("trace", session, "--db", db)
    export = evcli("export", session, "--db", db)
    _assert_clean("ask/tool stdout+stderr", *(r.stdout + r.stderr for r in (ask, logs, raw_logs, knowledge)))
    _assert_clean("trace store", _dump(db))
    _assert_clean("trace/export output", trace.stdout, export.stdout)


def test_aiops_alert_labels_and_annotations(secret_env, tmp_path):
    db = tmp_path / "a.db"
    payload = _alert_payload(tmp_path)

    human = evcli("aiops", payload, "--env", secret_env, "--db", db)
    as_json = evcli("aiops", payload, "--env", secret_env, "--db", db, "--json")

    assert human.exit_code in (0, 3) and as_json.exit_code in (0, 3), (human, as_json)
    _assert_clean("aiops stdout+stderr", human.stdout, human.stderr, as_json.stdout, as_json.stderr)
    _assert_clean("aiops trace store", _dump(db))


def test_knowledge_index_and_search(secret_env, tmp_path):
    kb = tmp_path / "kb.db"
    index = evcli("kb", "index", secret_env, "--kb", kb)
    search = evcli("kb", "search", "leakcheck credentials key", "--env", secret_env, "--kb", kb, "--limit", "20")
    as_json = evcli("kb", "search", "leakcheck credentials key", "--env", secret_env, "--kb", kb, "--json")

    assert index.exit_code == 0 and search.exit_code == 0 and as_json.exit_code == 0, (index, search, as_json)
    assert "leakcheck.md" in search.stdout  # the runbook was found, masked
    _assert_clean("kb.db", _dump(kb))
    _assert_clean("kb search output", search.stdout, as_json.stdout)


def test_an_imported_document_is_masked_before_it_is_stored_or_shown(tmp_path):
    from tests.conftest import sample

    data = json.loads(sample("narrow-payment-highcpu").read_text(encoding="utf-8"))
    data["run"]["question"] += " " + QUESTION_SECRET.line
    data["invocations"][0]["output"]["leak"] = [entry.line for entry in SECRETS] + list(PEM_BLOCK_LINES)
    path = tmp_path / "leaky.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    db = tmp_path / "i.db"

    trace = evcli("trace", path)
    imported = evcli("import", path, "--db", db)

    assert trace.exit_code == 0 and imported.exit_code == 0, (trace, imported)
    _assert_clean("trace FILE", trace.stdout)
    _assert_clean("imported store", _dump(db))


def _leaky_model(body: dict) -> dict:
    role = role_of(body)
    if role == "planner":
        return answer({"selected_skill": None, "selection_reason": "s", "plan": ["query_logs"], "reasoning": "s"})
    if role == "executor":
        if not tool_messages(body):
            return calls(
                ("query_logs", {"service": "payment-service", "query": "leakcheck", "window": "2h", "limit": 200}),
                ("lookup_knowledge", {"query": "leakcheck credentials"}),
            )
        return answer(
            {
                "answer_version": "executor_evidence_v2",
                "claims": [],
                "hypotheses": [],
                "recommended_actions": [],
                "missing_info": ["nothing verified"],
            }
        )
    if role == "verifier":
        return answer(
            {
                "verdict": "LOW_CONFID",
                "groundedness_score": 0.0,
                "critical_fact_count": 0,
                "claim_checks": [],
                "facts_checked": [],
                "rationale": "s",
            }
        )
    return answer(
        {
            "answer_summary": "No finding was verified.",
            "recommended_actions": [],
            "user_facing_answer": "No finding was verified.",
        }
    )


def test_nothing_secret_reaches_the_model(secret_env, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-scripted-secrets-key-0000")
    db = tmp_path / "m.db"
    with ScriptedServer(_leaky_model) as server:
        run = evcli(
            "ask",
            "Why is payment-service failing? " + QUESTION_SECRET.line,
            "--env",
            secret_env,
            "--model",
            "openai/scripted",
            "--api-base",
            server.url + "/v1",
            "--db",
            db,
        )
        bodies = json.dumps(server.requests)
    assert run.exit_code in (0, 3), run
    assert "leakcheck" in bodies and "***" in bodies  # the evidence did reach the model, masked
    _assert_clean("model request bodies", bodies)
    _assert_clean("model path store", _dump(db))


def test_shipped_runbooks_and_logs_keep_their_text_apart_from_their_two_planted_secrets():
    """False positives cost evidence: masking the shipped environments changes only the planted secrets."""
    redactor = Redactor()
    root = Path(__file__).resolve().parents[2] / "evcli"
    changed = [
        line
        for path in sorted(root.glob("**/runbooks/**/*.md")) + sorted(root.glob("**/logs/*.log"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if redactor.mask_text(line) != line
    ]
    assert len(changed) == 2, changed
    assert "Bearer eyJ" in changed[0] + changed[1] and "password=hunter2" in changed[0] + changed[1]


def test_an_error_line_never_quotes_a_secret(tmp_path):
    token = SECRETS[12].secret  # a classic GitHub token pasted where a label=value filter was expected
    run = evcli("aiops", "--alertmanager", "http://127.0.0.1:9/", "--filter", token, "--db", tmp_path / "e.db")

    assert run.exit_code == 2, run
    assert "--filter" in run.stderr and token not in run.stderr, run
