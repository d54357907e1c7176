"""`evcli sessions` (list, filter, stats, delete, prune), `evcli export`, `evcli import`.

The store does the querying (`TraceStore.list_sessions` with a `SessionQuery`); this module only
parses options and renders. Session ids are never wrapped: a listed id is always copyable whole.
Commands that read sessions start SQLite's quick_check of the store when they open it and end with
one warning line on stderr if it failed (`warn_if_damaged`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evcli.cli._common import (
    DbOption,
    JsonOption,
    NoPagerOption,
    err,
    handles_errors,
    open_store,
    out,
    print_json,
)
from evcli.core.console import json_safe, paged, safe, visible

if TYPE_CHECKING:
    from evcli.store.db import Deletion
    from evcli.store.health import IntegrityCheck

app = typer.Typer(
    help="List, find, delete and prune stored sessions.", no_args_is_help=False, invoke_without_command=True
)


@app.callback()
@handles_errors
def sessions_command(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many sessions, newest first.")] = 20,
    env: Annotated[
        str | None, typer.Option("--env", help="Only sessions run on this environment (name or snapshot directory).")
    ] = None,
    verdict: Annotated[
        str | None, typer.Option("--verdict", help="Only this verdict: PASS, LOW_CONFID, REJECT.")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only this status: completed, failed, interrupted, running, created.")
    ] = None,
    mode: Annotated[str | None, typer.Option("--mode", help="Only this mode: chat or aiops.")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only sessions created since: a duration back (7d, 12h) or a time.")
    ] = None,
    text: Annotated[str | None, typer.Option("--query", "-q", help="Only questions containing this text.")] = None,
    stats: Annotated[
        bool, typer.Option("--stats", help="Show the store's size on disk and its counts instead of a list.")
    ] = False,
    no_pager: NoPagerOption = False,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """List stored sessions, newest first (filters combine), or the store's size with --stats."""
    if ctx.invoked_subcommand is not None:
        return
    store = open_store(db, must_exist=True)
    integrity = store.check_integrity()  # runs while the sessions are read and shown
    if stats:
        _show_stats(store.stats(), json_output)
    else:
        from evcli.store.query import SessionQuery, since_moment

        query = SessionQuery(env=env, verdict=verdict, status=status, mode=mode, since=since_moment(since), text=text)
        rows = store.list_sessions(limit, query)
        if json_output:
            print_json(rows)
        elif not rows:
            err.print("no sessions stored yet" if query == SessionQuery() else "no session matches")
        else:
            paged(_sessions_table(rows), no_pager)
    warn_if_damaged(integrity)


def warn_if_damaged(integrity: IntegrityCheck) -> None:
    """One warning line on stderr when the store's quick_check failed (waits for the check to finish)."""
    if warning := integrity.warning():
        err.print(f"[yellow]warning:[/] {safe(warning)}", highlight=False, soft_wrap=True)


# Below this width the list keeps the columns that find a session (id, date, environment, outcome, question).
_WIDE = 120
_QUESTION_MIN = 10


def _sessions_table(rows):
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    wide = out.width >= _WIDE
    names = ("created", "env", "mode", "status", "verdict", "gate", "tools") if wide else ("created", "env", "outcome")
    lines = [[visible(cell) for cell in _cells(row, wide)] for row in rows]
    table = Table(box=None, pad_edge=False)
    header = ["session", *names]
    widths = [max(cell_len(line[index]) for line in [header, *lines]) for index in range(len(header))]
    # Rich would squeeze every column to fit, ids included; here the question gives way, then a long
    # environment name (padding: 2 per gap).
    room = out.width - sum(widths) - 2 * len(widths)
    env_at = header.index("env")
    widths[env_at] = max(3, widths[env_at] - max(0, _QUESTION_MIN - room))
    room = max(_QUESTION_MIN, out.width - sum(widths) - 2 * len(widths))
    table = Table(box=None, pad_edge=False)
    widest = max(cell_len(line[-1]) for line in [["question"], *lines])
    for name, width in [*zip(header, widths, strict=True), ("question", min(room, widest))]:
        table.add_column(name, no_wrap=True, width=width, overflow="ellipsis")
    for line in lines:
        table.add_row(*(Text(cell) for cell in line))  # data, never markup
    return table


def _cells(row, wide: bool) -> list:
    if wide:
        middle = [row["created_at"][:16].replace("T", " "), row["environment"], row["mode"], row["status"]]
        middle += [row["verdict"] or "-", row["gate_severity"] or "-", row["invocations"]]
    else:
        middle = [row["created_at"][:10], row["environment"], row["verdict"] or row["status"]]
    return [row["session_id"], *middle, row["question"] or ""]


def _show_stats(stats, json_output: bool) -> None:
    if json_output:
        print_json(stats)
        return
    out.print(f"store     {safe(stats['path'])}")
    out.print(f"size      {_size(stats['size_bytes'])}")
    out.print(f"sessions  {stats['rows']['diagnosis_run']}")
    out.print(
        "rows      "
        + ", ".join(f"{table} {count}" for table, count in stats["rows"].items() if table != "diagnosis_run")
    )
    for key in ("status", "verdict", "environment", "mode"):
        tally = stats[f"by_{key}"]
        out.print(f"{key:<9} " + (", ".join(f"{safe(name)} {count}" for name, count in tally.items()) or "-"))
    out.print(f"oldest    {stats['oldest'] or '-'}")
    out.print(f"newest    {stats['newest'] or '-'}")


def _size(size: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size:.1f} GiB"


@app.command("delete")
@handles_errors
def delete_command(
    sessions: Annotated[list[str], typer.Argument(help="Session ids, unique prefixes or `last`.")],
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Delete sessions and everything recorded with them, then compact the store (VACUUM)."""
    store = open_store(db, must_exist=True)
    deletion = store.delete_sessions(list(dict.fromkeys(store.resolve(reference) for reference in sessions)))
    if json_output:
        print_json(deletion.model_dump())
        return
    for session_id in deletion.deleted:
        out.print(safe(session_id))
    err.print(_deleted_line("deleted", deletion))


def _deleted_line(verb: str, deletion: Deletion) -> str:
    """ "deleted 3 sessions", and how many another command deleted first."""
    count = len(deletion.deleted)
    gone = len(deletion.already_gone)
    return f"{verb} {count} session{'s' * (count != 1)}" + (
        f" ({gone} already deleted by another command)" if gone else ""
    )


@app.command("prune")
@handles_errors
def prune_command(
    older_than: Annotated[
        str, typer.Option("--older-than", help="Delete sessions created longer ago than this: 30d, 12h, 2w.")
    ],
    keep_failed: Annotated[
        bool,
        typer.Option(
            "--keep-failed", help="Keep sessions that failed, were interrupted, or ended LOW_CONFID or REJECT."
        ),
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be deleted.")] = False,
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Delete sessions older than a duration (never a run still in progress), then VACUUM."""
    from datetime import UTC, datetime

    from evcli.core.time import parse_duration
    from evcli.store.db import Deletion

    store = open_store(db, must_exist=True)
    before = store.stats()["size_bytes"]
    chosen = store.prunable(datetime.now(UTC) - parse_duration(older_than), keep_failed=keep_failed)
    # Another prune or delete may remove some of them first: those are skipped and counted, never an error.
    deletion = Deletion(deleted=chosen, already_gone=[]) if dry_run else store.delete_sessions(chosen)
    after = store.stats()["size_bytes"]
    if json_output:
        print_json(
            {
                "dry_run": dry_run,
                "sessions": deletion.deleted,
                "already_gone": deletion.already_gone,
                "size_bytes_before": before,
                "size_bytes_after": after,
            }
        )
        return
    for session_id in deletion.deleted:
        out.print(safe(session_id))
    verb = "would delete" if dry_run else "deleted"
    err.print(f"{_deleted_line(verb, deletion)}; store {_size(before)} → {_size(after)}")


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
    from evcli.core.errors import BadInput
    from evcli.core.userfiles import write_output
    from evcli.store.documents import export_all, to_canonical

    if all_sessions and (session_id is not None or output is None):
        raise BadInput("--all takes no session id and needs -o DIR")
    if not all_sessions and session_id is None:
        raise BadInput("give a session id, or --all -o DIR")
    store = open_store(db, must_exist=True)
    integrity = store.check_integrity()  # runs while the sessions are read and written out
    if all_sessions and output is not None:
        ids = export_all(store, output)
        err.print(f"exported {len(ids)} sessions to {safe(output)}")
    elif session_id is not None:
        text = to_canonical(store.load(store.resolve(session_id))) + "\n"
        if output is None:
            sys.stdout.write(json_safe(text))  # the same JSON, C1 and bidi characters \u-escaped for the terminal
        else:
            write_output(output, text)
            err.print(f"exported {safe(session_id)} to {safe(output)}")
    warn_if_damaged(integrity)


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
