"""Timestamps of an environment snapshot: ISO-8601, `YYYY/MM/DD`, syslog and epoch values as UTC.

A naive timestamp takes the environment's zone; a syslog one (no year) the year of the snapshot's
clock (`Timebase`). Public because `envcheck` reads the same files with the same rules.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any, NamedTuple

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}

# A timestamp at the start of a line, optionally in brackets: ISO-8601 (T or space,
# `.`/`,` fraction, Z or offset), `YYYY/MM/DD HH:MM:SS`, or syslog `Jul 08 23:05:28`.
_STAMP = re.compile(
    r"\[?(?:"
    r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[Tt ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    r"(?:[.,](?P<frac>\d{1,9}))?(?P<off>[Zz](?![A-Za-z0-9])|\s?[+-]\d\d:?\d\d(?![\d:]))?"
    r"|(?P<sy>\d{4})/(?P<smo>\d\d)/(?P<sd>\d\d) (?P<sh>\d\d):(?P<smi>\d\d):(?P<ss>\d\d)"
    r"|(?P<mon>(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)) +(?P<md>\d{1,2})"
    r" (?P<mh>\d\d):(?P<mmi>\d\d):(?P<ms>\d\d)"
    r")\]?"
)
_EPOCH = re.compile(r"^\d{9,13}(?:\.\d+)?$")


class Timebase(NamedTuple):
    """How to complete a timestamp: the zone of naive ones, the year of syslog ones."""

    zone: tzinfo
    anchor: datetime | None  # snapshot time near which syslog dates fall
    fallback_year: int

    @classmethod
    def of(cls, zone: tzinfo) -> Timebase:
        """For values that are not log lines: syslog dates (rare there) fall in the current year."""
        return cls(zone, None, datetime.now(UTC).year)

    def syslog(self, month: int, day: int, hour: int, minute: int, second: int) -> datetime:
        year = self.anchor.astimezone(self.zone).year if self.anchor else self.fallback_year
        moment = datetime(year, month, day, hour, minute, second, tzinfo=self.zone).astimezone(UTC)
        if self.anchor and moment - self.anchor > timedelta(days=2):  # December lines in a January snapshot
            moment = datetime(year - 1, month, day, hour, minute, second, tzinfo=self.zone).astimezone(UTC)
        return moment


def stamp_time(match: re.Match[str], timebase: Timebase) -> datetime | None:
    """The UTC datetime of a `_STAMP` match, or None when its fields are out of range."""
    try:
        if match["y"]:
            fraction = (match["frac"] or "").ljust(6, "0")[:6]
            offset = match["off"]
            naive = datetime(
                int(match["y"]), int(match["mo"]), int(match["d"]),
                int(match["h"]), int(match["mi"]), int(match["s"]), int(fraction),
            )  # fmt: skip
            return naive.replace(tzinfo=_offset_zone(offset.strip()) if offset else timebase.zone).astimezone(UTC)
        if match["sy"]:
            naive = datetime(
                int(match["sy"]), int(match["smo"]), int(match["sd"]),
                int(match["sh"]), int(match["smi"]), int(match["ss"]),
            )  # fmt: skip
            return naive.replace(tzinfo=timebase.zone).astimezone(UTC)
        return timebase.syslog(
            _MONTHS[match["mon"].lower()],
            int(match["md"]),
            int(match["mh"]),
            int(match["mmi"]),
            int(match["ms"]),
        )
    except ValueError:
        return None


def _offset_zone(offset: str) -> tzinfo:
    if offset in ("Z", "z"):
        return UTC
    digits = offset[1:].replace(":", "")
    delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return timezone(-delta if offset[0] == "-" else delta)


def parse_timestamp(value: Any, timebase: Timebase) -> datetime | None:
    """A whole value as a UTC time: an ISO-8601/log-style string or epoch seconds/milliseconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _epoch(float(value))
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _EPOCH.match(text):
        return _epoch(float(text))
    match = _STAMP.match(text)
    if match is None or match.end() != len(text):
        return None
    return stamp_time(match, timebase)


def _epoch(seconds: float) -> datetime | None:
    if not math.isfinite(seconds):
        return None
    if seconds > 1e11:  # milliseconds
        seconds /= 1000
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None
