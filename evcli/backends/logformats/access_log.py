"""NCSA Common and Combined access logs (Apache, nginx, most proxies):

`1.2.3.4 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326 "http://ref/" "Mozilla/5.0"`

An access line has no level: a 5xx status gives ERROR and a 4xx WARN as a derived level
(`level_derived=True`); other statuses leave the level None. The message is the line after the
timestamp (request, status, size, referer, agent).
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import (
    MONTHS,
    LogFormat,
    ParseContext,
    ParsedLine,
    remember,
)

_QUOTED = r'[^"\\]*(?:\\.[^"\\]*)*'  # a quoted string's inside, `\"` escapes (unrolled: no per-char alternation)
_LINE = re.compile(
    r"(?P<client>\S+) (?P<ident>\S+) (?P<user>\S+) "
    r"\[(?P<stamp>\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\] "
    rf'(?P<rest>"(?P<request>{_QUOTED})" (?P<status>\d{{3}}) (?P<size>\d+|-)'
    rf'(?: "(?P<referer>{_QUOTED})" "(?P<agent>{_QUOTED})")?.*)'
)
_CACHE: dict[str, datetime | None] = {}


class AccessLog(LogFormat):
    name = "access_log"
    description = 'Common/Combined access log: client ident user [DD/Mon/YYYY:HH:MM:SS zone] "request" status size'
    example = '10.0.0.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 503 512 "-" "curl/8.0"'

    def sniff(self, line: str) -> bool:
        return '] "' in line  # parse's `[stamp] "request"` (one regex match, in parse)

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        stamp, client, request, status, size, user, referer, agent, rest = match.group(
            "stamp", "client", "request", "status", "size", "user", "referer", "agent", "rest"
        )  # one call for every group: this is the per-line path
        moment = _CACHE[stamp] if stamp in _CACHE else remember(_CACHE, stamp, _access_time(stamp))
        if moment is None:
            return None
        fields = {"client": client, "request": request, "status": status, "size": size}
        for name, value in (("user", user), ("referer", referer), ("agent", agent)):
            if value is not None and value != "-":
                fields[name] = value
        level = "ERROR" if status[0] == "5" else "WARN" if status[0] == "4" else None
        return ParsedLine(moment, level, rest, fields, level is not None)


def _access_time(stamp: str) -> datetime | None:
    month = MONTHS.get(stamp[3:6])
    if month is None:
        return None
    try:
        return datetime.fromisoformat(f"{stamp[7:11]}-{month:02d}-{stamp[:2]}T{stamp[12:20]}{stamp[21:]}")
    except ValueError:
        return None


FORMAT = AccessLog()
