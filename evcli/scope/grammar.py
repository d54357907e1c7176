"""The question grammar: named groups of cue words per language (grammar/*.toml), matched by one engine.

A language is one file, `grammar/<language>.toml`, of named groups (TOML tables; `[onset.first]` is the group
"onset.first") and of tables that are no group (no `phrases`): its time words and forms (`[time]`, read by
evcli.scope.time_language) and word mappings (`[word.glossary]`, read with `tables`). Which language a
question is written in is read from the words each file's phrases cover in it (`Grammar.languages`). A group
holds `phrases`, written out in every inflected form they are used in, and how they match; more phrases of the same group matching otherwise follow as `[[group.also]]` blocks. The options:

- `at = "start"` / `"end"`: only at the start or the end of the question (leading spaces, trailing spaces and
  final punctuation ignored);
- `then = "group"`, `within = N`: a phrase of that group follows within N words (default 0) in the same sentence;
  `then = "number"` asks for a run of digits there; `not_then` refuses the phrase where one follows;
- `case = "exact"`: only as written (ERROR, not error);
- `standalone = true`: not joined to a neighbour by `-` or `.` either (node-3, src.ip are names, not nouns).

Invariants: matching is case-insensitive; an ASCII letter or digit at a phrase's edge must not touch another
ASCII letter, digit or `_` (word boundaries), a CJK edge matches anywhere; whitespace inside a phrase matches any
run of spaces, and spaces next to Han or kana characters are ignored (来源 IP is 来源IP); a typographic
apostrophe reads as `'`. A group is the union of its phrases in every file, each matching by its own file's
options; a `then` target is matched by its words alone. Every hit is reported (group, start, end, text: positions
in the original question), ordered by start, longest first, so a caller claiming spans (`Spans.claim`) takes the
longest of overlapping ones. The packaged grammar is read and compiled into one automaton once per process.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import ahocorasick

GRAMMAR_DIR = Path(__file__).with_name("grammar")
NUMBER = "number"  # the built-in `then` target: a run of digits
_OPTIONS = frozenset({"at", "then", "within", "not_then", "case", "standalone"})
_UNSPACED = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")  # Han, kana
_DIGITS = re.compile(r"\d+")
_SENTENCE_END = frozenset(".?!;。？！；")
_FINAL = " \t\r\n?？!！.。…"
_JOINERS = "-."


@dataclass(frozen=True)
class Hit:
    """One phrase of `group` found at question[start:end] (== text)."""

    group: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class _Rule:
    """How one phrase of one file matches."""

    group: str
    phrase: str
    language: str = ""  # of the file it is written in (language_of)
    at: str | None = None
    then: str | None = None
    within: int = 0
    not_then: str | None = None
    exact_case: bool = False
    standalone: bool = False


def _fold(char: str) -> str:
    lowered = char.lower()
    return "'" if char == "\u2019" else lowered if len(lowered) == 1 else char


def _normal(text: str) -> tuple[str, list[int]]:
    """The text folded for matching (lower case, one space per run, none next to Han or kana) and, per
    character of it, its index in `text`."""
    chars: list[str] = []
    origin: list[int] = []
    index = 0
    while index < len(text):
        if not text[index].isspace():
            chars.append(_fold(text[index]))
            origin.append(index)
            index += 1
            continue
        end = index
        while end < len(text) and text[end].isspace():
            end += 1
        before = text[index - 1] if index else ""
        after = text[end] if end < len(text) else ""
        if not (_UNSPACED.match(before) or _UNSPACED.match(after)):
            chars.append(" ")
            origin.append(index)
        index = end
    return "".join(chars), origin


def _word_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _joined(text: str, edge: int, step: int, standalone: bool) -> bool:
    """Whether the character beside a phrase edge (at `edge`, looking `step` away) continues a word."""
    if not 0 <= edge < len(text):
        return False
    if _word_char(text[edge]):
        return True
    beyond = edge + step
    return standalone and text[edge] in _JOINERS and 0 <= beyond < len(text) and _word_char(text[beyond])


def _gap_fits(text: str, start: int, end: int, within: int) -> bool:
    """Whether text[start:end] holds at most `within` words and no sentence end."""
    words = text[start:end].split()
    return len(words) <= within and not any(_SENTENCE_END & set(word) for word in words)


def _read_groups(table: dict[str, Any], language: str, prefix: str = "") -> Iterator[_Rule]:
    """The rules of a file's (possibly nested) tables; a table with `phrases` or `also` is a group."""
    for key, value in table.items():
        if not isinstance(value, dict):
            continue
        name = f"{prefix}{key}"
        if "phrases" in value or "also" in value:
            for block in (value, *value.get("also", ())):
                yield from _rules(name, block, language)
        yield from _read_groups(value, language, f"{name}.")


def _rules(group: str, block: dict[str, Any], language: str) -> Iterator[_Rule]:
    """The phrases of one block of a group, matching by its options."""
    options = {key: value for key, value in block.items() if not isinstance(value, dict) and key != "also"}
    phrases = options.pop("phrases", [])
    unknown = set(options) - _OPTIONS
    if unknown or options.get("at") not in (None, "start", "end") or options.get("case") not in (None, "exact"):
        raise ValueError(f"grammar group {group!r}: unknown options {sorted(unknown)} or values {options}")
    for phrase in phrases:
        yield _Rule(
            group=group,
            phrase=" ".join(phrase.split()),
            language=language,
            at=options.get("at"),
            then=options.get("then"),
            within=int(options.get("within", 0)),
            not_then=options.get("not_then"),
            exact_case=options.get("case") == "exact",
            standalone=bool(options.get("standalone", False)),
        )


class Grammar:
    """The groups of some language files, compiled into one automaton."""

    def __init__(self, rules: Iterable[_Rule]) -> None:
        self.rules = tuple(rules)
        self.automaton = ahocorasick.Automaton()
        keyed: dict[str, list[_Rule]] = {}
        for rule in self.rules:
            keyed.setdefault(_normal(rule.phrase)[0], []).append(rule)
        for key, found in keyed.items():
            self.automaton.add_word(key, (len(key), tuple(found)))
        self.automaton.make_automaton()
        targets = {rule.then for rule in self.rules} | {rule.not_then for rule in self.rules}
        missing = targets - {rule.group for rule in self.rules} - {None, NUMBER}
        if missing:
            raise ValueError(f"grammar: `then` names groups no file declares: {sorted(str(name) for name in missing)}")
        self._memo: tuple[str, tuple[tuple[Hit, _Rule], ...]] = ("", ())

    @classmethod
    def load(cls, *directories: Path) -> Grammar:
        """The grammar of every `*.toml` file in `directories`, read in file name order per directory."""
        rules: list[_Rule] = []
        for directory in directories:
            for path in sorted(Path(directory).glob("*.toml")):
                rules += _read_groups(tomllib.loads(path.read_text(encoding="utf-8")), language_of(path))
        return cls(rules)

    def languages(self, question: str) -> dict[str, int]:
        """Per language, how many characters of the question its phrases cover (each counted once)."""
        covered: dict[str, set[int]] = {}
        for hit, rule in self._candidates(question):
            covered.setdefault(rule.language, set()).update(range(hit.start, hit.end))
        return {language: len(positions) for language, positions in covered.items()}

    def words(self, group: str) -> frozenset[str]:
        """The phrases of `group` in every file, folded (a word table: "is this word one of them?")."""
        return frozenset(_normal(rule.phrase)[0] for rule in self.rules if rule.group == group)

    def hits(self, question: str, *groups: str) -> list[Hit]:
        """Every hit of the named groups (of every group when none is named), by start, longest first."""
        wanted = set(groups)
        candidates = self._candidates(question)
        found = {
            hit
            for hit, rule in candidates
            if (not wanted or hit.group in wanted) and self._follows(question, hit, rule, candidates)
        }
        return sorted(found, key=lambda hit: (hit.start, hit.start - hit.end, hit.group))

    def has(self, question: str, *groups: str) -> bool:
        """Whether any of the named groups matches the question."""
        return bool(self.hits(question, *groups))

    def _candidates(self, question: str) -> tuple[tuple[Hit, _Rule], ...]:
        """Each phrase found with its own edges, anchor and case right (what follows it not yet checked)."""
        if self._memo[0] == question and question:
            return self._memo[1]
        folded, origin = _normal(question)
        found: list[tuple[Hit, _Rule]] = []
        for last, (length, rules) in self.automaton.iter(folded):
            start, end = origin[last - length + 1], origin[last] + 1
            found += [
                (Hit(rule.group, start, end, question[start:end]), rule)
                for rule in rules
                if self._stands(question, start, end, rule)
            ]
        self._memo = (question, tuple(found))
        return self._memo[1]

    @staticmethod
    def _stands(question: str, start: int, end: int, rule: _Rule) -> bool:
        text = question[start:end]
        if rule.exact_case and " ".join(text.split()) != rule.phrase:
            return False
        if _word_char(text[0]) and _joined(question, start - 1, -1, rule.standalone):
            return False
        if _word_char(text[-1]) and _joined(question, end, 1, rule.standalone):
            return False
        if rule.at == "start" and question[:start].strip():
            return False
        return not (rule.at == "end" and question[end:].strip(_FINAL))

    def _follows(self, question: str, hit: Hit, rule: _Rule, candidates: tuple[tuple[Hit, _Rule], ...]) -> bool:
        """Whether a `then` phrase follows the hit (and no `not_then` one does)."""
        if rule.then is not None and not self._followed(question, hit, rule.then, rule.within, candidates):
            return False
        return rule.not_then is None or not self._followed(question, hit, rule.not_then, rule.within, candidates)

    @staticmethod
    def _followed(question: str, hit: Hit, group: str, within: int, candidates: tuple[tuple[Hit, _Rule], ...]) -> bool:
        starts = (
            [match.start() for match in _DIGITS.finditer(question, hit.end)]
            if group == NUMBER
            else [other.start for other, _ in candidates if other.group == group and other.start >= hit.end]
        )
        return any(_gap_fits(question, hit.end, start, within) for start in starts)


@cache
def grammar() -> Grammar:
    """The packaged grammar (every language file of evcli/scope/grammar/), compiled once per process."""
    return Grammar.load(GRAMMAR_DIR)


def hits(question: str, *groups: str) -> list[Hit]:
    """Every hit of the named groups in the packaged grammar (see `Grammar.hits`)."""
    return grammar().hits(question, *groups)


def has(question: str, *groups: str) -> bool:
    return grammar().has(question, *groups)


def language_of(path: Path) -> str:
    """The language a grammar file is written in: its name up to the first `_` (`en.toml`; a test may add a
    part of a language as `de_time.toml`)."""
    return path.stem.split("_")[0]


@cache
def tables(name: str) -> dict[str, dict[str, Any]]:
    """The top-level table `name` (no group: no `phrases`) of every packaged language file, by language; the
    tables of one language's files are merged key by key (a key written twice is an error)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(GRAMMAR_DIR.glob("*.toml")):
        table = tomllib.loads(path.read_text(encoding="utf-8")).get(name)
        if not isinstance(table, dict):
            continue
        merged = found.setdefault(language_of(path), {})
        twice = set(merged) & set(table)
        if twice:
            raise ValueError(f"grammar: [{name}] keys {sorted(twice)} are written twice for {language_of(path)!r}")
        merged.update(table)
    return found


@cache
def words(group: str) -> frozenset[str]:
    """The packaged grammar's phrases of `group`, folded; built once per group and process."""
    return grammar().words(group)
