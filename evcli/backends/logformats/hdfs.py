"""Hadoop 0.x / HDFS log4j layout: `081109 203615 148 INFO dfs.DataNode$PacketResponder: msg`
(yyMMdd HHmmss, pid, level, logger, message).

The two-digit year is 20yy unless that puts the line more than YEAR_SKEW after the clock, then
19yy (`ParseContext.with_century`); the line has no zone, so the time stays naive.
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import ParsedLine, TwoDigitYearFormat, level_of

_LINE = re.compile(
    r"(?P<stamp>(?P<yy>\d\d)(?P<month>\d\d)(?P<day>\d\d) (?P<hour>\d\d)(?P<minute>\d\d)(?P<second>\d\d)) "
    r"(?P<pid>\d+) (?P<level>TRACE|DEBUG|INFO|WARN|ERROR|FATAL) +(?P<logger>[A-Za-z_$][\w$.]*): ?(?P<message>.*)"
)


class Hdfs(TwoDigitYearFormat):
    name = "hdfs"
    description = "Hadoop/HDFS log4j: yyMMdd HHmmss pid LEVEL logger: message (century inferred)"
    example = "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block blk_38865 terminating"

    line = _LINE
    key = "hdfs "

    def sniff(self, line: str) -> bool:
        return line[6:7] == " " and _LINE.match(line) is not None

    def read(self, match: re.Match[str], moment: datetime) -> ParsedLine:
        fields = {"pid": match["pid"], "logger": match["logger"]}
        return ParsedLine(moment, level_of(match["level"]), match["message"], fields)


FORMAT = Hdfs()
