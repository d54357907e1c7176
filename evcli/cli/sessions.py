"""`evcli sessions`, `evcli export`, `evcli import`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from evcli.cli._common import DbOption, JsonOption, err, handles_errors, open_store, out, print_json
from evcli.console import safe, visible


@handles_errors
def sessions_command(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many sessions, newest first.")] = 20,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """List stored sessions, newest first."""
    rows = open_store(db, must_exist=True).list_sessions(limit)
    if json_output:
        print_json(rows)
        return
    if not rows:
        err.print("no sessions stored yet")
        return
    from rich.table import Table
    from rich.text import Text

    table = Table()
    for column in ("session", "created", "mode", "status", "verdict", "gate", "tools", "question"):
        table.add_column(column, overflow="fold")
    for row in rows:
        cells = (
            row["session_id"],
            row["created_at"],
            row["mode"],
            row["status"],
            row["verdict"] or "-",
            row["gate_severity"] or "-",
            row["invocations"],
            row["question"] or "",
        )
        table.add_row(*(Text(visible(cell)) for cell in cells))  # data, never markup
    out.print(table)


@handles_errors
def export_command(
    session_id: Annotated[str | None, typer.Argument(help="Stored session id (omit with --all).")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write (a directory with --all).")
    ] = None,
    all_sessions: Annotated[
        bool, typer.Option("--all", help="Export every stored session, one file each, into -o DIR.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Export a session as one canonical JSON document (or every session with --all)."""
    from evcli.errors import BadInput
    from evcli.store.documents import export_all, to_canonical

    store = open_store(db, must_exist=True)
    if all_sessions:
        if session_id is not None or output is None:
            raise BadInput("--all takes no session id and needs -o DIR")
        ids = export_all(store, output)
        err.print(f"exported {len(ids)} sessions to {safe(output)}")
        return
    if session_id is None:
        raise BadInput("give a session id, or --all -o DIR")
    text = to_canonical(store.load(session_id)) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    output.write_text(text, encoding="utf-8")
    err.print(f"exported {safe(session_id)} to {safe(output)}")


@handles_errors
def import_command(
    file: Annotated[Path, typer.Argument(dir_okay=False, help="An exported session JSON file.")],
    new_id: Annotated[str | None, typer.Option("--new-id", help="Store it under this session id instead.")] = None,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Import an exported session. Importing the same file again changes nothing."""
    from evcli.store.documents import read_document

    document = read_document(file)
    session_id, created = open_store(db).import_document(document, new_id=new_id)
    if json_output:
        print_json({"session_id": session_id, "created": created})
    elif created:
        out.print(safe(session_id))
        err.print(f"imported {safe(file)} as {safe(session_id)}")
    else:
        out.print(safe(session_id))
        err.print(f"{safe(session_id)} is already stored with identical content; nothing changed")
