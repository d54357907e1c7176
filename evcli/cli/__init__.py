"""The `evcli` command line: thin commands over the library.

Command modules import the heavy parts of the library inside their functions,
so `evcli --help` and `evcli gate` start fast and never load a model client.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer._click import exceptions as click  # typer vendors Click; its errors live here
from typer.core import TyperGroup, TyperOption

from evcli import __version__
from evcli.cli import aiops, ask, doctor, env, gate, kb, report, rules, samples, schema, serve, sessions, tool, trace
from evcli.cli import config as config_commands
from evcli.cli import eval as eval_commands
from evcli.cli._common import fail, set_debug
from evcli.errors import EXIT_INTERRUPTED


class _OneLineErrors(TyperGroup):
    """Usage errors as one `error:` line with exit 2, instead of a boxed usage text.

    Commands translate their own failures (`handles_errors`); this catches what
    Click raises before a command runs: unknown options, bad values, missing
    arguments.
    """

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else "evcli"
            code = _fail_code(exc.format_message(), f"try '{where} --help'", exc.exit_code)
        except click.ClickException as exc:
            code = _fail_code(exc.format_message(), None, exc.exit_code)
        except typer.Abort:
            code = _fail_code("aborted", None, EXIT_INTERRUPTED)
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def _flags_show_no_type(display_type_rich: Any) -> Any:
    """Help shows `--json` alone, not `--json <bool>`: a flag takes no value to describe."""

    def display(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else display_type_rich(self, ctx)

    return display


TyperOption.display_type_rich = _flags_show_no_type(TyperOption.display_type_rich)  # type: ignore[method-assign]


def _fail_code(message: str, hint: str | None, code: int) -> int:
    try:
        fail(message, hint, code)
    except typer.Exit as exc:
        return exc.exit_code


app = typer.Typer(
    cls=_OneLineErrors,
    name="evcli",
    help="Incident diagnosis whose every fact cites a recorded tool output, checked by code.",
    no_args_is_help=True,
    add_completion=True,  # evcli --install-completion / --show-completion
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evcli {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of unexpected errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
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
app.command("serve")(serve.serve_command)
app.command("trace")(trace.trace_command)
app.command("report")(report.report_command)
app.command("export")(sessions.export_command)
app.command("import")(sessions.import_command)
app.command("schema")(schema.schema_command)
app.command("doctor")(doctor.doctor_command)
app.add_typer(eval_commands.app, name="eval")
app.add_typer(tool.app, name="tool")
app.add_typer(kb.app, name="kb")
app.add_typer(env.app, name="env")
app.add_typer(sessions.app, name="sessions")
app.add_typer(samples.app, name="samples")
app.add_typer(rules.app, name="rules")
app.add_typer(config_commands.app, name="config")


def main() -> None:
    app()
