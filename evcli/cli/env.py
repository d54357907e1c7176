"""`evcli env check DIR`: what an environment snapshot contains, and what is wrong with it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evcli.cli._common import JsonOption, handles_errors, out, print_json
from evcli.errors import EXIT_OK, EXIT_USAGE

app = typer.Typer(help="Environment snapshot directories.", no_args_is_help=True)


@app.command("check")
@handles_errors
def check_command(
    directory: Annotated[
        Path | None, typer.Argument(file_okay=False, help="Snapshot directory (default: the packaged demo).")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Validate a snapshot: services, alerts, logs, metrics, runbooks; every bad file named. Exit 2 on errors."""
    from evcli.backends.envcheck import check_env
    from evcli.backends.snapshot import demo_env_dir

    report = check_env(directory or demo_env_dir())
    data = report.model_dump(mode="json") if hasattr(report, "model_dump") else report.as_dict()
    if json_output:
        print_json(data)
    else:
        _render(data)
    raise typer.Exit(EXIT_OK if data.get("ok") else EXIT_USAGE)


def _render(data: dict) -> None:
    from rich.markup import escape
    from rich.pretty import Pretty

    problems = data.get("problems") or []
    rest = {key: value for key, value in data.items() if key != "problems"}
    out.print(Pretty(rest, expand_all=False))
    for problem in problems:
        severity = problem.get("severity", "error")
        colour = "red" if severity == "error" else "yellow"
        out.print(
            f"[{colour}]{severity}[/] {escape(str(problem.get('path') or problem.get('file') or ''))}: {escape(str(problem.get('reason') or problem.get('message') or problem))}"
        )
    out.print(
        "[green]ok[/]"
        if data.get("ok")
        else f"[red]{sum(p.get('severity', 'error') == 'error' for p in problems)} errors[/]"
    )
