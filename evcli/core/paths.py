"""Where evcli keeps its files: one data directory, and the names inside it.

The data directory is `$EVCLI_HOME` when set (a leading `~` expanded), else the per-user app dir
(`typer.get_app_dir("evcli")`). The trace store, the configuration file, the knowledge index and the
log, trace and metric indexes all live in it, so moving `EVCLI_HOME` moves all of them; `--db`
names the store alone. Nothing here creates a directory or touches the disk.
"""

from __future__ import annotations

import os
from pathlib import Path

DB_FILENAME = "evcli.db"
INDEX_DIR = "logindex"


def data_dir() -> Path:
    """`$EVCLI_HOME`, else the per-user app dir."""
    home = os.environ.get("EVCLI_HOME")
    if home:
        return Path(home).expanduser()
    import typer  # deferred: only needed when no EVCLI_HOME is set

    return Path(typer.get_app_dir("evcli"))


def default_db_path() -> Path:
    """The trace store: `evcli.db` in the data directory."""
    return data_dir() / DB_FILENAME


def index_home() -> Path:
    """The log, trace and metric indexes of the backends: `logindex/` in the data directory."""
    return data_dir() / INDEX_DIR
