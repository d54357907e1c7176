"""Quoted phrases and distinctive tokens, verbatim as the question wrote them.

Phrases: text inside "…", '…', “…”, ‘…’, 「…」, 『…』 or `…` (2–200 characters). A single quote
next to a letter on its outer side is an apostrophe (isn't, deploy's), never a quote.

Tokens, in question order: URLs; IPv4/IPv6 addresses (validated); exception and class names
(NullPointerException, KeeperException$SessionExpiredException, java.net.SocketTimeoutException);
error codes (ECONNRESET, ORA-00060, E11000, "errno 28"); ids (ORD-123, UUIDs, hex trace ids,
host:port); slash compounds (I/O, TCP/IP); paths (/api/login, /var/lib/mysql); HTTP status codes (401, 502, 5xx; "401s" → 401;
1xx–3xx only after a status cue such as "status"/"code"/"returned"; never a year, a time, a port
or a number followed by a unit); the user after "log in as" / "ssh as" / "user" and sshd's
"password for" / "publickey for"; CamelCase component names (HikariCP, RiskScoreCalculator,
OOMKilled; not a plural acronym: IPs, VMs); UPPER-CASE words and phrases (except common acronyms like API, HTTP, CPU). Every
phrase and token consumes its span. The question's words are groups of the question grammar
(evcli/scope/grammar/<language>.toml), read once per process on first use: the words that name no user or
token (`word.*`), the cues before a user and before a 1xx–3xx status code and the units after a number
(`token.*`; of overlapping user cues the longest is read: "password for invalid user oracle"). What stays
here is language-neutral: the shapes of tokens and names, and the words logs and code write whatever the
question's language (errno, Exception, Error), and English plurals of codes and acronyms (401s, IPs).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from functools import cache

from evcli.scope.beside import beside, names_beside
from evcli.scope.entities import CAMEL, cue_after
from evcli.scope.grammar import words
from evcli.scope.match import LEFT, RIGHT, Spans, distinct

_PHRASES = re.compile(
    r"\"([^\"\n]{2,200}?)\"|“([^”\n]{2,200}?)”|‘([^’\n]{2,200}?)’|「([^」\n]{2,200}?)」|『([^』\n]{2,200}?)』"
    r"|`([^`\n]{2,200}?)`|(?<![A-Za-z0-9])'([^'\n]{2,200}?)'(?![A-Za-z0-9])"
)
_SHAPES = tuple(
    re.compile(pattern, flags)
    for pattern, flags in (
        (r"\bhttps?://[^\s\"'<>)]+", 0),
        (r"(?<![\w.:])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])", 0),
        (r"(?<![\w:])(?=[0-9a-fA-F:]*::|(?:[0-9a-fA-F]{1,4}:){7})[0-9a-fA-F:]{3,39}(?![\w:])", 0),
        (r"(?<![\w.$])(?:[a-z_][a-z0-9_]*\.)+[A-Z][A-Za-z0-9_]*(?:\$[A-Za-z0-9_]+)*(?![\w$])", 0),
        (rf"{LEFT}[A-Z][A-Za-z0-9]*(?:Exception|Error|Throwable|Fault)(?:\$[A-Za-z0-9_]+)*{RIGHT}", 0),
        (r"\berrno\s*[:=]?\s*\d{1,4}\b", re.IGNORECASE),
        (rf"{LEFT}E[A-Z]{{3,}}{RIGHT}|{LEFT}E\d{{4,5}}{RIGHT}", 0),
        (r"(?<![\w-])[A-Z]{2,6}-\d{2,}(?![\w-])", 0),
        (r"(?<![\w-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![\w-])", re.IGNORECASE),
        (r"(?<![\w-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}(?![\w-])", 0),
        (r"(?<![\w-])[A-Za-z][\w.-]*:\d{2,5}(?![\w-])", 0),
        (r"(?<![\w/])(?:[A-Z]{1,4}(?:/[A-Z]{1,4})+|[iI]/[oO])(?![\w/])", 0),  # I/O, TCP/IP: no path
        (r"(?<![\w.:/])/(?=[\w.-]*[A-Za-z])[\w.@%+~-]+(?:/[\w.@%+~{}:-]*)*", 0),
    )
)
_STATUS = re.compile(r"(?<![\w.:/-])(?P<tok>[45]\d\d|[1-5]xx)s?(?![\w.:/-])", re.IGNORECASE)  # 502, 5xx, 401s
_STATUS_CUE = "token.status_cue"  # before a 1xx–3xx status code: "status 200"
_UNIT = "token.unit"  # after a number that is no status code: "300 ms"
_USER_CUE = "token.user_cue"  # before a user: "log in as deploy", "Failed password for root"
_ACRONYMS = "word.acronym"  # UPPER-CASE words that name nothing (API, ERROR, ASAP), read as written in upper case
_NOT_A_USER = "word.not_a_user"  # words that follow "user" without naming one ("invalid user attempts")
_PLURAL_ACRONYM = re.compile(r"[A-Z]{2,}s")  # IPs, VMs, APIs: a plain word, not a component name
_UPPER = re.compile(r"(?<![\w-])[A-Z][A-Z0-9_]{2,}(?:\s+[A-Z][A-Z0-9_]{2,})*(?![\w-])")


def find_phrases(question: str, spans: Spans) -> list[str]:
    phrases = []
    for match in _PHRASES.finditer(question):
        text = next(group for group in match.groups() if group is not None).strip()
        if text and spans.claim(*match.span()):
            phrases.append(text)
    return distinct(phrases)


def find_tokens(question: str, spans: Spans) -> list[tuple[int, str]]:
    """(position, token) of URLs, addresses, exception/class names, codes, ids, paths, status codes
    and users: read before names, so /api/login is no service "api" and ORA-00060 no host."""
    found: list[tuple[int, str]] = []
    for start, end in _candidates(question):
        token = question[start:end]
        if _valid(token) and spans.claim(start, end):
            found.append((start, token))
    return found


def _candidates(question: str) -> Iterator[tuple[int, int]]:
    """The spans of tokens by shape, then of status codes, then of users, each kind in question order."""
    for shape in _SHAPES:
        yield from (match.span() for match in shape.finditer(question))
    yield from _status_codes(question)
    yield from _users(question)


def _status_codes(question: str) -> Iterator[tuple[int, int]]:
    """4xx and 5xx anywhere, 1xx–3xx after a status cue; never a number a unit follows ("took 300 ms")."""
    found = [(match.span("tok"), match.end()) for match in _STATUS.finditer(question)]
    found += [(name, read[1]) for read, name in names_beside(question, _STATUS_CUE)]
    yield from (span for span, end in found if not cue_after(question, end, _UNIT))


def _users(question: str) -> Iterator[tuple[int, int]]:
    """The user after a user cue; of overlapping cues the longest ("password for invalid user oracle")."""
    cues = Spans()
    for named in beside(question, _USER_CUE):
        if cues.claim(*named.cue) and named.name is not None:
            yield named.name


def find_name_tokens(question: str, spans: Spans) -> list[tuple[int, str]]:
    """(position, token) of CamelCase and UPPER-CASE words left once services, alerts and levels are read."""
    found: list[tuple[int, str]] = []
    for match in CAMEL.finditer(question):  # a class or component the user names: RiskScoreCalculator
        if not _PLURAL_ACRONYM.fullmatch(match.group(1)) and spans.claim(*match.span(1)):
            found.append((match.start(1), match.group(1)))
    for match in _UPPER.finditer(question):
        named = [word for word in match.group().split() if word not in _acronyms()]
        if named and spans.claim(*match.span()):
            found.append((match.start(), " ".join(named)))
    return found


def in_order(*found: list[tuple[int, str]]) -> list[str]:
    return distinct(token for _, token in sorted(item for items in found for item in items))


@cache
def _acronyms() -> frozenset[str]:
    """The acronyms as a question writes them, in upper case (the grammar folds its words)."""
    return frozenset(word.upper() for word in words(_ACRONYMS))


def _valid(token: str) -> bool:
    """Users are no stop words; whatever reads like an IP address is a valid one."""
    if token.lower() in words(_NOT_A_USER) or token in _acronyms():
        return False
    if re.fullmatch(r"[\d.]+|[0-9a-fA-F:]*:[0-9a-fA-F:]*", token) and (
        token.count(".") == 3 or "::" in token or token.count(":") == 7
    ):
        try:
            ipaddress.ip_address(token)
        except ValueError:
            return False
    return True
