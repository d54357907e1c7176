"""`evcli tool NAME …`: run one evidence tool and show what a model would see.

There is one subcommand per registered tool (`evcli.tools.registry`), built on
first use from the tool's parameter model: each field is a `--field` option
(required when the field is, with the field's default otherwise), followed by
the options every tool shares. A tool registered at run time is a command too.
"""

from __future__ import annotations

import inspect
import types
import typing
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from evcli.cli._common import (
    DbOption,
    JsonOption,
    environment_options,
    err,
    handles_errors,
    open_store,
    out,
    print_json,
)
from evcli.core.console import visible

if TYPE_CHECKING:
    from typer._click import core as click  # typer vendors Click

    from evcli.backends.spec import EnvironmentSpec
    from evcli.tools.registry import ToolSpec

SessionOption = Annotated[
    str | None,
    typer.Option(
        "--session",
        help="Record the call into this stored session (an id, a unique prefix or `last`); the call runs on the"
        " session's environment, and naming another one is refused (exit 2).",
    ),
]

# The options after a tool's own, in this order: (parameter name, annotation, default).
_SHARED: tuple[tuple[str, Any, Any], ...] = (
    ("environment", Any, inspect.Parameter.empty),  # the shared environment options (cli/_common.py)
    ("session", SessionOption, None),
    ("json_output", JsonOption, False),
    ("db", DbOption, None),
)


class _ToolCommands(TyperGroup):
    """The subcommands are the registered tools, looked up when the command line is parsed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from evcli.tools import registry

        return sorted(registry.names())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from evcli.tools import registry

        spec = registry.find(cmd_name)
        return _command(spec) if spec is not None else None


app = typer.Typer(
    cls=_ToolCommands, help="Run one evidence tool; --session records the call into a session.", no_args_is_help=True
)


@cache
def _command(spec: ToolSpec) -> click.Command:
    """`evcli tool <spec.name>`: the tool's fields as options, then the shared ones."""

    def command(**values: Any) -> None:
        shared = {name: values.pop(name) for name, _, _ in _SHARED}
        _run(spec.name, values, **shared)

    parameters = [_field_parameter(spec, name, field) for name, field in spec.params.model_fields.items()]
    parameters += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
        for name, annotation, default in _SHARED
    ]
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    command.__name__ = spec.name
    single = typer.Typer(add_completion=False)
    single.command(spec.name, help=spec.summary)(handles_errors(environment_options(runbooks=True)(command)))
    return typer.main.get_command(single)


def _field_parameter(spec: ToolSpec, name: str, field: Any) -> inspect.Parameter:
    """`--name` for one field of the tool's parameter model; pydantic validates the value, the option only carries it."""
    help_text = spec.parameter_help(name)
    flag = f"--{name.replace('_', '-')}"
    # a list field is a repeatable option, also spelled in the singular: --label a=1 --label b=2
    flags = (flag.removesuffix("s"), flag) if _is_list(field.annotation) and flag.endswith("s") else (flag,)
    option = typer.Option(*flags, help=help_text)
    default = inspect.Parameter.empty if field.is_required() else field.default
    annotation = Annotated[_option_type(field.annotation), option]  # type: ignore[valid-type]
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)


def _option_type(annotation: Any) -> Any:
    """int, float or bool fields keep their type (optional when they may be None), a list is a list of text
    (a repeatable option); anything else is text."""
    members = _members(annotation)
    optional = type(None) in members
    scalar = list[str] if _is_list(annotation) else next((m for m in members if m in (bool, int, float)), str)
    return scalar | None if optional else scalar


def _members(annotation: Any) -> tuple[Any, ...]:
    union = isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
    return typing.get_args(annotation) if union else (annotation,)


def _is_list(annotation: Any) -> bool:
    return any(typing.get_origin(member) is list for member in _members(annotation))


def _run(tool_name: str, params: dict, *, environment: EnvironmentSpec, session, json_output, db) -> None:
    from evcli.tools.context import build_environment
    from evcli.tools.runner import SessionView, run_tool, stored_guards
    from evcli.tools.view import model_view

    params = {key: value for key, value in params.items() if value is not None}
    store = view = None
    if session:
        from evcli.session_setup import session_environment

        store = open_store(db, must_exist=True)
        session = store.resolve(session)  # an id, a unique prefix or `last`
        document = store.load(session)
        environment = session_environment(session, document.run.config.env, environment)
        view = SessionView(invocations=document.invocations, narrow=document.run.config.task_scope == "narrow")
    tools = build_environment(spec=environment)
    invocation = run_tool(tool_name, params, tools, view)
    if store is not None:
        invocation = store.record_invocation(session, invocation, check=stored_guards(invocation, tools.settings))
        err.print(visible(f"recorded as invocation #{invocation.invocation_id} of session {session}"), markup=False)
    if json_output:
        print_json(invocation.model_dump(mode="json"))
    else:
        out.print(visible(model_view(invocation)), markup=False, highlight=False)
    if not invocation.success:
        err.print(visible(f"{tool_name} failed: {invocation.error_message or 'see output'}"), markup=False)
        raise typer.Exit(1)
