"""`evcli rules show|init`: the shipped Gatekeeper rules file, to read or to start your own from.

`init` writes the shipped file byte for byte (comments included), so `evcli gate --rules FILE` with
an unedited copy judges exactly as the default does; it never overwrites a file unless --force.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from evcli.cli._common import err, handles_errors
from evcli.core.console import safe

app = typer.Typer(help="The Gatekeeper rules file evcli ships.", no_args_is_help=True)


def _shipped() -> Path:
    from evcli.resources import data_path

    return data_path("rules.toml")


@app.command("show")
@handles_errors
def show_command() -> None:
    """Print the shipped rules.toml (every rule, its severity, parameters and what it checks)."""
    sys.stdout.write(_shipped().read_text(encoding="utf-8"))


@app.command("init")
@handles_errors
def init_command(
    output: Annotated[
        Path, typer.Option("--output", "-o", dir_okay=False, help="File to write (default: ./rules.toml).")
    ] = Path("rules.toml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite the file if it exists.")] = False,
) -> None:
    """Write the shipped rules.toml as a starting point for `--rules FILE`."""
    from evcli.core.errors import BadInput
    from evcli.core.userfiles import write_output

    if os.path.lexists(output) and not force:  # a symlink, even a dangling one, is something there
        raise BadInput(f"{output} already exists", hint="pass --force to overwrite it, or -o another file")
    write_output(output, _shipped().read_bytes())
    err.print(f"wrote {safe(output)}; use it with `evcli gate SESSION --rules {safe(output)}`")
