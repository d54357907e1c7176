"""The supercomputer logs of the USENIX CFDR collection (Blue Gene/L, Thunderbird, Liberty,
Spirit): `LABEL EPOCH YYYY.MM.DD NODE rest`, LABEL `-` for a non-alert line, else the alert
category (`APPREAD`, `KERNDTLB`, `VAPI`, ...).

Blue Gene/L:  `- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872
              R02-M1-N0-C:J12-U11 RAS KERNEL INFO instruction cache parity error corrected`
              (local stamp, node, type, component, level word, message)
Thunderbird, Liberty, Spirit: `- 1131566461 2005.11.09 dn228 Nov 9 12:01:01 dn228/dn228
              crond(pam_unix)[2915]: session closed for user root` (a syslog line)

Invariants: the timestamp is the EPOCH field, aware in UTC (the local stamp, the date and the
syslog time are the same moment in the machine's zone); a Blue Gene/L stamp adds its
microseconds only when its second agrees with the epoch's. The level is the Blue Gene/L level
word (SEVERE is ERROR, FAILURE is FATAL), else a leading `error:`/`warning:` of a syslog
message (as RFC 3164), else None; the label is a field, never a level. A rest in neither shape
is kept whole as the message.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine
from evcli.backends.logformats.rfc3164 import message_level

_LINE = re.compile(
    r"(?P<label>-|[A-Z][A-Z0-9_]*) (?P<epoch>\d{10}) \d{4}\.\d\d\.\d\d (?P<node>\S+) (?:"
    r"\d{4}-\d\d-\d\d-\d\d\.\d\d\.(?P<second>\d\d)\.(?P<fraction>\d{6}) \S+ \S+ (?P<component>\S+) "
    r"(?P<level>INFO|WARNING|SEVERE|ERROR|FATAL|FAILURE)(?: (?P<bgl_message>.*)|$)"
    r"|[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \S+ "
    r"(?:(?P<program>[^\s:\[\]]+)(?:\[(?P<pid>\d+)\])?: )?(?P<message>.*)"
    r"|(?P<rest>.*))"
)
_LEVELS = {"INFO": "INFO", "WARNING": "WARN", "SEVERE": "ERROR", "ERROR": "ERROR", "FATAL": "FATAL", "FAILURE": "FATAL"}


class Cfdr(LogFormat):
    name = "cfdr"
    description = "CFDR supercomputer logs (Blue Gene/L, Thunderbird, Liberty, Spirit): LABEL EPOCH YYYY.MM.DD NODE ..."
    example = (
        "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 R02-M1-N0-C:J12-U11 "
        "RAS KERNEL INFO instruction cache parity error corrected"
    )

    def sniff(self, line: str) -> bool:
        return (line[:1] == "-" or line[:1].isupper()) and _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        label, epoch, node, second, fraction, component, level, bgl_message, program, pid, message, rest = (
            match.groups()
        )
        seconds = int(epoch)
        fields = {"node": node} if label == "-" else {"label": label, "node": node}
        if level is not None:
            fields["component"] = component
            microseconds = int(fraction) if int(second) == seconds % 60 else 0
            moment = _EPOCH + timedelta(seconds=seconds, microseconds=microseconds)
            return ParsedLine(moment, _LEVELS[level], bgl_message or "", fields)
        moment = _EPOCH + timedelta(seconds=seconds)
        if message is None:
            return ParsedLine(moment, None, rest, fields)
        if program:
            fields["program"] = program
        if pid:
            fields["pid"] = pid
        return ParsedLine(moment, message_level(message), message, fields)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

FORMAT = Cfdr()
