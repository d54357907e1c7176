"""Absolute time ranges, the time expressions of `--since/--until` (issue 9, DESIGN §5), and the stores' clock.

A time expression T is one of:
  - ISO 8601 with or without zone: `2023-01-29T10:03:00+08:00`, `2023-01-29T02:03Z`,
    `2023-01-29T10:03:00,5-05:00` (`,` or `.` fractions);
  - a date and time: `2023-01-29 10:03`, `2023-01-29 10:03:11` (a bare date is its midnight);
  - a time of day: `10:03`, `10:03:11`, on the date of the clock in the environment's zone
    (even when that moment is later than the clock);
  - a relative time ending at the clock: `-2h`, `-30m`, `-1d`, `-90s`, `-1w`, or `now`.

Invariants:
  - every datetime this module returns is timezone-aware; a time written without a zone is
    read in the environment's zone (an IANA name through zoneinfo, else UTC);
  - relative times and windows are exact elapsed time (`-1h` across a DST change is 3600 s
    earlier, never one wall-clock hour), computed in UTC;
  - local times are DST-safe: a wall time that does not exist (spring forward, e.g. 02:30 on
    2023-03-12 in America/New_York) is read with the offset in force before the gap and then
    normalised, so it becomes the real wall time one gap later (03:30-04:00); an ambiguous
    wall time (fall back) takes fold=0, the first of its two occurrences;
  - a `TimeRange` end may be open (None = unbounded); `start <= end` whenever both are set;
    comparisons (order, `==`, hash) are by UTC instant, never by wall time: Python compares two
    datetimes of one tzinfo by wall time ignoring `fold`, and calls an ambiguous wall time unequal
    to every other zone's reading of it (PEP 495), so both would break across a DST fall-back;
  - the canonical text is always the full form `START..END` with offsets, e.g.
    `2023-01-29T10:03:00+08:00..2023-01-29T10:05:00+08:00` (an open end is empty), written
    with seconds and, only when non-zero, microseconds. `parse_range_text` reads that form and
    also the short one of the issue, `2023-01-29T10:03:00+08:00..10:05:00+08:00`, whose end
    takes the start's date;
  - bad input raises `TimeExpressionError` (a `ValueError` and an `evcli.core.errors.BadInput`,
    exit 2) with one line naming the accepted forms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from evcli.core.errors import BadInput

ACCEPTED_FORMS = (
    "ISO 8601 (2023-01-29T10:03:00+08:00), a date and time (2023-01-29 10:03), "
    "a time of day (10:03) or a relative time (-2h, -30m, -1d, now)"
)
WINDOW_FORMS = "a window like 90s, 30m, 2h, 1d or 1w"
MAX_SPAN = timedelta(days=366 * 10)  # a relative time or window longer than this is a typo

_DURATION = re.compile(r"(\d{1,6})([smhdw])")
_UNIT = {"s": timedelta(seconds=1), "m": timedelta(minutes=1), "h": timedelta(hours=1),
         "d": timedelta(days=1), "w": timedelta(weeks=1)}  # fmt: skip
_TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d\d)(?::(\d\d)(?:[.,](\d{1,9}))?)?")
_EXAMPLE = "2023-01-29T10:03:00+08:00..2023-01-29T10:05:00+08:00"
_DATE_TIME = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d.*)?")


class TimeExpressionError(BadInput, ValueError):
    """A time expression, window or range text that cannot be read."""


def zone_named(name: str | None) -> tzinfo:
    """The zone of an IANA name (`Asia/Shanghai`); UTC for None, "" or "UTC"."""
    if not name or name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise TimeExpressionError(f"unknown timezone {name!r} (use an IANA name like Europe/Berlin)") from error


def localize(naive: datetime, tz: tzinfo) -> datetime:
    """A wall time in `tz` as an aware datetime: fold=0 when ambiguous, shifted past a DST gap."""
    if naive.tzinfo is not None:
        return naive
    return naive.replace(tzinfo=tz, fold=0).astimezone(UTC).astimezone(tz)


def parse_duration(text: str) -> timedelta:
    """`90s`, `30m`, `2h`, `1d`, `1w` as a positive timedelta of at most MAX_SPAN."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise TimeExpressionError(f"cannot read {text!r} as a window: use {WINDOW_FORMS}")
    length = int(match.group(1)) * _UNIT[match.group(2)]
    if not timedelta(0) < length <= MAX_SPAN:
        raise TimeExpressionError(f"window {text!r} must be longer than 0s and at most 10 years")
    return length


def parse_time(text: str, *, clock: datetime, tz: tzinfo) -> datetime:
    """A time expression as an aware datetime in `tz` (or in the zone the text names)."""
    expression = text.strip()
    try:
        return _parse(expression, clock.astimezone(tz), tz)
    except TimeExpressionError:
        raise
    except (ValueError, OverflowError):
        pass
    raise TimeExpressionError(f"cannot read time {text!r}: use {ACCEPTED_FORMS}")


def _parse(expression: str, clock: datetime, tz: tzinfo) -> datetime:
    if expression.lower() == "now":
        return clock
    if expression.startswith("-"):
        return _earlier_by(clock, parse_duration(expression[1:]), tz)
    time_of_day = _TIME_OF_DAY.fullmatch(expression)
    if time_of_day:
        hour, minute, second, fraction = time_of_day.groups()
        wall = time(int(hour), int(minute), int(second or 0), _micros(fraction))
        return localize(datetime.combine(clock.date(), wall), tz)
    if _DATE_TIME.fullmatch(expression):
        moment = datetime.fromisoformat(expression)
        return localize(moment, tz) if moment.tzinfo is None else moment
    raise ValueError(expression)


def _earlier_by(clock: datetime, length: timedelta, tz: tzinfo) -> datetime:
    """The instant `length` before `clock`, in `tz`. Subtracting from a zoned datetime directly
    would move its wall time (30m before 03:10 after a spring-forward gap is 02:40, which does
    not exist), so the arithmetic is done in UTC."""
    return (clock.astimezone(UTC) - length).astimezone(tz)


def _micros(fraction: str | None) -> int:
    return int((fraction or "").ljust(6, "0")[:6])


# Zone abbreviations people and programs write after a time ("since 14:00 EDT", PostgreSQL's `%m`): hours east
# of UTC. Upper case only; an environment that goes by one of them (CST in China) is read as its own zone.
ZONE_ABBREVIATIONS: dict[str, float] = {
    "UTC": 0, "GMT": 0, "EDT": -4, "EST": -5, "CDT": -5, "CST": -6, "MDT": -6, "MST": -7, "PDT": -7, "PST": -8,
    "AKDT": -8, "AKST": -9, "HST": -10, "BST": 1, "WET": 0, "WEST": 1, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3,
    "MSK": 3, "IST": 5.5, "SGT": 8, "HKT": 8, "JST": 9, "KST": 9, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
}  # fmt: skip


def abbreviated_zone(name: str) -> tzinfo | None:
    """The fixed zone an abbreviation in ZONE_ABBREVIATIONS stands for, else None."""
    hours = ZONE_ABBREVIATIONS.get(name)
    return None if hours is None else timezone(timedelta(hours=hours))


@dataclass(frozen=True, eq=False)
class TimeRange:
    """A closed range of instants; an end of None is open (unbounded on that side)."""

    start: datetime | None
    end: datetime | None

    def __post_init__(self) -> None:
        for moment in (self.start, self.end):
            if moment is not None and moment.utcoffset() is None:
                raise TimeExpressionError(f"range end {moment.isoformat()} has no zone")
        if self.start is not None and self.end is not None and _instant(self.start) > _instant(self.end):
            raise TimeExpressionError(f"range start {_stamp(self.start)} is after its end {_stamp(self.end)}")

    @classmethod
    def build(
        cls,
        *,
        since: str | None = None,
        until: str | None = None,
        window: str | None = None,
        clock: datetime,
        tz: tzinfo,
    ) -> TimeRange | None:
        """The range a call names, or None when it names none (snapshot: the whole snapshot).

        `window` is relative and ends at the clock; it excludes since/until. A missing
        since/until leaves that end open; the caller bounds it with `bounded`.
        """
        if window is not None and (since is not None or until is not None):
            raise TimeExpressionError("give either a window or since/until, not both")
        local_clock = clock.astimezone(tz)
        if window is not None:
            return cls(_earlier_by(local_clock, parse_duration(window), tz), local_clock)
        if since is None and until is None:
            return None
        return cls(
            None if since is None else parse_time(since, clock=clock, tz=tz),
            None if until is None else parse_time(until, clock=clock, tz=tz),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TimeRange):
            return NotImplemented
        return self._instants() == other._instants()

    def __hash__(self) -> int:
        return hash(self._instants())

    def _instants(self) -> tuple[datetime | None, datetime | None]:
        return (None if self.start is None else _instant(self.start), None if self.end is None else _instant(self.end))

    @property
    def is_bounded(self) -> bool:
        return self.start is not None and self.end is not None

    def bounded(self, first: datetime, last: datetime) -> TimeRange:
        """Open ends filled with `first`/`last` (a snapshot's first/last timestamp, or for a live
        backend clock-1h/clock). When the filled start would follow the end, the range shrinks to
        its end instant (nothing lies in it), so an `until` before the snapshot is empty."""
        end = self.end if self.end is not None else max(last, self.start or last, key=_instant)
        start = self.start if self.start is not None else min(first, end, key=_instant)
        return TimeRange(start, end)

    def contains(self, other: TimeRange | datetime) -> bool:
        """Whether an instant, or all of another range, lies inside this one (ends included)."""
        if isinstance(other, datetime):
            return _after_start(self.start, other) and _before_end(self.end, other)
        inner_start_ok = other.start is not None and _after_start(self.start, other.start)
        inner_end_ok = other.end is not None and _before_end(self.end, other.end)
        return (self.start is None or inner_start_ok) and (self.end is None or inner_end_ok)

    def overlaps(self, other: TimeRange) -> bool:
        """Whether the two ranges share at least one instant."""
        return self.clip(other) is not None

    def clip(self, other: TimeRange) -> TimeRange | None:
        """The intersection of the two ranges (in this range's zones where it sets the end), or
        None when they share no instant."""
        start = _later(self.start, other.start)
        end = _earlier(self.end, other.end)
        if start is not None and end is not None and _instant(start) > _instant(end):
            return None
        return TimeRange(start, end)

    def text(self, tz: tzinfo | None = None) -> str:
        """The canonical `START..END`, each end with its offset (converted to `tz` if given)."""
        return "..".join("" if end is None else _stamp(end if tz is None else end.astimezone(tz))
                         for end in (self.start, self.end))  # fmt: skip

    def __str__(self) -> str:
        return self.text()


def now_iso() -> str:
    """The wall clock in UTC as the stores record it, e.g. `2023-01-29T02:03:00.000000Z`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def aware_time(text: str) -> datetime | None:
    """An ISO time with its zone; None when it is not one (a time without a zone is no point on a timeline)."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def parse_range_text(text: str) -> TimeRange:
    """The canonical text back as a range; also the short form whose end is a time with zone."""
    head, separator, tail = text.strip().partition("..")
    if not separator:
        raise TimeExpressionError(f"cannot read range {text!r}: use START..END, e.g. {_EXAMPLE}")
    try:
        start = _aware(head) if head else None
        if tail and start is not None and tail[:1].isdigit() and tail[2:3] == ":":
            tail = f"{start.date().isoformat()}T{tail}"
        end = _aware(tail) if tail else None
    except ValueError as error:
        raise TimeExpressionError(f"cannot read range {text!r}: use START..END, e.g. {_EXAMPLE}") from error
    return TimeRange(start, end)


def _aware(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no zone")
    return moment


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds")


def _instant(moment: datetime) -> datetime:
    """The UTC reading of an aware datetime: the only form this module compares (a naive one is
    refused as Python's own comparison would, never read in the machine's local zone)."""
    if moment.utcoffset() is None:
        raise TypeError(f"cannot compare naive datetime {moment.isoformat()} with a range")
    return moment.astimezone(UTC)


def _after_start(start: datetime | None, moment: datetime) -> bool:
    return start is None or _instant(start) <= _instant(moment)


def _before_end(end: datetime | None, moment: datetime) -> bool:
    return end is None or _instant(moment) <= _instant(end)


def _later(left: datetime | None, right: datetime | None) -> datetime | None:
    if left is None or right is None:
        return right if left is None else left
    return max(left, right, key=_instant)


def _earlier(left: datetime | None, right: datetime | None) -> datetime | None:
    if left is None or right is None:
        return right if left is None else left
    return min(left, right, key=_instant)
