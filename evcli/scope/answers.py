"""The kind of answer a question asks for, read from the grammar's cue hits by one table (answers.toml).

Invariants: a kind is named when one entry of its `cues` occurs (every group of a list entry), and
none of its `unless` does — a kind named before it, or a group occurring outside the kind's own words;
kinds come back in table order (their priority) and the answer is the first (`lookup` when none is
named); every kind named is tied to the words that named it (`QueryCue`). The table is read and checked
once per process; nothing here knows a word of any language.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache

from evcli.contracts import ANSWER_TABLE, AnswerKind, Breakdown, QueryCue, Source, answer_kinds
from evcli.scope.grammar import Hit, grammar, hits

TABLE = ANSWER_TABLE
SOURCES: dict[Source, str] = {"logs": "logs"}  # each evidence source a question can name: its grammar group
FALLBACK: AnswerKind = "lookup"


@dataclass(frozen=True)
class AnswerRow:
    name: AnswerKind
    cues: tuple[tuple[str, ...], ...]  # any entry; every group of an entry
    unless: tuple[str, ...] = ()
    by: tuple[Breakdown, ...] = ()  # per entry of `cues`
    plan: tuple[str, ...] = ()  # search steps, in the order they run
    claims: tuple[str, ...] = ()  # claim builders
    scope_rule: str | None = None


@dataclass(frozen=True)
class Answer:
    answer: AnswerKind
    kinds: tuple[AnswerKind, ...]
    by: Breakdown | None
    cues: tuple[QueryCue, ...]
    sources: tuple[Source, ...] = ()


_KEYS = frozenset({"name", "cues", "unless", "by", "plan", "claims", "scope_rule"})


@cache
def rows() -> tuple[AnswerRow, ...]:
    """The table, checked both ways: a row for every kind and no other, no unknown key, every group a
    group of the grammar (a misspelt name must fail loudly, never leave a kind unreadable)."""
    table = tomllib.loads(TABLE.read_text(encoding="utf-8"))["answers"]
    unknown = sorted({key for row in table for key in row} - _KEYS)
    names = [row["name"] for row in table]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"answers.toml: unknown keys {unknown}, or a kind named twice in {names}")
    found = tuple(
        AnswerRow(
            name=row["name"],
            cues=tuple((entry,) if isinstance(entry, str) else tuple(entry) for entry in row["cues"]),
            unless=tuple(row.get("unless", ())),
            by=tuple(row.get("by", ())),
            plan=_names(row.get("plan")),
            claims=_names(row.get("claims")),
            scope_rule=row.get("scope_rule"),
        )
        for row in table
    )
    named = {g for r in found for entry in r.cues for g in entry} | {g for r in found for g in r.unless}
    missing = sorted(group for group in named - set(answer_kinds()) if not grammar().words(group))
    if missing:
        raise ValueError(f"answers.toml names groups no grammar file declares: {missing}")
    return found


def _names(value: str | list[str] | None) -> tuple[str, ...]:
    """A table cell naming one step or a list of them."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


@cache
def answer_groups() -> tuple[str, ...]:
    """Every grammar group the table reads."""
    groups = [g for r in rows() for entry in r.cues for g in entry] + [g for r in rows() for g in r.unless]
    return tuple(dict.fromkeys(groups))


def answer_of(question: str, *, narrow: bool, wants_count: bool) -> Answer:
    """The answer the question asks for; `narrow`: a task that confirms one thing (it names `confirm` without
    a cue word: "is X still firing?"); `wants_count`: a count cue stands outside what other extractors read
    (not inside a quoted phrase)."""
    found = [hit for hit in hits(question, *answer_groups()) if hit.group != "count" or wants_count]
    answer = read_answer(found, named=("confirm",) if narrow else ())
    named = [(source, hit) for source, group in SOURCES.items() for hit in hits(question, group)]
    if not named:
        return answer
    cues = [*answer.cues, *(QueryCue(reads=f"source:{s}", start=h.start, end=h.end, words=h.text) for s, h in named)]
    sources = tuple(dict.fromkeys(source for source, _ in named))
    return replace(answer, cues=tuple(sorted(cues, key=lambda c: (c.start, c.reads))), sources=sources)


def row(kind: str) -> AnswerRow:
    return next(r for r in rows() if r.name == kind)


def read_answer(hits: Iterable[Hit], *, named: Iterable[AnswerKind] = ()) -> Answer:
    """The answer kinds the hits name; `named`: kinds the caller read otherwise (a narrow task that
    confirms one alert's state names no cue word)."""
    found = list(hits)
    by_group: dict[str, list[Hit]] = {}
    for hit in found:
        by_group.setdefault(hit.group, []).append(hit)
    kinds: list[AnswerKind] = []
    cues: list[QueryCue] = []
    by: Breakdown | None = None
    for answer_row in rows():
        entry = _named_entry(answer_row, by_group, kinds)
        if entry is None and answer_row.name not in named:
            continue
        kinds.append(answer_row.name)
        if entry is None:
            continue
        groups = answer_row.cues[entry]
        if answer_row.by and by is None:
            by = answer_row.by[entry]
        reads = f"{answer_row.name}:{by}" if answer_row.by else answer_row.name
        cues += [QueryCue(reads=reads, start=h.start, end=h.end, words=h.text) for g in groups for h in by_group[g]]
    answer = kinds[0] if kinds else FALLBACK
    return Answer(answer, tuple(kinds) or (FALLBACK,), by, tuple(sorted(cues, key=lambda c: (c.start, c.reads))))


def _named_entry(answer_row: AnswerRow, by_group: dict[str, list[Hit]], kinds: Sequence[str]) -> int | None:
    """The first entry of the row's cues that occurs, unless something of `unless` does."""
    entry = next((i for i, groups in enumerate(answer_row.cues) if all(g in by_group for g in groups)), None)
    if entry is None:
        return None
    own = [(h.start, h.end) for g in answer_row.cues[entry] for h in by_group[g]]
    for blocker in answer_row.unless:
        if blocker in kinds:
            return None
        if any(not _inside(h, own) for h in by_group.get(blocker, ())):
            return None
    return entry


def _inside(hit: Hit, spans: list[tuple[int, int]]) -> bool:
    return any(start <= hit.start and hit.end <= end for start, end in spans)
