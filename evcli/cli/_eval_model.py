"""`evcli eval model`: the packaged questions with a model in some roles, compared question by question."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from evcli.cli._common import DbOption, JsonOption, err, handles_errors, out, print_json, safe
from evcli.core.errors import EXIT_OK, EXIT_RUNTIME
from evcli.resources import packaged_envs_text

_ROLE_LETTER = {"planner": "P", "executor": "E", "verifier": "V", "composer": "C"}


@handles_errors
def model_command(
    model: Annotated[str, typer.Option("--model", help="The litellm model string to compare, e.g. openai/gpt-4o.")],
    roles: Annotated[
        str | None,
        typer.Option(
            "--roles",
            metavar="ROLE,…",
            help="Roles the model plays, comma-separated: planner, executor, verifier, composer (default: all); "
            "the offline engine plays the others.",
        ),
    ] = None,
    api_base: Annotated[
        str | None, typer.Option("--api-base", help="OpenAI-compatible server URL for the model.")
    ] = None,
    questions: Annotated[
        Path | None,
        typer.Option(
            "--questions",
            exists=True,
            help="Case file or directory of *.toml case files (default: the shipped suites diagnosis.toml and "
            "oncall.toml).",
        ),
    ] = None,
    env: Annotated[
        str | None, typer.Option("--env", help=f"Only the questions of this environment ({packaged_envs_text()}).")
    ] = None,
    case_ids: Annotated[
        list[str] | None, typer.Option("--case", metavar="ID", help="Only the question with this id; repeatable.")
    ] = None,
    fail_under: Annotated[
        float | None,
        typer.Option(
            "--fail-under",
            min=0.0,
            max=1.0,
            metavar="RATE",
            help="Exit 1 when the share of questions answered PASS (0-1) is below RATE.",
        ),
    ] = None,
    max_honest_rejected: Annotated[
        int | None,
        typer.Option(
            "--max-honest-rejected", min=0, metavar="N", help="Exit 1 when more than N honest claims were rejected."
        ),
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress", help="One stderr line per question even when stderr is not a terminal.")
    ] = False,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Questions through the whole chain with a model: verdict, honest claims rejected, expected facts cited,
    tokens, requests, characters sent and time per question and per role.

    A claim the Gatekeeper rejected counts as honest when it passes once each excerpt is replaced by the
    whole ref it cites (real evidence, agreeing facts; only the excerpt was wrong). A missing key or a
    model server nobody answers at fails before any question (exit 2 or 1), as does a model that answers
    no request of the first question (exit 1). Exit 0, or 1 when --fail-under or --max-honest-rejected is
    not met.
    """
    from evcli.evals.model import model_roles, role_models, run_models, select_cases
    from evcli.gatekeeper.rules import load_rules

    models = role_models(model, model_roles(roles), api_base)
    cases = select_cases(questions, env, case_ids or ())
    report = run_models(
        cases,
        rules=load_rules(),
        models=models,
        db_path=db,
        progress=_print_progress if progress or err.is_terminal else None,
    )
    if json_output:
        print_json(report)
    else:
        _render(report)
    totals = report["totals"]
    missed = (fail_under is not None and (totals["pass_rate"] or 0.0) < fail_under) or (
        max_honest_rejected is not None and totals["honest_rejected"] > max_honest_rejected
    )
    raise typer.Exit(EXIT_RUNTIME if missed else EXIT_OK)


def _print_progress(result: dict[str, Any]) -> None:
    outcome = f"skipped: {result['skipped']}" if result["skipped"] else result["verdict"] or "error"
    mark = "[green]✓[/]" if outcome == "PASS" else "[yellow]-[/]" if result["skipped"] else "[red]✗[/]"
    err.print(
        f"{mark} {safe(result['id'])} · {safe(outcome)} · honest rejected {result['honest_rejected']}"
        f"/{result['rejected_claims']} · {result['seconds']:.1f}s"
    )


def _requests(row: dict[str, Any]) -> str:
    return (
        " ".join(f"{_ROLE_LETTER.get(role, role)}{values['requests']}" for role, values in row["roles"].items()) or "-"
    )


def _render(report: dict[str, Any]) -> None:
    from rich.table import Table

    model = ", ".join(sorted({report["models"][role] for role in report["roles"]})) or "offline"
    table = Table(
        title=f"model eval · {len(report['questions'])} questions · {model} as {', '.join(report['roles']) or '-'}"
    )
    table.add_column("question", overflow="fold", min_width=12)
    for column in ("verdict", "honest/rejected", "facts", "requests", "tokens in/out", "chars", "s"):
        table.add_column(column, overflow="fold")
    for row in report["questions"]:
        table.add_row(
            safe(row["id"]),
            "skip" if row["skipped"] else row["verdict"] or "[red]error[/]",
            f"{row['honest_rejected']}/{row['rejected_claims']}",
            f"{row['facts_cited']}/{row['facts_expected']}",
            _requests(row),
            f"{row['prompt_tokens']}/{row['completion_tokens']}",
            f"{row['characters_sent']:,}",
            f"{row['seconds']:.1f}",
        )
    out.print(table)
    _render_roles(report["totals"]["roles"])
    for row in report["questions"]:
        for failure in row["failures"]:
            out.print(f"[red]fail[/] {safe(row['id'])}: {safe(failure)}")
        for claim in row["rejections"]:
            kind = "honest" if claim["honest"] else "not honest"
            out.print(
                f"[yellow]rejected[/] {safe(row['id'])} round {claim['round']} {safe(claim['claim_id'])} ({kind}; "
                f"{safe(', '.join(claim['rules']))}): {safe(claim['claim_text'])}"
            )
    totals = report["totals"]
    verdicts = " · ".join(f"{verdict} {count}" for verdict, count in totals["verdicts"].items())
    rate = "-" if totals["pass_rate"] is None else f"{totals['pass_rate']:.0%}"
    out.print(
        f"{verdicts} · pass rate {rate} · errors {totals['errors']} · skipped {totals['skipped']} · "
        f"honest rejected {totals['honest_rejected']}/{totals['rejected_claims']} · "
        f"facts cited {totals['facts_cited']}/{totals['facts_expected']} · requests {totals['requests']} · "
        f"tokens {totals['prompt_tokens']}/{totals['completion_tokens']} · chars sent {totals['characters_sent']:,} · "
        f"{totals['seconds']:.1f}s (model client import {report['startup_seconds']:.1f}s)"
    )


def _render_roles(roles: dict[str, dict[str, Any]]) -> None:
    from rich.table import Table

    if not roles:
        return
    table = Table(title="per role")
    for column in ("role", "model", "requests", "failed", "prompt tokens", "completion tokens", "chars sent", "s"):
        table.add_column(column, overflow="fold")
    for role, row in roles.items():
        table.add_row(
            role,
            safe(row["model"]),
            str(row["requests"]),
            str(row["failed_requests"]),
            str(row["prompt_tokens"]),
            str(row["completion_tokens"]),
            f"{row['characters_sent']:,}",
            f"{row['seconds']:.1f}",
        )
    out.print(table)
