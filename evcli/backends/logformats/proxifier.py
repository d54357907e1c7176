"""Proxifier connection logs: `[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open
through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS` = `[MM.DD HH:MM:SS] program - message`.

Invariants: the line has no year and no zone: the year is inferred from the clock as for RFC
3164 syslog (`ParseContext.with_year`, memo keys prefixed `p` so they never meet syslog's
`Mon DD` or glog's `g` keys) and the time stays naive. The program ends at the first ` - `
(it may hold blanks: `chrome.exe *64`); a line without one is all message. The level is ERROR
when the message reports ` error : ` (a failed connection), else None.
"""

from __future__ import annotations

import re

from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine, remember

_LINE = re.compile(
    r"\[(?P<stamp>(?P<month>\d\d)\.(?P<day>\d\d) (?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d))\] "
    r"(?:(?P<program>[^\s][^\[\]]*?) - )?(?P<message>.*)"
)
_PARTS = ("month", "day", "hour", "minute", "second")


class Proxifier(LogFormat):
    name = "proxifier"
    description = "Proxifier: [MM.DD HH:MM:SS] program - message (year inferred)"
    example = (
        "[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS"
    )

    def sniff(self, line: str) -> bool:
        return line[:1] == "[" and _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        stamp = "p" + match["stamp"]  # the memo is shared with syslog and glog keys
        memo = context.memo
        if stamp not in memo:
            remember(memo, stamp, context.with_year(*(int(match[name]) for name in _PARTS)))
        moment = memo[stamp]
        if moment is None:
            return None
        message = match["message"]
        fields = {"program": match["program"]} if match["program"] else {}
        failed = " error : " in message or message.startswith("error : ")
        return ParsedLine(moment, "ERROR" if failed else None, message, fields)


FORMAT = Proxifier()
