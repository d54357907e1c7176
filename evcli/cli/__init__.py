"""The `evcli` command line: thin commands over the library.

Command modules import the heavy parts of the library inside their functions,
so `evcli --help` and `evcli gate` start fast and never load a model client.
Running one command imports its module alone and Typer builds that command
alone (`main`); the whole tree (`app`, built on first use) is for the root's
help, shell completion and the tests.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import Annotated, Any

import typer
from typer._click import exceptions as click  # typer vendors Click; its errors live here
from typer.core import TyperGroup, TyperOption

from evcli import __version__
from evcli.cli._common import fail, set_debug
from evcli.core.errors import EXIT_INTERRUPTED


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


# the command tree, in help order: a command is (module, function), a group is its module's `app`
COMMANDS: dict[str, tuple[str, str]] = {
    "ask": ("ask", "ask_command"),
    "plan": ("ask", "plan_command"),
    "execute": ("ask", "execute_command"),
    "gate": ("gate", "gate_command"),
    "verify": ("ask", "verify_command"),
    "compose": ("ask", "compose_command"),
    "replay": ("ask", "replay_command"),
    "aiops": ("aiops", "aiops_command"),
    "serve": ("serve", "serve_command"),
    "mcp": ("mcp", "mcp_command"),
    "trace": ("trace", "trace_command"),
    "report": ("report", "report_command"),
    "export": ("sessions", "export_command"),
    "import": ("sessions", "import_command"),
    "schema": ("schema", "schema_command"),
    "doctor": ("doctor", "doctor_command"),
}
GROUPS: dict[str, str] = {
    "eval": "eval",
    "tool": "tool",
    "kb": "kb",
    "env": "env",
    "sessions": "sessions",
    "samples": "samples",
    "rules": "rules",
    "config": "config",
}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evcli {__version__}")
        raise typer.Exit()


def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of unexpected errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Exit codes: 0 ok/pass, 1 runtime error, 2 usage or bad input, 3 low_confid, 4 reject."""
    set_debug(debug)


def build_app(names: Sequence[str] | None = None) -> typer.Typer:
    """The command line with the named commands and groups (default: all of them, in help order)."""
    root = typer.Typer(
        cls=_OneLineErrors,
        name="evcli",
        help="Incident diagnosis whose every fact cites a recorded tool output, checked by code.",
        no_args_is_help=True,
        add_completion=True,  # evcli --install-completion / --show-completion
        pretty_exceptions_enable=False,
    )
    root.callback()(_root)
    for name in [*COMMANDS, *GROUPS] if names is None else names:
        if name in COMMANDS:
            module, function = COMMANDS[name]
            root.command(name)(getattr(import_module(f"evcli.cli.{module}"), function))
        else:
            root.add_typer(import_module(f"evcli.cli.{GROUPS[name]}").app, name=name)
    return root


def _command_named(args: Sequence[str]) -> str | None:
    """The command or group the arguments run, when they run one: the first word that is no root option."""
    for arg in args:
        if arg in ("--debug", "--version"):
            continue
        return arg if arg in COMMANDS or arg in GROUPS else None
    return None


_app: typer.Typer | None = None


def __getattr__(name: str) -> Any:
    """`app`: the whole command tree, built on first use (the root's help, completion, the tests)."""
    global _app
    if name == "app":
        if _app is None:
            _app = build_app()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    # pydantic looks for plugins in every installed distribution's entry points on its first model build
    # (~11 ms of each command's start-up); evcli uses none. A user who wants one sets the variable.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    completing = any(key.endswith("_COMPLETE") for key in os.environ)  # shell completion needs every command
    command = None if completing else _command_named(sys.argv[1:])
    (build_app([command]) if command else build_app())()
