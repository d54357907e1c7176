"""evcli.scope.times: the range a question names, on the environment's clock and zone."""

from __future__ import annotations

from datetime import datetime

import pytest

from evcli.core.time import parse_range_text, zone_named
from evcli.scope.match import Spans
from evcli.scope.times import find_range
from tests.scope._env import scope_of


def asked(question: str, clock: str, zone: str = "Europe/Berlin") -> tuple[str, str, str | None] | None:
    found = find_range(question, Spans(), clock=datetime.fromisoformat(clock), tz=zone_named(zone))
    return None if found is None else (found.text, found.range, found.relative)


BERLIN_SPRING = "2026-03-29T12:00:00+02:00"  # clocks went 02:00 → 03:00
BERLIN_AUTUMN = "2026-10-25T12:00:00+01:00"  # clocks went 03:00 → 02:00
NY_SPRING = "2026-03-08T12:00:00-04:00"
NY_AUTUMN = "2026-11-01T12:00:00-05:00"


@pytest.mark.parametrize(
    ("question", "clock", "zone", "expected"),
    [
        # a skipped wall time at a range's start reads as its earliest instant: the range holds the gap
        (
            "between 01:30 and 03:30",
            BERLIN_SPRING,
            "Europe/Berlin",
            "2026-03-29T01:30:00+01:00..2026-03-29T03:30:00+02:00",
        ),
        ("02:30 to 03:15", BERLIN_SPRING, "Europe/Berlin", "2026-03-29T01:30:00+01:00..2026-03-29T03:15:00+02:00"),
        ("today", BERLIN_SPRING, "Europe/Berlin", "2026-03-29T00:00:00+01:00..2026-03-29T12:00:00+02:00"),
        ("last night", BERLIN_SPRING, "Europe/Berlin", "2026-03-28T18:00:00+01:00..2026-03-29T06:00:00+02:00"),
        # a repeated wall time: the first occurrence at the start, the second at the end
        ("from 02:15 to 02:45", BERLIN_AUTUMN, "Europe/Berlin", "2026-10-25T02:15:00+02:00..2026-10-25T02:45:00+01:00"),
        ("今天凌晨", BERLIN_AUTUMN, "Europe/Berlin", "2026-10-25T00:00:00+02:00..2026-10-25T06:00:00+01:00"),
        ("02:00-03:30", NY_SPRING, "America/New_York", "2026-03-08T01:00:00-05:00..2026-03-08T03:30:00-04:00"),
        ("1:30am to 3:30am", NY_SPRING, "America/New_York", "2026-03-08T01:30:00-05:00..2026-03-08T03:30:00-04:00"),
        (
            "between 1:00am and 1:59am",
            NY_AUTUMN,
            "America/New_York",
            "2026-11-01T01:00:00-04:00..2026-11-01T01:59:00-05:00",
        ),
        ("today", NY_AUTUMN, "America/New_York", "2026-11-01T00:00:00-04:00..2026-11-01T12:00:00-05:00"),
    ],
)
def test_dst_day_ranges_hold_every_instant_the_words_mean(question, clock, zone, expected):
    assert asked(question, clock, zone) == (question, expected, None)


def test_a_window_across_a_dst_change_is_exact_elapsed_time():
    text, canonical, relative = asked("past 12 hours", NY_AUTUMN, "America/New_York")
    found = parse_range_text(canonical)
    assert (text, relative) == ("past 12 hours", "12h")
    assert found.end - found.start == datetime.fromisoformat(NY_AUTUMN) - found.start
    assert (found.end - found.start).total_seconds() == 12 * 3600
    assert canonical == "2026-11-01T01:00:00-04:00..2026-11-01T12:00:00-05:00"


CLOCK = "2026-03-18T09:30:00+01:00"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # a time-of-day range after the clock means the previous day
        ("14:20-14:35", ("14:20-14:35", "2026-03-17T14:20:00+01:00..2026-03-17T14:35:00+01:00", None)),
        ("09:00-09:20", ("09:00-09:20", "2026-03-18T09:00:00+01:00..2026-03-18T09:20:00+01:00", None)),
        # ... but one starting just after the clock (a snapshot's clock is its newest line) is the same day
        ("around 09:33", ("around 09:33", "2026-03-18T09:28:00+01:00..2026-03-18T09:38:00+01:00", None)),
        ("09:34-09:40", ("09:34-09:40", "2026-03-18T09:34:00+01:00..2026-03-18T09:40:00+01:00", None)),
        ("at 09:36", ("at 09:36", "2026-03-17T09:31:00+01:00..2026-03-17T09:41:00+01:00", None)),
        # an end before its start runs into the next day
        ("23:50 to 00:10", ("23:50 to 00:10", "2026-03-17T23:50:00+01:00..2026-03-18T00:10:00+01:00", None)),
        # 12-hour clock; a meridiem carries to the other end
        ("from 2 to 3:30pm", ("from 2 to 3:30pm", "2026-03-17T14:00:00+01:00..2026-03-17T15:30:00+01:00", None)),
        ("12am-1am", ("12am-1am", "2026-03-18T00:00:00+01:00..2026-03-18T01:00:00+01:00", None)),
        ("下午3点到4点", ("下午3点到4点", "2026-03-17T15:00:00+01:00..2026-03-17T16:00:00+01:00", None)),
        ("早上8点半到9点", ("早上8点半到9点", "2026-03-18T08:30:00+01:00..2026-03-18T09:00:00+01:00", None)),
        # dates: a month and day without a year after the clock is last year's
        (
            "on Dec 31 from 23:00 to 23:30",
            ("on Dec 31 from 23:00 to 23:30", "2025-12-31T23:00:00+01:00..2025-12-31T23:30:00+01:00", None),
        ),
        (
            "3 Mar 2026 02:00-03:30",
            ("3 Mar 2026 02:00-03:30", "2026-03-03T02:00:00+01:00..2026-03-03T03:30:00+01:00", None),
        ),
        ("on 2026-03-17", ("on 2026-03-17", "2026-03-17T00:00:00+01:00..2026-03-18T00:00:00+01:00", None)),
        (
            "2026年3月3日 02:00 到 03:30",
            ("2026年3月3日 02:00 到 03:30", "2026-03-03T02:00:00+01:00..2026-03-03T03:30:00+01:00", None),
        ),
        ("since yesterday", ("since yesterday", "2026-03-17T00:00:00+01:00..2026-03-18T09:30:00+01:00", None)),
        ("until 09:00", ("until 09:00", "..2026-03-18T09:00:00+01:00", None)),
        ("09:20左右", ("09:20左右", "2026-03-18T09:15:00+01:00..2026-03-18T09:25:00+01:00", None)),
        # cue words are tried longest first: 前后 is "around", not 前 ("before") and a stray 后
        ("09:20前后", ("09:20前后", "2026-03-18T09:15:00+01:00..2026-03-18T09:25:00+01:00", None)),
        # a Han character next to an ASCII word does not join it (as in the question grammar)
        (
            "查一下last 20 minutes的错误",
            ("last 20 minutes", "2026-03-18T09:10:00+01:00..2026-03-18T09:30:00+01:00", "20m"),
        ),
        # ... nor a Han character next to a clock's digits: each end of a range written without spaces is read
        ("14:00到14:20的错误", ("14:00到14:20", "2026-03-17T14:00:00+01:00..2026-03-17T14:20:00+01:00", None)),
        ("2 pm到3 pm", ("2 pm到3 pm", "2026-03-17T14:00:00+01:00..2026-03-17T15:00:00+01:00", None)),
        (
            "2026-03-17T08:05:00Z到2026-03-17T08:10:00Z",
            (
                "2026-03-17T08:05:00Z到2026-03-17T08:10:00Z",
                "2026-03-17T09:05:00+01:00..2026-03-17T09:10:00+01:00",
                None,
            ),
        ),
        ("Mar 16以来", ("Mar 16以来", "2026-03-16T00:00:00+01:00..2026-03-18T09:30:00+01:00", None)),
        ("09:00之前", ("09:00之前", "..2026-03-18T09:00:00+01:00", None)),
        ("09:00以来", ("09:00以来", "2026-03-18T09:00:00+01:00..2026-03-18T09:30:00+01:00", None)),  # not "around"
        ("1小时内", ("1小时内", "2026-03-18T08:30:00+01:00..2026-03-18T09:30:00+01:00", "1h")),
        ("last half hour", ("last half hour", "2026-03-18T09:00:00+01:00..2026-03-18T09:30:00+01:00", "30m")),
        ("前天", ("前天", "2026-03-16T00:00:00+01:00..2026-03-17T00:00:00+01:00", None)),
        ("昨天下午", ("昨天下午", "2026-03-17T12:00:00+01:00..2026-03-17T18:00:00+01:00", None)),
        # days as ranges: since D (its start), after D (the next day's), from/between D1 to/and D2 (both whole)
        (
            "errors after 2026-03-16?",
            ("after 2026-03-16", "2026-03-17T00:00:00+01:00..2026-03-18T09:30:00+01:00", None),
        ),
        (
            "from 2026-03-16 to 2026-03-17",
            ("from 2026-03-16 to 2026-03-17", "2026-03-16T00:00:00+01:00..2026-03-18T00:00:00+01:00", None),
        ),
        (
            "between Mar 16 and Mar 17",
            ("between Mar 16 and Mar 17", "2026-03-16T00:00:00+01:00..2026-03-18T00:00:00+01:00", None),
        ),
        ("logs from yesterday", ("yesterday", "2026-03-17T00:00:00+01:00..2026-03-18T00:00:00+01:00", None)),
        # ISO 8601 / RFC 3339 instants as alerts print them; a zone written is that zone (Z: UTC, +01:00 here)
        (
            "errors 2026-03-18T08:05:00Z to 2026-03-18T08:10:00Z",
            (
                "2026-03-18T08:05:00Z to 2026-03-18T08:10:00Z",
                "2026-03-18T09:05:00+01:00..2026-03-18T09:10:00+01:00",
                None,
            ),
        ),
        (
            "between 2026-03-18T08:05:00+00:00 and 2026-03-18T08:10:00+00:00",
            (
                "between 2026-03-18T08:05:00+00:00 and 2026-03-18T08:10:00+00:00",
                "2026-03-18T09:05:00+01:00..2026-03-18T09:10:00+01:00",
                None,
            ),
        ),
        (
            "since 2026-03-18T08:05:00Z",
            ("since 2026-03-18T08:05:00Z", "2026-03-18T09:05:00+01:00..2026-03-18T09:30:00+01:00", None),
        ),
        (
            "2026-03-18T08:05Z - 08:10Z",
            ("2026-03-18T08:05Z - 08:10Z", "2026-03-18T09:05:00+01:00..2026-03-18T09:10:00+01:00", None),
        ),
        (
            "at 2026-03-18 09:05:30",
            ("at 2026-03-18 09:05:30", "2026-03-18T09:00:30+01:00..2026-03-18T09:10:30+01:00", None),
        ),
        # bare hours with "between"/"from" when the second ends the clause; a day's part named with the day
        (
            "errors between 9 and 10?",
            ("between 9 and 10", "2026-03-18T09:00:00+01:00..2026-03-18T10:00:00+01:00", None),
        ),
        ("from 8 to 9 o'clock", ("from 8 to 9 o'clock", "2026-03-18T08:00:00+01:00..2026-03-18T09:00:00+01:00", None)),
        ("yesterday evening", ("yesterday evening", "2026-03-17T18:00:00+01:00..2026-03-18T00:00:00+01:00", None)),
        ("3月16日以来", ("3月16日以来", "2026-03-16T00:00:00+01:00..2026-03-18T09:30:00+01:00", None)),
        ("3月16日之后", ("3月16日之后", "2026-03-17T00:00:00+01:00..2026-03-18T09:30:00+01:00", None)),
        # a zone written after clock times
        (
            "between 08:05 and 08:10 UTC",
            ("between 08:05 and 08:10 UTC", "2026-03-18T09:05:00+01:00..2026-03-18T09:10:00+01:00", None),
        ),
        ("since 08:05Z", ("since 08:05Z", "2026-03-18T09:05:00+01:00..2026-03-18T09:30:00+01:00", None)),
        ("at 16:05 +08:00", ("at 16:05 +08:00", "2026-03-18T09:00:00+01:00..2026-03-18T09:10:00+01:00", None)),
        # a day after the clock is kept as asked (nothing was logged then), not dropped for the whole snapshot
        (
            "errors since 2099-01-01?",
            ("since 2099-01-01", "2099-01-01T00:00:00+01:00..2099-01-01T00:00:00+01:00", None),
        ),
    ],
)
def test_ranges(question, expected):
    assert asked(question, CLOCK) == expected


@pytest.mark.parametrize(
    "question",
    [
        "upgrade to v1.2 broke it",
        "redis-01:6379 refused",
        "the job took 14:20 minutes",
        "HTTP 502 at port 8080",
        "what's going on?",
        "between 25:00 and 26:00",
        "Feb 30 from 02:00 to 03:00 was weird",  # no such day: no range rather than today's
        "the last deployment hour",
        "past 400 days",
        "between 2 and 5 retries failed",
        "errors in the last hours",  # a plural unit without a count names no length (time.window.needs_count)
        "the last second attempt failed",
        "getTodayTotalDetailSteps failed",  # a day word inside another word
        "Marx 3 was wrong",  # a month is one of the month words, not any word starting like one
    ],
)
def test_not_times(question):
    assert asked(question, CLOCK) is None


def test_a_range_reads_its_text_once():
    spans = Spans()
    clock = datetime.fromisoformat(CLOCK)
    first = find_range("between 09:00 and 09:10", spans, clock=clock, tz=zone_named("Europe/Berlin"))
    assert first is not None
    assert find_range("between 09:00 and 09:10", spans, clock=clock, tz=zone_named("Europe/Berlin")) is None


@pytest.mark.parametrize(
    ("question", "text"),
    [("errors since 9", "since 9"), ("since 9 o'clock", "since 9 o'clock"), ("before 9, any 502s?", "before 9")],
)
def test_a_bare_hour_ending_a_cued_clause_is_a_clock_time(question, text):
    found = asked(question, "2026-03-18T09:30:00+01:00")
    assert found is not None and found[0] == text and "2026-03-18T09:00:00+01:00" in found[1]


@pytest.mark.parametrize("question", ["after 9 retries", "version 2 since 3 days", "about 9 errors?"])
def test_a_bare_number_before_a_word_is_no_time(question):
    assert asked(question, "2026-03-18T09:30:00+01:00") is None


@pytest.mark.parametrize(
    ("question", "clock", "zone", "expected"),
    [
        # a zone abbreviation after the time is that zone; the range is stated in the environment's
        (
            "how many deadlocks since 14:00 EDT?",
            "2026-07-14T14:45:00-04:00",
            "America/New_York",
            ("since 14:00 EDT", "2026-07-14T14:00:00-04:00..2026-07-14T14:45:00-04:00"),
        ),
        (
            "502s between 11:05 and 11:20 PDT",
            "2026-07-14T14:45:00-04:00",
            "America/New_York",
            ("between 11:05 and 11:20 PDT", "2026-07-14T14:05:00-04:00..2026-07-14T14:20:00-04:00"),
        ),
        # CST where the environment goes by CST is its own zone (China), not US Central
        (
            "errors since 09:00 CST",
            "2026-09-14T12:20:00+08:00",
            "Asia/Shanghai",
            ("since 09:00 CST", "2026-09-14T09:00:00+08:00..2026-09-14T12:20:00+08:00"),
        ),
        (
            "was there an ssh brute force before noon?",
            "2026-06-04T15:45:00-04:00",
            "America/New_York",
            ("before noon", "..2026-06-04T12:00:00-04:00"),
        ),
        (
            "errors since midnight",
            "2026-06-04T15:45:00-04:00",
            "America/New_York",
            ("since midnight", "2026-06-04T00:00:00-04:00..2026-06-04T15:45:00-04:00"),
        ),
    ],
)
def test_zone_abbreviations_noon_and_midnight(question, clock, zone, expected):
    found = asked(question, clock, zone)
    assert found is not None and found[:2] == expected, found


@pytest.mark.parametrize(
    ("question", "instant"),
    [
        ("what changed at 09:14?", "2026-03-18T09:14:00+01:00"),
        ("Something changed around 09:05. Which service?", "2026-03-18T09:05:00+01:00"),
        ("09:14左右发生了什么变化", "2026-03-18T09:14:00+01:00"),
        ("09:14 发生了什么变化", "2026-03-18T09:14:00+01:00"),  # the one clock time a question writes, uncued
        ("at 16:05 +08:00", "2026-03-18T09:05:00+01:00"),
        ("between 09:09 and 09:19", None),  # two times ten minutes apart name a range, not a moment
        ("since 09:05", None),
        ("in the last 20 minutes", None),
    ],
)
def test_one_moment_asked_is_kept_beside_its_range(question, instant):
    """'at/around 09:14' is the range around it (±5 minutes) and the moment itself: what changed then is
    judged on what follows it (evcli.agents.offline.queries.changes_call)."""
    found = find_range(question, Spans(), clock=datetime.fromisoformat(CLOCK), tz=zone_named("Europe/Berlin"))
    assert found is not None and found.instant == instant


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "0001-01-01 00:01 to 00:02"])
def test_a_time_at_the_calendars_ends_is_no_range_and_never_an_error(moment):
    """The whole question is still read (the reading never raises on any text): only the range is left out."""
    scope = scope_of(f"errors on nginx at {moment}?")
    assert scope.range is None and scope.services == ["nginx"]


_UTC_0805_0810 = "2026-03-18T09:05:00+01:00..2026-03-18T09:10:00+01:00"


@pytest.mark.parametrize(
    ("question", "text", "expected"),
    [
        # a zone written after each time of a range, whatever joins them (a Han word, a dash, a word)
        ("08:05Z到08:10Z", "08:05Z到08:10Z", _UTC_0805_0810),
        ("08:05Z到08:10Z的错误", "08:05Z到08:10Z", _UTC_0805_0810),
        ("从08:05Z到08:10Z的错误", "从08:05Z到08:10Z", _UTC_0805_0810),
        ("08:05Z-08:10Z", "08:05Z-08:10Z", _UTC_0805_0810),
        ("08:05Z to 08:10Z", "08:05Z to 08:10Z", _UTC_0805_0810),
        ("errors between 08:05Z and 08:10Z?", "between 08:05Z and 08:10Z", _UTC_0805_0810),
        ("08:05 UTC to 08:10 UTC", "08:05 UTC to 08:10 UTC", _UTC_0805_0810),
        ("2:05pm PST到2:10pm PST", "2:05pm PST到2:10pm PST", "2026-03-17T23:05:00+01:00..2026-03-17T23:10:00+01:00"),
        # an offset is no clock time of its own ("+08:00" is not 08:00)
        (
            "08:05+08:00到08:10+08:00",
            "08:05+08:00到08:10+08:00",
            "2026-03-18T01:05:00+01:00..2026-03-18T01:10:00+01:00",
        ),
        # a zone written after one time of the range reads both (as after the end: "08:05 to 08:10 UTC")
        ("08:05Z到08:10", "08:05Z到08:10", _UTC_0805_0810),
        # a day written after a zoned time is read as after a time without one
        (
            "between 08:05 and 08:10 UTC yesterday",
            "between 08:05 and 08:10 UTC yesterday",
            "2026-03-17T09:05:00+01:00..2026-03-17T09:10:00+01:00",
        ),
        ("2026-03-18T08:05Z到2026-03-18T08:10Z", "2026-03-18T08:05Z到2026-03-18T08:10Z", _UTC_0805_0810),
        # one time with its zone: a cued one, the one time of a question, a named time
        ("08:05Z以来", "08:05Z以来", "2026-03-18T09:05:00+01:00..2026-03-18T09:30:00+01:00"),
        ("自08:05Z之后", "08:05Z之后", "2026-03-18T09:05:00+01:00..2026-03-18T09:30:00+01:00"),
        ("08:05Z发生了什么", "08:05Z", "2026-03-18T09:00:00+01:00..2026-03-18T09:10:00+01:00"),
        ("noon UTC", "noon UTC", "2026-03-17T12:55:00+01:00..2026-03-17T13:05:00+01:00"),
    ],
)
def test_a_zone_written_after_each_time_is_read(question, text, expected):
    assert asked(question, CLOCK) == (text, expected, None)


@pytest.mark.parametrize(
    "question",
    [
        "08:05Z to 10:10+02:00",  # two zones in one range: no range rather than one read in the wrong zone
        "since 14:00 +25:00",  # no zone is a day or more off UTC
        "at 16:05 +99:00",
    ],
)
def test_times_in_two_zones_or_an_offset_out_of_range_are_no_range_and_never_an_error(question):
    assert asked(question, CLOCK) is None


def test_a_zone_read_with_its_time_is_no_word_or_token_of_the_question():
    """'UTC到08:10' is no host:port and 'UTC' no word to search: the range reads them."""
    scope = scope_of("nginx 08:05 UTC到08:10 UTC的错误")
    assert scope.range is not None and scope.range.text == "08:05 UTC到08:10 UTC"
    assert (scope.services, scope.tokens, [term for term in scope.terms if "UTC" in term]) == (["nginx"], [], [])
