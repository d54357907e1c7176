"""logfmt (Heroku, Go kit, logrus text, Grafana): `ts=2023-01-29T02:03:11Z level=error msg="x y" k=v`.

A line is logfmt when it is made of key=value pairs and names a time (`ts`, `time`, `t`,
`timestamp`), a level or a message; the other pairs become fields. Values in double quotes may
hold spaces and `\\"`.
"""

from __future__ import annotations

import re

from evcli.backends.logformats._keys import level_value, role_keys, time_value
from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine

# key, value (double-quoted with `\"` escapes, unrolled: no per-character alternation), blanks after
_PAIR = re.compile(r'([A-Za-z_@][\w.@-]*)=("[^"\\]*(?:\\.[^"\\]*)*"|[^\s"]*)(\s+|$)')
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
        time_key, level_key, message_key = role_keys(pairs)
        if time_key is None and level_key is None and message_key is None:
            return None
        moment = time_value(pairs.pop(time_key)) if time_key else None
        level = level_value(pairs.pop(level_key)) if level_key else None
        message = pairs.pop(message_key) if message_key else ""
        return ParsedLine(moment, level, message, pairs)


def _pairs(line: str) -> dict[str, str] | None:
    """The pairs of a line made only of key=value pairs, else None. One `findall` reads them;
    its matches do not overlap, so they cover the line exactly when their lengths add up to
    the line's. A later pair of the same key wins."""
    text = line.rstrip()
    found = _PAIR.findall(text)
    if not found or sum(len(key) + len(value) + len(blank) + 1 for key, value, blank in found) != len(text):
        return None
    return {
        key: value[1:-1].replace('\\"', '"').replace("\\\\", "\\") if value[:1] == '"' else value
        for key, value, _ in found
    }


FORMAT = Logfmt()
