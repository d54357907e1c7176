"""ISO 8601 / RFC 3339 leading timestamp, then free text with an optional level word.

`2023-01-29T10:03:11.123+08:00 ERROR msg`, `2023-01-29 10:03:11,5 [warn] msg`,
`[2023-01-29T02:03:11Z] level=error msg`. The catch-all of timestamped lines: it comes after
the formats that give the same lines more structure (Python logging, Java, OpenStack).
"""

from __future__ import annotations

import re

from evcli.backends.logformats.base import (
    LogFormat,
    ParseContext,
    ParsedLine,
    iso_stamp,
    leading_level,
)

_LINE = re.compile(
    r"\[?(?P<seconds>\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d)?)(?:[.,](?P<fraction>\d{1,9}))?"
    r"(?P<zone>[Zz](?![A-Za-z0-9])|\s?[+-]\d\d(?::?\d\d)?(?![\d:]))?\]?(?=\s|$)"
)


class Iso8601(LogFormat):
    name = "iso8601"
    description = "ISO 8601 / RFC 3339 timestamp, then text with an optional level"
    example = "2023-01-29T10:03:11.123+08:00 ERROR payment failed"

    def sniff(self, line: str) -> bool:
        return _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        moment = iso_stamp(match["seconds"], match["fraction"], match["zone"])
        if moment is None:
            return None
        level, message = leading_level(line[match.end() :])
        return ParsedLine(moment, level, message, {})


FORMAT = Iso8601()
