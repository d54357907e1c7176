"""Times as claims and evidence write them: ISO, syslog, English prose and Chinese dates, clocks, zones
(Z, +08:00, "(UTC+8)"), compared at the precision written and as the same instant across zones; the
two ends of a range of times.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from functools import cache, lru_cache
from operator import itemgetter
from typing import Any, NamedTuple

from evcli.core.text import MONTHS

_MONTH = rf"(?:{'|'.join(MONTHS)})[a-z]*\.?"
_CLOCK = r"(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?)?"
# A date as ISO writes it, as syslog and English prose write it ("Mar 18", "March 18, 2026", "18 Mar 2026"),
# or as Chinese writes it (2026年3月18日).
_DATE = (
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})"
    rf"|(?P<month_name>{_MONTH})\s+(?P<day_m>\d{{1,2}})(?!\d)(?:,?\s+(?P<year_m>\d{{4}})(?!\d|:))?"
    rf"|(?P<day_d>\d{{1,2}})\s+(?P<month_name_d>{_MONTH})(?:\s+(?P<year_d>\d{{4}})(?!\d|:))?"
    r"|(?:(?P<year_zh>\d{4})\s*年\s*)?(?P<month_zh>\d{1,2})\s*月\s*(?P<day_zh>\d{1,2})\s*[日号]"
)
# A zone after a clock: Z, +08:00, +0800, UTC, or a named offset such as "(UTC+8)" or "GMT-5".
_ZONE = r"(?P<zone>Z|[+-]\d{2}:?\d{2}|\s?\(?(?:UTC|GMT)(?:\s?[+-]\d{1,2}(?::?\d{2})?)?\)?)"


# A date with or without its clock, or a clock alone (never an empty match: finditer would try every position),
# not inside a name or a path (/data/tmp/export-2026-07-08). Every time starts with a digit or a month's capital:
# the lookahead for one first rejects the other positions before the lookbehind and the alternatives are tried.
@cache
def time_pattern() -> re.Pattern[str]:
    """The time pattern, compiled on first use (`evcli gate` on a session without times never pays for it)."""
    return re.compile(
        rf"(?=[\d{''.join(sorted({month[0] for month in MONTHS}))}])"
        rf"(?<![A-Za-z0-9_:/-])(?:(?:{_DATE})(?:(?:[T ]|,?\s+|\s*)(?:{_CLOCK}))?|{_CLOCK.replace('?P<', '?P<c_')})"
        rf"{_ZONE}?(?!\d|:\d)"
    )


class Clock(NamedTuple):
    """A time as written: date and clock parts, each None when not written, and the zone's offset
    from UTC in minutes (None: no zone written). A tuple: made for every time of every text read."""

    year: int | None
    month: int | None
    day: int | None
    hour: int | None
    minute: int | None
    second: int | None
    fraction: str | None
    offset: int | None = None

    @property
    def date(self) -> str | None:
        """The date as ISO writes it, when year, month and day are all written."""
        if None in (self.year, self.month, self.day):
            return None
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"

    def matches(self, evidence: Clock) -> bool:
        """Stated at its own precision (09:11:23 for 09:11:23.231, 09:11 for 09:11:23, Mar 18 for
        2026-03-18); when both say their zone, the same instant in another zone (07:00Z for 08:00+01:00)."""
        stated = self.in_zone_of(evidence)
        if stated.month is not None and (stated.month, stated.day) != (evidence.month, evidence.day):
            return False
        if stated.year is not None and stated.year != evidence.year:
            return False
        if stated.hour is None:
            return True
        if (stated.hour, stated.minute) != (evidence.hour, evidence.minute):
            return False
        if stated.second is not None and stated.second != (evidence.second or 0):
            return False
        if stated.fraction is not None:
            written = evidence.fraction or ""
            return written.ljust(len(stated.fraction), "0")[: len(stated.fraction)] == stated.fraction
        return True

    def in_zone_of(self, evidence: Clock) -> Clock:
        """This time moved to the evidence's zone (itself when either zone or the clock is not written)."""
        if self.offset is None or evidence.offset is None or self.offset == evidence.offset or self.hour is None:
            return self
        minute = self.minute or 0
        year = self.year if self.year is not None else evidence.year
        if self.month is not None and year is not None and self.day is not None:
            try:
                moved = datetime(year, self.month, self.day, self.hour, minute) + timedelta(
                    minutes=evidence.offset - self.offset
                )
            except ValueError:
                return self
            return self._replace(
                year=moved.year if self.year is not None else None,
                month=moved.month,
                day=moved.day,
                hour=moved.hour,
                minute=moved.minute,
                offset=evidence.offset,
            )
        total = (self.hour * 60 + minute + evidence.offset - self.offset) % (24 * 60)
        return self._replace(hour=total // 60, minute=total % 60, offset=evidence.offset)


_ZONE_OFFSET = re.compile(r"([+-])(\d{1,2})(?::?(\d{2}))?")


@lru_cache(maxsize=256)  # a session writes a few zones many times; a hostile one cannot grow it
def _offset(zone: str | None) -> int | None:
    """Minutes east of UTC a written zone names."""
    if not zone:
        return None
    found = _ZONE_OFFSET.search(zone)
    if found is None:
        return 0  # Z, UTC, GMT
    sign, hours, minutes = found.groups()
    return (-1 if sign == "-" else 1) * (int(hours) * 60 + int(minutes or 0))


# What every time _TIME reads contains (a clock's colon, an ISO or Chinese date, a month's name): most texts
# hold none, and this is tried in a fraction of _TIME's time. Each alternative starts with a literal (the ISO
# date is found from its first dash), so the engine tries only the positions where one can start.
_TIME_HINT = re.compile(rf":\d|-(?<=\d{{4}}-)\d\d-\d\d|月|{'|'.join(MONTHS)}")


# The groups of time_pattern read for a time, in this order (by position in `match.groups()`: read by name,
# or as a groupdict, they cost more).
_GROUPS = (
    *("hour", "c_hour", "minute", "c_minute", "second", "c_second", "fraction", "c_fraction"),
    *("year", "year_m", "year_d", "year_zh", "month_name", "month_name_d"),
    *("month", "month_zh", "day", "day_m", "day_d", "day_zh", "zone"),
)


@cache
def _read_groups() -> Callable[[tuple[str | None, ...]], tuple[Any, ...]]:
    """_GROUPS of `match.groups()` of a time_pattern match."""
    first, *others = (time_pattern().groupindex[name] - 1 for name in _GROUPS)
    return itemgetter(first, *others)


def clocks(text: str) -> Iterator[tuple[re.Match[str], Clock]]:
    if _TIME_HINT.search(text) is None:
        return
    read = _read_groups()
    for match in time_pattern().finditer(text):
        clock = _clock(read(match.groups()))
        if clock is not None:
            yield match, clock


def _clock(groups: tuple[Any, ...]) -> Clock | None:
    """The time written in _GROUPS (each a str or None), or None when it is no time (25:00, month 13)."""
    (
        hour, c_hour, minute, c_minute, second, c_second, fraction, c_fraction,
        year, year_m, year_d, year_zh, month_name, month_name_d,
        month, month_zh, day, day_m, day_d, day_zh, zone,
    ) = groups  # fmt: skip
    hour, minute = hour or c_hour, minute or c_minute
    if hour is not None and (int(hour) > 23 or int(minute) > 59):
        return None
    month_name = month_name or month_name_d
    month = MONTHS.index(month_name[:3]) + 1 if month_name else month or month_zh
    day = day or day_m or day_d or day_zh
    if month is not None and not (1 <= int(month) <= 12 and 1 <= int(day) <= 31):
        return None
    year, second = year or year_m or year_d or year_zh, second or c_second
    return Clock(
        int(year) if year else None,
        int(month) if month else None,
        int(day) if day else None,
        int(hour) if hour else None,
        int(minute) if minute else None,
        int(second) if second else None,
        fraction or c_fraction,
        _offset(zone) if hour else None,
    )


# What joins the two ends of a range of times ("09:05..09:12", "09:05 to 09:12", "9:05–9:12", "9点05至9点12").
_RANGE_JOIN = re.compile(r"\s*(?:\.\.|–|—|-|~|to|until|till|至|到)\s*", re.IGNORECASE)


def range_ends(text: str, matches: list[re.Match[str]]) -> dict[int, str]:
    """For times written as a range, their roles: the first end "first", the second "last"."""
    ends: dict[int, str] = {}
    for index in range(len(matches) - 1):
        if _RANGE_JOIN.fullmatch(text, matches[index].end(), matches[index + 1].start()):
            ends.setdefault(index, "first")
            ends[index + 1] = "last"
    return ends
