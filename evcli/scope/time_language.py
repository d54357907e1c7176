"""The time words and forms of each language: the `time.*` tables of the grammar files
(evcli/scope/grammar/<language>.toml), read by evcli.scope.times, windows and baselines.

A language writes how it names times as data: word → value tables (numbers, units, months, days, …), word
lists (cues, connectors), and *forms*, small templates compiled by `compile_form`:

    "{cue} [{count}] [{fraction}] {unit}"     last 20 minutes, the past half hour
    "{count} [{measure}] {unit}{within}"      20分钟内, 两个小时以内

`{name}` is a slot, a named group: its pattern is the reader's when it fills the slot itself (a count, a
unit, a clock time, a date), else the form table's word list `name`, else every language's list
`time.<name>`; `[...]` is optional (`{name?}` is `[{name}]`); a space means whitespace may stand there; any
other text is a literal word. A table's forms are tried in order at one place (write the longer first).

Invariants:
  - matching is case-insensitive; at a word's edge an ASCII letter touches no ASCII letter or `_`, an ASCII
    digit no ASCII digit nor a letter before it (so "20m" is a count and a unit, "admin1" holds no number);
    a Han or kana edge matches anywhere (as in the question grammar); a space inside a word matches any
    run of whitespace between ASCII characters and any run or none elsewhere; at one place a longer word
    is tried before a shorter one it starts with ("前后" before "前", "jan." before "jan");
  - an optional part at the start or end of a form takes the whitespace beside it, so a match never
    starts or ends with whitespace;
  - a number is digits, a word of `time.numbers`, or a run of `time.numerals` (二十五: a numeral of ten or
    more multiplies the digit before it, one by default, and adds the digit after it);
  - a file's language is its name up to the first `_` (grammar.language_of); the tables of one language's
    files merge key by key (a key written twice is an error). `pooled` merges every language (the first
    language's value wins), for readers that take any language's words in one question;
  - the packaged files are read once per process, on first use; readers cache what they compile per
    `TimeWords`, so `evcli gate` and `evcli trace` never build a pattern.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from evcli.scope.grammar import GRAMMAR_DIR, language_of

NEVER = r"(?!)"  # the pattern of an empty word list
# a number's edges: "20m" is one, "admin1" none (guards compile case-sensitively: far cheaper, same meaning)
NUMBER_LEFT, NUMBER_RIGHT = r"(?-i:(?<![A-Za-z0-9_]))", r"(?![0-9])"
_LETTER_LEFT, _LETTER_RIGHT = r"(?-i:(?<![A-Za-z_]))", r"(?-i:(?![A-Za-z_]))"
DIGITS = rf"{NUMBER_LEFT}\d{{1,4}}{NUMBER_RIGHT}"
_SLOT = re.compile(r"\{(?P<name>\w+)(?P<optional>\??)\}")


class Language:
    """The merged `time` tables of one language (or of all, pooled)."""

    def __init__(self, name: str, table: Mapping[str, Any]) -> None:
        self.name = name
        self.table = table

    def part(self, name: str) -> Mapping[str, Any]:
        """The table `time.<name>` (a dotted name reaches into tables; {} when the language has none)."""
        found: Any = self.table
        for key in name.split("."):
            found = found.get(key, {}) if isinstance(found, Mapping) else {}
        return found if isinstance(found, Mapping) else {}

    def words(self, name: str, within: str | None = None) -> list[str] | None:
        """The word list (or word table's keys) `name` of table `time.<within>` (of `time` itself when
        `within` is None), or None when there is none."""
        found = (self.part(within) if within else self.table).get(name)
        return list(found) if isinstance(found, list | Mapping) else None

    def value(self, table: str, word: str) -> Any:
        """The value of `word` (folded as matched) in the word table `time.<table>`, or None."""
        folded = fold(word)
        return next((value for key, value in self.part(table).items() if fold(key) == folded), None)

    def number(self, text: str) -> float | None:
        """A count written in digits, a number word or a run of numerals (None when unreadable)."""
        if text.isdigit():
            return int(text)
        word = self.value("numbers", text)
        return float(word) if isinstance(word, int | float) else self._numerals(text)

    def _numerals(self, text: str) -> int | None:
        table = self.part("numerals")
        if not text or not all(isinstance(table.get(char), int) for char in text):
            return None
        values = [int(table[char]) for char in text]
        tens = next((index for index, value in enumerate(values) if value >= 10), None)
        if tens is None:
            return values[0] if len(values) == 1 else None
        before, after = values[:tens], values[tens + 1 :]
        if len(before) > 1 or len(after) > 1 or any(value >= 10 for value in (*before, *after)):
            return None
        return (before[0] if before else 1) * values[tens] + (after[0] if after else 0)

    def count_pattern(self) -> str:
        """A count: digits, a number word or a run of numerals."""
        parts = [DIGITS, alternation(self.part("numbers")), self.numerals_pattern("+")]
        return "(?:" + "|".join(part for part in parts if part != NEVER) + ")"

    def numerals_pattern(self, repeat: str) -> str:
        """A run of the language's numerals (`repeat`: "+", "{1,3}"), NEVER when it has none."""
        numerals = "".join(re.escape(char) for char in self.part("numerals"))
        return f"[{numerals}]{repeat}" if numerals else NEVER


class TimeWords:
    """The time tables of some grammar files, by language, in file name order."""

    def __init__(self, languages: Iterable[Language]) -> None:
        self.languages = tuple(languages)
        pooled: dict[str, Any] = {}
        for language in self.languages:
            _pool(pooled, language.table)
        self.pooled = Language("*", pooled)

    def forms(
        self, language: Language, table: str, slots: Mapping[str, str], *, named: bool = True
    ) -> list[re.Pattern[str]]:
        """The forms of `language`'s table `time.<table>`, compiled; a slot's pattern is the reader's (in
        `slots`), else the table's word list of its name, else every language's list `time.<name>`."""
        compiled = []
        for template in language.words("forms", table) or ():
            filled = dict(slots)
            for name in (slot["name"] for slot in _SLOT.finditer(template)):
                if name not in filled:
                    words = language.words(name, table)
                    filled[name] = alternation(self.pooled.words(name) or () if words is None else words)
            compiled.append(compile_form(template, filled, named=named))
        return compiled

    def forms_by_language(
        self, table: str, slots_of: Callable[[Language], Mapping[str, str]]
    ) -> tuple[tuple[Language, tuple[re.Pattern[str], ...]], ...]:
        """Each language with the forms of its table `time.<table>`, compiled with the slots `slots_of` gives."""
        return tuple((language, tuple(self.forms(language, table, slots_of(language)))) for language in self.languages)

    @classmethod
    def load(cls, *directories: Path) -> TimeWords:
        """The `time` tables of every `*.toml` file in `directories`."""
        tables: dict[str, dict[str, Any]] = {}
        for directory in directories:
            for path in sorted(Path(directory).glob("*.toml")):
                table = tomllib.loads(path.read_text(encoding="utf-8")).get("time")
                if isinstance(table, dict):
                    _merge(tables.setdefault(language_of(path), {}), table, f"{language_of(path)}: time")
        return cls(Language(name, table) for name, table in tables.items())


def _merge(into: dict[str, Any], table: Mapping[str, Any], where: str) -> None:
    """One language's files: sub-tables merge key by key, a key written twice is an error."""
    for key, value in table.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value, f"{where}.{key}")
        elif key in into:
            raise ValueError(f"grammar: [{where}] key {key!r} is written twice")
        else:
            into[key] = dict(value) if isinstance(value, Mapping) else value


def _pool(into: dict[str, Any], table: Mapping[str, Any]) -> None:
    """Every language's words together: word tables merge (first value wins), word lists join."""
    for key, value in table.items():
        if isinstance(value, Mapping):
            _pool(into.setdefault(key, {}), value)
        elif isinstance(value, list):
            known = into.setdefault(key, [])
            known += [word for word in value if word not in known]
        else:
            into.setdefault(key, value)


@cache
def packaged() -> TimeWords:
    """The time tables of the packaged grammar files, read once per process."""
    return TimeWords.load(GRAMMAR_DIR)


def fold(word: str) -> str:
    """A word as matched: lower case, one space per run of whitespace."""
    return " ".join(word.casefold().split())


def word_pattern(word: str) -> str:
    """One word, its edges guarded (see the module docstring)."""
    return alternation([word])


def _units(word: str) -> list[tuple[str, str]]:
    """A word as (key, pattern) units: one per character (folded key), one per run of whitespace."""
    units: list[tuple[str, str]] = []
    for index, part in enumerate(word.split()):
        if index:
            before = units[-1][0]
            gap = r"\s+" if before.isascii() and part[0].isascii() else r"\s*"
            units.append((" ", gap))
        units += [(char.casefold(), re.escape(char)) for char in part]
    return units


def _left(char: str) -> str:
    if char.isascii() and char.isalpha():
        return _LETTER_LEFT
    return NUMBER_LEFT if char.isascii() and char.isdigit() else ""


def _right(char: str) -> str:
    if char.isascii() and char.isalpha():
        return _LETTER_RIGHT
    return NUMBER_RIGHT if char.isascii() and char.isdigit() else ""


_END = ("", "")  # the trie key of a word's end


def alternation(words: Iterable[str]) -> str:
    """The words as one group (NEVER when there are none), each edge guarded, written as a prefix tree: at
    one place a longer word is tried before a shorter one it starts with. A guard every word shares is
    written once, around the group."""
    unique = {" ".join(word.split()) for word in words if word.strip()}
    if not unique:
        return NEVER
    lefts, rights = {_left(word[0]) for word in unique}, {_right(word[-1]) for word in unique}
    shared_left = lefts.pop() if len(lefts) == 1 else None
    shared_right = rights.pop() if len(rights) == 1 else None
    trie: dict[tuple[str, str], Any] = {}
    for word in unique:
        node = trie
        for unit in _units(word):
            node = node.setdefault(unit, {})
        node[_END] = "" if shared_right is not None else _right(word[-1])
    branches = [
        ("" if shared_left is not None else _left(key[0])) + pattern + _branch(child)
        for (key, pattern), child in sorted(trie.items())
    ]
    return f"{shared_left or ''}(?:{'|'.join(branches)}){shared_right or ''}"


def _branch(node: dict[tuple[str, str], Any]) -> str:
    """What may follow in the tree: the longer words first, then this word's end."""
    paths = [pattern + _branch(child) for (key, pattern), child in sorted(node.items()) if (key, pattern) != _END]
    if _END in node:
        paths.append(node[_END])
    return paths[0] if len(paths) == 1 else "(?:" + "|".join(paths) + ")"


def compile_form(template: str, slots: Mapping[str, str], *, named: bool = True) -> re.Pattern[str]:
    """A form's template compiled with the patterns of its slots (case-insensitive); each slot a named
    group, or (`named=False`, for a form embedded in others) a plain one."""
    return re.compile(_emit(_parse(template, slots, named)), re.IGNORECASE)


_Item = tuple[str, Any]  # ("pattern", text) or ("optional", [items]); a None item is a gap


def _parse(template: str, slots: Mapping[str, str], named: bool) -> list[_Item | None]:
    """The template's items: patterns, optional groups and gaps (whitespace), nested by brackets."""
    stack: list[list[_Item | None]] = [[]]
    at = 0
    while at < len(template):
        char = template[at]
        slot = _SLOT.match(template, at)
        if slot is not None:
            name = slot["name"]
            if name not in slots:
                raise ValueError(f"time form {template!r}: no words for slot {name!r}")
            item = ("pattern", f"(?P<{name}>{slots[name]})" if named else f"(?:{slots[name]})")
            stack[-1].append(("optional", [item]) if slot["optional"] else item)
            at = slot.end()
        elif char == "[":
            stack.append([])
            at += 1
        elif char == "]" and len(stack) > 1:
            inner = stack.pop()
            stack[-1].append(("optional", inner))
            at += 1
        elif char == " ":
            stack[-1].append(None)
            at += 1
        else:
            word = re.match(r"[^\s\[\]{]+", template[at:])
            if word is None:
                raise ValueError(f"time form {template!r}: unbalanced brackets")
            stack[-1].append(("pattern", word_pattern(word.group())))
            at += word.end()
    if len(stack) != 1:
        raise ValueError(f"time form {template!r}: unbalanced brackets")
    return stack[0]


def _emit(items: list[_Item | None]) -> str:
    """The items as a pattern: a gap is optional whitespace; the gap before an optional group that ends a
    sequence (after one that starts it) goes inside the group, so a match never ends (starts) with it."""
    parts = [item for item in items if item is not None]
    gaps = [index > 0 and items[index - 1] is None for index, item in enumerate(items) if item is not None]
    out: list[str] = []
    for index, (kind, body) in enumerate(parts):
        last = index == len(parts) - 1
        takes_front = kind == "optional" and last and gaps[index]
        takes_end = kind == "optional" and index == 0 and not last and gaps[index + 1]
        taken_by_first = index == 1 and parts[0][0] == "optional" and gaps[index]
        if gaps[index] and not takes_front and not taken_by_first:
            out.append(r"\s*")
        if kind == "pattern":
            out.append(body)
        else:
            out.append("(?:" + (r"\s*" if takes_front else "") + _emit(body) + (r"\s*" if takes_end else "") + ")?")
    return "".join(out)


def scan(patterns: Iterable[re.Pattern[str]], text: str) -> Iterator[re.Match[str]]:
    """The matches of several forms read as one alternation: left to right, at one start the first
    form's, the next search after the end of the match taken."""
    forms = tuple(patterns)
    at = 0
    while at <= len(text):
        found = [match for pattern in forms if (match := pattern.search(text, at)) is not None]
        if not found:
            return
        first = min(found, key=lambda match: match.start())
        yield first
        at = max(first.end(), first.start() + 1)
