"""IETF syslog (RFC 5424): `<34>1 2003-10-11T22:14:15.003Z host app procid msgid [sd] msg`.

The level is the PRI's severity; `-` (NILVALUE) header fields are left out; a timestamp of
`-` gives a line without timestamp; a BOM before the message is dropped.
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import (
    SYSLOG_SEVERITIES,
    LogFormat,
    ParseContext,
    ParsedLine,
    iso_time,
)

_LINE = re.compile(
    r"<(?P<pri>\d{1,3})>1 (?:-|(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?"
    r"(?:Z|[+-]\d\d:\d\d))) (?P<host>\S+) (?P<program>\S+) (?P<pid>\S+) (?P<msgid>\S+) "
    r"(?P<sd>-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: (?P<message>.*))?"
)
_HEADER = ("host", "program", "pid", "msgid")


class Rfc5424(LogFormat):
    name = "rfc5424"
    description = "IETF syslog (RFC 5424): <PRI>1 timestamp host app procid msgid [sd] message"
    example = "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - 'su root' failed"

    def sniff(self, line: str) -> bool:
        return line[:1] == "<" and _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None or int(match["pri"]) >= 192:
            return None
        moment: datetime | None = None
        if match["stamp"]:
            moment = iso_time(match["stamp"])
            if moment is None:
                return None
        fields = {name: match[name] for name in _HEADER if match[name] != "-"}
        if match["sd"] != "-":
            fields["structured_data"] = match["sd"]
        message = (match["message"] or "").removeprefix("\ufeff")
        return ParsedLine(moment, SYSLOG_SEVERITIES[int(match["pri"]) % 8], message, fields)


FORMAT = Rfc5424()
