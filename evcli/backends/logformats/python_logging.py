"""Python `logging` with an asctime: `%(asctime)s - %(name)s - %(levelname)s - %(message)s`
(`2015-07-29 17:41:44,747 - app.db - INFO - msg`) and `%(asctime)s %(levelname)s %(message)s`
(`2015-07-29 17:41:44,747 INFO msg`). Times carry no zone."""

from __future__ import annotations

import re

from evcli.backends.logformats.base import (
    LogFormat,
    ParseContext,
    ParsedLine,
    iso_time,
    level_of,
)

_LEVELS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
_LINE = re.compile(
    r"(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d{3})?)"
    rf" (?:- (?P<logger>\S+) - (?P<level>{_LEVELS}) - |(?P<bare>{_LEVELS}) )(?P<message>.*)"
)


class PythonLogging(LogFormat):
    name = "python"
    description = "Python logging (asctime - name - LEVEL - message, or asctime LEVEL message)"
    example = "2015-07-29 17:41:44,747 - app.db - INFO - connected"

    def sniff(self, line: str) -> bool:
        return _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        moment = iso_time(match["stamp"])
        if moment is None:
            return None
        fields = {"logger": match["logger"]} if match["logger"] else {}
        return ParsedLine(moment, level_of(match["level"] or match["bare"]), match["message"], fields)


FORMAT = PythonLogging()
