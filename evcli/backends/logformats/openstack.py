"""OpenStack (oslo.log) service logs: timestamp with milliseconds, pid, LEVEL, logger, an
optional request context, message. Times carry no zone.

`2017-05-16 00:00:00.008 25746 INFO nova.compute.claims [req-ca… 113d… 54fa… - - -] [instance: bf8c…] Total memory: 64172 MB`

Collected logs often keep the name of the file each line came from in front of it (the public
OpenStack dataset does: `nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 25746 INFO …`);
that name is a field (`logfile`), not part of the time. The WSGI server's request lines
(`10.11.10.1 "GET /v2/… HTTP/1.1" status: 500 len: 1893 time: 0.247`) give their status code
as a field, as an access log does.
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import IsoStampFormat, ParsedLine, level_of

_LINE = re.compile(
    r"(?:(?P<logfile>[\w.-]+\.log(?:\.[\w:.-]+)?) )?"
    r"(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3,6}) (?P<pid>\d+) "
    r"(?P<level>TRACE|DEBUG|INFO|AUDIT|WARNING|WARN|ERROR|CRITICAL) (?P<logger>[\w.]+) "
    r"(?:\[(?P<request>req-[^\]]*)\] ?)?(?P<message>.*)"
)
_STATUS = re.compile(r'" status: (?P<status>[1-5]\d\d) ')


class OpenStack(IsoStampFormat):
    name = "openstack"
    description = "OpenStack oslo.log: timestamp.ms pid LEVEL logger [req-…] message"
    example = "2017-05-16 00:00:00.008 25746 INFO nova.compute.claims [req-1 - - - - -] Claim successful"

    line = _LINE

    def read(self, match: re.Match[str], moment: datetime) -> ParsedLine:
        fields = {"pid": match["pid"], "logger": match["logger"]}
        if match["request"]:
            fields["request_id"] = match["request"].split(" ", 1)[0]
        if match["logfile"]:
            fields["logfile"] = match["logfile"]
        if '" status: ' in match["message"] and (status := _STATUS.search(match["message"])):
            fields["status"] = status["status"]
        level = "INFO" if match["level"] == "AUDIT" else level_of(match["level"])
        return ParsedLine(moment, level, match["message"], fields)


FORMAT = OpenStack()
