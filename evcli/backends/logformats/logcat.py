"""Android logcat, as `adb logcat` and bugreports write it:

threadtime (the default)  `03-17 16:13:38.811  1702  2395 D WindowManager: message`
  also with `-v uid` (bugreports: `03-17 16:13:38.811  system  1702  2395 D ...`) and
  `-v year` (`2024-03-17 16:13:38.811 ...`); pid and tid are space-padded, the tag is padded
  with blanks before its `: `
time                      `03-17 16:13:38.811 E/ActivityManager( 1702): ANR in com.example`

The buffer markers (`--------- beginning of main`, `--------- switch to system`) are no events:
the registry reads them as continuation lines, so they count neither for nor against a format.

Levels V D I W E F A are TRACE DEBUG INFO WARN ERROR FATAL FATAL. Without `-v year` the year is
inferred from the clock as for syslog (`ParseContext.with_year`, memo keys prefixed `logcat `);
milliseconds are kept and the time stays naive.
"""

from __future__ import annotations

import re
from datetime import datetime

from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine, remember

_LINE = re.compile(
    r"(?P<when>(?:(?P<year>\d{4})-)?(?P<month>\d\d)-(?P<day>\d\d) (?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d))"
    r"\.(?P<millis>\d{3}) +(?:"
    r"(?:(?P<uid>[a-z_][\w.]*|\d+) +)?(?P<pid>\d+) +(?P<tid>\d+) +(?P<level>[VDIWEFA]) (?P<tag>.*?) *:(?: |$)"
    r"|(?P<time_level>[VDIWEFA])/(?P<time_tag>.*?) *\( *(?P<time_pid>\d+)\): ?"
    r")(?P<message>.*)"
)
_LEVELS = {"V": "TRACE", "D": "DEBUG", "I": "INFO", "W": "WARN", "E": "ERROR", "F": "FATAL", "A": "FATAL"}
_KEY = "logcat "  # memo keys: distinct from syslog's and glog's stamps
_PARTS = ("month", "day", "hour", "minute", "second")


class Logcat(LogFormat):
    name = "logcat"
    description = "Android logcat (threadtime, time): MM-DD HH:MM:SS.mmm pid tid L tag: message (year inferred)"
    example = "03-17 16:13:38.811  1702  2395 D WindowManager: printFreezingDisplayLogsopening app wtoken"

    def sniff(self, line: str) -> bool:
        return (line[2:3] == "-" or line[7:8] == "-") and _LINE.match(line) is not None  # MM-DD or yyyy-MM-DD

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        moment = _moment(match, context)
        if moment is None:
            return None
        moment = moment.replace(microsecond=int(match["millis"]) * 1000)
        if match["level"]:
            fields = {"pid": match["pid"], "tid": match["tid"], "tag": match["tag"]}
            if match["uid"]:
                fields["uid"] = match["uid"]
            return ParsedLine(moment, _LEVELS[match["level"]], match["message"], fields)
        fields = {"pid": match["time_pid"], "tag": match["time_tag"]}
        return ParsedLine(moment, _LEVELS[match["time_level"]], match["message"], fields)


def _moment(match: re.Match[str], context: ParseContext) -> datetime | None:
    """The line's time to the second, built once per distinct text (the year, when not written,
    depends on the clock)."""
    key = _KEY + match["when"]
    memo = context.memo
    if key in memo:
        return memo[key]
    month, day, hour, minute, second = (int(part) for part in match.group(*_PARTS))
    if match["year"] is None:
        return remember(memo, key, context.with_year(month, day, hour, minute, second))
    try:
        return remember(memo, key, datetime(int(match["year"]), month, day, hour, minute, second))
    except ValueError:
        return remember(memo, key, None)


FORMAT = Logcat()
