"""`evcli env check DIR`: what an environment snapshot contains, and what is wrong with it.
`evcli env index DIR`: its log and trace indexes built (or found current) ahead of its first query."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evcli.cli._common import JsonOption, handles_errors, out, print_json
from evcli.core.errors import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE
from evcli.resources import packaged_envs_text

if TYPE_CHECKING:
    from evcli.backends.envindex import LogIndexInfo, TraceIndexInfo

app = typer.Typer(help="Environment snapshot directories.", no_args_is_help=True)

DirectoryArgument = Annotated[
    Path | None,
    typer.Argument(
        file_okay=False, help=f"Snapshot directory, or a packaged one: {packaged_envs_text()} (default: demo)."
    ),
]


def _directory(directory: Path | None) -> Path:
    """The snapshot a command names: the demo when it names none, a packaged one by name, else the path."""
    from evcli.backends.snapshot import demo_env_dir
    from evcli.backends.spec import resolve_env_dir

    return demo_env_dir() if directory is None else resolve_env_dir(directory)


@app.command("check")
@handles_errors
def check_command(
    directory: DirectoryArgument = None,
    json_output: JsonOption = False,
) -> None:
    """Validate a snapshot: services, alerts, logs, metrics, runbooks; every bad file named. Exit 2 on errors."""
    from evcli.backends.envcheck import check_env

    report = check_env(_directory(directory))
    data = report.as_dict()
    if json_output:
        print_json(data)
    else:
        _render(data)
    raise typer.Exit(EXIT_OK if data["ok"] else EXIT_USAGE)


@app.command("index")
@handles_errors
def index_command(
    directory: DirectoryArgument = None,
    json_output: JsonOption = False,
) -> None:
    """Build the index of every log file and of the span files now, so no first query builds one; an index
    already built for the unchanged files is reused. Exit 1 when a file cannot be read, 2 for a bad directory."""
    from evcli.backends.envindex import index_environment

    root = _directory(directory)
    if json_output:
        report = index_environment(root)
        print_json(report.as_dict())
    else:
        report = index_environment(root, on_logs=_say_log_index, on_traces=_say_trace_index)
        _say_index_totals(report.as_dict())
    raise typer.Exit(EXIT_OK if report.ok else EXIT_RUNTIME)


def _say_log_index(entry: LogIndexInfo) -> None:
    from evcli.core.console import safe

    if entry.error:
        _say(f"{safe(entry.path)}: [red]failed[/] {safe(entry.error)}")
        return
    found = f"{entry.lines} lines ({safe(entry.format or 'unknown format')})"
    continued = f", continuing a stopped build that had indexed {entry.resumed:,} bytes" if entry.resumed else ""
    _say(f"{safe(entry.path)}: {entry.action}, {found} in {entry.seconds:.2f} s{continued}")


def _say_trace_index(entry: TraceIndexInfo) -> None:
    from evcli.core.console import safe

    if entry.error:
        _say(f"traces/: [red]failed[/] {safe(entry.error)}")
        return
    files = f"{len(entry.files)} file{'s' * (len(entry.files) != 1)}"
    _say(f"traces/ ({files}): {entry.action}, {entry.spans} spans in {entry.seconds:.2f} s")
    for file in entry.files:
        read = f"[red]not read[/] {safe(file.error)}" if file.error else f"{file.spans} spans ({safe(file.format)})"
        _say(f"  {safe(file.path)}: {read}")


def _say_index_totals(data: dict) -> None:
    totals = f"{data['built']} built, {data['reused']} reused, {data['failed']} failed"
    _say(f"[green]ok[/] {totals}" if data["ok"] else f"[red]not every file was read[/] {totals}")


def _render(data: dict) -> None:
    """The report as text: one block per kind of file, one line per file, then every problem."""
    from evcli.backends.envcheck_traces import trace_file_line
    from evcli.core.console import safe

    clock = data["clock"]
    _say(f"[bold]{safe(data['name'])}[/] {safe(data['directory'])}")
    _say(f"clock {safe(clock['now'] or 'wall clock')} ({safe(clock['source'])}), timezone {safe(clock['timezone'])}")
    for service in data["services"]:
        aliases = f" (aka {', '.join(service['aliases'])})" if service["aliases"] else ""
        _say(f"service {safe(service['name'])}{safe(aliases)}: {safe(', '.join(service['sources']))}")
    if alerts := data["alerts"]:
        _say(f"{safe(alerts['path'])}: {safe(alerts['shape'])}, {alerts['count']} alerts, {alerts['firing']} firing")
        for alert in alerts["alerts"]:
            _say(f"  {safe(alert['alertname'])} {safe(alert['service'])}: {safe(alert['state'])}")
    for log in data["log_files"]:
        _say(f"{safe(log['path'])}: {_log_line(log)}")
    for metric in data["metric_files"]:
        _say(f"{safe(metric['path'])}: {_metric_line(metric)}")
    for runbook in data["runbooks"]:
        _say(f"{safe(runbook['path'])}: runbook {safe(runbook['title'] or '(no title)')}")
    if kubernetes := data.get("kubernetes"):
        _say(f"{safe(kubernetes['path'])}: {_kubernetes_line(kubernetes)}")
    for traces in data.get("trace_files", []):
        _say(f"{safe(traces['path'])}: {safe(trace_file_line(traces))}")
    problems = data["problems"]
    for problem in problems:
        colour = "red" if problem["severity"] == "error" else "yellow"
        _say(f"[{colour}]{problem['severity']}[/] {safe(problem['path'])}: {safe(problem['message'])}")
    errors = sum(problem["severity"] == "error" for problem in problems)
    _say("[green]ok[/]" if data["ok"] else f"[red]{errors} errors[/]")


def _say(text: str) -> None:
    out.print(text, soft_wrap=True)  # one line per file or problem, whatever the terminal width


def _log_line(log: dict) -> str:
    from evcli.core.console import safe

    read = f" (sampled: {log['sampled_lines']} lines read)" if log["sampled_lines"] is not None else ""
    span = f", {log['first']} .. {log['last']}" if log["first"] else ""
    extra = f", {log['continuation_lines']} continuation" if log["continuation_lines"] else ""
    extra += f", {log['unrecognised_lines']} unrecognised" if log["unrecognised_lines"] else ""
    return safe(
        f"{log['format'] or 'unknown format'}, {log['lines']} lines{read}, timestamps {log['timestamp_share']:.0%}, "
        f"levels {log['level_share']:.0%}{extra}{span}"
    )


def _metric_line(metric: dict) -> str:
    from evcli.core.console import safe

    series = ", ".join(
        f"{item['name']}[{item['unit']}]" if item["unit"] else item["name"] for item in metric["metrics"]
    )
    span = f", {metric['first']} .. {metric['last']}" if metric["first"] else ""
    return safe(
        f"{metric['rows']} rows, time column {metric['timestamp_column']!r}, series {series}, "
        f"parseable {metric['parseable_share']:.0%}{span}"
    )


def _kubernetes_line(kubernetes: dict) -> str:
    from evcli.core.console import safe

    objects = ", ".join(f"{count} {kind}" for kind, count in kubernetes["objects"].items() if count) or "no objects"
    others = ", ".join(f"{count} {kind}" for kind, count in kubernetes["other_kinds"].items())
    files = f"{kubernetes['json_files']} JSON, {kubernetes['described_files']} describe, {kubernetes['log_files']} log files"
    span = f", {kubernetes['first']} .. {kubernetes['last']}" if kubernetes["first"] else ""
    return safe(f"{objects} ({files}){f'; not read: {others}' if others else ''}{span}")
