"""The time range a question names, resolved on the environment's clock and zone.

The words and the language-specific forms are data: the `time.*` tables of every grammar file
(evcli/scope/grammar/<language>.toml, read by evcli.scope.time_language); this module holds only the
language-neutral forms (ISO 8601 instants, 24-hour clock digits, zones written after a time) and what each
kind of form means. Forms read, first match wins in this order (a question may mix languages: every
language's forms of one kind are read together, each slot with every language's words):
  - ISO 8601 / RFC 3339 instants as alerts print them: "2026-03-18T08:05:00Z to 2026-03-18T08:10:00Z",
    "between … and …", "since 2026-03-18T08:05:00Z", "2026-03-18T08:05Z - 08:10Z" (a zone written is that
    zone, none the environment's; one instant alone is ±AROUND); its cue words are `time.iso`'s;
  - ranges (`time.range`): "between 14:20 and 14:35", "14:20-14:35", "on Mar 3 from 02:00 to 03:30",
    "2pm to 3:30pm", "08:10 到 08:25", "8点10分到8点25分", "3月3日 02:00 到 03:30", "下午3点到4点"; two bare hours
    (`time.hours`: "between 9 and 10?") and a bare hour before a time with am/pm (`time.meridiem_range`);
  - one time with a cue (`time.one_time`: since / before / around): "since 14:00" → 14:00..clock,
    "before 09:00" → open start..09:00, "at/around 09:14" and "09:14左右" → ±AROUND (5 minutes) around it;
    a bare hour ending the clause ("after 9?", "since 9 o'clock") is 09:00;
  - a window ending at the clock (evcli.scope.windows): "last 20 minutes", "最近 20 分钟" (relative = "20m");
  - days as a range (`time.day_range`): "since D", "after D" (from the next day), "from D1 to D2", "3月16日以来";
  - a day's part (`time.day_part`, hours in `time.day_parts`): "this morning", "yesterday evening",
    "last night"/昨晚 (18:00 the day before – 06:00), 今天凌晨, 下午 (today's, or yesterday's when it has
    not begun yet);
  - a date alone (`time.date_only`): "Mar 3", "2026-03-18", "3月3日", "yesterday" (the whole day);
  - the one clock time of a question that writes no date, uncued ("13:48 发生了什么变化"): ±AROUND;
  - a zone written after clock times ("between 08:05 and 08:10 UTC", "since 08:05Z", "at 16:05 +08:00",
    "since 14:00 EDT", "08:05Z到08:10Z": after either time or both) reads them in that zone; every range is
    stated in the environment's zone. Times written in two zones, or an offset no zone has ("+25:00"), are
    no range.
A clock time is 24-hour digits (with `time.clock.after` words: "2:30pm", "2pm"), a form of `time.clock`
("8点半") or a word of `time.clock.named` ("noon"), after an optional `time.clock.before` word ("下午"); a
date is ISO digits, a form of `time.date` ("Mar 3", "3月3日") or a word of `time.days` ("yesterday").

Invariants:
  - a time without a date is on the clock's date in the zone; when a time-of-day range (or a single
    time) would start more than LATE after the clock, it means the previous day (a time just after a
    snapshot's clock, its newest event, is the same day: "around 18:03" with the last line at 18:02);
    an end before its start is on the next day (23:50–00:10);
  - "Mar 3" without a year is in the clock's year, or the year before when that day is after the clock;
  - 12-hour times: am/pm (and 上午/下午/晚上) set the hour; a range end's meridiem carries to a bare
    start ("2 to 3:30pm") and a start's to a bare end ("下午3点到4点");
  - versions ("v1.2"), ports ("host:8080"), zone offsets ("+08:00"), durations ("14:20 minutes": a unit
    word of two letters or more after it) and out-of-range clock values are never times;
  - wall times are localised DST-safely (evcli.core.time.localize); at a range's start or end a wall
    time that a DST change skips or repeats reads as its earliest / latest instant, so the range holds
    everything the words can mean (Berlin "02:30 to 03:15" on the spring-forward day is 01:30+01:00..
    03:15+02:00); windows are exact elapsed time;
  - a range whose end precedes its start (after all the rules above) is no range: never an error;
  - the patterns are compiled once per process (per `TimeWords`), on first use.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from functools import cache

from evcli.backends.base import parse_window
from evcli.contracts import AskedRange
from evcli.core.time import ZONE_ABBREVIATIONS, TimeRange, abbreviated_zone, localize
from evcli.scope.match import Spans
from evcli.scope.time_language import (
    NUMBER_LEFT,
    NUMBER_RIGHT,
    Language,
    TimeWords,
    alternation,
    fold,
    packaged,
    scan,
)
from evcli.scope.windows import window_matches

AROUND = timedelta(minutes=5)  # "at 09:14" means 09:09–09:19
LATE = AROUND  # how far after the clock a time of day may start and still be on the clock's date

# --- language-neutral atoms: digits, ISO 8601, zones ---------------------------------------------------------

_DASHES = ("-", "–", "—", "~")  # join two times or days in every language
_HHMM = r"(?<![A-Za-z0-9_:.+])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\d:])"  # "+08:00" is an offset
_HOUR = r"(?<![A-Za-z0-9_:.])(?:[01]?\d|2[0-3])"
_HOUR12 = r"(?<![A-Za-z0-9_:.])(?:1[0-2]|0?\d)"
_CLAUSE_END = r"(?=\s*(?:[?.!,;]|$))"
_ISO_DATE = r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)"
# ISO 8601 / RFC 3339 instants as alerts and log lines print them ("2026-03-18T09:05:00Z",
# "2026-03-18 08:05:00+00:00"): a zone written is that zone, none is the environment's
_ISO_TIME = r"\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:\s?(?:Z|UTC|[+-]\d{2}:?\d{2})(?![A-Za-z0-9_:]))?"
_ISO = rf"\d{{4}}-\d{{2}}-\d{{2}}[T ]{_ISO_TIME}"
# a zone written after a clock time ("08:05Z到08:10Z", "since 08:05Z", "at 16:05 +08:00") or a range
# ("between 08:05 and 08:10 UTC"), and the abbreviations on-call engineers write ("since 14:00 EDT",
# "2:05pm PST"), upper-case only; a clock time's pattern holds the zone after it
_ZONE_NAMES = r"Z|UTC|GMT|[+-]\d{2}:\d{2}|(?-i:" + "|".join(ZONE_ABBREVIATIONS) + ")"
_ZONE = rf"\s?(?:{_ZONE_NAMES})(?![A-Za-z0-9_:])"
_ZONE_AFTER = re.compile(rf"\s?(?P<zone>{_ZONE_NAMES})(?![A-Za-z0-9_:])", re.IGNORECASE)
_ZONE_ENDING = re.compile(rf"\s?(?P<zone>{_ZONE_NAMES})$", re.IGNORECASE)  # the zone a clock time's text ends with
_Form = tuple[re.Pattern[str], Language]  # a compiled form and the language whose table it is of


@dataclass(frozen=True)
class _Forms:
    """Every pattern the readers use, compiled from some languages' time tables."""

    words: Language  # every language's words, pooled
    clock_before: re.Pattern[str]
    clock_after: re.Pattern[str]
    minute_words: re.Pattern[str]
    numbers: re.Pattern[str]
    dates: tuple[re.Pattern[str], ...]  # `time.date` forms, their slots named, to read a date's text
    iso: re.Pattern[str]
    ranges: tuple[_Form, ...]
    hours: tuple[_Form, ...]
    meridiem_ranges: tuple[_Form, ...]
    one_time: tuple[_Form, ...]
    day_ranges: tuple[_Form, ...]
    day_parts: tuple[_Form, ...]
    date_only: tuple[_Form, ...]
    instant: re.Pattern[str]


@cache
def _forms(words: TimeWords) -> _Forms:
    pooled = words.pooled
    clock, date_text = _clock(words), _date(words)
    before, after = alternation(pooled.part("clock.before")), alternation(pooled.part("clock.after"))
    marks = alternation(pooled.words("bare_hour_marks", "clock") or ())
    bare_hour = rf"{_HOUR}(?:\s*{marks}|{_CLAUSE_END})"
    times = {"time": clock, "end_time": clock, "date": date_text, "end_date": date_text, "later_date": date_text}

    def forms(table: str, **slots: str) -> tuple[_Form, ...]:
        found: list[_Form] = []
        for language in words.languages:
            connector = language.words("connector", table) or pooled.words("connector") or []
            filled = {**times, "connector": alternation([*connector, *_DASHES]), **slots}
            filled.setdefault("cue", alternation(_cues(language, table)))
            found += [(form, language) for form in words.forms(language, table, filled)]
        return tuple(found)

    return _Forms(
        words=pooled,
        clock_before=re.compile(before, re.IGNORECASE),
        clock_after=re.compile(after, re.IGNORECASE),
        minute_words=re.compile(alternation(pooled.part("clock.minute_word")), re.IGNORECASE),
        numbers=re.compile(_number_run(pooled, r"\d+", "+")),
        dates=tuple(
            form for language in words.languages for form in words.forms(language, "date", _date_slots(pooled))
        ),
        iso=_iso(pooled),
        ranges=forms("range"),
        hours=forms("hours", hour=_HOUR, end_hour=bare_hour),
        meridiem_ranges=forms("meridiem_range", hour=r"\d{1,2}", end_time=rf"{_HOUR12}(?::[0-5]\d)?\s*{after}"),
        one_time=forms("one_time", time=f"{clock}|{bare_hour}"),
        day_ranges=forms("day_range"),
        day_parts=tuple(
            (form, language)
            for language in words.languages
            for form in words.forms(language, "day_part", _day_part_slots(language, pooled))
        ),
        date_only=forms("date_only"),
        instant=re.compile(rf"(?P<time>{clock})", re.IGNORECASE),
    )


_MEANINGS = ("since", "after", "from", "before", "around")  # what a cue makes of the time or day after it


def _cues(language: Language, table: str) -> list[str]:
    return [word for meaning in _MEANINGS for word in language.words(meaning, table) or ()]


def _meaning(language: Language, table: str, cue: str | None) -> str:
    """What the cue word means in the table ("around" when no cue is written)."""
    folded = fold(cue or "")
    listed = (
        meaning for meaning in _MEANINGS if folded in {fold(word) for word in language.words(meaning, table) or ()}
    )
    return next(listed, "around")


def _number_run(words: Language, digits: str, repeat: str) -> str:
    """Digits, or a run of the languages' numerals ("二十")."""
    return f"(?:{digits}|{words.numerals_pattern(repeat)})"


def _clock(words: TimeWords) -> str:
    """A clock time: digits, a language's form or a named time, after an optional half-of-day word."""
    pooled = words.pooled
    after = alternation(pooled.part("clock.after"))
    durations = alternation(word for word in pooled.part("units") if len(word) > 1)
    number = _number_run(pooled, r"\d{1,2}", "{1,3}")
    marked = [
        form.pattern
        for language in words.languages
        for form in words.forms(language, "clock", {"hour": number, "minute": number}, named=False)
    ]
    written = [rf"{_HHMM}(?:\s*{after})?(?!\s*{durations})", rf"{_HOUR12}\s*{after}", *marked]
    written.append(alternation(pooled.part("clock.named")))
    return rf"(?:{alternation(pooled.part('clock.before'))}\s*)?(?:{'|'.join(written)})(?:{_ZONE})?"


def _date_slots(pooled: Language) -> dict[str, str]:
    return {
        "month": alternation(pooled.part("months")),
        "month_number": rf"{NUMBER_LEFT}\d{{1,2}}{NUMBER_RIGHT}",
        "day_number": rf"{NUMBER_LEFT}\d{{1,2}}{NUMBER_RIGHT}",
        "year": rf"{NUMBER_LEFT}\d{{4}}{NUMBER_RIGHT}",
    }


def _date(words: TimeWords) -> str:
    """A date: ISO digits, a language's form or a day word."""
    slots = _date_slots(words.pooled)
    written = [
        form.pattern for language in words.languages for form in words.forms(language, "date", slots, named=False)
    ]
    return "(?:" + "|".join([_ISO_DATE, *written, alternation(words.pooled.part("days"))]) + ")"


def _iso(pooled: Language) -> re.Pattern[str]:
    cue = alternation(_cues(pooled, "iso"))
    connector = alternation([*(pooled.words("connector") or ()), *_DASHES, ".."])
    return re.compile(
        rf"(?:(?P<cue>{cue})\s*)?(?<![A-Za-z0-9_:.-])(?P<a>{_ISO})"  # the end may be a time alone: "…T08:05Z - 08:10Z"
        rf"(?:\s*{connector}\s*(?P<b>{_ISO}|(?<![A-Za-z0-9_:.]){_ISO_TIME}))?",
        re.IGNORECASE,
    )


def _day_part_slots(language: Language, pooled: Language) -> dict[str, str]:
    """A part is the language's own; a day word before it any language's, unless its table lists them."""
    days = language.words("day", "day_part") or pooled.part("days")
    return {"day": alternation(days), "part": alternation(language.part("day_parts"))}


def _scan(forms: tuple[_Form, ...], question: str) -> Iterator[tuple[re.Match[str], Language]]:
    """Every language's forms of one kind read together, left to right."""
    languages = {pattern: language for pattern, language in forms}
    for match in scan((pattern for pattern, _ in forms), question):
        yield match, languages[match.re]


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


def _read_clock(text: str, forms: _Forms) -> _Clock | None:
    """A clock time's text read: its named time, half-of-day word, minute word and numbers."""
    words = forms.words
    text = _ZONE_ENDING.sub("", text.strip())  # read by `_read` (an offset's digits are no minutes)
    named = words.value("clock.named", text)
    if isinstance(named, str):
        return _read_clock(named, forms)
    rest, meridiem = text.strip(), None
    before = forms.clock_before.match(rest)
    if before is not None:
        meridiem, rest = words.value("clock.before", before.group()), rest[before.end() :]
    after = forms.clock_after.search(rest)
    if after is not None:
        meridiem, rest = words.value("clock.after", after.group()), rest[: after.start()]
    minute_word = forms.minute_words.search(rest)
    if minute_word is not None:
        rest = rest[: minute_word.start()] + rest[minute_word.end() :]
    values = [words.number(number) for number in forms.numbers.findall(rest)]
    if not values or any(value is None for value in values):
        return None
    hour, minute, second = ([int(value or 0) for value in values] + [0, 0])[:3]
    if minute_word is not None:
        minute = int(words.value("clock.minute_word", minute_word.group()))
    if hour > 23 or minute > 59 or second > 59 or (meridiem and hour > 12):
        return None
    return _meridiem(hour, minute, second, meridiem)


# --- dates -------------------------------------------------------------------------


def _read_date(text: str | None, today: date, forms: _Forms) -> date | None:
    if not text:
        return None
    days_back = forms.words.value("days", text)
    if isinstance(days_back, int):
        return today - timedelta(days=days_back)
    iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text.strip())
    if iso:
        return _day(int(iso[1]), int(iso[2]), int(iso[3]), today)
    for form in forms.dates:
        written = form.fullmatch(text.strip())
        if written is not None:
            parts = written.groupdict()
            name = parts.get("month")
            month = int(forms.words.value("months", name)) if name else int(parts["month_number"])
            year = int(parts["year"]) if parts.get("year") else None
            return _day(year, month, int(parts["day_number"]), today)
    return None


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
    def __init__(self, clock: datetime, tz: tzinfo, words: TimeWords) -> None:
        self.clock = clock.astimezone(tz)
        self.tz = tz
        self.words = words
        self.forms = _forms(words)

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


def find_range(
    question: str, spans: Spans, *, clock: datetime, tz: tzinfo, words: TimeWords | None = None
) -> AskedRange | None:
    """The first range the question names (claiming its text), or None. A zone written after clock
    times ("08:05 to 08:10 UTC") reads them in that zone; the range is stated in the environment's.
    `words`: the languages' time tables to read with (the packaged grammar's when None)."""
    words = words or packaged()
    resolver = _Resolver(clock, tz, words)
    readers = (_iso_ranges, _ranges, _bare_ranges, _cued, _windows, _since_day, _day_parts, _dates, _instants)
    for reader in readers:
        try:
            asked = _read(reader, question, spans, resolver)
        except OverflowError:  # a time at the calendar's ends ("0001-01-01T00:00:00Z") is no range to search
            continue
        if asked is not None:
            return asked
    return None


def _read(
    reader: Callable[[str, _Resolver], Iterator[tuple[re.Match[str], _Found | None]]],
    question: str,
    spans: Spans,
    resolver: _Resolver,
) -> AskedRange | None:
    """The first range `reader` finds whose text is not claimed yet (claiming it), or None."""
    clock, tz, words = resolver.clock, resolver.tz, resolver.words
    for match, found in reader(question, resolver):
        if found is None or found[0] is None:
            continue
        after = _ZONE_AFTER.match(question, match.end()) if reader in (_ranges, _bare_ranges, _cued) else None
        zones = _zones_written(match, after, resolver)
        if zones is None or len(zones) > 1:  # an offset no zone has, times in two zones: no range, never a wrong one
            continue
        if zones:
            zoned = _Resolver(clock, zones[0], words)
            found = next((f for m, f in reader(question, zoned) if m.start() == match.start()), found)
        end = match.end() if after is None else after.end()
        if found is None or found[0] is None:
            continue
        instant = found[2] if len(found) > 2 else None
        asked = AskedRange(
            text=question[match.start() : end].strip(),
            range=found[0].text(tz),
            relative=found[1],
            instant=instant.astimezone(tz).isoformat() if instant is not None else None,
        )
        if spans.claim(match.start(), end):
            return asked
    return None


def _zones_written(match: re.Match[str], after: re.Match[str] | None, resolver: _Resolver) -> list[tzinfo] | None:
    """The distinct zones written after the match's clock times ("08:05Z到08:10Z") and after the match
    ("between 08:05 and 08:10 UTC"); None when one is an offset no zone has ("+25:00")."""
    ending = [_ZONE_ENDING.search(_group(match, slot) or "") for slot in ("time", "end_time")]
    zones = [_zone(zone["zone"], resolver.tz, resolver.clock) for zone in (*ending, after) if zone is not None]
    return None if None in zones else list(dict.fromkeys(zone for zone in zones if zone is not None))


def _zone(text: str, tz: tzinfo | None = None, clock: datetime | None = None) -> tzinfo | None:
    """`Z`, `UTC`, `GMT`, `+08:00` or an abbreviation (`EDT`) as a fixed zone; the environment's own zone
    when it goes by that abbreviation (CST in Asia/Shanghai is China's, not US Central); None for an
    offset no zone has ("+25:00", "+08:60")."""
    if text.upper() in ("Z", "UTC", "GMT"):
        return UTC
    named = abbreviated_zone(text)
    if named is not None:
        if tz is not None and clock is not None and clock.astimezone(tz).tzname() == text:
            return tz
        return named
    sign = 1 if text[0] == "+" else -1
    hours, minutes = int(text[1:3]), int(text[-2:])
    if hours > 23 or minutes > 59:
        return None
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
    for match in resolver.forms.iso.finditer(question):
        start = _instant(match["a"], resolver)
        end = _instant(match["b"], resolver, like=start) if match["b"] and start is not None else None
        cue = _meaning(resolver.forms.words, "iso", match["cue"])
        if start is None or (match["b"] and end is None):
            yield match, None
        elif end is not None:
            yield match, (span(start, end), None)
        elif cue == "since":
            yield match, (span(start, max(start, resolver.clock)), None)
        elif cue == "before":
            yield match, (TimeRange(None, start), None)
        else:  # one instant: around it, as "at 09:14"
            yield match, _around(start)


_Found = (
    tuple[TimeRange | None, str | None] | tuple[TimeRange | None, str | None, datetime]
)  # (range, relative[, instant])


def _ranges(question: str, resolver: _Resolver):
    for match, _ in _scan(resolver.forms.ranges, question):
        start, end = _read_clock(match["time"], resolver.forms), _read_clock(match["end_time"], resolver.forms)
        if start is None or end is None:
            yield match, None
            continue
        start, end = start.with_meridiem(end.meridiem), end.with_meridiem(start.meridiem)
        day_text = _group(match, "date") or _group(match, "later_date")
        day = _read_date(day_text, resolver.clock.date(), resolver.forms)
        if day is None and day_text:
            yield match, None  # a day that does not exist (Feb 30): no range rather than today's
            continue
        yield match, _range_on(resolver, day, _group(match, "end_date"), start.at(), end.at())


def _group(match: re.Match[str], name: str) -> str | None:
    """A slot's text, None when the form has no such slot or it is not written."""
    return match.groupdict().get(name)


def _range_on(resolver: _Resolver, day: date | None, end_day_text: str | None, start: time, end: time) -> _Found:
    end_day = _read_date(end_day_text, resolver.clock.date(), resolver.forms)
    if end_day is not None and day is not None and end_day >= day:
        return span(resolver.wall(day, start, "start"), resolver.wall(end_day, end, "end")), None
    return resolver.between(day, start, end), None


def _bare_ranges(question: str, resolver: _Resolver):
    for match, _ in _scan(resolver.forms.hours, question):  # "between 9 and 10": hours of the clock's day
        first, last = int(match["hour"]), int(re.match(r"\d+", match["end_hour"]).group())  # type: ignore[union-attr]
        if first < last:
            yield match, (resolver.between(None, time(first), time(last)), None)
    for match, _ in _scan(resolver.forms.meridiem_ranges, question):
        end = _read_clock(match["end_time"], resolver.forms)
        hour = int(match["hour"])
        if end is None or hour > 12:
            yield match, None
            continue
        start = _meridiem(hour, 0, 0, end.meridiem)
        yield match, (resolver.between(None, start.at(), end.at()), None)


def _cued(question: str, resolver: _Resolver):
    for match, language in _scan(resolver.forms.one_time, question):
        yield match, _one_time(resolver, match, _meaning(language, "one_time", match["cue"]))


def _one_time(resolver: _Resolver, match: re.Match[str], cue: str) -> _Found | None:
    clock = _read_clock(match["time"], resolver.forms)
    if clock is None:
        return None
    day_text = _group(match, "date") or _group(match, "later_date")
    moment = resolver.moment(_read_date(day_text, resolver.clock.date(), resolver.forms), clock.at())
    if cue in ("since", "after"):
        return span(moment, max(moment, resolver.clock)), None
    if cue == "before":
        return TimeRange(None, moment), None
    return _around(moment)


def _around(moment: datetime) -> _Found:
    """One instant the question names ("at 09:14", "around 18:33"): the range around it, and the instant."""
    return TimeRange(moment - AROUND, moment + AROUND), None, moment


def _windows(question: str, resolver: _Resolver):
    for match, label in window_matches(question, resolver.words):
        try:
            parse_window(label, resolver.clock)
        except ValueError:
            continue
        yield match, (TimeRange.build(window=label, clock=resolver.clock, tz=resolver.tz), label)


def _since_day(question: str, resolver: _Resolver):
    """Days as a range: "since D" (D's start to the clock), "after D" (the next day's start to the clock),
    "from/between D1 to/and D2" (D1's start to D2's end, the clock at the latest). A day after the clock
    is kept as asked (an empty range at its start: nothing was logged then), never dropped for the whole
    snapshot."""
    today = resolver.clock.date()
    for match, language in _scan(resolver.forms.day_ranges, question):
        cue = _meaning(language, "day_range", match["cue"])
        first = _read_date(match["date"], today, resolver.forms)
        last_text = _group(match, "end_date")
        last = _read_date(last_text, today, resolver.forms)
        if first is None or (last_text and (last is None or last < first)):
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
    """A part named with its day ("this morning", "last night") is on that day; a part after a day word
    ("昨天下午") on that day; a part alone (下午) today's, or yesterday's when it has not begun yet."""
    today = resolver.clock.date()
    for match, language in _scan(resolver.forms.day_parts, question):
        named = _group(match, "named")
        if named:  # a part of an earlier day ("last night") is whole; one of today's ends at the clock
            first, last, days_back = language.value("day_part.named", named)
            day = today - timedelta(days=days_back)
        else:
            (first, last), days_back = language.value("day_parts", match["part"]), 0
            day = _read_date(_group(match, "day"), today, resolver.forms) or today
        start, end = resolver.wall(day, first, "start"), resolver.wall(day, last, "end")
        if start > resolver.clock and not named and not _group(match, "day"):
            day -= timedelta(days=1)
            start, end = resolver.wall(day, first, "start"), resolver.wall(day, last, "end")
        yield match, (span(start, end if days_back or start > resolver.clock else min(end, resolver.clock)), None)


def _dates(question: str, resolver: _Resolver):
    for match, _ in _scan(resolver.forms.date_only, question):
        day = _read_date(match["date"], resolver.clock.date(), resolver.forms)
        yield match, None if day is None or day > resolver.clock.date() else (resolver.whole_day(day), None)


def _instants(question: str, resolver: _Resolver):
    """The one clock time of a question that writes one and no date ("Feb 30 from 02:00 to 03:00" names a
    range no reader could read: none of its times is a moment on its own)."""
    matches = list(resolver.forms.instant.finditer(question))
    if len(matches) == 1 and next(_scan(resolver.forms.date_only, question), None) is None:
        yield matches[0], _one_time(resolver, matches[0], "around")
