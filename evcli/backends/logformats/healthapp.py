"""HealthApp (Android health app) logs: `20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579`
= yyyyMMdd-H:m:s:S (hour, minute and second unpadded, 1-2 digits; milliseconds unpadded, 1-3
digits: `20171224-0:0:1:45` is 00:00:01.045), then `|component|pid|message`.

The line has no level (None) and no zone (the time stays naive). Times are built once per
distinct second text and cached (`remember`).
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine, remember

_LINE = re.compile(
    r"(?P<stamp>(?P<year>\d{4})(?P<month>\d\d)(?P<day>\d\d)-(?P<hour>\d\d?):(?P<minute>\d\d?):(?P<second>\d\d?))"
    r":(?P<millis>\d{1,3})\|(?P<component>[^|]*)\|(?P<pid>\d+)\|(?P<message>.*)"
)
_PARTS = ("year", "month", "day", "hour", "minute", "second")
_CACHE: dict[str, datetime | None] = {}


class HealthApp(LogFormat):
    name = "healthapp"
    description = "HealthApp: yyyyMMdd-H:m:s:ms|component|pid|message (no level)"
    example = "20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579"

    def sniff(self, line: str) -> bool:
        return line[8:9] == "-" and _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        stamp = match["stamp"]
        moment = _CACHE[stamp] if stamp in _CACHE else remember(_CACHE, stamp, _healthapp_time(match))
        if moment is None:
            return None
        moment = moment.replace(microsecond=int(match["millis"]) * 1000)
        return ParsedLine(moment, None, match["message"], {"component": match["component"], "pid": match["pid"]})


def _healthapp_time(match: re.Match[str]) -> datetime | None:
    year, month, day, hour, minute, second = (int(part) for part in match.group(*_PARTS))
    try:
        return datetime(year, month, day, hour, minute, second)
    except ValueError:
        return None


FORMAT = HealthApp()
