from __future__ import annotations

import json

from typer.testing import CliRunner

from evcli.cli import app
from evcli.contracts import ExecutorEvidenceV2


def test_schema_prints_every_contract():
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0
    schemas = json.loads(result.stdout)
    assert {
        "planner_plan",
        "executor_evidence_v2",
        "gate_result",
        "verifier_output",
        "composer_output",
        "tool_invocation",
        "session_document",
    } <= set(schemas)
    assert schemas["executor_evidence_v2"] == ExecutorEvidenceV2.model_json_schema()
    assert set(schemas["gate_result"]["required"]) >= {"status", "severity", "rule_set_version", "checked_bindings"}


def test_unknown_contract_is_bad_input():
    result = CliRunner().invoke(app, ["schema", "nope"])
    assert result.exit_code == 2
    assert "unknown contract 'nope'" in result.stderr
