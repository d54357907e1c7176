"""The time range a question names, resolved on the environment's clock and zone.

Forms read (English and Chinese), first match wins in this order:
  - ISO 8601 / RFC 3339 instants as alerts print them: "2026-03-18T08:05:00Z to 2026-03-18T08:10:00Z",
    "between … and …", "since 2026-03-18T08:05:00Z", "2026-03-18T08:05Z - 08:10Z" (a zone written is that
    zone, none the environment's; one instant alone is ±AROUND);
  - ranges: "between 14:20 and 14:35", "from 14:20 to 14:35", "14:20-14:35", "14:20–14:35",
    "on Mar 3 from 02:00 to 03:30", "2026-03-18 09:14 to 09:27", "2pm to 3:30pm",
    "08:10 到 08:25", "8点10分到8点25分", "3月3日 02:00 到 03:30", "下午3点到4点";
  - one time with a cue: "since/after 14:00" → 14:00..clock, "before 09:00" → open start..09:00,
    a bare hour ending the clause after such a cue ("after 9?", "since 9 o'clock") is 09:00;
    "at/around 09:14" (and 09:14左右) → ±AROUND (5 minutes) around it; "14:00之后", "09:00之前";
  - a day part: "this morning" (06:00–12:00), "this afternoon" (12:00–18:00), "this evening"/"tonight"
    (18:00–24:00), "last night"/昨晚 (18:00 the day before – 06:00), 今天凌晨 (00:00–06:00),
    上午/下午/晚上 of 今天/昨天/前天; a day: "today"/今天 (00:00–clock), "yesterday"/昨天, 前天,
    "Mar 3", "2026-03-18", "3月3日" (the whole day);
  - a window ending at the clock: "last 20 minutes", "past hour", "in the last 2h", "最近 20 分钟",
    "过去一小时" (AskedRange.relative = "20m");
  - a zone written after clock times ("between 08:05 and 08:10 UTC", "since 08:05Z", "at 16:05 +08:00",
    "since 14:00 EDT") reads them in that zone; every range is stated in the environment's zone.

Invariants:
  - a time without a date is on the clock's date in the zone; when a time-of-day range (or a single
    time) would start more than LATE after the clock, it means the previous day (a time just after a
    snapshot's clock, its newest event, is the same day: "around 18:03" with the last line at 18:02);
    an end before its start is on the next day (23:50–00:10);
  - "Mar 3" without a year is in the clock's year, or the year before when that day is after the clock;
  - 12-hour times: am/pm (and 上午/下午/晚上) set the hour; a range end's meridiem carries to a bare
    start ("2 to 3:30pm") and a start's to a bare end ("下午3点到4点");
  - versions ("v1.2"), ports ("host:8080"), durations ("14:20 minutes") and out-of-range clock
    values are never times;
  - wall times are localised DST-safely (evcli.core.time.localize); at a range's start or end a wall
    time that a DST change skips or repeats reads as its earliest / latest instant, so the range holds
    everything the words can mean (Berlin "02:30 to 03:15" on the spring-forward day is 01:30+01:00..
    03:15+02:00); windows are exact elapsed time;
  - a range whose end precedes its start (after all the rules above) is no range: never an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo

from evcli.backends.base import parse_window
from evcli.contracts import AskedRange
from evcli.core.text import MONTHS
from evcli.core.time import ZONE_ABBREVIATIONS, TimeRange, abbreviated_zone, localize
from evcli.scope.match import Spans
from evcli.scope.windows import window_matches, zh_number

AROUND = timedelta(minutes=5)  # "at 09:14" means 09:09–09:19
LATE = AROUND  # how far after the clock a time of day may start and still be on the clock's date

# --- atoms -------------------------------------------------------------------------

_ZH_NUM = "[零一二两三四五六七八九十]{1,3}"
_PERIOD = r"(?:凌晨|早上|早晨|上午|中午|下午|傍晚|晚上|夜里|半夜)"
_AMPM = r"(?:[ap]\.?m\.?)(?![A-Za-z])"
_CLOCK = (
    rf"(?:{_PERIOD}\s*)?"
    r"(?:(?<![\w:.])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\d:])(?:\s*" + _AMPM + r")?"
    r"(?!\s*(?:min|mins|minutes|secs?|seconds|hours?|hrs?)\b)"
    r"|(?<![\w:.])(?:1[0-2]|0?\d)\s*" + _AMPM + ""
    rf"|(?:\d{{1,2}}|{_ZH_NUM})\s*[点點时](?:\s*(?:(?:\d{{1,2}}|{_ZH_NUM})\s*分?|半|一刻|整))?"
    r"|\b(?:noon|midday|midnight)\b)"
)
_MONTHS = tuple(month.casefold() for month in MONTHS)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DAY_WORD = r"(?:yesterday|today|昨天|昨日|今天|今日|前天)"
_DATE = (
    r"(?:(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)"
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s*\d{{4}}\b)?"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}(?:\s+\d{{4}}\b)?"
    r"|(?:\d{4}\s*年\s*)?\d{1,2}\s*月\s*\d{1,2}\s*[日号]"
    rf"|{_DAY_WORD})"
)
_CONNECT = r"(?:to|until|till|through|thru|-|–|—|~|到|至)"

# --- forms, most specific first ----------------------------------------------------

_ON = r"(?:(?:on|from)\s+)?"
_RANGE = re.compile(
    rf"(?:{_ON}(?P<d1>{_DATE})[\s,]*)?(?:between\s+|from\s+|从\s*)?(?P<t1>{_CLOCK})"
    rf"\s*(?:(?<=\S\s)and\s+|(?<=\d)and\s+|{_CONNECT})\s*(?:(?P<d2>{_DATE})\s*)?(?P<t2>{_CLOCK})"
    rf"(?:\s*(?:on\s+)?(?P<d3>{_DATE}))?",
    re.IGNORECASE,
)
_BARE_HOURS = re.compile(  # "between 9 and 10", "from 14 to 16 o'clock": both bare, the second ending the clause
    r"\b(?:between|from)\s+(?P<t1>[01]?\d|2[0-3])\s*(?:and|to|-|–)\s*"
    r"(?P<t2>(?<![\w:.])(?:[01]?\d|2[0-3])(?:\s*o'?clock\b|(?=\s*(?:[?.!,;]|$))))",
    re.IGNORECASE,
)
_BARE_START = re.compile(  # "from 2 to 3:30pm": a bare hour only before an end with am/pm
    rf"(?:(?:between|from)\s+)(?P<t1>\d{{1,2}})\s*(?:and|to|-|–)\s*(?P<t2>(?:1[0-2]|0?\d)(?::[0-5]\d)?\s*{_AMPM})",
    re.IGNORECASE,
)
# "since 9", "after 9?", "before 9 o'clock": a bare hour only with a cue and ending the clause ("after 9 retries" is none)
_BARE_HOUR = r"(?<![\w:.])(?:[01]?\d|2[0-3])(?:\s*o'?clock\b|(?=\s*(?:[?.!,;]|$)))"
_CUED = re.compile(
    rf"\b(?P<cue>since|after|before|until|till|at|around|about|near|circa|approximately|approx\.?)\s+"
    rf"(?:(?P<d1>{_DATE})[\s,]*(?:at\s+)?)?(?P<t1>{_CLOCK}|{_BARE_HOUR})(?:\s*(?:on\s+)?(?P<d3>{_DATE}))?",
    re.IGNORECASE,
)
# a clock time no cue claims ("13:48 发生了什么变化", "errors 09:14?") is one instant, as "at 09:14"
_BARE_INSTANT = re.compile(rf"(?P<t1>{_CLOCK})")
_ZH_CUED = re.compile(
    rf"(?:从\s*)?(?:(?P<d1>{_DATE})\s*)?(?P<t1>{_CLOCK})\s*(?P<cue>之后|以后|后|起|开始|之前|以前|前|左右|前后|附近)"
)
# ISO 8601 / RFC 3339 instants as alerts and log lines print them ("2026-03-18T09:05:00Z",
# "2026-03-18 08:05:00+00:00"): a zone written is that zone, none is the environment's
_ISO_TIME = r"\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:\s?(?:Z|UTC|[+-]\d{2}:?\d{2})(?![\w:]))?"
_ISO = rf"\d{{4}}-\d{{2}}-\d{{2}}[T ]{_ISO_TIME}"
_ISO_RANGE = re.compile(  # the end may be a time alone: "2026-03-18T08:05Z - 08:10Z"
    rf"(?:\b(?P<cue>since|after|before|until|till|from|between|at|around)\s+)?(?<![\w:.-])(?P<a>{_ISO})"
    rf"(?:\s*(?:{_CONNECT}|\.\.|and)\s*(?P<b>{_ISO}|(?<![\w:.]){_ISO_TIME}))?",
    re.IGNORECASE,
)
# a zone written after a clock time or range ("between 08:05 and 08:10 UTC", "since 08:05Z")
# and the abbreviations on-call engineers write ("since 14:00 EDT", "2:05pm PST"), upper-case only
_ZONE_AFTER = re.compile(
    r"\s?(?P<zone>Z|UTC|GMT|[+-]\d{2}:\d{2}|(?-i:" + "|".join(ZONE_ABBREVIATIONS) + r"))(?![\w:])", re.IGNORECASE
)
_SINCE_DAY = re.compile(
    rf"\b(?P<cue>since|after|from|between)\s+(?P<d1>{_DATE})(?:\s*(?:{_CONNECT}|and)\s*(?P<d2>{_DATE}))?",
    re.IGNORECASE,
)
_DAY_PART = re.compile(
    r"\b(?:(?P<enday>yesterday|today)\s+(?P<enpart>morning|afternoon|evening))\b"
    r"|\b(?P<en>this\s+morning|this\s+afternoon|this\s+evening|tonight|last\s+night|overnight)\b"
    rf"|(?P<day>{_DAY_WORD})?\s*(?P<part>凌晨|早上|上午|中午|下午|傍晚|晚上|夜里)|(?P<zh>昨晚|昨夜|今晚|今早)",
    re.IGNORECASE,
)
_DATE_ONLY = re.compile(rf"(?:\bon\s+)?(?P<d1>{_DATE})", re.IGNORECASE)

# day parts: (first hour, last hour) on the day; 24 ends at the next midnight
_PARTS = {
    "凌晨": (0, 6),
    "早上": (6, 12),
    "上午": (6, 12),
    "中午": (11, 14),
    "下午": (12, 18),
    "傍晚": (17, 20),
    "晚上": (18, 24),
    "夜里": (18, 30),
    "this morning": (6, 12),
    "this afternoon": (12, 18),
    "this evening": (18, 24),
    "tonight": (18, 24),
    "今晚": (18, 24),
    "今早": (6, 12),
}
_LAST_NIGHT = ("last night", "overnight", "昨晚", "昨夜")  # 18:00 the day before – 06:00

# --- clock times -------------------------------------------------------------------


@dataclass(frozen=True)
class _Clock:
    hour: int
    minute: int
    second: int
    meridiem: str | None  # "am", "pm" or None when the text does not say

    def at(self) -> time:
        return time(self.hour, self.minute, self.second)

    def with_meridiem(self, meridiem: str | None) -> _Clock:
        if self.meridiem or meridiem is None:
            return self
        return _meridiem(self.hour, self.minute, self.second, meridiem)


def _meridiem(hour: int, minute: int, second: int, meridiem: str | None) -> _Clock:
    if meridiem == "pm" and hour < 12:
        hour += 12
    elif meridiem == "am" and hour == 12:
        hour = 0
    return _Clock(hour, minute, second, meridiem)


_PM_PERIODS = ("下午", "傍晚", "晚上", "夜里", "半夜")
_AM_PERIODS = ("凌晨", "早上", "早晨", "上午")


def _read_clock(text: str) -> _Clock | None:
    lowered = text.lower().replace(".", "")
    if lowered.strip() in ("noon", "midday"):
        return _Clock(12, 0, 0, "pm")
    if lowered.strip() == "midnight":
        return _Clock(0, 0, 0, "am")
    meridiem = "pm" if "pm" in lowered or text.startswith(_PM_PERIODS) else None
    meridiem = "am" if "am" in lowered or text.startswith(_AM_PERIODS) else meridiem
    if text.startswith("中午"):
        meridiem = "pm"
    numbers = re.findall(rf"\d+|{_ZH_NUM}", re.sub(_PERIOD, "", text))
    values = [zh_number(number) for number in numbers]
    if not values or any(value is None for value in values):
        return None
    hour, minute, second = ([int(value or 0) for value in values] + [0, 0])[:3]
    if "半" in text:
        minute = 30
    elif "一刻" in text:
        minute = 15
    if hour > 23 or minute > 59 or second > 59 or (meridiem and hour > 12):
        return None
    return _meridiem(hour, minute, second, meridiem)


# --- dates -------------------------------------------------------------------------


def _read_date(text: str | None, today: date) -> date | None:
    if not text:
        return None
    lowered = text.lower().strip()
    shift = {"yesterday": 1, "昨天": 1, "昨日": 1, "today": 0, "今天": 0, "今日": 0, "前天": 2}.get(lowered)
    if shift is not None:
        return today - timedelta(days=shift)
    iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", lowered)
    zh = re.fullmatch(r"(?:(\d{4})\s*年\s*)?(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]", lowered)
    if iso or zh:
        year, month, day = (iso or zh).groups()  # type: ignore[union-attr]
        return _day(int(year) if year else None, int(month), int(day), today)
    month_name = re.search(r"[a-z]{3}", lowered)
    numbers = re.findall(r"\d+", lowered)
    if month_name is None or month_name.group() not in _MONTHS or not numbers:
        return None
    year = next((int(number) for number in numbers if len(number) == 4), None)
    day = next(int(number) for number in numbers if len(number) <= 2)
    return _day(year, _MONTHS.index(month_name.group()) + 1, day, today)


def _day(year: int | None, month: int, day: int, today: date) -> date | None:
    try:
        if year is not None:
            return date(year, month, day)
        found = date(today.year, month, day)
        return found if found <= today else date(today.year - 1, month, day)
    except ValueError:
        return None


# --- resolution ----------------------------------------------------------------------


class _Resolver:
    def __init__(self, clock: datetime, tz: tzinfo) -> None:
        self.clock = clock.astimezone(tz)
        self.tz = tz

    def wall(self, day: date, moment: time | int, edge: str | None = None) -> datetime:
        """A wall time on a day (an int is an hour, 24 and more run into the next days). At a range's
        `edge` a wall time a DST change makes ambiguous or skips reads as its earliest ("start") or
        latest ("end") instant, so the range holds every instant the words can mean."""
        if isinstance(moment, int):
            day, moment = day + timedelta(days=moment // 24), time(moment % 24)
        naive = datetime.combine(day, moment)
        first = localize(naive, self.tz)
        if edge is None:
            return first
        other = naive.replace(tzinfo=self.tz, fold=1).astimezone(UTC).astimezone(self.tz)
        return (min if edge == "start" else max)(first, other, key=lambda value: value.astimezone(UTC))

    def between(self, day: date | None, start: time, end: time) -> TimeRange | None:
        """A time-of-day range: on `day`, else on the clock's date or, when it would start after
        the clock (beyond LATE), the day before; an end before the start is on the next day."""
        first = day or self.clock.date()
        if day is None and self.wall(first, start) > self.clock + LATE:
            first -= timedelta(days=1)
        last = first + timedelta(days=1) if end < start else first
        return span(self.wall(first, start, "start"), self.wall(last, end, "end"))

    def moment(self, day: date | None, at: time) -> datetime:
        first = day or self.clock.date()
        if day is None and self.wall(first, at) > self.clock + LATE:
            first -= timedelta(days=1)
        return self.wall(first, at)

    def whole_day(self, day: date) -> TimeRange | None:
        end = self.wall(day, 24, "end")
        return span(self.wall(day, 0, "start"), min(end, self.clock) if day == self.clock.date() else end)


def span(start: datetime, end: datetime) -> TimeRange | None:
    """The range from start to end, or None when the words name an end before their start."""
    return TimeRange(start, end) if start.astimezone(UTC) <= end.astimezone(UTC) else None


def find_range(question: str, spans: Spans, *, clock: datetime, tz: tzinfo) -> AskedRange | None:
    """The first range the question names (claiming its text), or None. A zone written after clock
    times ("08:05 to 08:10 UTC") reads them in that zone; the range is stated in the environment's."""
    resolver = _Resolver(clock, tz)
    readers = (_iso_ranges, _ranges, _bare_ranges, _cued, _zh_cued, _windows, _since_day, _day_parts, _dates, _instants)
    for reader in readers:
        for match, found in reader(question, resolver):
            if found is None or found[0] is None:
                continue
            end = match.end()
            zone = _ZONE_AFTER.match(question, end) if reader in (_ranges, _bare_ranges, _cued) else None
            if zone is not None:
                zoned = _Resolver(clock, _zone(zone["zone"], tz, clock))
                found = next((f for m, f in reader(question, zoned) if m.start() == match.start()), found)
                end = zone.end()
            if found is not None and found[0] is not None and spans.claim(match.start(), end):
                asked_range, relative = found[0], found[1]
                instant = found[2] if len(found) > 2 else None
                text = question[match.start() : end].strip()
                return AskedRange(
                    text=text,
                    range=asked_range.text(tz),
                    relative=relative,
                    instant=instant.astimezone(tz).isoformat() if instant is not None else None,
                )
    return None


def _zone(text: str, tz: tzinfo | None = None, clock: datetime | None = None) -> tzinfo:
    """`Z`, `UTC`, `GMT`, `+08:00` or an abbreviation (`EDT`) as a fixed zone; the environment's own zone
    when it goes by that abbreviation (CST in Asia/Shanghai is China's, not US Central)."""
    if text.upper() in ("Z", "UTC", "GMT"):
        return UTC
    named = abbreviated_zone(text)
    if named is not None:
        if tz is not None and clock is not None and clock.astimezone(tz).tzname() == text:
            return tz
        return named
    sign = 1 if text[0] == "+" else -1
    hours, minutes = int(text[1:3]), int(text[-2:])
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _instant(text: str, resolver: _Resolver, like: datetime | None = None) -> datetime | None:
    """An ISO 8601 instant; a bare time takes the date (and zone) of `like`; no zone: the environment's."""
    cleaned = re.sub(r"\s?(?:UTC|Z)$", "+00:00", text.strip(), flags=re.IGNORECASE).replace(",", ".")
    cleaned = re.sub(r"\s(?=[+-]\d{2}:?\d{2}$)", "", cleaned)
    cleaned = re.sub(r"([+-]\d{2})(\d{2})$", r"\1:\2", cleaned)
    if like is not None and re.match(r"\d{2}:", cleaned):
        zoned = bool(re.search(r"[+-]\d{2}:\d{2}$", cleaned))
        cleaned = f"{like.date().isoformat()}T{cleaned}" + ("" if zoned else like.strftime("%z"))
        cleaned = re.sub(r"([+-]\d{2})(\d{2})$", r"\1:\2", cleaned)
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else localize(moment, resolver.tz)


def _iso_ranges(question: str, resolver: _Resolver):
    for match in _ISO_RANGE.finditer(question):
        start = _instant(match["a"], resolver)
        end = _instant(match["b"], resolver, like=start) if match["b"] and start is not None else None
        cue = (match["cue"] or "").lower()
        if start is None or (match["b"] and end is None):
            yield match, None
        elif end is not None:
            yield match, (span(start, end), None)
        elif cue in ("since", "after", "from"):
            yield match, (span(start, max(start, resolver.clock)), None)
        elif cue in ("before", "until", "till"):
            yield match, (TimeRange(None, start), None)
        else:  # one instant: around it, as "at 09:14"
            yield match, _around(start)


_Found = (
    tuple[TimeRange | None, str | None] | tuple[TimeRange | None, str | None, datetime]
)  # (range, relative[, instant])


def _ranges(question: str, resolver: _Resolver):
    for match in _RANGE.finditer(question):
        start, end = _read_clock(match["t1"]), _read_clock(match["t2"])
        if start is None or end is None:
            yield match, None
            continue
        start, end = start.with_meridiem(end.meridiem), end.with_meridiem(start.meridiem)
        day = _read_date(match["d1"] or match["d3"], resolver.clock.date())
        if day is None and (match["d1"] or match["d3"]):
            yield match, None  # a day that does not exist (Feb 30): no range rather than today's
            continue
        yield match, _range_on(resolver, day, match["d2"], start.at(), end.at())


def _range_on(resolver: _Resolver, day: date | None, end_day_text: str | None, start: time, end: time) -> _Found:
    end_day = _read_date(end_day_text, resolver.clock.date())
    if end_day is not None and day is not None and end_day >= day:
        return span(resolver.wall(day, start, "start"), resolver.wall(end_day, end, "end")), None
    return resolver.between(day, start, end), None


def _bare_ranges(question: str, resolver: _Resolver):
    for match in _BARE_HOURS.finditer(question):  # "between 9 and 10": hours of the clock's day
        first, last = int(match["t1"]), _read_clock(re.sub(r"\s*o'?clock", "", match["t2"]) + ":00")
        if last is not None and first < last.hour:
            yield match, (resolver.between(None, time(first), last.at()), None)
    for match in _BARE_START.finditer(question):
        end = _read_clock(match["t2"])
        hour = int(match["t1"])
        if end is None or hour > 12:
            yield match, None
            continue
        start = _meridiem(hour, 0, 0, end.meridiem)
        yield match, (resolver.between(None, start.at(), end.at()), None)


def _cued(question: str, resolver: _Resolver):
    for match in _CUED.finditer(question):
        yield match, _one_time(resolver, match, match["cue"].lower())


def _zh_cued(question: str, resolver: _Resolver):
    cues = {"之后": "since", "以后": "since", "后": "since", "起": "since", "开始": "since",
            "之前": "before", "以前": "before", "前": "before"}  # fmt: skip
    for match in _ZH_CUED.finditer(question):
        yield match, _one_time(resolver, match, cues.get(match["cue"], "around"))


def _one_time(resolver: _Resolver, match: re.Match[str], cue: str) -> _Found | None:
    clock = _read_clock(match["t1"])
    if clock is None:
        return None
    day = _read_date(match.groupdict().get("d1") or match.groupdict().get("d3"), resolver.clock.date())
    moment = resolver.moment(day, clock.at())
    if cue in ("since", "after"):
        return span(moment, max(moment, resolver.clock)), None
    if cue in ("before", "until", "till"):
        return TimeRange(None, moment), None
    return _around(moment)


def _around(moment: datetime) -> _Found:
    """One instant the question names ("at 09:14", "around 18:33"): the range around it, and the instant."""
    return TimeRange(moment - AROUND, moment + AROUND), None, moment


def _windows(question: str, resolver: _Resolver):
    for match, label in window_matches(question):
        try:
            parse_window(label, resolver.clock)
        except ValueError:
            continue
        yield match, (TimeRange.build(window=label, clock=resolver.clock, tz=resolver.tz), label)


_ZH_SINCE_DAY = re.compile(rf"(?:从\s*)?(?P<d1>{_DATE})\s*(?P<cue>之后|以后|起|开始|以来)")


def _since_day(question: str, resolver: _Resolver):
    yield from _zh_since_day(question, resolver)
    yield from _en_since_day(question, resolver)


def _zh_since_day(question: str, resolver: _Resolver):
    """ "3月16日之后", "2099年1月1日以来": from that day's start (之后: the next day's) to the clock."""
    for match in _ZH_SINCE_DAY.finditer(question):
        first = _read_date(match["d1"], resolver.clock.date())
        if first is None:
            yield match, None
            continue
        start = resolver.wall(first + timedelta(days=1) if match["cue"] in ("之后", "以后") else first, 0, "start")
        yield match, (span(start, max(start, resolver.clock)), None)


def _en_since_day(question: str, resolver: _Resolver):
    """Days as a range: "since D" (D's start to the clock), "after D" (the next day's start to the clock),
    "from/between D1 to/and D2" (D1's start to D2's end, the clock at the latest). A day after the clock
    is kept as asked (an empty range at its start: nothing was logged then), never dropped for the whole
    snapshot."""
    for match in _SINCE_DAY.finditer(question):
        cue = match["cue"].lower()
        first = _read_date(match["d1"], resolver.clock.date())
        last = _read_date(match["d2"], resolver.clock.date()) if match["d2"] else None
        if first is None or (match["d2"] and (last is None or last < first)):
            yield match, None
        elif last is not None:  # a span of days, inclusive
            start, end = resolver.wall(first, 0, "start"), resolver.wall(last, 24, "end")
            yield match, (span(start, max(start, min(end, resolver.clock))), None)
        elif cue in ("since", "after"):
            start = resolver.wall(first + timedelta(days=1) if cue == "after" else first, 0, "start")
            yield match, (span(start, max(start, resolver.clock)), None)
        else:  # "from D" alone is D's lines ("logs from yesterday"): the date reader's
            yield match, None


def _day_parts(question: str, resolver: _Resolver):
    today = resolver.clock.date()
    for match in _DAY_PART.finditer(question):
        if match["enday"]:  # "yesterday evening": that day's part
            day = _read_date(match["enday"], today) or today
            first, last = _PARTS["this " + match["enpart"].lower()]
            start, end = resolver.wall(day, first, "start"), resolver.wall(day, last, "end")
            yield match, (span(start, max(start, min(end, resolver.clock))), None)
            continue
        name = (match["en"] or match["zh"] or match["part"]).lower()
        name = re.sub(r"\s+", " ", name)
        day = _read_date(match["day"], today) or today
        if name in _LAST_NIGHT:
            yesterday = today - timedelta(days=1)
            yield match, (span(resolver.wall(yesterday, 18, "start"), resolver.wall(today, 6, "end")), None)
            continue
        first, last = _PARTS[name]
        start, end = resolver.wall(day, first, "start"), resolver.wall(day, last, "end")
        if start > resolver.clock and match["day"] is None and not match["en"]:
            start, end = (
                resolver.wall(day - timedelta(days=1), first, "start"),
                resolver.wall(day - timedelta(days=1), last, "end"),
            )
        yield match, (span(start, end if start > resolver.clock else min(end, resolver.clock)), None)


def _dates(question: str, resolver: _Resolver):
    for match in _DATE_ONLY.finditer(question):
        day = _read_date(match["d1"], resolver.clock.date())
        yield match, None if day is None or day > resolver.clock.date() else (resolver.whole_day(day), None)


def _instants(question: str, resolver: _Resolver):
    """The one clock time of a question that writes one and no date ("Feb 30 from 02:00 to 03:00" names a
    range no reader could read: none of its times is a moment on its own)."""
    matches = list(_BARE_INSTANT.finditer(question))
    if len(matches) == 1 and not _DATE_ONLY.search(question):
        yield matches[0], _one_time(resolver, matches[0], "around")
