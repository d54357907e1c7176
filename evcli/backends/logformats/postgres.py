"""PostgreSQL server logs with the default `log_line_prefix = '%m [%p] '` (optionally `%q%u@%d `):
`2026-07-14 14:03:12.345 EDT [2312] ERROR:  deadlock detected`.

The time carries the server's zone as PostgreSQL prints it: an offset (`+02`, `-04:00`), `UTC`/`GMT`, or
an abbreviation (`EDT`, `CEST`; one not known here leaves the time naive, read in the environment's
zone). The severity is the level: LOG and the others of INFO's rank are INFO, WARNING is WARN, ERROR,
FATAL and PANIC. A DETAIL, HINT, STATEMENT, CONTEXT, QUERY or LOCATION line says more about the line
before it and has no level of its own.
"""

from __future__ import annotations

import re
from datetime import timedelta, timezone

from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine, iso_time
from evcli.core.time import abbreviated_zone

_LINE = re.compile(
    r"(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?) (?P<zone>[A-Z]{2,5}|[+-]\d\d(?::?\d\d)?) "
    r"\[(?P<pid>\d+)\](?:-\d+)? (?:(?P<user>[\w.-]*)@(?P<database>[\w.-]*) )?"
    r"(?P<severity>LOG|INFO|NOTICE|WARNING|ERROR|FATAL|PANIC|DEBUG[1-5]?|DETAIL|HINT|STATEMENT|CONTEXT|QUERY|LOCATION):"
    r"\s+(?P<message>.*)"
)
_LEVELS = {
    "LOG": "INFO", "INFO": "INFO", "NOTICE": "INFO", "WARNING": "WARN", "ERROR": "ERROR", "FATAL": "FATAL",
    "PANIC": "FATAL",
}  # fmt: skip


class Postgres(LogFormat):
    name = "postgres"
    description = "PostgreSQL: YYYY-MM-DD HH:MM:SS.mmm ZONE [pid] SEVERITY:  message (log_line_prefix '%m [%p] ')"
    example = "2026-07-14 14:03:12.345 EDT [2312] ERROR:  deadlock detected"

    def sniff(self, line: str) -> bool:
        return line[:1].isdigit() and "] " in line[:48] and " [" in line[:40]

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        moment = iso_time(match["stamp"])
        if moment is None:
            return None
        zone = match["zone"]
        named = abbreviated_zone(zone)
        if named is not None:
            moment = moment.replace(tzinfo=named)
        elif zone[0] in "+-":
            sign, digits = (1 if zone[0] == "+" else -1), zone[1:].replace(":", "")
            offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
            moment = moment.replace(tzinfo=timezone(sign * offset))
        fields = {"pid": match["pid"], "severity": match["severity"]}
        fields |= {key: match[key] for key in ("user", "database") if match[key]}
        return ParsedLine(moment, _LEVELS.get(match["severity"]), match["message"].strip(), fields)


FORMAT = Postgres()
