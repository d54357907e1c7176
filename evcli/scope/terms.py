"""Other content words worth searching: what is left of the question once every other
extractor took its text, without stop words, time, level, count and question words.

Words that name what logs say are never stop words, even when a question uses them in passing
(root, admin, user, invalid, denied, refused, reset, killed, oom, disk, full); "root cause" is no term,
nor the word "IP" (an address is a token; "did that IP get in?" names the previous question's address),
nor "container" / "pod" (what a state qualifies: "an OOMKilled container" asks for OOMKilled).
English words written one space apart in a Chinese question ("有几次 certificate has expired？") are log
text the user copied: the run is kept whole and verbatim as the strongest term, its words after it.
Chinese words are mapped to the English words logs use through the glossary (evcli.scope.glossary);
Chinese text the glossary does not know is not searched. Words are kept as written. Strongest first: technical words
(with a digit, `-`, `_` or `.`) before plain words, each group in question order; an error *kind*
("connection errors") keeps its "errors" last. The offline engine ranks them again by the environment's own log vocabulary.
The word tables are data: `word.*` groups of the question grammar (evcli/scope/grammar/<language>.toml),
of every language, read once per process on first use (what stays here is English morphology: plurals, stems).
"""

from __future__ import annotations

import re

from evcli.scope.glossary import translate
from evcli.scope.grammar import hits
from evcli.scope.grammar import words as grammar_words
from evcli.scope.match import CJK, Spans, distinct

# the word tables of the question grammar (evcli/scope/grammar/<language>.toml) read here
_STOP = "word.stop"  # no search term
_ASKING = "word.asking"  # asks rather than names what to search ("root cause"; alone, "root" matters in logs)
_ERROR_KIND = "level.error.word"  # a bare "errors": after a noun it names a kind ("connection errors"), kept
_COUNTING = "word.counting_noun"  # what a question counts things in ("attempts"): looked up as written
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_.'][A-Za-z0-9]+)*")
_RUN = re.compile(r"(?<![A-Za-z0-9_.'-])[A-Za-z][A-Za-z0-9_.'-]*(?: [A-Za-z][A-Za-z0-9_.'-]*)+")  # one space apart


def find_terms(question: str, spans: Spans) -> list[str]:
    rest = spans.rest(question)
    rest = _blanked(rest, [(hit.start, hit.end) for hit in hits(rest, _ASKING)])
    runs = _english_runs(rest) if CJK.search(question) else []
    idioms = translate(rest)
    rest = _blanked(rest, [(start, end) for start, end, _ in idioms])
    stop, kind = grammar_words(_STOP), grammar_words(_ERROR_KIND)
    found: list[tuple[int, int, str]] = []
    previous = ""
    for match in _WORD.finditer(rest):
        word = re.sub(r"'s$", "", match.group(), flags=re.IGNORECASE).strip("'.")
        lowered = word.lower()
        if lowered in kind and previous and previous not in stop:
            found.append((0, match.start(), lowered))
        elif lowered not in stop and len(lowered) > 1:
            found.append((_strength(word), match.start(), word))
        previous = lowered
    for start, _, english in idioms:
        found += [(1, start, word) for word in english]
    found += [(3, start, run) for start, run in runs]
    ordered = sorted(found, key=lambda item: (-item[0], item[1]))
    return distinct(word for _, _, word in ordered)


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with the spans written over by spaces (positions stay the question's)."""
    for start, end in spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def _english_runs(rest: str) -> list[tuple[int, str]]:
    """(position, words) of each run of English words written in a Chinese question ("有几次 certificate
    has expired？"): log text the user copied, kept whole and verbatim (without stop words at its ends)."""
    runs = []
    stop = grammar_words(_STOP)
    for match in _RUN.finditer(rest):
        words = match.group().strip(".'").split(" ")
        start = match.start()
        while words and words[0].lower() in stop:
            start += len(words.pop(0)) + 1
        while words and words[-1].lower() in stop:
            words.pop()
        if len(words) > 1:
            runs.append((start, " ".join(words)))
    return runs


def _strength(word: str) -> int:
    return 2 if re.search(r"[\d_.-]", word) else 1


_PLURAL = re.compile(r"[A-Za-z]{3,}s")


_INFLECTION = re.compile(r"(?i)([a-z]{4,}?)(?:ally|ly|ing|ed)")


def stem(word: str) -> str | None:
    """The word a log writes inside its other forms, for a word asked in one of them ("failing" → "fail",
    which "failed" and "failure" hold too; "abnormally" → "abnormal"; "killed" → "kill", in "Killing";
    "failures" → "failure"), None when the word has no such form or it would be shorter than 4 letters."""
    one = singular(word)
    if one:
        return one
    found = _INFLECTION.fullmatch(word)
    if found is None:
        return None
    base = found.group(1)
    if word.lower().endswith("ally") and not base.lower().endswith("ic"):
        base = word[: -len("ly")]  # "abnormally" → "abnormal", "automatically" → "automatic"
    if len(base) >= 5 and base[-1] == base[-2] and base[-1].lower() not in "lsz":
        base = base[:-1]  # "stopped" → "stop", "dropped" → "drop"; "killed" stays "kill"
    return base if len(base) >= 4 else None


def singular(word: str) -> str | None:
    """The singular of an English plural a log would write singular ("passwords" → "password",
    "queries" → "query", "addresses" → "address"), None for a word that is no such plural or that
    only counts ("attempts")."""
    lower = word.lower()
    if not _PLURAL.fullmatch(word) or lower.endswith(("ss", "us", "is")) or lower in grammar_words(_COUNTING):
        return None
    if lower.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if lower.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1]
