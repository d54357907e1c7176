"""What every command shares: error handling, the store, session sources."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from evcli.console import err, out
from evcli.errors import EXIT_RUNTIME, EvcliError

DbOption = Annotated[
    Path | None,
    typer.Option("--db", help="Trace store file (default: $EVCLI_HOME/evcli.db or the user data dir).", dir_okay=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON to stdout.")]

_state = {"debug": False}


def set_debug(enabled: bool) -> None:
    _state["debug"] = enabled


def handles_errors(command):
    """Turn expected failures into one stderr line and their exit code."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except EvcliError as exc:
            _fail(exc.message, exc.hint, exc.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted; nothing partial was written", None, 130)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except Exception as exc:
            if _state["debug"]:
                raise
            _fail(f"unexpected {type(exc).__name__}: {exc}", "re-run with --debug for the traceback", EXIT_RUNTIME)

    return wrapper


def _fail(message: str, hint: str | None, code: int):
    from rich.markup import escape

    line = f"[bold red]error:[/] {escape(message)}" + (f" [dim]({escape(hint)})[/]" if hint else "")
    err.print(line, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def open_store(db: Path | None, *, must_exist: bool = False):
    """The trace store named by --db, else the default one.

    An explicitly named file must exist for commands that only read; the
    default store is created on first use so a fresh machine just works.
    """
    from evcli.store.db import TraceStore, default_db_path

    return TraceStore(db or default_db_path(), must_exist=must_exist and db is not None)


def load_source(source: str, db: Path | None):
    """A session document from a file path or a stored session id.

    Returns (document, store) where store is None for a file.
    """
    from evcli.store.documents import read_document

    if source.endswith(".json") or Path(source).is_file():
        return read_document(Path(source)), None
    store = open_store(db, must_exist=True)
    return store.load(source), store


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


__all__ = ["DbOption", "JsonOption", "handles_errors", "open_store", "load_source", "print_json", "out", "err"]
