"""`evcli samples list|show|path`: the sample sessions and environments evcli ships.

Everything here reads files inside the installed package (`evcli.resources`), so the README's
examples work from any directory after a plain `pip install .`: `evcli samples path NAME` is the
file or directory to hand to `gate`, `trace`, `import` or `--env`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from evcli.cli._common import JsonOption, handles_errors, out, print_json
from evcli.core.console import safe, visible
from evcli.resources import packaged_envs_text

app = typer.Typer(help="The sample sessions and environments evcli ships.", no_args_is_help=True)

NameArgument = Annotated[
    str, typer.Argument(help=f"A sample session (e.g. broad-order-service) or environment ({packaged_envs_text()}).")
]


@app.command("list")
@handles_errors
def list_command(json_output: JsonOption = False) -> None:
    """List the shipped sample sessions (kind, expected gate outcome, question) and environments."""
    from rich.text import Text

    from evcli.resources import shipped_samples

    samples = shipped_samples()
    if json_output:
        print_json([sample.as_json() for sample in samples])
        return
    width = max(len(sample.name) for sample in samples)
    for sample in samples:  # one line each: cut at the screen's edge, whole when piped
        line = f"{visible(sample.name):<{width}}  {sample.kind:<11}  {visible(sample.summary)}"
        if out.is_terminal:
            out.print(Text(line), no_wrap=True, overflow="ellipsis")
        else:
            sys.stdout.write(line + "\n")


@app.command("show")
@handles_errors
def show_command(name: NameArgument) -> None:
    """Print a sample session's JSON document, or an environment's env.toml and files."""
    from evcli.resources import shipped_sample

    sample = shipped_sample(name)
    if sample.path.is_file():
        sys.stdout.write(sample.path.read_text(encoding="utf-8"))
        return
    sys.stdout.write((sample.path / "env.toml").read_text(encoding="utf-8"))
    for file in sorted(path for path in sample.path.rglob("*") if path.is_file() and path.name != "env.toml"):
        out.print(f"# {safe(file.relative_to(sample.path))}")


@app.command("path")
@handles_errors
def path_command(
    name: Annotated[
        str | None, typer.Argument(help="A sample session or environment; omit for the sample sessions' directory.")
    ] = None,
) -> None:
    """Print where a shipped sample lives, to pass to gate, trace, import or --env."""
    from evcli.resources import data_path, shipped_sample

    path = data_path("sample_sessions") if name is None else shipped_sample(name).path
    sys.stdout.write(f"{path}\n")
