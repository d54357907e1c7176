"""`evcli ask --continue [SESSION]`: a follow-up inherits the continued session's scope and
environment, is linked to it, and `trace` shows the link and the asked scope."""

from __future__ import annotations

from sqlite_utils import Database

from evcli.contracts import SessionConfig
from tests.cli._util import assert_clean_error, evcli

FIRST = "any 502s on nginx between 09:05 and 09:12?"


def _config(db, session_id: str) -> SessionConfig:
    row = Database(db)["diagnosis_run"].get(session_id)
    return SessionConfig.model_validate_json(row["config"])


def _ask(db, *args):
    run = evcli("ask", *args, "--json", "--db", db)
    assert run.exit_code in (0, 3), run
    return run.json()["session_id"]


def test_continue_without_a_value_follows_the_latest_session_in_its_environment(tmp_path):
    db = tmp_path / "trace.db"
    first = _ask(db, FIRST, "--env", "host")
    follow = _ask(db, "--continue", "what about the 401s?")
    config = _config(db, follow)
    assert config.continues == first
    assert config.env == _config(db, first).env  # no --env given: the continued session's environment
    assert config.scope is not None
    assert config.scope.services == ["nginx"]  # inherited: the follow-up names no service
    assert config.scope.tokens == ["401"]  # named by the follow-up: replaces the 502
    assert config.scope.range is not None and config.scope.range.range.startswith("2026-03-18T09:05:00+01:00")


def test_continue_names_a_session_by_prefix_and_trace_shows_the_link(tmp_path):
    db = tmp_path / "trace.db"
    first = _ask(db, FIRST, "--env", "host")
    _ask(db, "is there anything in the demo?")  # the latest session is now another one
    follow = _ask(db, "--continue", first[:-2], "and the 401s?")
    assert _config(db, follow).continues == first
    shown = evcli("trace", follow, "--db", db)
    assert shown.exit_code == 0, shown
    assert f"continues session {first}" in shown.stdout
    assert "asked scope" in shown.stdout and "tokens: 401" in shown.stdout


def test_question_first_then_bare_continue_flag(tmp_path):
    db = tmp_path / "trace.db"
    first = _ask(db, FIRST, "--env", "host")
    follow = _ask(db, "how many of them?", "--continue")
    assert _config(db, follow).continues == first
    assert _config(db, follow).scope.wants_count


def test_continue_an_unknown_session_is_a_clean_error(tmp_path):
    db = tmp_path / "trace.db"
    _ask(db, FIRST, "--env", "host")
    assert_clean_error(evcli("ask", "--continue", "nosuchsession", "what next?", "--db", db), 2, "nosuchsession")


def test_continue_with_an_empty_store_is_a_clean_error(tmp_path):
    run = evcli("ask", "--continue", "what next?", "--db", tmp_path / "trace.db")
    assert run.exit_code != 0 and "Traceback" not in run.stderr, run


def test_two_questions_without_continue_is_a_usage_error(tmp_path):
    assert_clean_error(evcli("ask", "why", "is it slow", "--db", tmp_path / "trace.db"), 2, "one question")
