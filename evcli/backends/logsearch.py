"""Queries over a built log index (evcli.backends.logindex): the lines, stats and patterns of a file's
rows that match a filter (time range, level, keywords), answered by its store (evcli.backends.logstore)
from the store's columns and the log's own bytes.

Invariants:
  - `Filter` is what a query keeps and `FileMatches` what it answers, for one file; the store's queries
    take and return them;
  - each query opens the store and maps the log for itself (threads share none) and closes them when it
    is done;
  - the tool call's deadline stops a query (DeadlineExceeded), checked between the chunks it scans.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evcli.backends.logindex import IndexedFile
    from evcli.backends.logstore import StoredLog


@dataclass(frozen=True)
class Filter:
    """What a query keeps: a closed ts range (None: any, untimed lines included), keywords (lower
    case), a minimum level index and whether lines without a level are dropped."""

    start: float | None
    end: float | None
    keywords: tuple[str, ...]
    level: int | None
    level_strict: bool = False
    whole: bool = False  # no range named: lines before any timestamp count too


@dataclass
class FileMatches:
    """One file's matches: the newest `limit` rows, counts per level, first/last ts, patterns."""

    rows: list[tuple[Any, ...]]  # (lineno, ts, level, derived, instance, line), newest first
    by_level: dict[int | None, int]
    first: float | None
    last: float | None
    patterns: list[dict[str, Any]] = field(
        default_factory=list
    )  # {template, count, first, last, example, level, starts_record}
    records: int = 0  # records (a line with its timestamp and the lines without one after it) matching

    @property
    def total(self) -> int:
        return sum(self.by_level.values())


def opened(indexed: IndexedFile) -> StoredLog:
    """The store of `indexed` opened with its log's bytes (a context manager)."""
    from evcli.backends.logstore import open_store

    return open_store(indexed.store, indexed.log, indexed.root)


def search(indexed: IndexedFile, wanted: Filter, limit: int, patterns: int = 20) -> FileMatches:
    """The matches of `wanted` in one file: the newest `limit` rows, the counts and the `patterns`
    commonest templates."""
    from evcli.backends import logstore

    with opened(indexed) as stored:
        return logstore.search(stored, wanted, limit, patterns)


def instance_counts(indexed: IndexedFile, wanted: Filter) -> dict[str, int]:
    """Matching lines per instance (the host, pod or node a line names; lines naming none left out)."""
    from evcli.backends import logstore

    with opened(indexed) as stored:
        return logstore.instance_counts(stored, wanted)


def address_counts(indexed: IndexedFile, wanted: Filter) -> Counter[str]:
    """Matching lines per address (evcli.backends.addresses.count_addresses over them)."""
    from evcli.backends import logcounts

    with opened(indexed) as stored:
        return logcounts.address_counts(stored, wanted)


def path_counts(indexed: IndexedFile, wanted: Filter) -> Counter[str]:
    """Matching lines per requested endpoint (evcli.backends.addresses.count_paths over them)."""
    from evcli.backends import logcounts

    with opened(indexed) as stored:
        return logcounts.path_counts(stored, wanted)
