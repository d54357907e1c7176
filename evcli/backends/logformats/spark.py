"""Spark's log4j layout `%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m`:
`17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered signal handlers`,
also with milliseconds (`17/06/09 20:10:40,123` or `.123`).

The two-digit year is 20yy unless that puts the line more than YEAR_SKEW after the clock, then
19yy (`ParseContext.with_century`); the time stays naive. Stack traces after an ERROR line are
the registry's continuation lines, not lines of this format.
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import ParsedLine, TwoDigitYearFormat, level_of

_LINE = re.compile(
    r"(?P<stamp>(?P<yy>\d\d)/(?P<month>\d\d)/(?P<day>\d\d) (?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d))"
    r"(?:[,.](?P<millis>\d{3}))? (?P<level>TRACE|DEBUG|INFO|WARN|ERROR|FATAL) +"
    r"(?P<logger>[A-Za-z_$][\w$.]*): ?(?P<message>.*)"
)


class Spark(TwoDigitYearFormat):
    name = "spark"
    description = "Spark log4j: yy/MM/dd HH:mm:ss[,SSS] LEVEL logger: message (century inferred)"
    example = (
        "17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered signal handlers for [TERM, HUP, INT]"
    )

    line = _LINE
    key = "spark "

    def sniff(self, line: str) -> bool:
        return line[2:3] == "/" and _LINE.match(line) is not None

    def read(self, match: re.Match[str], moment: datetime) -> ParsedLine:
        millis = match["millis"]
        if millis:
            moment = moment.replace(microsecond=int(millis) * 1000)
        return ParsedLine(moment, level_of(match["level"]), match["message"], {"logger": match["logger"]})


FORMAT = Spark()
