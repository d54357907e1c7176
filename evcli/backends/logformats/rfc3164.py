"""BSD syslog (RFC 3164) as files hold it: `Dec 10 06:55:46 host sshd[24200]: msg`, also
`Dec  1 ...` (space-padded day) and an optional leading `<PRI>`.

The line has no year and no zone: the year is the latest one that puts the line no later
than the clock (`ParseContext.with_year`, with YEAR_SKEW); the time stays naive. The level
comes from PRI when present, else from a leading `error:`/`warning:` word of the message, a
leading level in capitals (`FATAL could not connect`, `[ERROR]`) or a `level=` field.
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import (
    MONTHS,
    SYSLOG_SEVERITIES,
    LogFormat,
    ParseContext,
    ParsedLine,
    level_of,
    remember,
)

_LINE = re.compile(
    r"(?:<(?P<pri>\d{1,3})>)?(?P<stamp>(?P<month>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
    r"(?P<day>[ \d]\d) (?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d)) (?P<host>\S+) "
    r"(?:(?P<program>[^\s:\[\]]+)(?:\[(?P<pid>\d+)\])?: )?(?P<message>.*)"
)
_MESSAGE_LEVEL = re.compile(r"(error|warning|fatal|critical|notice|debug|info)(?::| -) ", re.IGNORECASE)
# a program writing its own level in capitals first (`payments-worker[4411]: FATAL could not connect`,
# `[ERROR] …`, `<WARN> …`), or a logfmt `level=error` field
_UPPER_LEVEL = re.compile(
    r"[\[<]?(ERROR|ERR|WARN(?:ING)?|FATAL|CRIT(?:ICAL)?|EMERG|ALERT|NOTICE|INFO|DEBUG|TRACE)[\]>]?:?\s"
)
_LEVEL_FIELD = re.compile(r"(?:^|\s)(?:level|lvl|severity)=\"?([A-Za-z]+)")


class Rfc3164(LogFormat):
    name = "rfc3164"
    description = "BSD syslog (RFC 3164): Mon DD HH:MM:SS host program[pid]: message (year inferred)"
    example = "Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster from 173.234.31.186"

    def sniff(self, line: str) -> bool:
        return line[:1] == "<" or line[:3] in MONTHS  # parse's `<PRI>` or month (one regex match, in parse)

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        stamp = match["stamp"]
        memo = context.memo
        moment = memo[stamp] if stamp in memo else remember(memo, stamp, _syslog_time(match, context))
        if moment is None:
            return None
        message = match["message"]
        fields = {"host": match["host"]}
        if match["program"]:
            fields["program"] = match["program"]
        if match["pid"]:
            fields["pid"] = match["pid"]
        pri = match["pri"]
        if pri is not None and int(pri) < 192:
            return ParsedLine(moment, SYSLOG_SEVERITIES[int(pri) % 8], message, fields)
        return ParsedLine(moment, message_level(message), message, fields)


def message_level(message: str) -> str | None:
    """The level a syslog message states: its first word (`error: ...`, `warning - ...`, `FATAL could not
    connect`, `[ERROR] ...`) or a `level=` field, else None."""
    worded = _MESSAGE_LEVEL.match(message) or _UPPER_LEVEL.match(message)
    if worded:
        return level_of(worded.group(1))
    field = _LEVEL_FIELD.search(message) if "=" in message else None
    return level_of(field.group(1)) if field else None


def _syslog_time(match: re.Match[str], context: ParseContext) -> datetime | None:
    return context.with_year(
        MONTHS[match["month"]], int(match["day"]), int(match["hour"]), int(match["minute"]), int(match["second"])
    )


FORMAT = Rfc3164()
