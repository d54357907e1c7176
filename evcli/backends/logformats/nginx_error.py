"""nginx error log: `2023/01/29 10:03:11 [warn] 123#0: *45 msg, client: 1.2.3.4, server: x,
request: "GET / HTTP/1.1"`. Times carry no zone (nginx writes local time)."""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import (
    LogFormat,
    ParseContext,
    ParsedLine,
    level_of,
    remember,
)

_LINE = re.compile(
    r"(?P<stamp>\d{4}/\d\d/\d\d \d\d:\d\d:\d\d) \[(?P<level>[a-z]+)\] (?P<pid>\d+)#(?P<tid>\d+): "
    r"(?:\*(?P<connection>\d+) )?(?P<message>.*)"
)
_CONTEXT = re.compile(r', (client|server|request|upstream|host|referrer): ("[^"]*"|[^,]*)')
_CACHE: dict[str, datetime | None] = {}


class NginxError(LogFormat):
    name = "nginx_error"
    description = "nginx error log: YYYY/MM/DD HH:MM:SS [level] pid#tid: *conn message"
    example = "2023/01/29 10:03:11 [error] 1234#0: *56 connect() failed, client: 10.0.0.7"

    def sniff(self, line: str) -> bool:
        return line[4:5] == "/" and _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        stamp = match["stamp"]
        moment = _CACHE[stamp] if stamp in _CACHE else remember(_CACHE, stamp, _nginx_time(stamp))
        if moment is None:
            return None
        message = match["message"]
        fields = {"pid": match["pid"], "tid": match["tid"]}
        if match["connection"]:
            fields["connection"] = match["connection"]
        if ", client: " in message:
            fields.update((key, value.strip('"')) for key, value in _CONTEXT.findall(message))
        return ParsedLine(moment, level_of(match["level"]), message, fields)


def _nginx_time(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp.replace("/", "-"))
    except ValueError:
        return None


FORMAT = NginxError()
