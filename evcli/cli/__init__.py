"""The `evcli` command line: thin commands over the library.

Command modules import the heavy parts of the library inside their functions,
so `evcli --help` and `evcli gate` start fast and never load a model client.
"""

from __future__ import annotations

from typing import Annotated

import typer

from evcli import __version__
from evcli.cli import eval as eval_commands
from evcli.cli import aiops, ask, env, gate, kb, schema, sessions, tool, trace
from evcli.cli._common import set_debug

app = typer.Typer(
    name="evcli",
    help="Incident diagnosis whose every fact cites a recorded tool output, checked by code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evcli {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of unexpected errors.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    """Exit codes: 0 ok/pass, 1 runtime error, 2 usage or bad input, 3 low_confid, 4 reject."""
    set_debug(debug)


app.command("ask")(ask.ask_command)
app.command("plan")(ask.plan_command)
app.command("execute")(ask.execute_command)
app.command("gate")(gate.gate_command)
app.command("verify")(ask.verify_command)
app.command("compose")(ask.compose_command)
app.command("replay")(ask.replay_command)
app.command("aiops")(aiops.aiops_command)
app.command("trace")(trace.trace_command)
app.command("sessions")(sessions.sessions_command)
app.command("export")(sessions.export_command)
app.command("import")(sessions.import_command)
app.command("schema")(schema.schema_command)
app.add_typer(eval_commands.app, name="eval")
app.add_typer(tool.app, name="tool")
app.add_typer(kb.app, name="kb")
app.add_typer(env.app, name="env")


def main() -> None:
    app()
