"""`evcli aiops PAYLOAD.json | --alertmanager URL`: one cited report per firing alert."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evcli.cli._common import (
    DbOption,
    JsonOption,
    environment_options,
    handles_errors,
    out,
    print_json,
    safe,
)
from evcli.cli.ask import (
    ApiBaseOption,
    FailOnOption,
    MaxStepsOption,
    ModelOption,
    RulesOption,
    _exit_code,
    _models,
    _pipeline,
)
from evcli.core.errors import BadInput

if TYPE_CHECKING:
    from evcli.backends.spec import EnvironmentSpec
    from evcli.config import Loaded

_PULL_HELP = "Pull the firing alerts from this Alertmanager (and use it as evidence)."


@handles_errors
@environment_options(runbooks=True, help={"alertmanager": _PULL_HELP})
def aiops_command(
    payload: Annotated[
        Path | None,
        typer.Argument(dir_okay=False, help="Alertmanager webhook / v2 alert list / Prometheus alerts JSON."),
    ] = None,
    filters: Annotated[
        list[str] | None, typer.Option("--filter", help="label=value; repeatable; with --alertmanager.")
    ] = None,
    *,
    environment: EnvironmentSpec,
    model: ModelOption = None,
    api_base: ApiBaseOption = None,
    rules: RulesOption = None,
    max_steps: MaxStepsOption = 8,
    fail_on: FailOnOption = None,
    report_dir: Annotated[
        Path | None,
        typer.Option("--report-dir", file_okay=False, help="Write one HTML report per alert into this directory."),
    ] = None,
    json_output: JsonOption = False,
    db: DbOption = None,
    settings: Loaded = None,  # type: ignore[assignment]  # filled by the environment options
) -> None:
    """Diagnose alerts: each firing alert goes through the whole evidence chain and gets a cited report."""
    from evcli.aiops import diagnose_payload, pull_alerts

    _exit_code("PASS", fail_on)
    alertmanager = environment.backends.get("alertmanager")
    if payload is not None:
        from evcli.core.userfiles import ALERT_PAYLOAD, read_json

        data, source = read_json(payload, ALERT_PAYLOAD), str(payload)
    elif alertmanager is not None:
        data, source = pull_alerts(alertmanager.url, filters or []), alertmanager.url
    else:
        raise BadInput("give an alert payload file or --alertmanager URL")
    if report_dir is not None:  # before any diagnosis: a bad directory is a usage error, not a lost run
        try:
            report_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInput(f"cannot create --report-dir {report_dir}: {exc.strerror or exc}") from exc
    models = _models(settings, model, None, None, None, None, api_base)
    pipeline = _pipeline(db, rules, models, environment.as_config(), max_steps)
    reports = diagnose_payload(pipeline, data, source=source)
    if report_dir is not None:
        from evcli.cli.report import write_report

        for report in reports:
            document = pipeline.store.load(report["session_id"])
            write_report(document, "html", report_dir / f"{report['session_id']}.html")
    if json_output:
        print_json({"reports": reports})
    else:
        for report in reports:
            _render(report)
    from evcli.contracts import Verdict

    worst = max(Verdict(r["verdict"]) for r in reports)
    raise typer.Exit(_exit_code(worst, fail_on))


def _render(report: dict) -> None:
    alert = report["alert"]
    out.rule(safe(f"{alert['alertname']} · {alert.get('service') or '-'}"))
    labels = ", ".join(f"{k}={v}" for k, v in sorted(alert["labels"].items()) if k != "alertname")
    out.print(
        f"[bold]Alert[/] {safe(alert['alertname'])} ({safe(labels)}) · {safe(alert['state'])}"
        + (f" since {safe(alert['starts_at'])}" if alert.get("starts_at") else "")
    )
    if alert["annotations"].get("summary"):
        out.print(f"  {safe(alert['annotations']['summary'])}")
    out.print("\n[bold]Findings[/]")
    for claim in report["claims"]:
        out.print(f"  [{claim['citation']}] {safe(claim['claim_text'])}")
        for evidence in claim["evidence"]:
            out.print(
                f"      {safe(evidence['tool_name'])} #{evidence['source_invocation_id']} {safe(evidence['raw_path'])}: "
                f"{safe(evidence['text'] or '')}",
                style="dim",
            )
    if not report["claims"]:
        out.print("  (no finding passed verification)")
    sections = (
        ("Likely causes (hypotheses, unconfirmed)", report.get("hypotheses") or []),
        ("Next actions", [a["action_text"] for a in report["answer"].get("recommended_actions") or []]),
        ("Missing evidence", report.get("missing_info") or []),
    )
    for title, items in sections:
        if items:
            out.print(f"\n[bold]{title}[/]")
            for item in items:
                out.print(f"  - {safe(str(item))}")
    evaluation = report["aiops_rule_evaluation"]
    marks = " · ".join(
        f"{'✓' if evaluation[key] else '✗'} {key}"
        for key in (
            "report_exists",
            "stays_on_input_alert",
            "evidence_tools_called",
            "knowledge_consulted",
            "no_other_alert_promoted",
        )
    )
    gate_info = report["gate"]
    out.print(
        f"\nverdict {report['verdict']} · gate {gate_info['status']}/{gate_info['severity']} · session {report['session_id']}"
    )
    out.print(f"AIOps rules: {marks}")
