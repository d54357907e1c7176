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
    iso_time,
    leading_level,
)

_LINE = re.compile(
    r"\[?(?P<stamp>\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d(?::?\d\d)?| [+-]\d{4})?)\]?"
)
_AFTER = frozenset(" \t")  # the timestamp must end the line or be followed by a blank


class Iso8601(LogFormat):
    name = "iso8601"
    description = "ISO 8601 / RFC 3339 timestamp, then text with an optional level"
    example = "2023-01-29T10:03:11.123+08:00 ERROR payment failed"
    generic = True

    def sniff(self, line: str) -> bool:
        return line[:1] in "[0123456789" and _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        end = match.end()
        if end < len(line) and line[end] not in _AFTER:
            return None
        moment = iso_time(match["stamp"])
        if moment is None:
            return None
        level, message = leading_level(line[end:])
        return ParsedLine(moment, level, message, {})


FORMAT = Iso8601()
