"""Log levels a question asks for explicitly (never implied).

The level words are the `level.*` groups of the question grammar (evcli/scope/grammar/*.toml), read in the
order of `_LEVELS`, each consuming its words: "warnings" / "warn" / "WARN lines" → WARN; "fatal" / "critical" /
"crit" (also "fatal errors") → FATAL; "debug" → DEBUG; upper-case ERROR, "error logs" / "error lines" → ERROR;
警告 → WARN; 错误 / 报错 → ERROR; 告警 mostly means an *alert* in Chinese, so it is a level only when it
qualifies logs (告警日志, 告警级别).

An error *kind* is no level request: a bare "errors" (`level.error.word`) after a status code or a noun
("502 errors", "connection errors", "timeout errors") names what to search, and stays a term; after a
`determiner` ("any errors"), a name already read ("billing errors") or at the start of a clause ("errors in
nginx") it is a level request; before a `noun.measure` ("error rate", 错误码) it is neither.
"""

from __future__ import annotations

import re

from evcli.contracts import ScopeLevel
from evcli.scope.grammar import hits, words
from evcli.scope.match import Spans

_BARE_ERROR = "level.error.word"
_LEVELS: tuple[tuple[str, ScopeLevel], ...] = (
    ("level.warn", "WARN"),
    ("level.fatal", "FATAL"),
    ("level.debug", "DEBUG"),
    ("level.error.upper", "ERROR"),
    ("level.error", "ERROR"),
    (_BARE_ERROR, "ERROR"),
)
_STATUS = re.compile(r"[1-5](?:\d\d|xx)s?", re.IGNORECASE)  # 502, 5xx, 502s: the error's kind
_CLAUSE_END = ("?", ".", "!", ",", ":", ";")
_QUOTES = "\"'”’」』`"


def _asks_level(question: str, start: int, spans: Spans) -> bool:
    """A bare "errors" asks for the ERROR level at the start of a clause, after a determiner or after a
    name already read (a service, host, range: "billing errors"); after a status code or a free noun
    ("502 errors", "connection errors", '"MISCONF" error') it names an error kind."""
    before = question[:start].rstrip()
    word = re.search(r"\S+$", before)
    if word is None or before.endswith(_CLAUSE_END):
        return True
    if word.group().lower() in words("determiner"):
        return True
    if _STATUS.fullmatch(word.group()) or word.group()[-1] in _QUOTES:
        return False
    return not spans.free(word.start(), word.end())


def find_levels(question: str, spans: Spans) -> list[ScopeLevel]:
    """The levels asked for, in question order, without repeats."""
    found: list[tuple[int, ScopeLevel]] = []
    for group, level in _LEVELS:
        for hit in hits(question, group):
            if group == _BARE_ERROR and not _asks_level(question, hit.start, spans):
                continue
            if spans.claim(hit.start, hit.end):
                found.append((hit.start, level))
    levels: list[ScopeLevel] = []
    for _, level in sorted(found):
        if level not in levels:
            levels.append(level)
    return levels
