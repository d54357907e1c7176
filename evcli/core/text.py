"""Text helpers the Gatekeeper and the offline engine share: one normal form, one
notion of a fact token, one set of negations.

The Gatekeeper (evcli/gatekeeper/excerpt.py, facts.py) compares excerpts and
claims with these, and the offline Verifier judges claims with the same ones, so
the two can never disagree about what a negation or a number is. Every function
is pure; `normalize` is idempotent and never joins two digit runs.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache

__all__ = [
    "CJK_NEGATIONS",
    "ENGLISH_WORD",
    "NEGATION_WORDS",
    "PhraseFinder",
    "RAW_TOKEN",
    "STOP_WORDS",
    "TOKEN",
    "TOKEN_TRAILING_PUNCTUATION",
    "comparable",
    "critical_tokens",
    "fact_tokens",
    "has_negation",
    "is_negation",
    "json_unescaped",
    "mixed_case_words",
    "negated",
    "negations",
    "normalize",
    "phrase_finder",
]


# --- normalisation -------------------------------------------------------------

_UNIFY_PUNCTUATION = str.maketrans(
    "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb"  # “ ” „ ‟ ″ « »
    "\u2018\u2019\u201a\u201b\u2032"  # ‘ ’ ‚ ‛ ′
    "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"  # ‐ ‑ ‒ – — ― −
    "\u2039\u203a",  # ‹ › : how a model is shown < and > (evcli/tools/view.py), so a verbatim copy matches
    '"""""""\'\'\'\'\'-------<>',
)
_SPACE_BEFORE_PERCENT = re.compile(r"(?<=\d) %")
_SEPARATORS = "=,;:"
_SPACED_SEPARATOR_BETWEEN_DIGITS = re.compile(r"\d(?: [,;:] ?|[,;:] )\d")
_SPACE_AROUND_SEPARATOR = re.compile(r" ([=,;:]) ?|([=,;:]) ")
# Contractions whose expansion keeps the meaning; "'s" and "'d" are ambiguous (is/has, would/had).
_CONTRACTION = re.compile(r"\b(can|won|shan|[a-z]+)n't\b|(?<=[a-z])'(re|m|ll|ve)\b|\bcannot\b")
_EXPANDED = {
    "can": "can",
    "won": "will",
    "shan": "shall",
    "re": "are",
    "m": "am",
    "ll": "will",
    "ve": "have",
}


def _join_separator(match: re.Match[str]) -> str:
    separator = match.group(1) or match.group(2)
    text, start, end = match.string, match.start(), match.end()
    # "1, 000" -> "1,000" or "23: 05" -> "23:05" would forge a different number.
    if separator != "=" and 0 < start and end < len(text) and text[start - 1].isdigit() and text[end].isdigit():
        return match.group()
    return separator


def _drop_separator_spaces(collapsed: str) -> str:
    if _SPACED_SEPARATOR_BETWEEN_DIGITS.search(collapsed):
        return _SPACE_AROUND_SEPARATOR.sub(_join_separator, collapsed)
    # No number can merge, so plain replaces do (several times faster than the regex).
    for separator in _SEPARATORS:
        collapsed = collapsed.replace(" " + separator, separator).replace(separator + " ", separator)
    return collapsed


def _expand(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        stem = match.group(1)
        return f"{_EXPANDED.get(stem, stem)} not"
    if match.group(2) is not None:
        return " " + _EXPANDED[match.group(2)]
    return "can not"


def _ascii_digits(text: str) -> str:
    """Every Unicode decimal digit (Arabic-Indic, Devanagari, ...) as its ASCII digit."""
    return "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() and not ch.isascii() else ch for ch in text)


@lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """Canonical form for comparison: NFKC, casefolded, ASCII digits, one kind of quote
    and dash, contractions spelt out, no cosmetic whitespace. Never joins two digit
    runs ("5 0" != "50")."""
    if not text.isascii():
        # Unify before NFKC too, so "″" stays one double quote instead of two primes.
        text = unicodedata.normalize("NFKC", text.translate(_UNIFY_PUNCTUATION)).translate(_UNIFY_PUNCTUATION)
        text = _ascii_digits(text)
    text = " ".join(text.casefold().split())
    if "'" in text or "cannot" in text:
        text = _CONTRACTION.sub(_expand, text)
    if " %" in text:
        text = _SPACE_BEFORE_PERCENT.sub("%", text)
    return _drop_separator_spaces(text)


# --- JSON escapes -------------------------------------------------------------------

# A JSON string escape (RFC 8259 §7): a UTF-16 surrogate pair first, so it decodes as one character
_JSON_ESCAPE = re.compile(
    r'\\(?:u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|u([0-9a-f]{4})|(["\\/bfnrt]))', re.IGNORECASE
)
_JSON_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _json_character(match: re.Match[str]) -> str:
    high, low, code, short = match.groups()
    if short is not None:
        return _JSON_SHORT_ESCAPES[short]
    if high is not None:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)
    character = chr(int(code, 16))
    return "\ufffd" if 0xD800 <= ord(character) <= 0xDFFF else character  # a lone surrogate is no character


def json_unescaped(text: str) -> str:
    """The text with its JSON string escapes decoded, as the line a JSON log line (a container
    runtime's `{"log": "..."}`) holds reads: `\\n` a line break, `\\"` a quote, `\\u00e9` é. Text
    without an escape comes back unchanged; a backslash that starts no escape stays."""
    return _JSON_ESCAPE.sub(_json_character, text) if "\\" in text else text


# --- negations ----------------------------------------------------------------------

NEGATION_WORDS = frozenset(
    [
        "not",
        "no",
        "non",
        "never",
        "none",
        "nothing",
        "nobody",
        "neither",
        "nor",
        "without",
        "cannot",
        "unable",
    ]
)
ENGLISH_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")
CJK_NEGATIONS = "不没无未非否勿别"
_CJK_NEGATION = re.compile(f"[{CJK_NEGATIONS}]")


def is_negation(word: str) -> bool:
    word = word.strip("'")
    return word in NEGATION_WORDS or word.endswith("n't") or (len(word) == 1 and word in CJK_NEGATIONS)


# What is_negation accepts, as one pattern: finds the negations of a text without a call per word.
NEGATION = re.compile(
    r"(?<![a-z])(?<![a-z]')(?:"
    + "|".join(sorted(NEGATION_WORDS, key=len, reverse=True))
    + r"|(?:[a-z]+')*[a-z]*n't)(?![a-z]|'[a-z])"
    f"|[{CJK_NEGATIONS}]"
)


# NEGATION's words each as its own alternative that starts with the word (boundaries checked after it, as
# lookbehinds over the word), and its CJK characters one by one: every alternative starts with a literal, so
# the engine skips to the positions where one can start (NEGATION starts with a lookbehind and tries every one).
_NEGATION_WORD = re.compile(
    "|".join(
        rf"{word}(?<![a-z]{word})(?<![a-z]'{word})(?![a-z]|'[a-z])"
        for word in sorted(NEGATION_WORDS, key=len, reverse=True)
    )
    + "".join(f"|{character}" for character in CJK_NEGATIONS)
)


def has_negation(normalized: str) -> bool:
    """NEGATION.search(normalized) is not None: without "n't" in the text only a negation word or a CJK
    negation can match, and _NEGATION_WORD finds exactly those."""
    if "n't" in normalized:
        return NEGATION.search(normalized) is not None
    return _NEGATION_WORD.search(normalized) is not None


def negations(normalized: str) -> list[str]:
    """The negation words and characters of a normalised text, in order of appearance."""
    return NEGATION.findall(normalized)


# --- fact tokens ----------------------------------------------------------------------
# Numbers and identifiers as the Gatekeeper and the offline Verifier compare them.

# Month names as dates write them (their first three letters), January first.
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

TOKEN = re.compile(r"[a-z0-9][a-z0-9._:/%+-]*")  # run on normalized (casefolded) text
RAW_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/%+-]*")
TOKEN_TRAILING_PUNCTUATION = "._:/+-"
_STRUCTURED_TOKEN = re.compile(r"[0-9]|[a-z0-9][-_.:/][a-z0-9]")
_ACRONYM_PLURAL = re.compile(r"[A-Z]{2,}s")


def fact_tokens(normalized: str) -> list[str]:
    return [token.rstrip(TOKEN_TRAILING_PUNCTUATION) for token in TOKEN.findall(normalized)]


def mixed_case_words(raw: str) -> frozenset[str]:
    """Casefolded tokens like HikariCP or HighCPUUsage: identifiers even without digits.

    A capital only at the start ("Connection") is ordinary sentence case, and "GCs" or "URLs"
    is the plural of an acronym, not an identifier.
    """
    if not raw.isascii():  # NFKC leaves ASCII text as it is
        raw = unicodedata.normalize("NFKC", raw)
    words = set()
    for token in RAW_TOKEN.findall(raw):
        # a RAW_TOKEN is ASCII and starts with a letter or digit; stripping its trailing punctuation changes
        # neither whether a capital follows its first character nor whether it holds a small letter
        if token.islower() or token.isupper() or token[1:] == token[1:].lower():
            continue
        token = token.rstrip(TOKEN_TRAILING_PUNCTUATION)
        if not _ACRONYM_PLURAL.fullmatch(token):
            words.add(token.casefold())
    return frozenset(words)


def critical_tokens(normalized: str, mixed_case: frozenset[str]) -> list[str]:
    """Numbers and identifiers: tokens with a digit or an inner separator, or in mixed case."""
    critical = []
    for token in TOKEN.findall(normalized):
        if token.isalpha():  # letters alone: no digit, no separator, no trailing punctuation to strip
            if token in mixed_case:
                critical.append(token)
            continue
        token = token.rstrip(TOKEN_TRAILING_PUNCTUATION)  # as fact_tokens gives it
        if token in mixed_case or _STRUCTURED_TOKEN.search(token):
            critical.append(token)
    return critical


# Function words: no fact of their own.
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "either",
        "else",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yes",
        "via",
        "per",
        "yet",
    ]
)


# CJK words that contain a negation character without negating (非常 = very, 无论 = whatever, 级别 = level).
_CJK_NON_NEGATING = re.compile("非常|无论|不仅|不断|别的|类别|级别|区别|差别|特别|分别")


def negated(normalized: str) -> bool:
    """Whether a normalised text states a negation (CJK words that only contain one aside)."""
    if not normalized.isascii():  # the CJK words are not ASCII: an ASCII text holds none
        normalized = _CJK_NON_NEGATING.sub(" ", normalized)
    return has_negation(normalized)


# A colon after a non-digit, non-space character and before a non-space one, or before a character that is
# neither: the colon first, so the engine looks for colons only.
_COLON_BEFORE_WORD = re.compile(r":(?:(?<=[^\d\s]:)(?=\S)|(?=[^\d\s]))")
_COLON_ENDING_WORD = re.compile(r":(?=[^\d\s])")


def comparable(text: str, *, keep_ports: bool = False) -> str:
    """normalize(), with a space after a colon next to a word ("alert: current" and "exhausted: 50"
    are two facts each, normalize joins them), so a claim and its excerpt split into the same tokens.

    keep_ports=True leaves a colon before digits alone, so `host:8443` and `client.go:97` stay one
    identifier (the offline Verifier checks them whole; the Gatekeeper checks host and port apart)."""
    return (_COLON_ENDING_WORD if keep_ports else _COLON_BEFORE_WORD).sub(": ", normalize(text))


class PhraseFinder:
    """phrase_pattern's matches, found by one Aho-Corasick pass instead of trying every phrase at every
    position: leftmost first, then Latin before CJK and longest first, Latin phrases as whole words,
    case-insensitive. Yields (start, end, lowered phrase)."""

    def __init__(self, phrases: tuple[str, ...]) -> None:
        import ahocorasick

        self.phrases = phrases
        self._automaton = ahocorasick.Automaton()
        for phrase in {phrase.lower() for phrase in phrases if phrase}:
            # the phrase with its rank among phrases that start where it does: Latin first, then longest first
            self._automaton.add_word(phrase, (not phrase.isascii(), -len(phrase), phrase))
        self._empty = not len(self._automaton)
        if not self._empty:
            self._automaton.make_automaton()

    def finditer(self, text: str) -> Iterator[tuple[int, int, str]]:
        if self._empty:
            return
        lowered = text.lower()
        if len(lowered) != len(text):  # a letter whose lower case is longer ("İ"): offsets would shift
            for match in phrase_pattern(self.phrases).finditer(text):
                yield match.start(), match.end(), match.group(0).lower()
            return
        occurrences = list(self._automaton.iter(lowered))
        if not occurrences:
            return
        # (start, rank, phrase) of every occurrence, leftmost first and then by rank
        found = sorted(
            (last + 1 + negative_length, cjk, negative_length, phrase)
            for last, (cjk, negative_length, phrase) in occurrences
        )
        position = 0
        for start, cjk, negative_length, phrase in found:
            end = start - negative_length
            if start < position or (not cjk and (_word_or_hyphen(lowered, start - 1) or _word_or_hyphen(lowered, end))):
                continue  # inside the last phrase yielded, or a Latin phrase that is part of a longer word
            yield start, end, phrase
            position = end

    def search(self, text: str) -> tuple[int, int, str] | None:
        return next(self.finditer(text), None)


def _word_or_hyphen(text: str, index: int) -> bool:
    """Whether text[index] is what `[\\w-]` matches (a word character or a hyphen); False off either end."""
    if not 0 <= index < len(text):
        return False
    character = text[index]
    return character.isalnum() or character in "_-"


@lru_cache(maxsize=16)
def phrase_finder(phrases: tuple[str, ...]) -> PhraseFinder:
    return PhraseFinder(phrases)


@lru_cache(maxsize=16)
def phrase_pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """Any of the phrases, case-insensitive and longest first: Latin ones as whole words, CJK ones
    anywhere (CJK writes no spaces between words)."""
    ordered = sorted(phrases, key=len, reverse=True)
    latin = "|".join(re.escape(p) for p in ordered if p.isascii()) or "(?!)"
    cjk = "|".join(re.escape(p) for p in ordered if not p.isascii())
    return re.compile(rf"(?<![\w-])(?:{latin})(?![\w-])" + (f"|{cjk}" if cjk else ""), re.IGNORECASE)
