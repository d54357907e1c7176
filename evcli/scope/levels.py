"""Log levels a question asks for explicitly (never implied).

"warnings" / "warn" / "WARN lines" → WARN; "error logs" / "any errors" / "ERROR" → ERROR;
"fatal" / "critical" / "crit" (also "fatal errors") → FATAL; "debug" → DEBUG; 警告 → WARN; 错误 / 报错 → ERROR;
告警 mostly means an *alert* in Chinese, so it is a level only when it qualifies logs
(告警日志, 告警级别).

An error *kind* is no level request: a lower-case "errors" right after a status code or a noun
("502 errors", "connection errors", "timeout errors") names what to search, and stays a term;
"errors" after a determiner, a name already read ("billing errors") or at the start ("any errors",
"errors in nginx"), "error logs"/"error lines", and upper-case ERROR are level requests. The level words are consumed.
"""

from __future__ import annotations

import re

from evcli.contracts import ScopeLevel
from evcli.scope.match import Spans

_LOGS = r"(?:\s+(?:logs?|lines?|messages?|entries|level|events?))"
_PATTERNS: tuple[tuple[ScopeLevel, str, int], ...] = (  # (level, pattern, flags)
    ("WARN", r"\bwarn(?:ing)?s?\b|\bWARN(?:ING)?\b|警告|告警(?=日志|级别|级|等级)", re.IGNORECASE),
    ("FATAL", r"\b(?:fatal|critical|crit)(?:\s+(?:errors?|exceptions?))?\b|致命(?:错误)?|严重错误", re.IGNORECASE),
    ("DEBUG", r"\bdebug" + _LOGS + r"?\b", re.IGNORECASE),
    ("ERROR", r"\bERRORS?\b", 0),
    ("ERROR", r"\berror" + _LOGS + r"|\berrors?\s+level\b", re.IGNORECASE),
    ("ERROR", r"\b(?P<word>errors?)\b(?!\s+(?:code|rate|budget|count|message|page|kind))", re.IGNORECASE),
    ("ERROR", r"错误日志|报错|错误(?!码|率)|异常日志", 0),
)


_DETERMINERS = frozenset(
    "any some no all the of with for log logged logs logging show list see and or only most more least fewest top".split()
)


def _asks_level(question: str, start: int, spans: Spans) -> bool:
    """A bare "errors" asks for the ERROR level at the start of a clause, after a determiner or after a
    name already read (a service, host, range: "billing errors"); after a status code or a free noun
    ("502 errors", "connection errors", '"MISCONF" error') it names an error kind."""
    before = question[:start].rstrip()
    word = re.search(r"\S+$", before)
    if word is None or before.endswith(("?", ".", "!", ",", ":", ";")):
        return True
    if word.group().lower() in _DETERMINERS:
        return True
    if re.fullmatch(r"[1-5](?:\d\d|xx)s?", word.group(), re.IGNORECASE) or word.group()[-1] in "\"'”’」』`":
        return False
    return not spans.free(word.start(), word.end())


def find_levels(question: str, spans: Spans) -> list[ScopeLevel]:
    """The levels asked for, in question order, without repeats."""
    found: list[tuple[int, ScopeLevel]] = []
    for level, pattern, flags in _PATTERNS:
        for match in re.finditer(pattern, question, flags):
            start, end = match.span("word") if "word" in match.groupdict() else match.span()
            if "word" in match.groupdict() and not _asks_level(question, start, spans):
                continue
            if spans.claim(start, end):
                found.append((start, level))
    levels: list[ScopeLevel] = []
    for _, level in sorted(found):
        if level not in levels:
            levels.append(level)
    return levels
