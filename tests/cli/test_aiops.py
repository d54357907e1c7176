from __future__ import annotations

import json

from typer.testing import CliRunner

from evcli.cli import app
from tests.test_aiops import AM_LIST, WEBHOOK


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_aiops_payload_file_prints_a_report_with_every_section(tmp_path, db_path):
    payload = tmp_path / "webhook.json"
    payload.write_text(json.dumps(WEBHOOK))
    result = _run("aiops", payload, "--db", db_path)
    assert result.exit_code == 0, result.output
    for heading in (
        "Alert HighMemoryUsage",
        "Findings",
        "Likely causes (hypotheses, unconfirmed)",
        "Next actions",
        "Missing evidence",
        "AIOps rules: ✓ report_exists",
    ):
        assert heading in result.stdout
    assert "current=91%" in result.stdout
    assert "✗" not in result.stdout.split("AIOps rules:")[1]


def test_aiops_json_has_one_report_per_firing_alert(tmp_path, db_path):
    payload = tmp_path / "am.json"
    payload.write_text(json.dumps(AM_LIST))
    result = _run("aiops", payload, "--json", "--db", db_path)
    assert result.exit_code == 0, result.output
    reports = json.loads(result.stdout)["reports"]
    assert [r["alert"]["alertname"] for r in reports] == ["HighMemoryUsage"]  # the unprocessed one is pending
    assert reports[0]["aiops_rule_evaluation"]["passed"] is True


def test_aiops_rejects_what_is_not_an_alert_payload(tmp_path, db_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"alerts": "nope"}')
    result = _run("aiops", bad, "--db", db_path)
    assert result.exit_code == 2
    assert "is not an alert payload; expected an Alertmanager webhook payload" in result.stderr
    assert _run("aiops", tmp_path / "missing.json").exit_code == 2
    nothing = _run("aiops")
    assert nothing.exit_code == 2 and "--alertmanager" in nothing.stderr
