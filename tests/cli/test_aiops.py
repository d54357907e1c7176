from __future__ import annotations

import json

from typer.testing import CliRunner

from evcli.cli import app
from evcli.core.console import visible
from tests.cli._util import assert_clean_error, evcli
from tests.report.conftest import RAW_CONTROLS
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


def test_aiops_refuses_a_fifo_a_device_and_an_oversized_payload_without_reading_them(tmp_path, db_path, fifo):
    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as handle:
        handle.truncate(3 << 30)  # 3 GiB of holes
    for payload, fragment in (
        (fifo, "refused: not a regular file (a FIFO)"),
        ("/dev/zero", "refused: not a regular file (a character device)"),
        (sparse, "is larger than 8 MiB, the limit for an alert payload"),
    ):
        assert_clean_error(evcli("aiops", payload, "--db", db_path), 2, str(payload), fragment)
    assert not db_path.exists()  # refused before any session was created


def test_aiops_shows_control_characters_in_alert_labels_and_summary_visibly(tmp_path, db_path):
    hostile = "\x1b]0;PWNED\x07\x1b[2J \x1b]8;;https://attacker.example\x1b\\link\x1b]8;;\x1b\\ \x9b2J \u202eevil\u202c"
    alert = {**WEBHOOK["alerts"][0], "labels": {**WEBHOOK["alerts"][0]["labels"], "instance": f"i{hostile}"}}
    alert["annotations"] = {"summary": f"order-service memory {hostile} high"}
    payload = tmp_path / "webhook.json"
    payload.write_text(json.dumps({**WEBHOOK, "alerts": [alert]}))

    run = evcli("aiops", payload, "--db", db_path)

    assert run.exit_code == 0, run
    raw = run.result.stdout
    assert not [c for c in RAW_CONTROLS if c in raw], raw
    assert visible(hostile) in raw
    assert "instance=i\\x1b]0;PWNED\\x07\\x1b[2J" in raw and "order-service memory \\x1b]0;PWNED" in raw
