"""Apache httpd error log, 2.2 and 2.4 (times carry no zone):

`[Sun Dec 04 04:47:44 2005] [error] [client 1.2.3.4] File does not exist: /var/www/favicon.ico`
`[Sun Dec 04 04:47:44.123456 2005] [core:error] [pid 123:tid 456] [client 1.2.3.4:5678] AH00126: msg`
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import (
    MONTHS,
    LogFormat,
    ParseContext,
    ParsedLine,
    level_of,
    remember,
)

_LINE = re.compile(
    r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<stamp>(?P<month>[A-Z][a-z]{2}) (?P<day>[ \d]\d) "
    r"(?P<time>\d\d:\d\d:\d\d))(?:\.(?P<fraction>\d{1,6}))? (?P<year>\d{4})\] "
    r"\[(?:(?P<module>[\w-]+):)?(?P<level>[a-z]+\d?)\]"
    r"(?: \[pid (?P<pid>\d+)(?::tid (?P<tid>\d+))?\])?"
    r"(?: \[client (?P<client>[^\]]+)\])? ?(?P<message>.*)"
)
_CACHE: dict[str, datetime | None] = {}


class ApacheError(LogFormat):
    name = "apache_error"
    description = "Apache error log: [Www Mon DD HH:MM:SS(.us) YYYY] [module:level] [pid] [client] message"
    example = "[Sun Dec 04 04:47:44 2005] [error] [client 10.0.0.7] File does not exist: /var/www/x"

    def sniff(self, line: str) -> bool:
        return line[:1] == "[" and _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        stamp, year, fraction, module, pid, tid, client, level, message = match.group(
            "stamp", "year", "fraction", "module", "pid", "tid", "client", "level", "message"
        )  # one call for every group: this is the per-line path
        key = stamp + year
        moment = _CACHE[key] if key in _CACHE else remember(_CACHE, key, _apache_time(match))
        if moment is None:
            return None
        if fraction:
            moment = moment.replace(microsecond=int(fraction.ljust(6, "0")))
        fields = {name: value for name, value in (("module", module), ("pid", pid), ("tid", tid)) if value}
        if client:
            address, _, port = client.rpartition(":")
            fields["client"] = address if address and port.isdigit() and "." in address else client
        return ParsedLine(moment, level_of(level), message, fields)


def _apache_time(match: re.Match[str]) -> datetime | None:
    month = MONTHS.get(match["month"])
    try:
        return datetime.fromisoformat(f"{match['year']}-{month or 0:02d}-{int(match['day']):02d}T{match['time']}")
    except ValueError:
        return None


FORMAT = ApacheError()
