"""A leading epoch timestamp: `1675000000 msg`, `1675000000.123 ERROR msg`, `1675000000123 msg`
(10 digits = seconds, 13 = milliseconds, 16 = microseconds, 19 = nanoseconds), always UTC."""

from __future__ import annotations

import re

from evcli.backends.logformats.base import (
    LogFormat,
    ParseContext,
    ParsedLine,
    epoch_stamp,
    leading_level,
)

_LINE = re.compile(r"\[?(?P<number>\d{10}(?:\d{3}){0,3}(?:\.\d{1,9})?)\]?(?=[\s,;|])")


class Epoch(LogFormat):
    name = "epoch"
    description = "leading epoch seconds/milliseconds, then text with an optional level"
    example = "1675000000.123 ERROR payment failed"
    generic = True

    def sniff(self, line: str) -> bool:
        return line[:1].isdigit() or line[:1] == "["

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        moment = epoch_stamp(float(match["number"]))
        if moment is None:
            return None
        level, message = leading_level(line[match.end() :].lstrip(",;|"))
        return ParsedLine(moment, level, message, {})


FORMAT = Epoch()
