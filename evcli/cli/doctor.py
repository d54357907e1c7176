"""`evcli doctor`: check the effective configuration end to end (evcli/doctor.py), one row per check."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from evcli.cli._common import DbOption, JsonOption, environment_options, handles_errors, out, print_json, safe
from evcli.core.errors import EXIT_OK, EXIT_RUNTIME

if TYPE_CHECKING:
    from evcli.backends.spec import EnvironmentSpec
    from evcli.config import Loaded

_COLOURS = {"ok": "green", "warn": "yellow", "fail": "red", "skip": "dim"}


@handles_errors
@environment_options(runbooks=True)
def doctor_command(
    environment: EnvironmentSpec,
    model: Annotated[str | None, typer.Option("--model", help="Model for every role (as `ask --model`).")] = None,
    api_base: Annotated[str | None, typer.Option("--api-base", help="OpenAI-compatible server URL.")] = None,
    no_model_call: Annotated[
        bool, typer.Option("--no-model-call", help="Check model keys only; make no one-token call.")
    ] = False,
    json_output: JsonOption = False,
    db: DbOption = None,
    settings: Loaded = None,  # type: ignore[assignment]  # filled by the environment options
) -> None:
    """Check backends (version, latency, service label), runbooks, each role's model, the trace store (schema,
    SQLite's quick_check) and whether the Gatekeeper runs compiled. Exit 1 if anything fails."""
    from evcli.core.paths import default_db_path
    from evcli.doctor import broken, run_checks

    flags = {"models": {key: value for key, value in (("default", model), ("api_base", api_base)) if value}}
    rows = run_checks(settings.with_flags(flags).settings, model_call=not no_model_call, store=db or default_db_path())
    if json_output:
        print_json({"ok": not broken(rows), "checks": [row.as_dict() for row in rows]})
    else:
        for row in rows:
            remedy = f" [dim]→ {safe(row.remedy)}[/]" if row.remedy and row.status in ("fail", "warn") else ""
            out.print(
                f"[{_COLOURS[row.status]}]{row.status:<4}[/] {safe(row.check)} {safe(row.target)}: "
                f"{safe(row.detail)}{remedy}",
                soft_wrap=True,
            )
    raise typer.Exit(EXIT_RUNTIME if broken(rows) else EXIT_OK)
