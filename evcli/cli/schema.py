"""`evcli schema [NAME]`: the JSON Schema of the contracts."""

from __future__ import annotations

from typing import Annotated

import typer

from evcli.cli._common import handles_errors, print_json


@handles_errors
def schema_command(
    name: Annotated[
        str | None, typer.Argument(help="One contract, e.g. executor_evidence_v2; all when omitted.")
    ] = None,
) -> None:
    """Print the JSON Schema of the contracts (planner_plan, executor_evidence_v2, gate_result, ...)."""
    from evcli.contracts import json_schemas
    from evcli.core.errors import BadInput

    schemas = json_schemas()
    if name is None:
        print_json(schemas)
    elif name in schemas:
        print_json(schemas[name])
    else:
        raise BadInput(f"unknown contract {name!r}; known: {', '.join(schemas)}")
