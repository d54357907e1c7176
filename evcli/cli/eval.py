"""`evcli eval …`: evaluation suites that CI pipelines run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evcli.cli._common import JsonOption, handles_errors, out, print_json
from evcli.errors import EXIT_OK, EXIT_RUNTIME

app = typer.Typer(help="Evaluation suites with targets; exit 1 when a target is missed.", no_args_is_help=True)


@app.command("gatekeeper")
@handles_errors
def gatekeeper_command(
    sessions: Annotated[
        Path | None,
        typer.Option("--sessions", file_okay=False, help="Directory of valid session files to mutate (default: the shipped samples)."),
    ] = None,
    rules: Annotated[Path | None, typer.Option("--rules", dir_okay=False, help="Rules file (default: the shipped rules.toml).")] = None,
    json_output: JsonOption = False,
) -> None:
    """Fault injection: mutate valid sessions and check each false citation is caught.

    Target: 100% of mutations caught with the expected rule and severity, 0% of
    benign variants failed.
    """
    from evcli.errors import BadInput
    from evcli.evals.gatekeeper import load_base_sessions, run_suite
    from evcli.gatekeeper.rules import load_rules

    if sessions is not None and not sessions.is_dir():
        raise BadInput(f"no such directory: {sessions}")
    report = run_suite(load_base_sessions(sessions), load_rules(rules))
    if json_output:
        print_json(report)
    else:
        _render(report)
    raise typer.Exit(EXIT_OK if report["targets_met"] else EXIT_RUNTIME)


def _render(report) -> None:
    from rich.table import Table

    table = Table(title=f"gatekeeper fault injection · {len(report['base_sessions'])} base sessions · {report['rule_set_version']}")
    for column in ("class", "expected", "cases", "ok", "observed severity", "rules fired"):
        table.add_column(column, overflow="fold")
    for row in report["classes"]:
        expected = "pass" if row["benign"] else f"{row['expected_severity']} · {row['expected_rule']}"
        colour = "green" if row["cases"] and row["ok"] == row["cases"] else "red"
        table.add_row(
            row["class"], expected, str(row["cases"]), f"[{colour}]{row['ok']}[/]",
            ", ".join(f"{k}={v}" for k, v in row["observed_severity"].items()),
            ", ".join(f"{k}={v}" for k, v in row["rules_fired"].items()) or "-",
        )
    out.print(table)
    for row in report["classes"]:
        for miss in row["misses"]:
            out.print(f"[red]miss[/] {row['class']}: {miss}")
    mutations, benign = report["mutations"], report["benign"]
    out.print(
        f"mutations caught: {mutations['caught']}/{mutations['cases']} ({(mutations['rate'] or 0):.1%}) · "
        f"benign rejected: {benign['rejected']}/{benign['cases']} ({(benign['rate'] or 0):.1%}) · "
        + ("[green]targets met[/]" if report["targets_met"] else "[red]targets missed[/]")
    )
    if report["skipped_bases"]:
        out.print(f"[yellow]skipped bases that do not pass the gate:[/] {', '.join(report['skipped_bases'])}")
    if report["classes_without_cases"]:
        out.print(f"[yellow]classes with no applicable case:[/] {', '.join(report['classes_without_cases'])}")
