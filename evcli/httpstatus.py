"""HTTP statuses written in log text, found by one matcher over the words of httpstatus.toml.

A number in the status range is a status only where its context says so: after a status key
(`status=503`, `"status": 502`, `http.status_code=500`), after an access log's request or a status
line (`HTTP/1.1" 503`, `HTTP/1.1 503`), after words naming a status (`HTTP 429`, `status code 500`),
after a verb telling a server's answer that no other word follows (`returned 502`, `returned 502
for /cart`; not `returned 500 rows`), or before a status noun or reason phrase (`503 Service
Unavailable`, `502 errors`). Any other number is none: a source location (`Foo.java:503`,
`OrderServiceImpl#548`), a line, a port, an id, a count, a millisecond field, a version.

Invariants: a status is a whole number 100-599 (no letter, digit, `_` or `.` joined to it on
either side, a sentence's full stop aside); but for a key's value it stands as a word of its own
(not `Impl#548`, `/orders/503`); a reason phrase names only its own status ("500 created" is a
count); words match case-insensitively as whole words; the table is read once per process.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TABLE = Path(__file__).with_name("httpstatus.toml")

_NUMBER = re.compile(r"(?<![\w.])[1-5]\d\d(?!\w|\.\d)")
_KEYED = re.compile(r"""([\w.@-]+)["']?\s*[=:]\s*["']?$""")  # `key=`, `key: `, `"key": `, `key="` before it
_REQUEST = re.compile(r'HTTP/\d(?:\.\d)?"?\s+$')  # `"GET / HTTP/1.1" 503`, `HTTP/2 503`
_WORD = re.compile(r"[A-Za-z]+")
_CONTEXT = 80  # characters on each side of a number that can say it is a status (a key, a few words)
_OPENING = "([{\"'"  # what may open a status written as a word of its own: `(503 Service Unavailable)`


@dataclass(frozen=True)
class _Words:
    keys: frozenset[str]
    before: frozenset[str]
    verbs: frozenset[str]
    articles: frozenset[str]
    links: frozenset[str]
    nouns: frozenset[str]
    reasons: dict[str, tuple[str, ...]]  # status -> its reason phrases
    longest: int  # words of the longest phrase before a status


@cache
def _words() -> _Words:
    table = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    sets = {
        name: frozenset(word.lower() for word in table[name])
        for name in ("keys", "before", "verbs", "articles", "links", "nouns")
    }
    reasons = {status: tuple(phrase.lower() for phrase in phrases) for status, phrases in table["reasons"].items()}
    longest = max(len(phrase.split()) for phrase in sets["before"] | sets["verbs"])
    return _Words(reasons=reasons, longest=longest, **sets)


def statuses(text: str) -> list[str]:
    """The HTTP statuses `text` writes as statuses, in order (`["503"]`)."""
    found = []
    for number in _NUMBER.finditer(text):
        start, end = number.span()
        if _is_status(text[max(0, start - _CONTEXT) : start], number.group(), text[end : end + _CONTEXT]):
            found.append(number.group())
    return found


def _is_status(before: str, number: str, after: str) -> bool:
    words = _words()
    keyed = _KEYED.search(before)
    if keyed is not None and keyed.group(1).rsplit(".", 1)[-1].lower() in words.keys:
        return True
    if before and not before[-1].isspace() and before[-1] not in _OPENING:
        return False  # joined to what is before it (`Foo.java:503`, `Impl#548`, `/orders/503`): part of a token
    if _REQUEST.search(before) is not None or _named_after(number, after, words):
        return True
    tail = before.lower().split()[-words.longest - 1 :]  # an article may stand before the number too
    if _ends_with(tail, words.before):
        return True
    if tail and tail[-1] in words.articles:
        tail = tail[:-1]
    return _ends_with(tail, words.verbs) and _free_after(number, after, words)


def _ends_with(tail: list[str], phrases: frozenset[str]) -> bool:
    return any(" ".join(tail[-length:]) in phrases for length in range(1, len(tail) + 1))


def _named_after(number: str, after: str, words: _Words) -> bool:
    """A status noun or the status's own reason phrase right after it (`502 errors`, `503 Service Unavailable`)."""
    if not after[:1].isspace():
        return False
    rest = after.lstrip().lower()
    word = _WORD.match(rest)
    if word is not None and word.group() in words.nouns:
        return True
    return any(
        rest.startswith(phrase) and not rest[len(phrase) : len(phrase) + 1].isalnum()
        for phrase in words.reasons.get(number, ())
    )


def _free_after(number: str, after: str, words: _Words) -> bool:
    """No word follows it, or one a status may have after it (`returned 502 for /cart`, `returned 503 Service
    Unavailable`)."""
    rest = after.lstrip()
    if not rest[:1].isalpha():
        return True
    word = _WORD.match(rest)
    return word is not None and (word.group().lower() in words.links or _named_after(number, " " + rest, words))
