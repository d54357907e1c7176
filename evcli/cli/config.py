"""`evcli config show|init`: the effective configuration with the source of every value, and a
commented starting file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evcli.cli._common import JsonOption, environment_options, handles_errors, out, print_json, safe
from evcli.core.errors import BadInput

if TYPE_CHECKING:
    from evcli.backends.spec import EnvironmentSpec
    from evcli.config import Loaded

app = typer.Typer(help="The configuration file, profiles and EVCLI_* variables.", no_args_is_help=True)


@app.command("show")
@handles_errors
@environment_options(runbooks=True)
def show_command(
    environment: EnvironmentSpec,
    model: Annotated[str | None, typer.Option("--model", help="Model for every role (as `ask --model`).")] = None,
    api_base: Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible server URL.")] = None,
    json_output: JsonOption = False,
    settings: Loaded = None,  # type: ignore[assignment]  # filled by the environment options
) -> None:
    """Print every effective value and where it came from (default, file, profile, env, flag); secrets masked."""
    from evcli.config.effective import effective_rows

    flags = {"models": {key: value for key, value in (("default", model), ("api_base", api_base)) if value}}
    loaded = settings.with_flags(flags)
    rows = effective_rows(loaded)
    file = str(loaded.config_file) if loaded.config_file else None
    if json_output:
        print_json({"config_file": file, "profile": loaded.profile, "values": [row.as_dict() for row in rows]})
        return
    out.print(f"config file: {safe(file or 'none')}" + (f", profile {safe(loaded.profile)}" if loaded.profile else ""))
    width = max(len(row.key) for row in rows)
    for row in rows:
        out.print(f"{safe(row.key.ljust(width))}  {safe(row.value)}  [dim]({safe(row.source)})[/]", soft_wrap=True)


@app.command("init")
@handles_errors
def init_command(
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", dir_okay=False, help="Where to write (default: the default config file)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starting configuration file; prints its path."""
    from evcli.config import default_config_path
    from evcli.config.template import TEMPLATE
    from evcli.core.userfiles import write_output

    path = output or default_config_path()
    if os.path.lexists(path) and not force:  # a symlink, even a dangling one, is something there
        raise BadInput(f"{path} exists", hint="pass --force to overwrite it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_output(path, TEMPLATE)
    except OSError as exc:
        raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
    out.print(safe(str(path)))
