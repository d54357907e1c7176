"""The words the typed-fact check reads (facts.toml, parsed once: `facts_file`), compiled once: units (also as
a field name's ending) and multipliers, role, connector, approximate, bound, spread and attribution words, states,
statuses, directions and ranks, the number patterns; and `Words`, a set of words found at either end
of a text by dictionary lookups.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from functools import cache
from typing import Any, NamedTuple

from evcli.core.text import PhraseFinder, phrase_finder
from evcli.resources import package_path


class _Role(NamedTuple):
    name: str
    kind: str  # "number" or "time"
    fields: frozenset[str]
    words: tuple[str, ...]
    after: bool = True  # its words may follow their value ("5 restarts"); False: only precede it ("took 5s")


class _Words:
    """A set of words and phrases found at either end of a text by dictionary lookups, longest first
    (an alternation of a few hundred words in one regular expression is tried word by word at every
    position). A Latin word does not start or end inside another word."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = frozenset(words)
        # The lengths of the words by their last (first) character, longest first: only a word ending (starting)
        # with the text's character there can be found, so no other length is sliced and looked up.
        self._ending = _lengths_by(self.words, -1)
        self._starting = _lengths_by(self.words, 0)
        self._all = _lengths_by(self.words, None)[""]  # every length, for a position off the text

    def ending(self, text: str, end: int) -> int | None:
        """Where a word that ends `text` at `end` starts, else None."""
        lengths = self._ending.get(text[end - 1], self._ending[""]) if 0 < end <= len(text) else self._all
        for length in lengths:
            start = end - length
            if start >= 0 and text[start:end] in self.words and not _inside_word(text, start, start - 1):
                return start
        return None

    def starting(self, text: str, start: int) -> int | None:
        """Where a word that starts `text` at `start` ends, else None."""
        lengths = self._starting.get(text[start], self._starting[""]) if 0 <= start < len(text) else self._all
        for length in lengths:
            end = start + length
            if end <= len(text) and text[start:end] in self.words and not _inside_word(text, end - 1, end):
                return end
        return None


def _lengths_by(words: frozenset[str], edge: int | None) -> dict[str, tuple[int, ...]]:
    """The words' lengths by their character at `edge` (0: first, -1: last; None: all under ""), longest
    first; an empty word (length 0) is under every character, and alone under "" for any other."""
    lengths: dict[str, set[int]] = {"": set()}
    for word in words:
        lengths.setdefault(word[edge] if word and edge is not None else "", set()).add(len(word))
    empty = {0} if "" in words else set()
    return {character: tuple(sorted(found | empty, reverse=True)) for character, found in lengths.items()}


def skip_spaces(text: str, start: int) -> int:
    """`start` moved past the spaces there (where the next word starts)."""
    while start < len(text) and text[start].isspace():
        start += 1
    return start


def _inside_word(text: str, edge: int, neighbour: int) -> bool:
    """Whether a word whose first or last letter is text[edge] continues into text[neighbour]: both
    are Latin letters or digits (a CJK word or a sign such as "~" has no such edge)."""
    if not 0 <= neighbour < len(text):
        return False
    return _latin(text[edge]) and _latin(text[neighbour])


def _latin(character: str) -> bool:
    return character.isascii() and (character.isalnum() or character == "_")


class _Tables(NamedTuple):
    units: dict[str, tuple[str, float]]
    multipliers: dict[str, float]
    approximate: _Words
    past: PhraseFinder
    roles: tuple[_Role, ...]
    states: dict[str, str]  # phrase -> state
    directions: dict[str, str]  # phrase -> up/down
    ranks: dict[str, str]  # phrase -> rank (most, least, slowest, ...)
    rank_fields: dict[str, tuple[str, ...]]  # rank -> the fields it compares, first held first
    rank_extreme: dict[str, str]  # rank -> max | min
    statuses: dict[str, str]  # phrase -> status (error, ok)
    status_of: dict[str, dict[str, str]]  # casefolded field name -> {casefolded value: status}
    field_units: tuple[tuple[str, str], ...]  # (a field name's ending, its unit): duration_ms is in ms
    distinct: frozenset[str]  # roles whose value is their own field's alone (p50, p90, p99)
    per_name: dict[str, str]  # a map field whose entries count the name of their key -> the entries' role
    number: re.Pattern[str]
    compound: re.Pattern[str]  # a duration written in several units
    duration_part: re.Pattern[str]  # one number and its time unit inside it
    role_before: dict[str, _Words]  # kind -> the role words a value of that kind may follow
    role_after: _Words  # the role words a number may precede
    connectors: _Words  # words between a role word and its value ("of", "is", "为")
    role_of: dict[tuple[str, str], str]  # (kind, casefolded word) -> role
    ranges: _Words  # "ranging from", "between", "介于": a spread of values follows
    attribution: _Words  # "logged", "记录": the service named before it is the claim's subject
    bounds_before: _Words  # "over", "不到": a bound written before a number
    bounds_after: _Words  # "以上": a bound written after it
    bound_of: dict[str, str]  # bound word -> above | below
    phrases: PhraseFinder  # every state, status, direction and rank phrase, longest first
    field_roles: dict[tuple[str, str], frozenset[str]]  # (kind, casefolded field name) -> roles


def _words(table: dict[str, Any]) -> list[str]:
    return [word for language in ("en", "zh") for word in table.get(language, [])]


def _alternation(words: list[str]) -> str:
    """One group of the words, longest first; a Latin word does not start inside another word."""
    ordered = sorted(set(words), key=len, reverse=True)
    return "(" + "|".join(rf"(?<![a-z0-9]){re.escape(w)}" if w.isascii() else re.escape(w) for w in ordered) + ")"


@cache
def facts_file() -> dict[str, Any]:
    """facts.toml as parsed, once per process: every module that reads one of its tables reads it here
    (read only)."""
    return tomllib.loads(package_path("gatekeeper", "facts.toml").read_text(encoding="utf-8"))


@cache
def tables() -> _Tables:
    data = facts_file()
    units = {unit: (dim, float(factor)) for unit, (dim, factor) in data["units"].items()}
    multipliers = {word: float(factor) for word, factor in data["multipliers"].items()}
    roles = tuple(
        _Role(
            name,
            spec.get("kind", "number"),
            frozenset(f.casefold() for f in spec["fields"]),
            tuple(_words(spec)),
            not spec.get("before_only", False),
        )
        for name, spec in data["roles"].items()
    )
    states = {p.casefold(): state for state, spec in data["states"].items() for p in _words(spec)}
    directions = {p.casefold(): d for d, spec in data["directions"].items() for p in _words(spec)}
    ranks = {p.casefold(): r for r, spec in data["rank"].items() for p in _words(spec)}
    statuses = {p.casefold(): status for status, spec in data["statuses"].items() for p in _words(spec)}
    status_of: dict[str, dict[str, str]] = {}
    for status, spec in data["statuses"].items():
        for name in spec["fields"]:
            status_of.setdefault(name.casefold(), {}).update(dict.fromkeys(map(str.casefold, spec["values"]), status))
    suffixes = sorted([*units, *multipliers], key=len, reverse=True)
    # Each pattern starts with a lookahead for its first character: the other positions fail before the lookbehinds.
    number = re.compile(
        r"(?=[-−\d])(?<![A-Za-z0-9_.-])(?<!\d:)([-−]?)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\d.,]\d)"
        r"(?:\s?(" + "|".join(re.escape(s) for s in suffixes) + r")(?![A-Za-z]))?(?![A-Za-z0-9_])"
    )
    durations = sorted((unit for unit, (dim, _) in units.items() if dim == "time"), key=len, reverse=True)
    part = r"\d+(?:\.\d+)?\s?(?:" + "|".join(map(re.escape, durations)) + r")(?![A-Za-z])"
    # A duration in several units: 168h20m, "1 hour 30 minutes", "2 minutes and 5 seconds", "1小时30分钟".
    compound = re.compile(rf"(?=\d)(?<![A-Za-z0-9_.-]){part}(?:(?:\s*,\s*|\s+and\s+|\s*)(?:{part}))+(?![A-Za-z0-9_])")
    duration_part = re.compile(r"(\d+(?:\.\d+)?)\s?(" + "|".join(map(re.escape, durations)) + r")(?![A-Za-z])")
    role_of = {(role.kind, word.casefold()): role.name for role in roles for word in role.words}
    role_before = {kind: _Words(word for (k, word) in role_of if k == kind) for kind in {role.kind for role in roles}}
    role_after = _Words(
        word.casefold() for role in roles if role.kind == "number" and role.after for word in role.words
    )
    approximate = [w.casefold() for w in _words(data["approximate"])]
    bound_of = {w.casefold(): side for side, spec in data["bounds"].items() for w in (*spec["before"], *spec["after"])}
    field_roles: dict[tuple[str, str], frozenset[str]] = {}
    for role in roles:
        for name in role.fields:
            field_roles[(role.kind, name)] = field_roles.get((role.kind, name), frozenset()) | {role.name}
    return _Tables(
        units,
        multipliers,
        _Words(approximate),
        phrase_finder(tuple(_words(data["past"]))),
        roles,
        states,
        directions,
        ranks,
        {rank: tuple(spec["fields"]) for rank, spec in data["rank"].items()},
        {rank: spec.get("extreme", "max") for rank, spec in data["rank"].items()},
        statuses,
        status_of,
        tuple(data["field_units"].items()),
        frozenset(name for name, spec in data["roles"].items() if spec.get("distinct")),
        dict(data["per_name"]),
        number,
        compound,
        duration_part,
        role_before,
        role_after,
        # approximate and bound words stand between a role word and its value too ("peak of about 4s")
        _Words([*(w.casefold() for w in _words(data["connectors"])), *approximate, *bound_of]),
        role_of,
        _Words(w.casefold() for w in _words(data["ranges"])),
        _Words(w.casefold() for w in _words(data["attribution"])),
        _Words(w for spec in data["bounds"].values() for w in spec["before"]),
        _Words(w for spec in data["bounds"].values() for w in spec["after"]),
        bound_of,
        phrase_finder(tuple(sorted({*states, *statuses, *directions, *ranks}))),
        field_roles,
    )
