"""The shared environment options: declared once, placed where a command asks, turned into one spec."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer
from typer.testing import CliRunner

from evcli.cli import app
from evcli.cli._common import environment_options, handles_errors

if TYPE_CHECKING:
    from evcli.backends.spec import EnvironmentSpec


def _probe_app() -> typer.Typer:
    probe = typer.Typer()

    @probe.command()
    @handles_errors
    @environment_options(runbooks=True, help={"loki": "Where the logs are."})
    def show(name: str, environment: EnvironmentSpec, verbose: bool = False) -> None:
        typer.echo(json.dumps({"name": name, "verbose": verbose, "env": environment.as_config()}))

    return probe


def test_the_options_replace_the_placeholder_in_order_and_build_the_spec(tmp_path):
    result = CliRunner().invoke(
        _probe_app(), ["x", "--loki", "http://l:3100", "--runbooks", str(tmp_path), "--verbose"]
    )

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "name": "x",
        "verbose": True,
        "env": {"loki": "http://l:3100", "runbooks": str(tmp_path.resolve())},
    }
    help_text = CliRunner().invoke(_probe_app(), ["--help"], env={"COLUMNS": "200"}).stdout
    flags = ["--env", "--prometheus", "--alertmanager", "--loki", "--runbooks", "--verbose"]
    assert all(flag in help_text for flag in flags)
    assert sorted(flags, key=help_text.index) == flags
    assert "Where the logs are." in help_text


def test_every_environment_command_refuses_a_snapshot_with_live_backends(tmp_path):
    payload = tmp_path / "alerts.json"
    payload.write_text(
        json.dumps(
            {
                "status": "success",
                "data": {
                    "alerts": [
                        {"labels": {"alertname": "HighCPUUsage", "service": "payment-service"}, "state": "firing"}
                    ]
                },
            }
        )
    )
    for command in (
        ["ask", "why?"],
        ["plan", "why?"],
        ["aiops", str(payload)],
        ["tool", "query_logs", "--service", "x"],
    ):
        result = CliRunner().invoke(
            app, [*command, "--env", str(tmp_path), "--loki", "http://127.0.0.1:9", "--db", str(tmp_path / "evcli.db")]
        )
        assert result.exit_code == 2, (command, result.output)
        assert "use either --env DIR or backend URLs" in result.stderr, command
