"""One directory's chunks in a full-text table of their own, for scoring.

BM25 weighs a term by how rare it is in the table it searches. The index file holds every directory
indexed into it, so scored there a directory's blocks would move whenever another directory is indexed
(a replay of `lookup_knowledge` would cite `$.evidence_blocks[3]` and find another block). A search of one
directory is scored in a temporary table of that directory's chunks (rowid = chunk id), rebuilt only when
they change; a search of all directories uses the index's own table.
"""

from __future__ import annotations

import sqlite3
from typing import Any

SCOPED_TABLE = "kb_scope_fts"
Scoped = tuple[str, tuple[Any, ...]]  # the directory the table holds, and its chunks' signature then


def scoped_table(conn: sqlite3.Connection, scope: str, held: Scoped | None) -> Scoped:
    """Fill `temp.kb_scope_fts` with the chunks of `scope` unless it already holds them as they are now;
    returns what it holds."""
    signature = tuple(
        conn.execute(
            "SELECT count(*), max(c.id), sum(c.length) FROM kb_chunk c JOIN kb_doc d ON d.id = c.doc_id"
            " WHERE d.directory = ?",
            [scope],
        ).fetchone()
    )
    if held == (scope, signature):
        return held
    conn.execute(f"DROP TABLE IF EXISTS temp.{SCOPED_TABLE}")
    conn.execute(f"CREATE VIRTUAL TABLE temp.{SCOPED_TABLE} USING fts5(title, heading, text, tokenize='trigram')")
    conn.execute(
        f"INSERT INTO temp.{SCOPED_TABLE} (rowid, title, heading, text) SELECT c.id, c.title, c.heading, c.text"
        " FROM kb_chunk c JOIN kb_doc d ON d.id = c.doc_id WHERE d.directory = ?",
        [scope],
    )
    return (scope, signature)
