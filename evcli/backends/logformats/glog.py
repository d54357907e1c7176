"""Google glog / Kubernetes klog: `I1203 10:00:00.123456 1234 file.go:12] msg`.

The letter is the level (I, W, E, F); the line has no year and no zone: the year is inferred
from the clock as for RFC 3164 syslog and the time stays naive.
"""

from __future__ import annotations

import re

from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine, remember

_LINE = re.compile(
    r"(?P<level>[IWEF])(?P<stamp>(?P<month>\d\d)(?P<day>\d\d) (?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d))"
    r"\.(?P<fraction>\d{6}) +(?P<thread>\d+) (?P<source>[^:\s\]]+:\d+)\] ?(?P<message>.*)"
)
_LEVELS = {"I": "INFO", "W": "WARN", "E": "ERROR", "F": "FATAL"}


class Glog(LogFormat):
    name = "glog"
    description = "glog/klog: Lmmdd HH:MM:SS.uuuuuu thread file:line] message (year inferred)"
    example = "E1203 10:00:00.123456    1234 controller.go:112] sync failed: timeout"

    def sniff(self, line: str) -> bool:
        return line[:1] in _LEVELS and _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        stamp = "g" + match["stamp"]  # the context's memo is shared with syslog's `Mon DD` keys
        memo = context.memo
        if stamp not in memo:
            remember(memo, stamp, context.with_year(*(int(match[name]) for name in _PARTS)))
        moment = memo[stamp]
        if moment is None:
            return None
        moment = moment.replace(microsecond=int(match["fraction"]))
        fields = {"thread": match["thread"], "source": match["source"]}
        return ParsedLine(moment, _LEVELS[match["level"]], match["message"], fields)


_PARTS = ("month", "day", "hour", "minute", "second")

FORMAT = Glog()
