"""The shared environment options: declared once, placed where a command asks, turned into one spec."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
import typer
from typer.testing import CliRunner

from evcli.cli import app
from evcli.cli._common import environment_options, handles_errors
from evcli.store.db import TraceStore
from tests.cli._util import assert_clean_error, evcli

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


# --- every session argument: an id, a unique prefix or `last` (issue 13) --------------------------------

_SESSION_COMMANDS = {
    "trace": ("trace", "{ref}", "--json"),
    "gate": ("gate", "{ref}", "--json"),
    "export": ("export", "{ref}"),
    "replay": ("replay", "{ref}", "--from", "compose", "--json"),
}


@pytest.mark.parametrize("command", sorted(_SESSION_COMMANDS))
@pytest.mark.parametrize("reference", ["prefix", "last"])
def test_session_arguments_take_a_unique_prefix_and_last(command, reference, tmp_path):
    from tests.cli._util import import_sample
    from tests.conftest import sample

    db = tmp_path / "refs.db"
    import_sample(sample("narrow-payment-highcpu"), db)
    newest = import_sample(sample("negative-inventory-hikaricp"), db)  # the newer created_at
    ref = {"prefix": "sample-neg", "last": "last"}[reference]
    args = [part.format(ref=ref) for part in _SESSION_COMMANDS[command]]
    run = evcli(*args, "--db", db)
    assert run.exit_code == 0, run
    document = run.json()
    named = {
        "trace": lambda: document["run"]["session_id"],
        "gate": lambda: document["session_id"],
        "export": lambda: document["run"]["session_id"],
        "replay": lambda: TraceStore(db).load(document["session_id"]).run.config.replay_of.session_id,
    }[command]()
    assert named == newest


def test_an_ambiguous_prefix_is_a_usage_error_naming_the_candidates(tmp_path):
    from tests.cli._util import import_sample
    from tests.conftest import sample

    db = tmp_path / "refs.db"
    for name in ("narrow-payment-highcpu", "negative-inventory-hikaricp"):
        import_sample(sample(name), db)
    for args in (
        ("trace", "sample-n"),
        ("gate", "sample-n"),
        ("export", "sample-n"),
        ("sessions", "delete", "sample-n"),
    ):
        assert_clean_error(evcli(*args, "--db", db), 2, "ambiguous", "sample-narrow-payment-highcpu")


def test_ask_with_an_empty_question_is_a_usage_error(db_path):
    for question in ("", "   "):
        assert_clean_error(evcli("ask", question), 2, "the question is empty")
    assert not db_path.exists() or evcli("sessions", "--json").json() == []
