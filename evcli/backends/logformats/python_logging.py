"""Python `logging` with an asctime: `%(asctime)s - %(name)s - %(levelname)s - %(message)s`
(`2015-07-29 17:41:44,747 - app.db - INFO - msg`) and `%(asctime)s %(levelname)s %(message)s`
(`2015-07-29 17:41:44,747 INFO msg`). Times carry no zone."""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import IsoStampFormat, ParsedLine, level_of

_LEVELS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
_LINE = re.compile(
    r"(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d{3})?)"
    rf" (?:- (?P<logger>\S+) - (?P<level>{_LEVELS}) - |(?P<bare>{_LEVELS}) )(?P<message>.*)"
)


class PythonLogging(IsoStampFormat):
    name = "python"
    description = "Python logging (asctime - name - LEVEL - message, or asctime LEVEL message)"
    example = "2015-07-29 17:41:44,747 - app.db - INFO - connected"

    line = _LINE

    def read(self, match: re.Match[str], moment: datetime) -> ParsedLine:
        fields = {"logger": match["logger"]} if match["logger"] else {}
        return ParsedLine(moment, level_of(match["level"] or match["bare"]), match["message"], fields)


FORMAT = PythonLogging()
