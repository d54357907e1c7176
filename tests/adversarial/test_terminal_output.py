"""Data reaches the terminal as text: no markup is obeyed, no control sequence is emitted.

Hostile text sits in a stored question, a log line and a runbook; every command that shows it must
print it literally (markup) or visibly (controls), and --json must stay valid JSON with them escaped.
"""

from __future__ import annotations

import json
import shutil

import pytest

from evcli.backends.snapshot import demo_env_dir
from evcli.core.console import visible
from evcli.store.db import TraceStore
from tests.cli._util import evcli

MARKUP = ["[/]", "[bold]x[/bold]", "[link=file:///etc/passwd]x[/link]"]
# ESC sequences (colour, OSC 8 link, window title), bell, carriage return, backspace, DEL, C1 CSI, bidi override
CONTROLS = [
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;file:///etc/passwd\x07click\x1b]8;;\x07",
    "\x1b]0;title\x07",
    "over\rwrite",
    "back\x08space",
    "del\x7f",
    "c1\x9b31m",
    "bidi\u202egnp.exe",
    "iso\u2066x\u2069",
]
_RAW = ["\x1b", "\x07", "\r", "\x08", "\x7f", "\x9b", "\u202e", "\u2066", "\u2069"]


def _store_questions(db_path, questions):
    store = TraceStore(db_path)
    ids = [store.create_session(question).session_id for question in questions]
    store.close()
    return ids


def _no_raw_controls(text: str) -> None:
    found = [c for c in _RAW if c in text]
    assert not found, (found, text[:500])


def test_markup_in_stored_questions_is_printed_literally_by_sessions_and_trace(db_path):
    ids = _store_questions(db_path, MARKUP)

    listed = evcli("sessions", "--db", db_path)
    assert listed.exit_code == 0, listed
    for question in MARKUP:
        assert question in listed.stdout, (question, listed)
    for session_id, question in zip(ids, MARKUP, strict=True):
        traced = evcli("trace", session_id, "--db", db_path)
        assert traced.exit_code == 0, traced
        assert f"question: {question}" in traced.stdout, traced


@pytest.mark.parametrize("question", MARKUP)
def test_markup_in_a_question_is_printed_literally_by_ask(db_path, question):
    run = evcli("ask", f"why is payment-service slow {question}", "--db", db_path)
    assert run.exit_code == 0, run
    listed = evcli("sessions", "--db", db_path)
    assert listed.exit_code == 0 and question in listed.stdout, listed


def test_control_characters_in_stored_questions_are_shown_not_obeyed(db_path):
    ids = _store_questions(db_path, CONTROLS)

    listed = evcli("sessions", "--db", db_path)
    assert listed.exit_code == 0, listed
    _no_raw_controls(listed.stdout)
    assert "\\x1b]8;;file:///etc/passwd\\x07click" in listed.stdout
    traced = evcli("trace", ids[1], "--db", db_path)
    _no_raw_controls(traced.stdout)
    assert visible(CONTROLS[1]) in traced.stdout
    # --json: valid JSON, the same text back, and no raw control byte on the wire
    as_json = evcli("sessions", "--db", db_path, "--json")
    _no_raw_controls(as_json.stdout)
    assert sorted(row["question"] for row in as_json.json()) == sorted(CONTROLS)


@pytest.fixture
def hostile_env(tmp_path):
    env = tmp_path / "env"
    shutil.copytree(demo_env_dir(), env)
    line = (
        "2026-07-08 23:09:50.000 ERROR [payment-service-7d9f8b6c4-m8r4t] c.e.Pool - HikariPool timeout "
        "\x1b]8;;http://evil.example\x07"
        "open me\x1b]8;;\x07 \x1b[2J cleared \u202etxt.exe [bold]loud[/bold]\n"
    )
    logs = sorted((env / "logs").iterdir())
    target = next(p for p in logs if p.name == "payment-service.log")
    with target.open("a", encoding="utf-8") as handle:
        handle.write(line)
    return env


def test_escape_sequences_in_log_lines_are_shown_visibly_by_tool(hostile_env, db_path):
    run = evcli(
        "tool",
        "query_logs",
        "--service",
        "payment-service",
        "--query",
        "HikariPool",
        "--window",
        "30d",
        "--env",
        hostile_env,
    )
    assert run.exit_code == 0, run
    _no_raw_controls(run.result.stdout)
    assert "\\x1b]8;;http://evil.example\\x07open me" in run.stdout, run
    as_json = evcli(
        "tool",
        "query_logs",
        "--service",
        "payment-service",
        "--query",
        "HikariPool",
        "--window",
        "30d",
        "--env",
        hostile_env,
        "--json",
    )
    _no_raw_controls(as_json.result.stdout)
    assert "evil.example" in json.dumps(as_json.json(), ensure_ascii=False)  # still valid JSON carrying the line


def test_escape_sequences_in_evidence_are_shown_visibly_by_ask_and_kb_search(hostile_env, db_path):
    (hostile_env / "runbooks" / "evil.md").write_text(
        "# HikariPool \x1b]0;pwned\x07 exhaustion [/]\n\nHikariPool timeout: check \x1b[31mthe pool\x1b[0m \u202egnp.\n",
        encoding="utf-8",
    )
    asked = evcli("ask", "why is payment-service slow? HikariPool timeout", "--env", hostile_env, "--db", db_path)
    assert asked.exit_code in (0, 3, 4), asked
    _no_raw_controls(asked.result.stdout + asked.result.stderr)
    found = evcli(
        "kb", "search", "HikariPool exhaustion", "--dir", hostile_env / "runbooks", "--kb", db_path.parent / "kb.db"
    )
    assert found.exit_code == 0, found
    _no_raw_controls(found.result.stdout)
    assert "\\x1b]0;pwned\\x07 exhaustion [/]" in found.stdout, found
