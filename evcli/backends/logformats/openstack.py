"""OpenStack (oslo.log) service logs: timestamp with milliseconds, pid, LEVEL, logger, an
optional request context, message. Times carry no zone.

`2017-05-16 00:00:00.008 25746 INFO nova.compute.claims [req-ca… 113d… 54fa… - - -] [instance: bf8c…] Total memory: 64172 MB`
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import IsoStampFormat, ParsedLine, level_of

_LINE = re.compile(
    r"(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3,6}) (?P<pid>\d+) "
    r"(?P<level>TRACE|DEBUG|INFO|AUDIT|WARNING|WARN|ERROR|CRITICAL) (?P<logger>[\w.]+) "
    r"(?:\[(?P<request>req-[^\]]*)\] ?)?(?P<message>.*)"
)


class OpenStack(IsoStampFormat):
    name = "openstack"
    description = "OpenStack oslo.log: timestamp.ms pid LEVEL logger [req-…] message"
    example = "2017-05-16 00:00:00.008 25746 INFO nova.compute.claims [req-1 - - - - -] Claim successful"

    line = _LINE

    def read(self, match: re.Match[str], moment: datetime) -> ParsedLine:
        fields = {"pid": match["pid"], "logger": match["logger"]}
        if match["request"]:
            fields["request_id"] = match["request"].split(" ", 1)[0]
        level = "INFO" if match["level"] == "AUDIT" else level_of(match["level"])
        return ParsedLine(moment, level, match["message"], fields)


FORMAT = OpenStack()
