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
"""

from __future__ import annotations

import re

from evcli.scope.glossary import translate
from evcli.scope.match import CJK, Spans, distinct

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_.'][A-Za-z0-9]+)*")
STOP_WORDS = frozenset(
    """a about above across after again against all also am an and any anyone anything are aren't around as
    ask at be because been before being below between both but by can can't cannot check checked confirm could
    did didn't do does doesn't doing don't down during each either else ever every few for from further get
    got had has hasn't have haven't having he her here hers him his how however i i'm if in into is isn't it
    it's its itself just know last let let's like look looking me might more most much must my need no nor not
    now of off on once only or other our out over own past please pls plz previous recent same see seen shall
    she should show so some something still such tell than that that's the their them then there there's these
    they this those through to too under until up us very via was wasn't we were weren't what what's when where
    whether which while who whom why will with within without would yes yet you your yours

    log logs logged logging line lines entry entries message messages record records output show list find
    search grep look happen happened happening going going's wrong issue issues problem problems thing things
    anything everything something kind sort please thanks thx hey hi ok okay really actually maybe happen
    service services svc server host hosts node machine box instance app application system env environment
    alert alerts alerting fire fires firing fired active triggered resolved recovered cleared silenced muted
    pending state status currently current still right now today yesterday tonight morning afternoon evening
    night overnight time times minute minutes min mins hour hours hr hrs second seconds sec secs day days week
    weeks ago since until till recently lately earlier later first last number count many often much
    error errors err warn warning warnings info debug fatal critical crit level levels severity
    come came comes coming seem seems seemed keep keeps kept make made go goes went give gave take took say
    said try tried use used want wants wanted anymore getting gets happens occur occurs occurred occurring
    someone anybody everyone guys pls thanks diagnose diagnosis investigate troubleshoot cause caused causing
    reason reasons explain why asap window same ip ips container containers pod pods""".split()
)
# words that ask rather than name what to search; alone they matter in logs ("Failed password for root")
_ASKING = re.compile(r"\broot[\s-]+caus\w*", re.IGNORECASE)
_RUN = re.compile(r"(?<![A-Za-z0-9_.'-])[A-Za-z][A-Za-z0-9_.'-]*(?: [A-Za-z][A-Za-z0-9_.'-]*)+")  # one space apart
_ERROR_KIND = frozenset({"error", "errors"})  # kept after a noun: "connection errors" names a kind


def find_terms(question: str, spans: Spans) -> list[str]:
    rest = _ASKING.sub(lambda match: " " * len(match.group()), spans.rest(question))
    runs = _english_runs(rest) if CJK.search(question) else []
    for start, end, _ in (idioms := translate(rest)):
        rest = rest[:start] + " " * (end - start) + rest[end:]
    found: list[tuple[int, int, str]] = []
    previous = ""
    for match in _WORD.finditer(rest):
        word = re.sub(r"'s$", "", match.group(), flags=re.IGNORECASE).strip("'.")
        lowered = word.lower()
        if lowered in _ERROR_KIND and previous and previous not in STOP_WORDS:
            found.append((0, match.start(), lowered))
        elif lowered not in STOP_WORDS and len(lowered) > 1:
            found.append((_strength(word), match.start(), word))
        previous = lowered
    for start, _, words in idioms:
        found += [(1, start, word) for word in words]
    found += [(3, start, run) for start, run in runs]
    ordered = sorted(found, key=lambda item: (-item[0], item[1]))
    return distinct(word for _, _, word in ordered)


def _english_runs(rest: str) -> list[tuple[int, str]]:
    """(position, words) of each run of English words written in a Chinese question ("有几次 certificate
    has expired？"): log text the user copied, kept whole and verbatim (without stop words at its ends)."""
    runs = []
    for match in _RUN.finditer(rest):
        words = match.group().strip(".'").split(" ")
        start = match.start()
        while words and words[0].lower() in STOP_WORDS:
            start += len(words.pop(0)) + 1
        while words and words[-1].lower() in STOP_WORDS:
            words.pop()
        if len(words) > 1:
            runs.append((start, " ".join(words)))
    return runs


def _strength(word: str) -> int:
    return 2 if re.search(r"[\d_.-]", word) else 1


_PLURAL = re.compile(r"[A-Za-z]{3,}s")
# what a question counts things in, not what they are: "failed password attempts" asks no "attempt"
_COUNTING_NOUNS = frozenset(["attempts", "tries", "occurrences", "instances", "cases", "hits", "counts"])


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
    if not _PLURAL.fullmatch(word) or word.lower().endswith(("ss", "us", "is")) or word.lower() in _COUNTING_NOUNS:
        return None
    lower = word.lower()
    if lower.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if lower.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1]
