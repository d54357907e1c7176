"""Windows servicing logs (CBS.log, the CSI lines in it, DISM.log): `2016-09-28 04:30:30, Info
                  CBS    Loaded Servicing Stack v6.1.7601.23505 with Core: C:\\Windows\\...`
= local time, `, `, a level word padded with blanks, the component (CBS, CSI, DISM, ...), message.

Invariants: the time is naive (Windows writes local time without a zone); `Info`, `Warning`
and `Error` are INFO, WARN and ERROR, a word that is no level (`Perf`) leaves the level None
(the line is still read); the `, ` after the time is what tells these lines from ISO 8601 ones,
which the `iso8601` format rejects.
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import IsoStampFormat, ParsedLine, level_of

_LINE = re.compile(
    r"(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d), (?P<level>[A-Za-z]+) +(?P<component>\S+) *(?P<message>.*)"
)


class WindowsCbs(IsoStampFormat):
    name = "windows_cbs"
    description = "Windows CBS/CSI servicing log: YYYY-MM-DD HH:MM:SS, Level  Component  message"
    example = (
        "2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505 with Core: "
        "C:\\Windows\\winsxs\\amd64_microsoft-windows-servicingstack_31bf3856ad364e35_6.1.7601.23505_none\\cbscore.dll"
    )

    line = _LINE

    def sniff(self, line: str) -> bool:
        return line[:1].isdigit() and _LINE.match(line) is not None

    def read(self, match: re.Match[str], moment: datetime) -> ParsedLine:
        return ParsedLine(moment, level_of(match["level"]), match["message"], {"component": match["component"]})


FORMAT = WindowsCbs()
