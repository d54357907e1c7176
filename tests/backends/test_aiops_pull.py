"""`evcli aiops --alertmanager URL` against the real Alertmanager and Prometheus of this folder's fixtures."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from evcli.aiops import pull_alerts
from evcli.cli import app


def test_pull_alerts_filters_by_label(alertmanager_with_alerts):
    alerts = pull_alerts(alertmanager_with_alerts.url, ["alertname=HighCPUUsage"])
    assert {a["labels"]["alertname"] for a in alerts} == {"HighCPUUsage"}
    assert all(a["labels"]["service"] == "payment-service" for a in alerts)


def test_aiops_pulls_firing_alerts_and_diagnoses_them_with_live_evidence(
    alertmanager_with_alerts, prometheus, tmp_path
):
    result = CliRunner().invoke(
        app,
        [
            "aiops",
            "--alertmanager",
            alertmanager_with_alerts.url,
            "--prometheus",
            prometheus.url,
            "--filter",
            "alertname=HighCPUUsage",
            "--json",
            "--db",
            str(tmp_path / "evcli.db"),
        ],
    )
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)["reports"]
    assert report["alert"]["alertname"] == "HighCPUUsage"
    cited = [(e["tool_name"], e["text"]) for c in report["claims"] for e in c["evidence"]]
    assert any(tool == "query_metrics" and "HighCPUUsage" in text for tool, text in cited)
    assert report["aiops_rule_evaluation"]["evidence_tools_called"] is True


def test_a_bad_filter_is_a_usage_error(alertmanager_with_alerts):
    result = CliRunner().invoke(app, ["aiops", "--alertmanager", alertmanager_with_alerts.url, "--filter", "nolabel"])
    assert result.exit_code == 2
    assert "--filter must look like label=value" in result.stderr


def test_filter_values_are_escaped_by_the_alertmanager_backend(alertmanager_with_alerts):
    # Unescaped, `alertname="High"CPU"` is a malformed matcher that Alertmanager answers with HTTP 400.
    assert pull_alerts(alertmanager_with_alerts.url, ['alertname=High"CPU\\Usage']) == []
    assert pull_alerts(alertmanager_with_alerts.url, [" alertname = HighCPUUsage "])
