"""`evcli report SESSION|FILE --format html|md`, `ask --report FILE` and `aiops --report-dir DIR`."""

from __future__ import annotations

import stat
import time

import pytest

from tests.cli._util import assert_clean_error, evcli
from tests.conftest import REPO
from tests.report.conftest import RAW_CONTROLS, control_export, hostile_export
from tests.serve.conftest import HOST_ALERTS


@pytest.fixture(scope="module")
def hostile_session(tmp_path_factory):
    return hostile_export(tmp_path_factory)


def test_report_of_an_exported_file_on_stdout_and_to_a_file(hostile_session, tmp_path):
    run = evcli("report", hostile_session)
    assert run.exit_code == 0, run
    assert run.stdout.startswith("<!DOCTYPE html>") and "&lt;script&gt;alert(" in run.stdout
    written = tmp_path / "r.md"
    run = evcli("report", hostile_session, "--format", "md", "-o", written)
    assert run.exit_code == 0 and run.stdout == "" and str(written) in run.stderr, run
    assert written.read_text().startswith("## why is web failing?")
    brief = evcli("report", hostile_session, "-f", "md", "--brief")
    assert brief.exit_code == 0 and "### Evidence" not in brief.stdout
    assert "\nSources:\n\n- [1] " in brief.stdout and "[^" not in brief.stdout  # inline citations, no footnotes


def test_report_of_a_stored_session_by_prefix_and_last(tmp_path):
    db = tmp_path / "x.db"
    asked = evcli("ask", "why is payment-service CPU high?", "--db", db, "--json")
    session_id = asked.json()["session_id"]
    for reference in (session_id[:12], "last"):
        run = evcli("report", reference, "-f", "md", "--db", db)
        assert run.exit_code == 0 and f"session `{session_id}`" in run.stdout, run


def test_bad_format_unknown_session_and_open_md_are_clean_errors(hostile_session, tmp_path):
    assert_clean_error(evcli("report", hostile_session, "--format", "pdf"), 2, "--format must be one of html, md")
    assert_clean_error(evcli("report", hostile_session, "-f", "md", "--open"), 2, "--open opens an HTML report")
    assert_clean_error(evcli("report", "no-such-session"), 2, "unknown session")


def test_open_hands_the_written_file_to_the_browser(hostile_session, tmp_path, monkeypatch):
    opened, browser = tmp_path / "opened.txt", tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("BROWSER", str(browser))
    run = evcli("report", hostile_session, "--open", "-o", tmp_path / "r.html")
    assert run.exit_code == 0, run
    for _ in range(100):  # webbrowser starts the command in the background
        if opened.exists() and opened.read_text().strip():
            break
        time.sleep(0.02)
    assert opened.read_text().strip() == (tmp_path / "r.html").resolve().as_uri()


def test_ask_report_writes_the_runs_report(tmp_path):
    page, notes = tmp_path / "run.html", tmp_path / "run.md"
    db = tmp_path / "x.db"
    run = evcli("ask", "why is payment-service CPU high?", "--db", db, "--report", page)
    assert run.exit_code == 0, run
    assert '<svg class="chart"' in page.read_text() and "[1]" in run.stdout
    run = evcli("ask", "why is payment-service CPU high?", "--db", db, "--report", notes, "--json")
    assert run.exit_code == 0 and notes.read_text().startswith("## why is payment-service CPU high?")
    assert f"session `{run.json()['session_id']}`" in notes.read_text()


def test_aiops_report_dir_writes_one_report_per_alert(tmp_path):
    reports = tmp_path / "reports"
    run = evcli(
        "aiops", REPO / "evcli" / "demo" / "alerts.json", "--db", tmp_path / "x.db", "--report-dir", reports, "--json"
    )
    assert run.exit_code == 0, run
    sessions = [report["session_id"] for report in run.json()["reports"]]
    assert sorted(path.stem for path in reports.iterdir()) == sorted(sessions) and sessions
    for session_id in sessions:
        assert f"<code>{session_id}</code>" in (reports / f"{session_id}.html").read_text()


def test_aiops_report_dir_that_is_a_file_is_a_clean_error(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("")
    run = evcli(
        "aiops", REPO / "evcli" / "demo" / "alerts.json", "--db", tmp_path / "x.db", "--report-dir", taken / "sub"
    )
    assert_clean_error(run, 2, "cannot create --report-dir")  # before any alert is diagnosed


@pytest.fixture(scope="module")
def control_session(tmp_path_factory):
    return control_export(tmp_path_factory)


@pytest.mark.parametrize("format, title", [("html", "\\x1b]0;PWNED\\x07"), ("md", "\\x1b]0;PWNED\\x07")])
def test_a_report_shows_control_characters_visibly_on_stdout_and_in_its_file(control_session, tmp_path, format, title):
    written = tmp_path / f"report.{format}"
    shown = evcli("report", control_session, "-f", format)
    saved = evcli("report", control_session, "-f", format, "-o", written)

    assert shown.exit_code == 0 and saved.exit_code == 0, (shown, saved)
    for text in (shown.result.stdout, written.read_text(encoding="utf-8")):
        assert not [c for c in RAW_CONTROLS if c in text], text
        assert title in text and "\\x9b2J \\u202eevil\\u202c" in text


def _victim(tmp_path, link):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(victim)
    return victim


def test_report_o_onto_a_symlink_replaces_the_link_not_its_target(hostile_session, tmp_path):
    link = tmp_path / "lk" / "report.out"
    victim = _victim(tmp_path, link)

    run = evcli("report", hostile_session, "-o", link)

    assert run.exit_code == 0, run
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text().startswith("<!DOCTYPE html>")


def test_report_o_onto_a_directory_is_a_clean_error(hostile_session, tmp_path):
    assert_clean_error(evcli("report", hostile_session, "-o", tmp_path), 2, "is a directory")


def test_ask_report_onto_a_symlink_replaces_the_link_not_its_target(tmp_path):
    link = tmp_path / "lk" / "run.md"
    victim = _victim(tmp_path, link)

    run = evcli("ask", "why is payment-service CPU high?", "--db", tmp_path / "x.db", "--report", link)

    assert run.exit_code == 0, run
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text().startswith("## why is payment-service CPU high?")


def test_aiops_report_dir_replaces_a_symlink_named_like_a_report(tmp_path, monkeypatch):
    monkeypatch.setattr("evcli.store.db.new_session_id", lambda: "20260708T230000-aaaaaa")
    reports = tmp_path / "reports"
    victim = _victim(tmp_path, reports / "20260708T230000-aaaaaa.html")

    run = evcli("aiops", HOST_ALERTS, "--env", "host", "--db", tmp_path / "x.db", "--report-dir", reports)

    assert run.exit_code == 0, run
    assert victim.read_text() == "keep me"
    written = reports / "20260708T230000-aaaaaa.html"
    assert not written.is_symlink() and "<code>20260708T230000-aaaaaa</code>" in written.read_text()
