"""A small operations glossary: what a question says in words logs do not write → the English words they do.

Only a mapping for reading a question against English logs, never a list of what to search: a question's
words are searched whether or not they are here. The entries are data, per language, in the question grammar
(evcli/scope/grammar/<language>.toml): a group `word.gloss.<entry>` of the ways a question writes an
entry (Chinese words: 连接池; English idioms whose words say less than the idiom: "requests time out",
"crash looping") and a row `<entry>` of the table `word.glossary`, the English words logs write for it, the
one real log lines use most first. The glossary of every language is read for every question (a Chinese
question may write English idioms); a third language is one more file, no code.

Invariants: matching is the grammar's (evcli/scope/grammar.py); the longest match wins (连接池 before 连接; of
equally long ones, the entry written first), and no match overlaps another. Every entry has both its group
and its row, and an entry named in two languages means the same words (otherwise reading fails loudly). The
entries are read once per process, on first use.
"""

from __future__ import annotations

from functools import cache

from evcli.scope.grammar import hits, tables, words
from evcli.scope.match import Spans

GLOSS = "word.gloss"  # an entry's group is GLOSS.<entry>; its words are the row <entry> of word.glossary


@cache
def entries() -> dict[str, tuple[str, ...]]:
    """The glossary of every language, in file order: each entry's group → the English words logs write."""
    found: dict[str, tuple[str, ...]] = {}
    for language, table in tables("word").items():
        rows, groups = table.get("glossary", {}), table.get("gloss", {})
        phrased = {entry for entry in groups if words(f"{GLOSS}.{entry}")}
        if set(rows) != phrased:
            unpaired = sorted((set(rows) ^ set(groups)) | (set(groups) - phrased))
            raise ValueError(f"grammar: glossary entries of {language!r} without a group or a row: {unpaired}")
        for entry, english in rows.items():
            group = f"{GLOSS}.{entry}"
            if found.setdefault(group, tuple(english)) != tuple(english):
                raise ValueError(f"grammar: glossary entry {entry!r} means other words in {language!r}")
    return found


def translate(text: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, english words) of every glossary entry in the text, longest first, never overlapping,
    in text order."""
    glossary = entries()
    if not glossary:
        return []
    order = {group: place for place, group in enumerate(glossary)}
    spans = Spans()
    found = []
    for hit in sorted(hits(text, *glossary), key=lambda hit: (hit.start - hit.end, order[hit.group], hit.start)):
        if spans.claim(hit.start, hit.end):
            found.append((hit.start, hit.end, glossary[hit.group]))
    return sorted(found)


def alternatives(terms: list[str] | tuple[str, ...]) -> list[tuple[str, ...]]:
    """The terms that are alternative English words of one glossary word or idiom ("timeout", "timed out"
    of 超时), as groups in the terms' order: a log line holds one of them, rarely all, so a search
    wanting the thing asked looks for each of them apart."""
    meanings = list(entries().values())
    groups: list[tuple[str, ...]] = []
    taken: set[str] = set()
    for term in terms:
        if term in taken:
            continue
        entry = next((words for words in meanings if term in words and len(set(words) & set(terms)) > 1), None)
        group = tuple(t for t in terms if entry is not None and t in entry and t not in taken) or (term,)
        taken.update(group)
        groups.append(group)
    return groups
