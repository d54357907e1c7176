"""`evcli tool NAME …`: run one evidence tool and show what a model would see."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evcli.cli._common import DbOption, JsonOption, err, handles_errors, open_store, out, print_json
from evcli.console import visible

app = typer.Typer(help="Run one evidence tool; --session records the call into a session.", no_args_is_help=True)

EnvOption = Annotated[Path | None, typer.Option("--env", file_okay=False, help="Environment snapshot directory (default: the packaged demo).")]
PrometheusOption = Annotated[str | None, typer.Option("--prometheus", help="Prometheus base URL.")]
AlertmanagerOption = Annotated[str | None, typer.Option("--alertmanager", help="Alertmanager base URL.")]
LokiOption = Annotated[str | None, typer.Option("--loki", help="Loki base URL.")]
RunbooksOption = Annotated[Path | None, typer.Option("--runbooks", file_okay=False, help="Runbook directory for lookup_knowledge.")]
SessionOption = Annotated[str | None, typer.Option("--session", help="Record the call into this stored session.")]
WindowOption = Annotated[str, typer.Option("--window", help="Relative window ending at the environment's clock: 30m, 2h, 1d.")]


def _run(tool_name: str, params: dict, *, env, prometheus, alertmanager, loki, runbooks, session, json_output, db) -> None:
    from evcli.tools.context import build_environment
    from evcli.tools.runner import SessionView, run_tool, stored_guards
    from evcli.tools.view import model_view

    environment = build_environment(env, prometheus=prometheus, alertmanager=alertmanager, loki=loki, runbooks=runbooks)
    params = {key: value for key, value in params.items() if value is not None}
    store = view = None
    if session:
        store = open_store(db, must_exist=True)
        document = store.load(session)
        view = SessionView(invocations=document.invocations, narrow=document.run.config.task_scope == "narrow")
    invocation = run_tool(tool_name, params, environment, view)
    if store is not None:
        invocation = store.record_invocation(session, invocation, check=stored_guards(invocation, environment.settings))
        err.print(visible(f"recorded as invocation #{invocation.invocation_id} of session {session}"), markup=False)
    if json_output:
        print_json(invocation.model_dump(mode="json"))
    else:
        out.print(visible(model_view(invocation)), markup=False, highlight=False)
    if not invocation.success:
        err.print(visible(f"{tool_name} failed: {invocation.error_message or 'see output'}"), markup=False)
        raise typer.Exit(1)


@app.command("query_metrics")
@handles_errors
def query_metrics(
    service: Annotated[str | None, typer.Option("--service")] = None,
    alertname: Annotated[str | None, typer.Option("--alertname")] = None,
    metric: Annotated[str | None, typer.Option("--metric")] = None,
    window: WindowOption = "30m",
    env: EnvOption = None, prometheus: PrometheusOption = None, alertmanager: AlertmanagerOption = None,
    loki: LokiOption = None, runbooks: RunbooksOption = None, session: SessionOption = None,
    json_output: JsonOption = False, db: DbOption = None,
) -> None:
    """Alerts and metric series of a service (or of everything)."""
    _run("query_metrics", {"service": service, "alertname": alertname, "metric": metric, "window": window},
         env=env, prometheus=prometheus, alertmanager=alertmanager, loki=loki, runbooks=runbooks,
         session=session, json_output=json_output, db=db)


@app.command("query_logs")
@handles_errors
def query_logs(
    service: Annotated[str, typer.Option("--service", help="Service whose logs to search.")],
    query: Annotated[str, typer.Option("--query", help='Keywords that must all occur: "HikariPool timeout".')] = "",
    level: Annotated[str | None, typer.Option("--level", help="Minimum level: DEBUG, INFO, WARN, ERROR, FATAL.")] = None,
    window: WindowOption = "30m",
    limit: Annotated[int, typer.Option("--limit", help="Newest N matching lines (1-500).")] = 50,
    env: EnvOption = None, prometheus: PrometheusOption = None, alertmanager: AlertmanagerOption = None,
    loki: LokiOption = None, runbooks: RunbooksOption = None, session: SessionOption = None,
    json_output: JsonOption = False, db: DbOption = None,
) -> None:
    """Log lines of one service matching every keyword."""
    _run("query_logs", {"service": service, "query": query, "level": level, "window": window, "limit": limit},
         env=env, prometheus=prometheus, alertmanager=alertmanager, loki=loki, runbooks=runbooks,
         session=session, json_output=json_output, db=db)


@app.command("lookup_knowledge")
@handles_errors
def lookup_knowledge(
    query: Annotated[str, typer.Option("--query", help="What to look up in the runbooks.")],
    alertname: Annotated[str | None, typer.Option("--alertname", help="Alert name hint (exact L0 match).")] = None,
    service: Annotated[str | None, typer.Option("--service", help="Service hint (exact L0 match).")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most N blocks (1-20).")] = 5,
    env: EnvOption = None, prometheus: PrometheusOption = None, alertmanager: AlertmanagerOption = None,
    loki: LokiOption = None, runbooks: RunbooksOption = None, session: SessionOption = None,
    json_output: JsonOption = False, db: DbOption = None,
) -> None:
    """Runbook blocks ranked for a query, with relevance level and layer."""
    _run("lookup_knowledge", {"query": query, "alertname": alertname, "service": service, "limit": limit},
         env=env, prometheus=prometheus, alertmanager=alertmanager, loki=loki, runbooks=runbooks,
         session=session, json_output=json_output, db=db)
