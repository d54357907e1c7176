"""logfmt (Heroku, Go kit, logrus text, Grafana): `ts=2023-01-29T02:03:11Z level=error msg="x y" k=v`.

A line is logfmt when it is made of key=value pairs and names a time (`ts`, `time`, `t`,
`timestamp`), a level or a message; the other pairs become fields. Values in double quotes may
hold spaces and `\\"`.
"""

from __future__ import annotations

import re

from evcli.backends.logformats._keys import (
    LEVEL_KEYS,
    MESSAGE_KEYS,
    TIME_KEYS,
    first_key,
    level_value,
    time_value,
)
from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine

_PAIR = re.compile(r'([A-Za-z_@][\w.@-]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)(?:\s+|$)')
_START = re.compile(r"[A-Za-z_@][\w.@-]*=")


class Logfmt(LogFormat):
    name = "logfmt"
    description = "logfmt key=value pairs with ts/time/t, level/lvl and msg keys"
    example = 'ts=2023-01-29T02:03:11.120Z level=error caller=db.go:42 msg="query timeout" duration=5.1s'

    def sniff(self, line: str) -> bool:
        return _START.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        pairs = _pairs(line)
        if pairs is None:
            return None
        time_key = first_key(pairs, TIME_KEYS)
        level_key = first_key(pairs, LEVEL_KEYS)
        message_key = first_key(pairs, MESSAGE_KEYS)
        if time_key is None and level_key is None and message_key is None:
            return None
        moment = time_value(pairs.pop(time_key)) if time_key else None
        level = level_value(pairs.pop(level_key)) if level_key else None
        message = pairs.pop(message_key) if message_key else ""
        return ParsedLine(moment, level, message, pairs)


def _pairs(line: str) -> dict[str, str] | None:
    """The pairs of a line made only of key=value pairs, else None."""
    text = line.rstrip()
    pairs: dict[str, str] = {}
    position = 0
    for match in _PAIR.finditer(text):
        if match.start() != position:
            return None
        value = match.group(2)
        if value[:1] == '"':
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        pairs[match.group(1)] = value
        position = match.end()
    return pairs if pairs and position == len(text) else None


FORMAT = Logfmt()
