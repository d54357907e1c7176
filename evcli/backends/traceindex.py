"""The persistent index of a snapshot's traces/ (DESIGN §5, traces issue): every span of its files in one
SQLite file under `$EVCLI_HOME/logindex/`, built once (evcli.backends.tracebuild) and reused while the
files are unchanged; queries over it in evcli.backends.tracesearch.

Invariants:
  - an index file is named by SCHEMA, the environment zone (a CSV time without a zone is read in it),
    the reading limits and each file's relative path and identity: its sha256 (the log index's stat
    record, by real path, inode, size and mtime, spares re-hashing an unchanged file), or why it cannot
    be read; so a changed, added or removed file, zone or schema never reads a stale index;
  - an index is built into a private temporary file and renamed into place when complete: a reader never
    sees half an index, an interrupted build (a deadline, Ctrl-C, a crash) leaves none, and two processes
    building the same one both end with a whole one. An index that cannot be read (damaged, another
    schema) is removed and built again;
  - every span keeps its file and 1-based line (its provenance), its ids as written (the normalised id,
    without leading zeros, and how many zeros were cut), its service and operation as written (names
    mapped to the environment's services only when read, so env.toml aliases never go stale in it);
  - each span's parent is resolved in SQL by (trace id, span id) over every span of every file, never in
    a dict of them all (`tracebuild._RESOLVE_SQL` says how): its parent's row and service and whether it
    starts before its parent are stored with it; a parent that was read nowhere leaves it an orphan; a
    span repeating an earlier span's id, and one on a cycle of parents (of up to MAX_CYCLE spans,
    `tracebuild._CYCLES_SQL`), are marked: on no edge, as trace_graph says;
  - what is wrong with the spans (orphans, clock skew, repeated span ids, spans without a service) is
    counted once at build time, stated by the readers, never repaired.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from evcli.backends.logindex import file_sha256
from evcli.backends.sqlite_deadline import connect
from evcli.backends.trace_graph import Quality
from evcli.backends.tracebuild import SourceFile, build_index
from evcli.backends.traceformats import MAX_DOCUMENT_BYTES, refusal
from evcli.core.files import LIMITS, RefusedFile, open_binary
from evcli.core.paths import index_home

SCHEMA = 2  # part of every index file's name: a new schema builds new files


def source_files(paths: list[Path], root: Path, max_bytes: int) -> list[SourceFile]:
    """The span files as the index is keyed by them: each one's digest, or why it cannot be read (outside
    `root`, not a regular file, larger than `max_bytes`, a JSON document too large to read whole)."""
    return [_source(path, root, max_bytes) for path in paths]


def _source(path: Path, root: Path, max_bytes: int) -> SourceFile:
    relative = path.relative_to(root).as_posix()
    try:
        with open_binary(path, root) as handle:
            size = handle.seek(0, 2)
            refused = refusal(handle, csv_name=path.suffix == ".csv")
        if size > max_bytes:
            raise RefusedFile(f"larger than {max_bytes} bytes (the read limit)")
        if refused is not None:  # never hashed: it would be read in full for nothing
            return SourceFile(path, relative, error=f"{relative}: {refused}")
        return SourceFile(path, relative, digest=file_sha256(path, root))
    except RefusedFile as error:
        return SourceFile(path, relative, error=f"{relative}: {error.strerror}")
    except OSError as error:
        return SourceFile(path, relative, error=f"{relative}: cannot read: {error.strerror or error}")


def index_path(sources: list[SourceFile], zone: tzinfo, home: Path | None = None) -> Path:
    """Where the index of these files read in `zone` is (built or not)."""
    named = [f"{SCHEMA}|{zone}|{MAX_DOCUMENT_BYTES}|{LIMITS.max_line_chars}"]
    named += [f"{source.relative}\t{source.digest}\t{source.error}" for source in sources]
    key = hashlib.sha256("\n".join(named).encode()).hexdigest()[:32]
    return (home or index_home()) / f"traces-{key}.db"


def open_trace_index(sources: list[SourceFile], root: Path, zone: tzinfo) -> Path:
    """The index file of `sources` (inside `root`), built now when no readable one exists."""
    db = index_path(sources, zone)
    db.parent.mkdir(parents=True, exist_ok=True)
    if db.exists():
        try:
            read_build(db)
            return db
        except sqlite3.DatabaseError:  # damaged or of another schema: built again
            db.unlink(missing_ok=True)
    build_index(sources, root, zone, db, SCHEMA)
    read_build(db)
    return db


@dataclass(frozen=True)
class Build:
    """The build row of an index: the spans' time span and what is wrong with them."""

    first: int | None  # the earliest span start, ns
    ends: int | None  # the latest span end
    quality: Quality


def read_build(db: Path) -> Build:
    """The build row of an index file; sqlite3.DatabaseError when it has none or another schema."""
    with connect(db) as conn:
        row = conn.execute(
            "SELECT schema, first, ends, orphans, skewed, duplicates, without_service, cyclic FROM build"
        ).fetchone()
    if row is None or row[0] != SCHEMA:
        raise sqlite3.DatabaseError(f"not a trace index of schema {SCHEMA}")
    return Build(row[1], row[2], Quality(*row[3:]))


@dataclass(frozen=True)
class FileRow:
    """What the index holds of one file: its format and counts, or its error."""

    number: int
    relative: str
    digest: str
    error: str
    format: str | None
    records: int
    spans: int
    first: int | None  # the earliest and latest span start, ns
    last: int | None
    reasons: list[str]  # why the first few unread records were not read


def file_rows(db: Path) -> list[FileRow]:
    with connect(db) as conn:
        rows = conn.execute(
            "SELECT no, relative, digest, error, format, records, spans, first, last, reasons FROM files ORDER BY no"
        ).fetchall()
    return [FileRow(*row[:9], reasons=json.loads(row[9] or "[]")) for row in rows]  # type: ignore[misc]


@dataclass(frozen=True)
class Names:
    """The service names as written and as the environment names them, by their id in the index."""

    written: dict[int, str]
    mapped: dict[int, str]  # "" stays "" (a span without a service)


def read_names(db: Path, service_of: Callable[[str], str]) -> Names:
    with connect(db) as conn:
        written = dict(conn.execute("SELECT id, name FROM services").fetchall())
    return Names(written, {id: service_of(name) if name else "" for id, name in written.items()})
