"""The answer kinds a question asks for (kinds.toml), found by one matcher over every language's cues.

Invariants: an ASCII cue matches on word boundaries, case-insensitively, a CJK cue anywhere; the
kinds come back in table order (a "what changed" question is a changes question even though it
also asks why); the table is read once per process.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

import ahocorasick

TABLE = Path(__file__).with_name("kinds.toml")


@cache
def _table() -> tuple[tuple[str, ...], ahocorasick.Automaton]:
    rows = tomllib.loads(TABLE.read_text(encoding="utf-8"))["kinds"]
    automaton = ahocorasick.Automaton()
    for order, row in enumerate(rows):
        for language, cues in row.items():
            if language == "name":
                continue
            for cue in cues:
                automaton.add_word(cue.lower(), (order, cue.lower()))
    automaton.make_automaton()
    return tuple(row["name"] for row in rows), automaton


def _bounded(text: str, start: int, end: int) -> bool:
    """An ASCII cue stands as whole words; a CJK cue needs no boundary."""
    if not text[start:end].isascii():
        return True
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not (before.isascii() and before.isalnum()) and not (after.isascii() and after.isalnum())


def answer_kinds(question: str) -> tuple[str, ...]:
    """The kinds the question's cues name, in table order."""
    names, automaton = _table()
    lowered = question.lower()
    found = set()
    for end, (order, cue) in automaton.iter(lowered):
        start = end - len(cue) + 1
        if _bounded(lowered, start, end + 1):
            found.add(order)
    return tuple(names[order] for order in sorted(found))
